package agentver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// A home is where a version's code can still be run: on AWS, a published
// version of the step function (NAME:N). Each is recorded as an empty
// artifact named VERSION@FUNCTION beside the version's definition: the
// artifact store never overwrites, and a version deployed twice (a
// configuration change publishes another function version with the same
// code) simply has two homes.
const homeSep = "@"

// Home is one recorded home.
type Home struct {
	Agent, Version string
	// Function is NAME:N, a qualified function name.
	Function string
}

// Number is the function version N of NAME:N; 0 when Function has no
// numeric qualifier.
func (h Home) Number() int {
	_, q, ok := strings.Cut(h.Function, ":")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// SaveHome records that function runs agent's version. It is idempotent.
func SaveHome(ctx context.Context, arts artifact.Store, agent, version, function string) error {
	h := Home{Agent: agent, Version: version, Function: function}
	if version == "" || h.Number() == 0 {
		return fmt.Errorf("agent version home %q: want a version and NAME:N", function)
	}
	k := artifact.Key{RunID: keyRun, CheckpointID: agent, Name: version + homeSep + function}
	if _, err := arts.Put(ctx, k, nil); err != nil && !errors.Is(err, artifact.ErrExists) {
		return fmt.Errorf("save home of agent version %s: %w", Short(version), err)
	}
	return nil
}

// Homes lists every recorded home, of every agent.
func Homes(ctx context.Context, arts artifact.Store) ([]Home, error) {
	infos, err := arts.List(ctx, keyRun)
	if err != nil {
		return nil, fmt.Errorf("list agent version homes: %w", err)
	}
	var out []Home
	for _, in := range infos {
		v, fn, ok := strings.Cut(in.Key.Name, homeSep)
		if !ok {
			continue // a definition
		}
		if h := (Home{Agent: in.Key.CheckpointID, Version: v, Function: fn}); h.Number() > 0 {
			out = append(out, h)
		}
	}
	return out, nil
}

// HomeOf is the function that runs agent's version: of its homes, the
// newest function version (the latest configuration of that code); ""
// when none is recorded.
func HomeOf(homes []Home, agent, version string) string {
	best := Home{}
	for _, h := range homes {
		if h.Agent == agent && h.Version == version && h.Number() > best.Number() {
			best = h
		}
	}
	return best.Function
}
