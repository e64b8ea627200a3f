package store

import (
	"math"
	"time"
)

// Bounds of the times a store can hold: both backends keep a time as int64
// Unix nanoseconds (1677-09-21 to 2262-04-11).
var (
	MinTime = time.Unix(0, math.MinInt64+1).UTC()
	MaxTime = time.Unix(0, math.MaxInt64).UTC()
)

// UnixNanos is how the backends encode a time: Unix nanoseconds, 0 for
// the zero time, and a time outside [MinTime, MaxTime] saturated to the
// nearer bound (time.Time.UnixNano would wrap it around: a deadline in the
// year 9999 would be stored as one in 1816).
func UnixNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.After(MaxTime):
		return math.MaxInt64
	case t.Before(MinTime):
		return math.MinInt64 + 1
	}
	return t.UnixNano()
}
