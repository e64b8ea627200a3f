package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// maxIDLen bounds every id a client names (run, session, approval,
// checkpoint, idempotency key), so that they fit any backend's key limits.
const maxIDLen = 200

// validID reports whether s can be an id: 1 to maxIDLen characters from
// [A-Za-z0-9._:-]. Ids are path segments and keys; nothing else is needed.
func validID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func checkID(field, v string) *Error {
	if v == "" {
		return badField(CodeMissingField, field, field+" is required")
	}
	if !validID(v) {
		return badField(CodeInvalidField, field, fmt.Sprintf("%s must be 1 to %d characters from A-Z a-z 0-9 . _ : -", field, maxIDLen))
	}
	return nil
}

// checkText validates a required free-text field.
func checkText(field, v string) *Error {
	if strings.TrimSpace(v) == "" {
		return badField(CodeMissingField, field, field+" is required and must not be blank")
	}
	if len(v) > store.MaxText {
		return badField(CodeInvalidField, field, fmt.Sprintf("%s exceeds %d bytes", field, store.MaxText))
	}
	if !utf8.ValidString(v) {
		return badField(CodeInvalidField, field, field+" is not valid UTF-8")
	}
	return nil
}

// pathRun returns the run the request path names ({id}) if principal owns
// it. Otherwise it writes the error response and returns false; another
// principal's run is reported exactly like a missing one.
func (s *server) pathRun(w http.ResponseWriter, r *http.Request, principal string) (run.Run, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, notFound("run"))
		return run.Run{}, false
	}
	rr, err := s.store.GetRun(r.Context(), id)
	if err == nil && rr.Owner != principal {
		err = notFound("run")
	}
	if err != nil {
		s.fail(w, r, "run", err)
		return run.Run{}, false
	}
	return rr, true
}

// liveRun is pathRun for a control request (cancel, input): the run, or
// false once the response is written — 404 as pathRun, or 409
// CodeRunFinished when the run has ended, with the message finished
// formats from its status ("%s").
func (s *server) liveRun(w http.ResponseWriter, r *http.Request, principal, finished string) (run.Run, bool) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return run.Run{}, false
	}
	if rr.Status.Terminal() {
		writeError(w, conflict(CodeRunFinished, fmt.Sprintf(finished, rr.Status)))
		return run.Run{}, false
	}
	return rr, true
}

// MaxDeadlineYears bounds how far ahead a run's deadline may be, in
// calendar years from the request (leap days included: not 3,650 days):
// the stores keep times as int64 Unix nanoseconds (up to the year 2262),
// and no run waits a decade.
const MaxDeadlineYears = 10

// sameLimits reports whether a retried create asks for the limits the run
// was stored with. A deadline the request did not give comes from the
// agent's timeout and the time of the request, so it is not compared.
func sameLimits(stored, asked run.Limits, explicitDeadline bool) bool {
	return stored.MaxSteps == asked.MaxSteps && stored.MaxToolCalls == asked.MaxToolCalls &&
		stored.MaxTokens == asked.MaxTokens && stored.MaxSpendMicroUSD == asked.MaxSpendMicroUSD &&
		(!explicitDeadline || stored.Deadline.Equal(asked.Deadline))
}

// validateCreate checks a create request in full and returns the limits
// and policy to store.
func (s *server) validateCreate(req *CreateRunRequest, key string) (run.Limits, run.InputPolicy, *Error) {
	if req.Agent == "" {
		return run.Limits{}, "", badField(CodeMissingField, "agent", "agent is required")
	}
	defaults, known := s.agents.Agent(req.Agent)
	if !known {
		msg := fmt.Sprintf("unknown agent %q", req.Agent)
		if n, ok := s.agents.(AgentNamer); ok {
			msg += fmt.Sprintf(" (this API runs: %s)", strings.Join(n.AgentNames(), ", "))
		}
		return run.Limits{}, "", badField(CodeInvalidField, "agent", msg)
	}
	if e := checkText("input", req.Input); e != nil {
		return run.Limits{}, "", e
	}
	if req.SessionID != "" {
		if e := checkID("session_id", req.SessionID); e != nil {
			return run.Limits{}, "", e
		}
	}
	if key != "" && !validID(key) {
		return run.Limits{}, "", badField(CodeInvalidField, "Idempotency-Key",
			fmt.Sprintf("the Idempotency-Key header must be 1 to %d characters from A-Z a-z 0-9 . _ : -", maxIDLen))
	}
	policy := req.InputPolicy
	if policy != "" && !policy.Valid() {
		return run.Limits{}, "", badField(CodeInvalidField, "input_policy",
			fmt.Sprintf("input_policy must be reject, queue, interrupt or rollback, not %q", policy))
	}
	var lim run.Limits
	if l := req.Limits; l != nil {
		for _, f := range []struct {
			name string
			v    int64
		}{{"max_steps", l.MaxSteps}, {"max_tool_calls", l.MaxToolCalls}, {"max_tokens", l.MaxTokens}, {"max_spend_micro_usd", l.MaxSpendMicroUSD}} {
			if f.v < 0 {
				return run.Limits{}, "", badField(CodeInvalidField, "limits."+f.name, "limits."+f.name+" must not be negative")
			}
		}
		lim = run.Limits{MaxSteps: l.MaxSteps, MaxToolCalls: l.MaxToolCalls, MaxTokens: l.MaxTokens, MaxSpendMicroUSD: l.MaxSpendMicroUSD}
		if l.Deadline != "" {
			d, err := time.Parse(time.RFC3339, l.Deadline)
			if err != nil {
				return run.Limits{}, "", badField(CodeInvalidField, "limits.deadline", "limits.deadline must be an RFC 3339 time such as 2030-01-02T15:04:05Z")
			}
			if !d.After(s.now()) {
				return run.Limits{}, "", badField(CodeInvalidField, "limits.deadline", "limits.deadline is in the past")
			}
			if d.After(s.now().AddDate(MaxDeadlineYears, 0, 0)) {
				return run.Limits{}, "", badField(CodeInvalidField, "limits.deadline",
					fmt.Sprintf("limits.deadline must be at most %d calendar years ahead (by the date, leap days included)", MaxDeadlineYears))
			}
			lim.Deadline = d.UTC()
		}
	}
	lim, policy = defaults.Apply(lim, policy, s.now())
	return lim, policy, nil
}

