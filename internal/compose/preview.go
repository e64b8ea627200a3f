package compose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// UpgradeRow is what the preview says of one run in flight.
type UpgradeRow struct {
	RunID   string           `json:"run_id"`
	Agent   string           `json:"agent"`
	Status  run.Status       `json:"status"`
	Verdict agentver.Verdict `json:"verdict"`
}

// PreviewUpgrade says, run by run, what app's agents would do with the
// runs in flight in cfg's store — continue, move after the check, or stop
// for a person, and why — without changing anything: a SQLite store is
// read from a copy (so no migration of this binary touches the file, and
// no definition of its agents is stored), a DynamoDB table is only read.
func PreviewUpgrade(ctx context.Context, cfg config.Config, app App, b Backends) ([]UpgradeRow, error) {
	cfg = cfg.Defaults()
	if path, ok := strings.CutPrefix(cfg.StoreURL(), "sqlite:"); ok {
		tmp, err := os.MkdirTemp("", "keel-preview-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if err := copyDB(path, filepath.Join(tmp, "keel.db")); err != nil {
			return nil, err
		}
		cfg.Store = "sqlite:" + filepath.Join(tmp, "keel.db")
	}
	cfg.Artifacts = cfg.ArtifactsURL()
	rt, err := open(ctx, cfg, app, b)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	var rows []UpgradeRow
	q := store.ListRunsQuery{Limit: store.MaxRunsPerPage}
	for {
		page, err := rt.Store.ListRuns(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Runs {
			if r.Status.Terminal() {
				continue
			}
			row, err := rt.previewRun(ctx, r)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", r.ID, err)
			}
			rows = append(rows, row)
		}
		if page.NextPageToken == "" {
			return rows, nil
		}
		q.PageToken = page.NextPageToken
	}
}

func (rt *Runtime) previewRun(ctx context.Context, r run.Run) (UpgradeRow, error) {
	row, err := rt.stepVerdict(ctx, r, rt.Store)
	return waitingStops(row, r), err
}

// stepVerdict is the verdict rt's Step would give r's records, read from
// rt's stores (the open records through rr).
func (rt *Runtime) stepVerdict(ctx context.Context, r run.Run, rr harness.RecordReader) (UpgradeRow, error) {
	from := func() (string, error) { return harness.RecordsVersion(ctx, rt.Store, rt.Artifacts, r) }
	home := func(version string) (string, error) {
		homes, err := agentver.Homes(ctx, rt.Artifacts)
		return agentver.HomeOf(homes, r.Agent, version), err
	}
	return decideVerdict(rt.Agents, r, from, home, harness.StoredDefinition(ctx, rt.Artifacts), func(old agentver.Definition) (agentver.Open, error) {
		items, err := rt.Store.ListPlanItems(ctx, r.ID)
		if err != nil {
			return agentver.Open{}, err
		}
		byCall := map[string]run.PlanItem{}
		for _, it := range items {
			byCall[it.CallID] = it
		}
		return harness.OpenRecords(ctx, rr, r, old, byCall, nil)
	})
}

// previewVerdict is the preview's verdict on r, whether its records are
// read from a store or from a deployed API: a run of an agent the new
// program lacks stops; otherwise the harness decides as a Step would
// (harness.DecideVersion) on the records version from gives (read only
// when the agent exists), def and open; a run already waiting for a
// person stops whatever the versions say. A pinned run whose version the
// deployment still runs elsewhere (home: on AWS, the retained step
// function version its Steps are sent to) continues there, untouched by
// the new program.
func previewVerdict(agents harness.AgentMap, r run.Run, from func() (string, error), home func(version string) (string, error),
	def harness.DefinitionSource, open func(agentver.Definition) (agentver.Open, error)) (UpgradeRow, error) {
	row, err := decideVerdict(agents, r, from, home, def, open)
	return waitingStops(row, r), err
}

// decideVerdict is [previewVerdict] as a Step of agents would decide,
// whatever the run's status.
func decideVerdict(agents harness.AgentMap, r run.Run, from func() (string, error), home func(version string) (string, error),
	def harness.DefinitionSource, open func(agentver.Definition) (agentver.Open, error)) (UpgradeRow, error) {
	row := UpgradeRow{RunID: r.ID, Agent: r.Agent, Status: r.Status}
	a, ok := agents[r.Agent]
	if !ok {
		row.Verdict = agentver.Verdict{Action: agentver.Stop, From: r.AgentVersion,
			Problems: []string{"the new program has no agent " + r.Agent}}
		return row, nil
	}
	v, err := from()
	if err != nil {
		return row, err
	}
	if row.Verdict, _, err = harness.DecideVersion(a, v, def, open); err != nil {
		return row, err
	}
	if a.Policy == agentver.Pin && row.Verdict.Action == agentver.Stop && v != "" && v != a.Version {
		h, err := home(v)
		if err != nil {
			return row, err
		}
		if h != "" {
			row.Verdict = agentver.Verdict{Action: agentver.Continue, From: v, To: v,
				Notes: []string{fmt.Sprintf("pinned: its Steps keep running version %s's code, on %s", agentver.Short(v), h)}}
		}
	}
	return row, nil
}

// waitingStops is the preview's word on a run already waiting for a
// person: nothing moves it but a person, whatever the versions say.
func waitingStops(row UpgradeRow, r run.Run) UpgradeRow {
	if r.Status == run.StatusNeedsHuman {
		row.Verdict.Action = agentver.Stop
		row.Verdict.Problems = append([]string{"already waits for a person: " + r.Error}, row.Verdict.Problems...)
	}
	return row
}

// copyDB copies a SQLite file and its write-ahead log, if any.
func copyDB(from, to string) error {
	for _, suffix := range []string{"", "-wal"} {
		src, err := os.Open(from + suffix)
		if errors.Is(err, os.ErrNotExist) {
			if suffix == "" {
				return fmt.Errorf("no store at %s: %w", from, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		dst, err := os.OpenFile(to+suffix, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			src.Close()
			return err
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
