package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// RunVersion is the body of GET /v1/runs/{id}/version: what only the
// deployment has of what the version check (package agentver) compares a
// run against, read as a Step reads it. upgrade-check --api decides with
// it, with a new program's agents, what that program would do with the
// run (harness.DecideVersion); the server decides nothing.
type RunVersion struct {
	RunID  string     `json:"run_id"`
	Agent  string     `json:"agent"`
	Status run.Status `json:"status"`
	Error  string     `json:"error,omitempty"`
	// AgentVersion is the version the run was created under.
	AgentVersion string `json:"agent_version,omitempty"`
	// RecordsVersion is the version that wrote the run's records
	// (harness.RecordsVersion); empty for a run from before versions.
	RecordsVersion string `json:"records_version,omitempty"`
	// Home is where the deployment still runs RecordsVersion's code (on
	// AWS, the retained step function version NAME:N a pinned run's Steps
	// are sent to); empty where it keeps no versions (keel dev).
	Home string `json:"home,omitempty"`
	// Definition is RecordsVersion's stored definition. When it is
	// absent, DefinitionMissing says why (the reason a Step would stop
	// the run with).
	Definition        *agentver.Definition `json:"definition,omitempty"`
	DefinitionMissing string               `json:"definition_missing,omitempty"`
	// Open is what the run has open (harness.OpenRecords against
	// Definition: its plan items by call id, its unfinished plan items as
	// the open calls); absent with Definition, which it is read against.
	Open *agentver.Open `json:"open,omitempty"`
}

// runVersion serves GET /v1/runs/{id}/version. It reads every checkpoint
// of the run (the records version): for a preview before a deploy, not
// for polling.
func (s *server) runVersion(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	if s.records == nil {
		writeError(w, notFound("run records (this deployment serves no version check)"))
		return
	}
	out, err := s.readRunVersion(r.Context(), rr)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) readRunVersion(ctx context.Context, rr run.Run) (RunVersion, error) {
	out := RunVersion{RunID: rr.ID, Agent: rr.Agent, Status: rr.Status, Error: rr.Error, AgentVersion: rr.AgentVersion}
	var arts artifact.Store
	if s.artifacts != nil {
		arts = readOnlyArtifacts{s.artifacts}
	}
	var err error
	if out.RecordsVersion, err = harness.RecordsVersion(ctx, s.store, arts, rr); err != nil {
		return out, err
	}
	if out.RecordsVersion == "" {
		out.DefinitionMissing = "the run is from before agent versions: nothing to compare"
		return out, nil
	}
	if arts != nil {
		homes, err := agentver.Homes(ctx, arts)
		if err != nil {
			return out, err
		}
		out.Home = agentver.HomeOf(homes, rr.Agent, out.RecordsVersion)
	}
	d, missing, err := harness.StoredDefinition(ctx, arts)(rr.Agent, out.RecordsVersion)
	if err != nil || missing != "" {
		out.DefinitionMissing = missing
		return out, err
	}
	items, err := s.records.ListPlanItems(ctx, rr.ID)
	if err != nil {
		return out, err
	}
	byCall := map[string]run.PlanItem{}
	for _, it := range items {
		byCall[it.CallID] = it
	}
	open, err := harness.OpenRecords(ctx, records{s.store, s.records}, rr, d, byCall, nil)
	if err != nil {
		return out, err
	}
	out.Definition, out.Open = &d, &open
	return out, nil
}

// readOnlyArtifacts is the API's artifact store where the kernel's
// readers take a whole one: they only Get.
type readOnlyArtifacts struct{ Artifacts }

var errReadOnly = errors.New("api: the artifact store is read-only here")

func (readOnlyArtifacts) Put(context.Context, artifact.Key, []byte) (artifact.Info, error) {
	return artifact.Info{}, errReadOnly
}
