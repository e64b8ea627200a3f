package store_test

import (
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/store"
)

// TestUnixNanosSaturates: finding 4 of issue #18, a far deadline stored as
// one in the past.
func TestUnixNanosSaturates(t *testing.T) {
	cases := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"year 9999", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), store.MaxTime},
		{"year 1000", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), store.MinTime},
		{"ordinary", time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC), time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := time.Unix(0, store.UnixNanos(tc.in)).UTC(); !got.Equal(tc.want) {
				t.Errorf("UnixNanos(%v) decodes to %v, want %v", tc.in, got, tc.want)
			}
		})
	}
	if store.UnixNanos(time.Time{}) != 0 {
		t.Error("the zero time is not 0")
	}
}
