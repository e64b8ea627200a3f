package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/doctor"
	"github.com/keelrun/keel/internal/observe/explain"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// RunRecords is what a run's story, its bundle and its version check
// (GET /v1/runs/{id}/version) read beyond [Store]: a subset of
// store.Store.
type RunRecords interface {
	ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error)
	ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error)
	ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error)
	HasGrant(ctx context.Context, sessionID, tool string) (bool, error)
}

// Deployment reports the running deployment's composition (keel doctor).
type Deployment interface {
	Deployment(ctx context.Context) doctor.Facts
}

// DeploymentReport is the body of GET /v1/deployment: the facts of the
// deployment and the ten production questions answered from them.
type DeploymentReport struct {
	Facts   doctor.Facts    `json:"facts"`
	Answers []doctor.Answer `json:"answers"`
	Gaps    int             `json:"gaps"`
	Text    string          `json:"text"`
}

// records joins the API's two record interfaces into what telemetry reads.
type records struct {
	Store
	RunRecords
}

// ListOperations reads through the run records (both interfaces have it).
func (r records) ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error) {
	return r.RunRecords.ListOperations(ctx, runID, pendingOnly)
}

// ListInputs reads through the run records (both interfaces have it).
func (r records) ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error) {
	return r.RunRecords.ListInputs(ctx, runID, pendingOnly)
}

// runRecords is the run's records, or false (answered 404) when the API
// was built without RunRecords.
func (s *server) runRecords(w http.ResponseWriter) (telemetry.Records, bool) {
	if s.records == nil {
		writeError(w, notFound("run records (this deployment serves no bundle or explain)"))
		return nil, false
	}
	return records{s.store, s.records}, true
}

// explainRun serves GET /v1/runs/{id}/explain: the run's story as JSON
// (with its text), or as text with ?format=text.
func (s *server) explainRun(w http.ResponseWriter, r *http.Request, principal string) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "text" {
		writeError(w, badField(CodeInvalidField, "format", "format must be json or text"))
		return
	}
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	rec, ok := s.runRecords(w)
	if !ok {
		return
	}
	st, err := explain.Explain(r.Context(), rec, rr.ID)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	if v := s.versionWarning(r.Context(), rr); v != nil {
		warnUpgrade(&st, rr, *v)
	}
	if format == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(st.Text))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// bundle serves GET /v1/runs/{id}/bundle: the run's debug bundle, built
// now from its records (so any run has one, not only those Finalize
// wrote), as a tar.gz.
func (s *server) bundle(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	rec, ok := s.runRecords(w)
	if !ok {
		return
	}
	var states telemetry.States
	if s.artifacts != nil {
		states = s.artifacts
	}
	_, data, err := telemetry.Build(r.Context(), rec, states, rr.ID, s.bundleEnv)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Content-Disposition", `attachment; filename="`+telemetry.BundleName(rr.Status)+`"`)
	h.Set("X-Content-SHA256", run.HashBytes(data))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// deployment serves GET /v1/deployment.
func (s *server) deployment(w http.ResponseWriter, r *http.Request, _ string) {
	if s.deploy == nil {
		writeError(w, notFound("deployment facts"))
		return
	}
	f := s.deploy.Deployment(r.Context())
	as := doctor.Answers(f)
	writeJSON(w, http.StatusOK, DeploymentReport{Facts: f, Answers: as, Gaps: doctor.Gaps(as), Text: doctor.Render(f, as)})
}
