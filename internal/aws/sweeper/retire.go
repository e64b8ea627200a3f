package sweeper

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Versions lists and deletes the published versions of the step
// function (on AWS: Lambda versions behind the live alias).
type Versions interface {
	// Published returns the published versions, each NAME:N, and the one
	// the live alias points to.
	Published(ctx context.Context) (versions []string, live string, err error)
	// Delete deletes one published version (NAME:N).
	Delete(ctx context.Context, version string) error
}

// Retirement finds the step function versions no live run uses and
// deletes them. A version is kept while it is the live one, newer than
// the live one (a deploy between publishing and moving the alias), or a
// home (agentver.Home) of the agent version a live run was created
// under: that run's Steps may still be sent to it. Live runs are
// every run not finished, including those waiting for a person, who may
// settle them back into running.
type Retirement struct {
	Versions Versions
	// Homes lists the recorded homes (agentver.Homes on the artifacts).
	Homes func(ctx context.Context) ([]agentver.Home, error)
}

// Version actions a report names.
const (
	VersionKept    = "kept"
	VersionRetired = "retired"
)

// VersionReport says what became of one published version.
type VersionReport struct {
	Function string `json:"function"`
	Action   string `json:"action"`
	Why      string `json:"why"`
	// Runs are the live runs that keep it (at most ten are named).
	Runs []string `json:"runs,omitempty"`
}

// live are the statuses of runs whose version must stay runnable.
var live = append(slices.Clone(unfinished), run.StatusNeedsHuman)

// retire runs the retirement once: each published version is kept or
// deleted, and said so.
func (s *Sweeper) retire(ctx context.Context) ([]VersionReport, error) {
	rt := s.Retirement
	published, current, err := rt.Versions.Published(ctx)
	if err != nil {
		return nil, fmt.Errorf("sweeper: list step function versions: %w", err)
	}
	homes, err := rt.Homes(ctx)
	if err != nil {
		return nil, err
	}
	users, err := s.versionUsers(ctx, homes)
	if err != nil {
		return nil, err
	}
	out := make([]VersionReport, 0, len(published))
	for _, v := range published {
		rep := VersionReport{Function: v, Action: VersionKept}
		switch n, liveN := number(v), number(current); {
		case v == current:
			rep.Why = "the live alias points to it"
		case n > liveN:
			rep.Why = "newer than the live version (a deploy in progress)"
		case len(users[n]) > 0:
			rep.Why = fmt.Sprintf("%d live run(s) were created under an agent version it runs", len(users[n]))
			rep.Runs = users[n][:min(len(users[n]), 10)]
		default:
			rep.Action, rep.Why = VersionRetired, "no live run uses it"
			if err := rt.Versions.Delete(ctx, v); err != nil {
				return out, fmt.Errorf("sweeper: retire %s: %w", v, err)
			}
			s.log().InfoContext(ctx, "sweep: retired step function version", "function", v)
		}
		out = append(out, rep)
	}
	return out, nil
}

// versionUsers maps function version numbers to the live runs whose
// records version they run.
func (s *Sweeper) versionUsers(ctx context.Context, homes []agentver.Home) (map[int][]string, error) {
	users := map[int][]string{}
	for _, st := range live {
		q := store.ListRunsQuery{Status: st, Limit: store.MaxRunsPerPage}
		for {
			page, err := s.Store.ListRuns(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("sweeper: list %s runs: %w", st, err)
			}
			for _, r := range page.Runs {
				// Homes are recorded for pinned agents only, and a pinned
				// run's records are all its creation version's: no
				// checkpoint needs reading.
				for _, h := range homes {
					if h.Agent == r.Agent && h.Version == r.AgentVersion {
						users[h.Number()] = append(users[h.Number()], r.ID)
					}
				}
			}
			if page.NextPageToken == "" {
				break
			}
			q.PageToken = page.NextPageToken
		}
	}
	return users, nil
}

// number is N of NAME:N (0 when there is none).
func number(fn string) int {
	i := strings.LastIndexByte(fn, ':')
	if i < 0 {
		return 0
	}
	n, _ := strconv.Atoi(fn[i+1:])
	return n
}
