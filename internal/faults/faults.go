// Package faults compiles Keel's crash points into the runtime. With
// KEEL_FAULTPOINT=name[:nth] set when the process starts, the nth time
// (default the first) execution reaches the named point the process sends
// itself SIGKILL: no deferred code, no graceful shutdown, exactly what a
// power cut or an OOM kill does. Unset, Hit is a single nil check.
package faults

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Points is a parsed KEEL_FAULTPOINT. The zero value never fires.
type Points struct {
	name string
	nth  int64
	seen atomic.Int64
	// kill is how the process dies; tests replace it.
	kill func()
}

// CountAll, as KEEL_FAULTPOINT, kills nowhere and writes one line
// (HitPrefix + point name) to stderr at every hit of every point: how
// `keel crashtest` learns how often a run reaches each point.
const CountAll = "*"

// HitPrefix starts the stderr line of a hit counted under CountAll.
const HitPrefix = "keel: fault point hit: "

// Parse reads "name" or "name:nth", or CountAll. An empty spec gives Points that never fire.
func Parse(spec string) (*Points, error) {
	p := &Points{kill: killSelf}
	if spec == "" {
		return p, nil
	}
	name, nthStr, hasNth := strings.Cut(spec, ":")
	if name == "" {
		return nil, fmt.Errorf("KEEL_FAULTPOINT %q: empty point name", spec)
	}
	p.name, p.nth = name, 1
	if hasNth {
		n, err := strconv.ParseInt(nthStr, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("KEEL_FAULTPOINT %q: nth must be a positive integer", spec)
		}
		p.nth = n
	}
	return p, nil
}

// FromEnv reads KEEL_FAULTPOINT once.
func FromEnv() (*Points, error) { return Parse(os.Getenv("KEEL_FAULTPOINT")) }

// Name is the armed point, or "".
func (p *Points) Name() string { return p.name }

// Hit is called at each fault point.
func (p *Points) Hit(name string) {
	if p == nil || p.name == "" {
		return
	}
	if p.name == CountAll {
		fmt.Fprintf(os.Stderr, "%s%s\n", HitPrefix, name)
		return
	}
	if p.name != name {
		return
	}
	if p.seen.Add(1) == p.nth {
		p.kill()
	}
}

// WithKill returns p with another way to die (for tests of the parser).
func (p *Points) WithKill(kill func()) *Points { p.kill = kill; return p }

func killSelf() {
	// Flush nothing: stderr is unbuffered, so this line makes it out.
	fmt.Fprintf(os.Stderr, "keel: fault point reached: SIGKILL pid %d\n", os.Getpid())
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // never returns
}
