package sandbox

import (
	"errors"
	"fmt"
	"time"
)

// Policy bounds one command. Zero fields take DefaultPolicy's values.
type Policy struct {
	// AllowHosts, when non-empty, lets the command reach these hosts
	// through the worker's HTTP proxy ("host", "*.domain", either with an
	// optional ":port"); everything else stays unreachable (package doc).
	AllowHosts     []string
	CPUTime        time.Duration // RLIMIT_CPU, whole seconds, rounded up
	MemoryBytes    int64         // RLIMIT_AS
	MaxProcs       int           // RLIMIT_NPROC
	MaxFileBytes   int64         // RLIMIT_FSIZE
	WallTime       time.Duration // deadline from start
	MaxOutputBytes int64         // stdout and stderr together
}

// DefaultPolicy: network off and bounds for a build or a test suite.
var DefaultPolicy = Policy{
	CPUTime:        5 * time.Minute,
	MemoryBytes:    2 << 30,
	MaxProcs:       256,
	MaxFileBytes:   256 << 20,
	WallTime:       10 * time.Minute,
	MaxOutputBytes: 1 << 20,
}

// WithDefaults is p with every zero bound taken from DefaultPolicy, as a
// command runs under it (here, or in the AWS command runner).
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy
	if p.CPUTime <= 0 {
		p.CPUTime = d.CPUTime
	}
	if p.MemoryBytes <= 0 {
		p.MemoryBytes = d.MemoryBytes
	}
	if p.MaxProcs <= 0 {
		p.MaxProcs = d.MaxProcs
	}
	if p.MaxFileBytes <= 0 {
		p.MaxFileBytes = d.MaxFileBytes
	}
	if p.WallTime <= 0 {
		p.WallTime = d.WallTime
	}
	if p.MaxOutputBytes <= 0 {
		p.MaxOutputBytes = d.MaxOutputBytes
	}
	return p
}

// Network reports whether the policy gives the command a way out.
func (p Policy) Network() bool { return len(p.AllowHosts) > 0 }

// Reason says which bound stopped a command.
type Reason string

// Reasons.
const (
	WallTime  Reason = "wall_time" // killed at the deadline
	Output    Reason = "output"    // killed past MaxOutputBytes
	CPU       Reason = "cpu"       // RLIMIT_CPU
	Memory    Reason = "memory"    // RLIMIT_AS, inferred from how it died
	Processes Reason = "processes" // RLIMIT_NPROC, inferred from "cannot fork"
	FileSize  Reason = "file_size" // RLIMIT_FSIZE
)

// Sentinel errors.
var (
	// ErrLimit: a command hit a bound; the *LimitError says which.
	ErrLimit = errors.New("sandbox: command stopped by a limit")
	// ErrNoIsolation: namespaces (bwrap) are unavailable here.
	ErrNoIsolation = errors.New("sandbox: isolation unavailable")
	// ErrSetup: the sandbox could not be set up for this command.
	ErrSetup = errors.New("sandbox: setup failed")
)

// LimitError names the limit a command hit.
type LimitError struct {
	Reason Reason
	Limit  string // the bound, e.g. "WallTime 2s"
	Killed bool
}

func (e *LimitError) Error() string {
	verb := "hit"
	if e.Killed {
		verb = "killed at"
	}
	return fmt.Sprintf("sandbox: command %s its %s limit (%s)", verb, e.Reason, e.Limit)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

func (p Policy) describe(r Reason) string {
	switch r {
	case WallTime:
		return fmt.Sprintf("WallTime %s", p.WallTime)
	case Output:
		return fmt.Sprintf("MaxOutputBytes %d", p.MaxOutputBytes)
	case CPU:
		return fmt.Sprintf("CPUTime %s", p.CPUTime)
	case Memory:
		return fmt.Sprintf("MemoryBytes %d", p.MemoryBytes)
	case Processes:
		return fmt.Sprintf("MaxProcs %d", p.MaxProcs)
	case FileSize:
		return fmt.Sprintf("MaxFileBytes %d", p.MaxFileBytes)
	}
	return string(r)
}