// createRun serves POST /v1/runs.
func (s *server) createRun(w http.ResponseWriter, r *http.Request, principal string) {
	var req CreateRunRequest
	if e := s.decodeBody(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	limits, policy, e := s.validateCreate(&req, key)
	if e != nil {
		writeError(w, e)
		return
	}
	ctx := r.Context()
	if req.SessionID != "" {
		// A session carries grants (confirm_once): joining another
		// principal's session would borrow them. It is reported as absent.
		page, err := s.store.ListRuns(ctx, store.ListRunsQuery{SessionID: req.SessionID, Limit: 1})
		if err != nil {
			s.fail(w, r, "session", err)
			return
		}
		if len(page.Runs) > 0 && page.Runs[0].Owner != principal {
			writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "session_id", Message: "session not found"})
			return
		}
	}
	sessionID := req.SessionID
	if sessionID == "" {
		sessionID = run.NewID("ses")
	}
	now := s.now().UTC()
	defs, _ := s.agents.Agent(req.Agent)
	stored, created, err := s.store.CreateRun(ctx, run.Run{
		ID: run.NewID("run"), SessionID: sessionID, Owner: principal, Agent: req.Agent, ClientKey: key,
		Request: req.Input, Status: run.StatusCreated, InputPolicy: policy, Limits: limits,
		TraceParent: run.NewTraceParent(), AgentVersion: defs.Version, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	if !created && (stored.Agent != req.Agent || stored.Request != req.Input ||
		(req.SessionID != "" && stored.SessionID != req.SessionID) ||
		stored.InputPolicy != policy || !sameLimits(stored.Limits, limits, req.Limits != nil && req.Limits.Deadline != "")) {
		writeError(w, &Error{Status: http.StatusConflict, Code: CodeIdempotencyKeyReused, Field: "Idempotency-Key",
			Message: "this Idempotency-Key was used for run " + stored.ID + " with another agent, input, session, limits or input policy"})
		return
	}
	s.start(w, r, stored, created)
}

// start starts a stored run and answers with it: 201 when it is new, 200
// when an idempotent retry found it. The start is repeated on retries: the
// Starter is idempotent, and a crash between store and start heals. A
// retry that finds the run ended answers it without a start: nothing is
// left to drive, and its execution may be long gone.
func (s *server) start(w http.ResponseWriter, r *http.Request, stored run.Run, created bool) {
	if created || !stored.Status.Terminal() {
		if err := s.starter.StartRun(r.Context(), stored.ID); err != nil {
			if clientGone(r.Context(), err) {
				w.WriteHeader(499)
				return
			}
			s.log.ErrorContext(r.Context(), "start run", "run_id", stored.ID, "err", err)
			msg := "run " + stored.ID + " is stored but its execution could not be started"
			if stored.ClientKey != "" {
				msg += "; repeat the request with the same Idempotency-Key"
			}
			writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeStartFailed, Message: msg})
			return
		}
	}
	v := runView(stored)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", v.Links.Self)
	}
	writeJSON(w, status, v)
}

// listRuns serves GET /v1/runs: the caller's runs, newest first.
func (s *server) listRuns(w http.ResponseWriter, r *http.Request, principal string) {
	q := r.URL.Query()
	st := run.Status(q.Get("status"))
	if st != "" && !st.Valid() {
		writeError(w, badField(CodeInvalidField, "status", fmt.Sprintf("unknown status %q", st)))
		return
	}
	sid := q.Get("session_id")
	if sid != "" && !validID(sid) {
		writeError(w, badField(CodeInvalidField, "session_id", "session_id is not a valid id"))
		return
	}
	parent := q.Get("parent")
	if parent != "" && !validID(parent) {
		writeError(w, badField(CodeInvalidField, "parent", "parent is not a valid run id"))
		return
	}
	limit, e := queryInt(r, "limit", 50, 1, store.MaxRunsPerPage)
	if e != nil {
		writeError(w, e)
		return
	}
	page, err := s.store.ListRuns(r.Context(), store.ListRunsQuery{
		Owner: principal, Status: st, SessionID: sid, Parent: parent, Limit: int(limit), PageToken: q.Get("page_token"),
	})
	if errors.Is(err, store.ErrInvalid) {
		writeError(w, badField(CodeInvalidField, "page_token", "page_token is not valid for this query"))
		return
	}
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	out := RunList{Runs: make([]Run, 0, len(page.Runs)), NextPageToken: page.NextPageToken}
	for _, rr := range page.Runs {
		out.Runs = append(out.Runs, runView(rr))
	}
	writeJSON(w, http.StatusOK, out)
}

// getRun serves GET /v1/runs/{id}.
func (s *server) getRun(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	v := runView(rr)
	if rr.Status.Terminal() {
		// Accepted inputs the run ended before reading: said, never
		// silently dropped (they will not be delivered now).
		pending, err := s.store.ListInputs(r.Context(), rr.ID, true)
		if err != nil {
			s.fail(w, r, "run", err)
			return
		}
		for _, in := range pending {
			v.Undelivered = append(v.Undelivered, in.ID)
		}
	}
	writeJSON(w, http.StatusOK, v)
}
