package compose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// DeployedRuns is what [PreviewUpgradeAPI] reads from a deployed Keel API
// (*client.Client).
type DeployedRuns interface {
	ListRuns(ctx context.Context, o client.ListRunsOptions) (api.RunList, error)
	RunVersion(ctx context.Context, id string) (api.RunVersion, error)
}

// PreviewUpgradeAPI is [PreviewUpgrade] for the runs in flight behind a
// deployed API (keel dev's, or the AWS api role's): the runs its caller
// may see (GET /v1/runs), each with what the deployment has of its
// version (GET /v1/runs/{id}/version), decided with app's agents as
// [PreviewUpgrade] decides. It only reads the API. app's agents are built
// as cfg says, on a scratch directory that is removed after, with models
// that are never called: the preview needs their definitions and tool
// schemas, not a provider or a key.
func PreviewUpgradeAPI(ctx context.Context, cfg config.Config, app App, b Backends, src DeployedRuns) ([]UpgradeRow, error) {
	agents, err := previewAgents(ctx, cfg, app, b)
	if err != nil {
		return nil, err
	}
	var rows []UpgradeRow
	o := client.ListRunsOptions{Limit: store.MaxRunsPerPage}
	for {
		page, err := src.ListRuns(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("list the runs: %w", err)
		}
		for _, r := range page.Runs {
			if r.Status.Terminal() {
				continue
			}
			rv, err := src.RunVersion(ctx, r.RunID)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", r.RunID, err)
			}
			if rv.Status.Terminal() {
				continue // it ended since the list was read
			}
			row, err := previewDeployed(agents, rv)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", r.RunID, err)
			}
			rows = append(rows, row)
		}
		if page.NextPageToken == "" {
			return rows, nil
		}
		o.PageToken = page.NextPageToken
	}
}

// previewDeployed decides on what the API served of a run: its
// definition, or the reason it has none, and its open records, read there
// as a Step reads them.
func previewDeployed(agents harness.AgentMap, rv api.RunVersion) (UpgradeRow, error) {
	r := run.Run{ID: rv.RunID, Agent: rv.Agent, Status: rv.Status, Error: rv.Error, AgentVersion: rv.AgentVersion}
	from := func() (string, error) { return rv.RecordsVersion, nil }
	def := func(_, version string) (agentver.Definition, string, error) {
		switch {
		case rv.Definition != nil && rv.Definition.Version == version:
			return *rv.Definition, "", nil
		case rv.Definition != nil:
			return agentver.Definition{}, "", fmt.Errorf("the API served the definition of %s for version %s", agentver.Short(rv.Definition.Version), agentver.Short(version))
		case rv.DefinitionMissing == "":
			return agentver.Definition{}, "", errors.New("the API served neither the definition of version " + agentver.Short(version) + " nor why it has none")
		}
		return agentver.Definition{}, rv.DefinitionMissing, nil
	}
	open := func(agentver.Definition) (agentver.Open, error) {
		if rv.Open == nil {
			return agentver.Open{}, errors.New("the API served no open records with the definition")
		}
		return *rv.Open, nil
	}
	home := func(version string) (string, error) {
		if version != rv.RecordsVersion {
			return "", nil
		}
		return rv.Home, nil
	}
	return previewVerdict(agents, r, from, home, def, open)
}

// previewAgents builds app's agents as a worker under cfg would, on a
// scratch store: only their definitions and tools are used.
func previewAgents(ctx context.Context, cfg config.Config, app App, b Backends) (harness.AgentMap, error) {
	if len(app.Agents) == 0 {
		return nil, errors.New("no agents: pass at least one keel.Agent to keel.Main")
	}
	tmp, err := os.MkdirTemp("", "keel-preview-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cfg = cfg.Defaults()
	cfg.DataDir, cfg.WorkspaceRoot = tmp, filepath.Join(tmp, "workspaces")
	cfg.Store, cfg.Artifacts = "sqlite:"+filepath.Join(tmp, "keel.db"), "fs:"+filepath.Join(tmp, "artifacts")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	arts, err := artfs.New(filepath.Join(tmp, "artifacts"))
	if err != nil {
		return nil, err
	}
	b.NewModel = refuseModels("upgrade-check")
	agents, _, err := buildAgents(ctx, cfg, app, arts, b, nil)
	return agents, err
}
