package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/observe/explain"
)

// A run the version check stopped (needs_human, agent_upgrade_blocked)
// has nothing to settle: POST /v1/runs/{id}/resolve is the person's
// decision it waits for — finish it under the version that wrote its
// records (old_version, served by a deployment of that version), or
// deny the calls it waits to make and go on under the running version
// (deny) — recorded in one store transition (store.Resolver).

// ResolveRequest is the body of POST /v1/runs/{id}/resolve.
type ResolveRequest struct {
	// Decision is old_version or deny.
	Decision string `json:"decision"`
	// Reason is why: required; with deny it is what the model is told.
	Reason string `json:"reason"`
}

// Codes of the resolve endpoint.
const (
	// CodeNotResolvable: 409, the run is not needs_human, or it waits on
	// a needs_human operation (settle that).
	CodeNotResolvable = "not_resolvable"
	// CodeWrongVersion: 409, old_version asked of a deployment that runs
	// another version of the agent than the one that wrote the run's
	// records: its Step would stop the run again.
	CodeWrongVersion = "wrong_agent_version"
	// CodeStillBlocked: 409, deny would not let this deployment's Step
	// go on (the run depends on more than the calls a denial answers:
	// a pinned agent, a removed tool's grant, a missing definition).
	CodeStillBlocked = "still_blocked"
)

// VersionChecker is the version check a Step of this deployment makes
// (harness.DecideVersion over the run's records), asked without changing
// anything. Optional: without it the API warns of nothing and refuses
// no resolution on version grounds.
type VersionChecker interface {
	// CheckVersion returns the verdict this deployment's Step would give
	// r's records — as they stand, or with assume as a resolution would
	// leave them (an error wrapping store.ErrConflict where it would be
	// refused): From is the version that wrote them, To the one this
	// deployment runs. For a run of an agent it does not serve, the
	// verdict stops with that problem.
	CheckVersion(ctx context.Context, r run.Run, assume *store.Resolution) (agentver.Verdict, error)
}

// resolve serves POST /v1/runs/{id}/resolve.
func (s *server) resolve(w http.ResponseWriter, r *http.Request, principal string) {
	var req ResolveRequest
	if e := s.decodeBody(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if e := validResolve(req); e != nil {
		writeError(w, e)
		return
	}
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	if rr.Status.Terminal() {
		writeError(w, conflict(CodeRunFinished, fmt.Sprintf("the run is %s", rr.Status)))
		return
	}
	if rr.Status != run.StatusNeedsHuman {
		writeError(w, conflict(CodeNotResolvable, fmt.Sprintf("the run is %s: only a needs_human run waits for this decision", rr.Status)))
		return
	}
	ctx := r.Context()
	decision := store.ResolveDecision(req.Decision)
	res := store.Resolution{RunID: rr.ID, Decision: decision, By: principal, Reason: req.Reason}
	if e := s.resolvable(ctx, rr, res); e != nil {
		writeError(w, e)
		return
	}
	after, err := s.store.ResolveRun(ctx, res)
	switch {
	case errors.Is(err, store.ErrConflict):
		writeError(w, conflict(CodeNotResolvable, "the run moved on, or waits on a needs_human operation (settle it: keel settle); read it again"))
		return
	case err != nil:
		s.fail(w, r, "run", err)
		return
	}
	if err := s.continueRun(ctx, rr.ID); err != nil {
		// The decision is recorded; the sweeper resumes the run.
		s.log.WarnContext(ctx, "continue after resolve", "run_id", rr.ID, "err", err)
	}
	writeJSON(w, http.StatusOK, runView(after))
}

// resolvable refuses a decision this deployment's Step would not honour:
// old_version where it runs another version than the one that wrote the
// run's records, deny where a denial leaves the run blocked.
func (s *server) resolvable(ctx context.Context, rr run.Run, res store.Resolution) *Error {
	if s.versions == nil {
		return nil
	}
	d := res.Decision
	v, err := s.versions.CheckVersion(ctx, rr, &res)
	if errors.Is(err, store.ErrConflict) {
		return conflict(CodeNotResolvable, "the run waits on a needs_human operation: settle it (keel settle), or it moved on; read it again")
	}
	if err != nil {
		s.log.ErrorContext(ctx, "version check", "run_id", rr.ID, "err", err)
		return errInternal()
	}
	switch {
	case d == store.ResolveOldVersion && v.Action != agentver.Continue && v.From != v.To:
		return conflict(CodeWrongVersion, fmt.Sprintf("this deployment runs agent version %s, and the run's records were written by %s: "+
			"start %s's build again (keel dev) or deploy it, then resolve with old_version there; or resolve with deny here",
			orNone(agentver.Short(v.To)), orNone(agentver.Short(v.From)), orNone(agentver.Short(v.From))))
	case v.Action == agentver.Stop && d == store.ResolveOldVersion:
		return conflict(CodeStillBlocked, "this deployment cannot run it: "+v.Reason())
	case v.Action == agentver.Stop:
		return conflict(CodeStillBlocked, "denying its calls would not let this deployment's version go on: "+v.Reason()+
			"; finish it with the build of version "+orNone(agentver.Short(v.From))+" (resolve with old_version there), or cancel it")
	}
	return nil
}

func validResolve(req ResolveRequest) *Error {
	switch store.ResolveDecision(req.Decision) {
	case store.ResolveOldVersion, store.ResolveDeny:
	case "":
		return badField(CodeMissingField, "decision", `decision is required: "old_version" or "deny"`)
	default:
		return badField(CodeInvalidField, "decision", fmt.Sprintf(`decision must be "old_version" or "deny", not %q`, req.Decision))
	}
	if req.Reason == "" {
		return badField(CodeMissingField, "reason", "reason is required: why (with deny, what the model is told)")
	}
	if len(req.Reason) > maxReason {
		return badField(CodeInvalidField, "reason", fmt.Sprintf("reason exceeds %d bytes", maxReason))
	}
	return nil
}

// versionWarning is the verdict of this deployment's Step on a run that
// waits for a person's approval, when that Step would stop it: what a
// person about to approve must know (GET /v1/runs/{id}: upgrade_blocks).
// nil when it would not, or nobody can tell. It reads every checkpoint
// of the run, so it is asked only of one run at a time.
func (s *server) versionWarning(ctx context.Context, rr run.Run) *agentver.Verdict {
	if s.versions == nil || rr.Status != run.StatusAwaitingApproval {
		return nil
	}
	v, err := s.versions.CheckVersion(ctx, rr, nil)
	if err != nil {
		s.log.WarnContext(ctx, "version check for a warning", "run_id", rr.ID, "err", err)
		return nil
	}
	if v.Action != agentver.Stop {
		return nil
	}
	return &v
}

func orNone(version string) string {
	if version == "" {
		return "(none)"
	}
	return version
}

// warnUpgrade tells, in a run's story, that this deployment's Step would
// stop it: an approval given now would not be applied.
func warnUpgrade(st *explain.Story, rr run.Run, v agentver.Verdict) {
	st.Warn(fmt.Sprintf("this deployment runs agent version %s, and its version check would stop this run for a person (records of %s: %s): an approval given now is not applied",
		orNone(agentver.Short(v.To)), orNone(agentver.Short(v.From)), v.Reason()),
		explain.Action{Why: "deny the waiting call: the model is told your reason and may ask again under this version's schema",
			Command: fmt.Sprintf("keel deny %s --reason …", rr.ID)},
		explain.Action{Why: fmt.Sprintf("or decide with version %s's build running again (start it, or deploy it)", orNone(agentver.Short(v.From))),
			Command: fmt.Sprintf("keel approve %s", rr.ID)})
}
