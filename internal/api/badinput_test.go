package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// fixture is a store with runs in every situation the bad-input cases need.
type fixture struct {
	active   run.Run      // alice's, awaiting approval of pending, with checkpoint cp
	pending  run.Approval // pending on active
	cp       run.Checkpoint
	decided  run.Run      // alice's, its approval dec already approved
	dec      run.Approval // approved
	canceled run.Run      // alice's, cancel requested: approval can cancelled
	can      run.Approval
	finished run.Run // alice's, failed with approval fin still pending
	fin      run.Approval
	reject   run.Run // alice's, input policy reject
	rollback run.Run // alice's, input policy rollback
	bobs     run.Run // bob's, with checkpoint bobCP
	bobCP    run.Checkpoint
	keyed    run.Run // alice's, created through the API with Idempotency-Key k1
}

func newFixture(t *testing.T) (*env, *fixture) {
	e := newEnv(t, nil)
	ctx := context.Background()
	fx := &fixture{}
	fx.active = e.newRun("alice", run.InputQueue)
	fx.cp = e.checkpoint(fx.active.ID, 1)
	fx.pending = e.awaitApproval(fx.active.ID, `{"post":"draft-1","channel":"blog"}`)
	e.arts.Put(ctx, artifact.Key{RunID: fx.active.ID, CheckpointID: fx.cp.ID, Name: "report.md"}, []byte("# report\n"))

	fx.decided = e.newRun("alice", run.InputQueue)
	fx.dec = e.awaitApproval(fx.decided.ID, `{"post":"x"}`)
	var err error
	if fx.dec, err = e.store.DecideApproval(ctx, store.Decision{RunID: fx.decided.ID, ApprovalID: fx.dec.ID, Approve: true, ArgsHash: fx.dec.ArgsHash, DecidedBy: "alice"}); err != nil {
		t.Fatal(err)
	}

	fx.canceled = e.newRun("alice", run.InputQueue)
	fx.can = e.awaitApproval(fx.canceled.ID, `{"post":"y"}`)
	if _, _, err := e.store.RequestCancel(ctx, fx.canceled.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if fx.can, err = e.store.GetApproval(ctx, fx.canceled.ID, fx.can.ID); err != nil {
		t.Fatal(err)
	}

	fx.finished = e.newRun("alice", run.InputQueue)
	fx.fin = e.awaitApproval(fx.finished.ID, `{"post":"z"}`)
	e.setStatus(fx.finished.ID, run.StatusFailed)

	fx.reject = e.newRun("alice", run.InputReject)
	fx.rollback = e.newRun("alice", run.InputRollback)
	fx.bobs = e.newRun("bob", run.InputQueue)
	fx.bobCP = e.checkpoint(fx.bobs.ID, 1)

	var v api.Run
	e.doJSON("POST", "/v1/runs", aliceToken, `{"agent":"research","input":"hello"}`, map[string]string{"Idempotency-Key": "k1"}, 201, &v)
	if fx.keyed, err = e.store.GetRun(ctx, v.RunID); err != nil {
		t.Fatal(err)
	}
	return e, fx
}

// TestBadInput sends every endpoint requests it must refuse, and checks the
// status, the error body, that the stored state is byte-for-byte unchanged,
// and that nothing was started or resumed.
func TestBadInput(t *testing.T) {
	e, fx := newFixture(t)
	big := strings.Repeat("a", store.MaxText+1)
	huge := `{"agent":"research","input":"` + strings.Repeat("a", api.DefaultMaxBodyBytes) + `"}`
	create := func(extra string) string { return `{"agent":"research","input":"hi"` + extra + `}` }
	decideBody := func(d, h string) string { return fmt.Sprintf(`{"decision":%q,"args_hash":%q}`, d, h) }
	type tc struct {
		name   string
		method string
		path   string
		token  string
		body   string
		hdr    map[string]string
		status int
		code   string
		field  string
	}
	runP := func(r run.Run, rest string) string { return "/v1/runs/" + r.ID + rest }
	apr := func(r run.Run, a run.Approval) string { return "/v1/runs/" + r.ID + "/approvals/" + a.ID }
	cases := []tc{
		// Authentication and routing.
		{"no token", "GET", "/v1/runs", "", "", nil, 401, api.CodeUnauthorized, ""},
		{"unknown token", "GET", "/v1/runs", "tok-mallory", "", nil, 401, api.CodeUnauthorized, ""},
		{"basic auth", "GET", "/v1/runs", "", "", map[string]string{"Authorization": "Basic YTpi"}, 401, api.CodeUnauthorized, ""},
		{"create without token", "POST", "/v1/runs", "", create(""), nil, 401, api.CodeUnauthorized, ""},
		{"unknown endpoint", "GET", "/v1/nothing", aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"delete a run", "DELETE", runP(fx.active, ""), aliceToken, "", nil, 405, api.CodeMethodNotAllowed, ""},
		{"put runs", "PUT", "/v1/runs", aliceToken, create(""), nil, 405, api.CodeMethodNotAllowed, ""},
		{"get cancel", "GET", runP(fx.active, "/cancel"), aliceToken, "", nil, 405, api.CodeMethodNotAllowed, ""},

		// POST /v1/runs.
		{"create malformed", "POST", "/v1/runs", aliceToken, `{"agent":`, nil, 400, api.CodeMalformedJSON, ""},
		{"create syntax error", "POST", "/v1/runs", aliceToken, `{"agent" "research"}`, nil, 400, api.CodeMalformedJSON, ""},
		{"create empty body", "POST", "/v1/runs", aliceToken, "", nil, 400, api.CodeMalformedJSON, ""},
		{"create array", "POST", "/v1/runs", aliceToken, `[]`, nil, 400, api.CodeWrongType, ""},
		{"create trailing data", "POST", "/v1/runs", aliceToken, create("") + `{}`, nil, 400, api.CodeMalformedJSON, ""},
		{"create unknown field", "POST", "/v1/runs", aliceToken, create(`,"colour":"red"`), nil, 400, api.CodeUnknownField, "colour"},
		{"create unknown limit", "POST", "/v1/runs", aliceToken, create(`,"limits":{"max_steeps":3}`), nil, 400, api.CodeUnknownField, "max_steeps"},
		{"create agent number", "POST", "/v1/runs", aliceToken, `{"agent":5,"input":"hi"}`, nil, 400, api.CodeWrongType, "agent"},
		{"create limit string", "POST", "/v1/runs", aliceToken, create(`,"limits":{"max_steps":"ten"}`), nil, 400, api.CodeWrongType, "limits.max_steps"},
		{"create limits array", "POST", "/v1/runs", aliceToken, create(`,"limits":[1]`), nil, 400, api.CodeWrongType, "limits"},
		{"create no agent", "POST", "/v1/runs", aliceToken, `{"input":"hi"}`, nil, 400, api.CodeMissingField, "agent"},
		{"create unknown agent", "POST", "/v1/runs", aliceToken, `{"agent":"nope","input":"hi"}`, nil, 400, api.CodeInvalidField, "agent"},
		{"create no input", "POST", "/v1/runs", aliceToken, `{"agent":"research"}`, nil, 400, api.CodeMissingField, "input"},
		{"create blank input", "POST", "/v1/runs", aliceToken, `{"agent":"research","input":"  \n"}`, nil, 400, api.CodeMissingField, "input"},
		{"create input too long", "POST", "/v1/runs", aliceToken, `{"agent":"research","input":"` + big + `"}`, nil, 400, api.CodeInvalidField, "input"},
		{"create body too large", "POST", "/v1/runs", aliceToken, huge, nil, 413, api.CodeBodyTooLarge, ""},
		{"create bad session id", "POST", "/v1/runs", aliceToken, create(`,"session_id":"a/b"`), nil, 400, api.CodeInvalidField, "session_id"},
		{"create in bob's session", "POST", "/v1/runs", aliceToken, create(`,"session_id":"` + fx.bobs.SessionID + `"`), nil, 404, api.CodeNotFound, "session_id"},
		{"create bad policy", "POST", "/v1/runs", aliceToken, create(`,"input_policy":"ignore"`), nil, 400, api.CodeInvalidField, "input_policy"},
		{"create negative limit", "POST", "/v1/runs", aliceToken, create(`,"limits":{"max_tokens":-1}`), nil, 400, api.CodeInvalidField, "limits.max_tokens"},
		{"create bad deadline", "POST", "/v1/runs", aliceToken, create(`,"limits":{"deadline":"tomorrow"}`), nil, 400, api.CodeInvalidField, "limits.deadline"},
		{"create past deadline", "POST", "/v1/runs", aliceToken, create(`,"limits":{"deadline":"2001-01-01T00:00:00Z"}`), nil, 400, api.CodeInvalidField, "limits.deadline"},
		{"create far deadline", "POST", "/v1/runs", aliceToken, create(`,"limits":{"deadline":"9999-12-31T23:59:59Z"}`), nil, 400, api.CodeInvalidField, "limits.deadline"},
		{"create deadline in 11 years", "POST", "/v1/runs", aliceToken, create(`,"limits":{"deadline":"` + time.Now().AddDate(11, 0, 0).UTC().Format(time.RFC3339) + `"}`), nil, 400, api.CodeInvalidField, "limits.deadline"},
		{"create key reused, other limits", "POST", "/v1/runs", aliceToken, `{"agent":"research","input":"hello","limits":{"max_steps":3}}`, map[string]string{"Idempotency-Key": "k1"}, 409, api.CodeIdempotencyKeyReused, "Idempotency-Key"},
		{"create key reused, other policy", "POST", "/v1/runs", aliceToken, `{"agent":"research","input":"hello","input_policy":"reject"}`, map[string]string{"Idempotency-Key": "k1"}, 409, api.CodeIdempotencyKeyReused, "Idempotency-Key"},
		{"create field name case", "POST", "/v1/runs", aliceToken, `{"Agent":"research","input":"hi"}`, nil, 400, api.CodeUnknownField, "Agent"},
		{"create limit name case", "POST", "/v1/runs", aliceToken, create(`,"limits":{"MAX_STEPS":3}`), nil, 400, api.CodeUnknownField, "MAX_STEPS"},
		{"create duplicate key", "POST", "/v1/runs", aliceToken, `{"agent":"research","input":"hi","input":"ho"}`, nil, 400, api.CodeMalformedJSON, "input"},
		{"create duplicate limit", "POST", "/v1/runs", aliceToken, create(`,"limits":{"max_steps":3,"max_steps":4}`), nil, 400, api.CodeMalformedJSON, "limits.max_steps"},
		{"create invalid UTF-8", "POST", "/v1/runs", aliceToken, "{\"agent\":\"research\",\"input\":\"hi \xff\"}", nil, 400, api.CodeMalformedJSON, ""},
		{"decide duplicate decision", "POST", apr(fx.active, fx.pending), aliceToken, `{"decision":"deny","decision":"approve","args_hash":"` + fx.pending.ArgsHash + `"}`, nil, 400, api.CodeMalformedJSON, "decision"},
		{"input field case", "POST", runP(fx.active, "/input"), aliceToken, `{"Text":"a"}`, nil, 400, api.CodeUnknownField, "Text"},
		{"create bad key", "POST", "/v1/runs", aliceToken, create(""), map[string]string{"Idempotency-Key": "has space"}, 400, api.CodeInvalidField, "Idempotency-Key"},
		{"create key reused", "POST", "/v1/runs", aliceToken, `{"agent":"research","input":"other"}`, map[string]string{"Idempotency-Key": "k1"}, 409, api.CodeIdempotencyKeyReused, "Idempotency-Key"},
		{"create text/plain", "POST", "/v1/runs", aliceToken, create(""), map[string]string{"Content-Type": "text/plain"}, 415, api.CodeUnsupportedMediaType, "Content-Type"},
		{"create form", "POST", "/v1/runs", aliceToken, create(""), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, api.CodeUnsupportedMediaType, "Content-Type"},

		// GET /v1/runs and /v1/runs/{id}.
		{"list bad status", "GET", "/v1/runs?status=sleeping", aliceToken, "", nil, 400, api.CodeInvalidField, "status"},
		{"list limit zero", "GET", "/v1/runs?limit=0", aliceToken, "", nil, 400, api.CodeInvalidField, "limit"},
		{"list limit huge", "GET", "/v1/runs?limit=1001", aliceToken, "", nil, 400, api.CodeInvalidField, "limit"},
		{"list limit text", "GET", "/v1/runs?limit=ten", aliceToken, "", nil, 400, api.CodeWrongType, "limit"},
		{"list bad page token", "GET", "/v1/runs?page_token=garbage!", aliceToken, "", nil, 400, api.CodeInvalidField, "page_token"},
		{"list bad session", "GET", "/v1/runs?session_id=a%20b", aliceToken, "", nil, 400, api.CodeInvalidField, "session_id"},
		{"list bad parent", "GET", "/v1/runs?parent=a%20b", aliceToken, "", nil, 400, api.CodeInvalidField, "parent"},
		{"get unknown run", "GET", "/v1/runs/run_nope", aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"get bob's run", "GET", runP(fx.bobs, ""), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"get odd id", "GET", "/v1/runs/a%20b", aliceToken, "", nil, 404, api.CodeNotFound, ""},

		// Events.
		{"events negative after", "GET", runP(fx.active, "/events?after=-1"), aliceToken, "", nil, 400, api.CodeInvalidField, "after"},
		{"events text after", "GET", runP(fx.active, "/events?after=x"), aliceToken, "", nil, 400, api.CodeWrongType, "after"},
		{"events limit zero", "GET", runP(fx.active, "/events?limit=0"), aliceToken, "", nil, 400, api.CodeInvalidField, "limit"},
		{"events bad Last-Event-ID", "GET", runP(fx.active, "/events"), aliceToken, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "x"}, 400, api.CodeInvalidField, "Last-Event-ID"},
		{"events of bob's run", "GET", runP(fx.bobs, "/events"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"stream of bob's run", "GET", runP(fx.bobs, "/events"), aliceToken, "", map[string]string{"Accept": "text/event-stream"}, 404, api.CodeNotFound, ""},

		// Approvals.
		{"approvals of bob's run", "GET", runP(fx.bobs, "/approvals"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"get unknown approval", "GET", runP(fx.active, "/approvals/apr_nope"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"get approval as bob", "GET", apr(fx.active, fx.pending), bobToken, "", nil, 404, api.CodeNotFound, ""},
		{"get approval via other run", "GET", apr(fx.decided, fx.pending), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"decide malformed", "POST", apr(fx.active, fx.pending), aliceToken, `{"decision":"approve",`, nil, 400, api.CodeMalformedJSON, ""},
		{"decide unknown field", "POST", apr(fx.active, fx.pending), aliceToken, `{"decision":"approve","args_hash":"` + fx.pending.ArgsHash + `","force":true}`, nil, 400, api.CodeUnknownField, "force"},
		{"decide no decision", "POST", apr(fx.active, fx.pending), aliceToken, `{"args_hash":"` + fx.pending.ArgsHash + `"}`, nil, 400, api.CodeMissingField, "decision"},
		{"decide maybe", "POST", apr(fx.active, fx.pending), aliceToken, decideBody("maybe", fx.pending.ArgsHash), nil, 400, api.CodeInvalidField, "decision"},
		{"decide bool", "POST", apr(fx.active, fx.pending), aliceToken, `{"decision":true,"args_hash":"x"}`, nil, 400, api.CodeWrongType, "decision"},
		{"decide no hash", "POST", apr(fx.active, fx.pending), aliceToken, `{"decision":"approve"}`, nil, 400, api.CodeMissingField, "args_hash"},
		{"decide hash number", "POST", apr(fx.active, fx.pending), aliceToken, `{"decision":"approve","args_hash":12}`, nil, 400, api.CodeWrongType, "args_hash"},
		{"decide long reason", "POST", apr(fx.active, fx.pending), aliceToken, `{"decision":"deny","args_hash":"` + fx.pending.ArgsHash + `","reason":"` + strings.Repeat("r", 5000) + `"}`, nil, 400, api.CodeInvalidField, "reason"},
		{"decide wrong hash", "POST", apr(fx.active, fx.pending), aliceToken, decideBody("approve", strings.Repeat("0", 64)), nil, 409, api.CodeArgsHashMismatch, "args_hash"},
		{"deny wrong hash", "POST", apr(fx.active, fx.pending), aliceToken, decideBody("deny", "abc"), nil, 409, api.CodeArgsHashMismatch, "args_hash"},
		{"decide unknown approval", "POST", runP(fx.active, "/approvals/apr_nope"), aliceToken, decideBody("approve", fx.pending.ArgsHash), nil, 404, api.CodeNotFound, ""},
		{"decide as bob", "POST", apr(fx.active, fx.pending), bobToken, decideBody("approve", fx.pending.ArgsHash), nil, 404, api.CodeNotFound, ""},
		{"decide unknown run", "POST", "/v1/runs/run_nope/approvals/" + fx.pending.ID, aliceToken, decideBody("approve", fx.pending.ArgsHash), nil, 404, api.CodeNotFound, ""},
		{"decide decided", "POST", apr(fx.decided, fx.dec), aliceToken, decideBody("deny", fx.dec.ArgsHash), nil, 409, api.CodeApprovalNotPending, ""},
		{"decide cancelled", "POST", apr(fx.canceled, fx.can), aliceToken, decideBody("approve", fx.can.ArgsHash), nil, 409, api.CodeApprovalNotPending, ""},
		{"approve on finished run", "POST", apr(fx.finished, fx.fin), aliceToken, decideBody("approve", fx.fin.ArgsHash), nil, 409, api.CodeRunFinished, ""},

		// Cancel.
		{"cancel malformed", "POST", runP(fx.active, "/cancel"), aliceToken, `{`, nil, 400, api.CodeMalformedJSON, ""},
		{"cancel unknown field", "POST", runP(fx.active, "/cancel"), aliceToken, `{"now":true}`, nil, 400, api.CodeUnknownField, "now"},
		{"cancel finished", "POST", runP(fx.finished, "/cancel"), aliceToken, "", nil, 409, api.CodeRunFinished, ""},
		{"cancel bob's run", "POST", runP(fx.bobs, "/cancel"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"cancel unknown run", "POST", "/v1/runs/run_nope/cancel", aliceToken, "", nil, 404, api.CodeNotFound, ""},

		// Input.
		{"input no text", "POST", runP(fx.active, "/input"), aliceToken, `{}`, nil, 400, api.CodeMissingField, "text"},
		{"input text number", "POST", runP(fx.active, "/input"), aliceToken, `{"text":1}`, nil, 400, api.CodeWrongType, "text"},
		{"input unknown field", "POST", runP(fx.active, "/input"), aliceToken, `{"text":"a","urgent":1}`, nil, 400, api.CodeUnknownField, "urgent"},
		{"input too long", "POST", runP(fx.active, "/input"), aliceToken, `{"text":"` + big + `"}`, nil, 400, api.CodeInvalidField, "text"},
		{"input reject policy", "POST", runP(fx.reject, "/input"), aliceToken, `{"text":"more"}`, nil, 409, api.CodeInputRejected, ""},
		{"input rollback policy", "POST", runP(fx.rollback, "/input"), aliceToken, `{"text":"more"}`, nil, 409, api.CodeInputPolicyRollback, ""},
		{"input finished", "POST", runP(fx.finished, "/input"), aliceToken, `{"text":"more"}`, nil, 409, api.CodeRunFinished, ""},
		{"input bob's run", "POST", runP(fx.bobs, "/input"), aliceToken, `{"text":"more"}`, nil, 404, api.CodeNotFound, ""},

		// Fork.
		{"fork no checkpoint", "POST", runP(fx.active, "/fork"), aliceToken, `{}`, nil, 400, api.CodeMissingField, "checkpoint_id"},
		{"fork bad checkpoint id", "POST", runP(fx.active, "/fork"), aliceToken, `{"checkpoint_id":"../x"}`, nil, 400, api.CodeInvalidField, "checkpoint_id"},
		{"fork checkpoint number", "POST", runP(fx.active, "/fork"), aliceToken, `{"checkpoint_id":7}`, nil, 400, api.CodeWrongType, "checkpoint_id"},
		{"fork unknown checkpoint", "POST", runP(fx.active, "/fork"), aliceToken, `{"checkpoint_id":"cp_nope"}`, nil, 404, api.CodeNotFound, "checkpoint_id"},
		{"fork unknown checkpoint of the seq form", "POST", runP(fx.active, "/fork"), aliceToken, `{"checkpoint_id":"` + run.NewCheckpointID(1) + `"}`, nil, 404, api.CodeNotFound, "checkpoint_id"},
		{"fork other run's checkpoint", "POST", runP(fx.active, "/fork"), aliceToken, `{"checkpoint_id":"` + fx.bobCP.ID + `"}`, nil, 404, api.CodeNotFound, "checkpoint_id"},
		{"fork bob's run", "POST", runP(fx.bobs, "/fork"), aliceToken, `{"checkpoint_id":"` + fx.bobCP.ID + `"}`, nil, 404, api.CodeNotFound, ""},
		{"fork key reused", "POST", runP(fx.active, "/fork"), aliceToken, `{"checkpoint_id":"` + fx.cp.ID + `"}`, map[string]string{"Idempotency-Key": "k1"}, 409, api.CodeIdempotencyKeyReused, "Idempotency-Key"},

		// Checkpoints and artifacts.
		{"checkpoints negative after", "GET", runP(fx.active, "/checkpoints?after=-5"), aliceToken, "", nil, 400, api.CodeInvalidField, "after"},
		{"checkpoints of bob's run", "GET", runP(fx.bobs, "/checkpoints"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"artifacts of bob's run", "GET", runP(fx.bobs, "/artifacts"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"download unknown artifact", "GET", runP(fx.active, "/artifacts/"+fx.cp.ID+"/nope.md"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
		{"download as bob", "GET", runP(fx.active, "/artifacts/"+fx.cp.ID+"/report.md"), bobToken, "", nil, 404, api.CodeNotFound, ""},
		{"download encoded slash", "GET", runP(fx.active, "/artifacts/"+fx.cp.ID+"/a%2F..%2Freport.md"), aliceToken, "", nil, 404, api.CodeNotFound, ""},
	}
	if d := e.dump(); !strings.Contains(d, fx.active.ID) || !strings.Contains(d, fx.pending.ArgsHash) {
		t.Fatalf("the dump does not show the stored records:\n%s", d)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.dump()
			starts, resumes := len(e.starter.Calls()), len(e.resumer.Calls())
			status, hdr, body := e.do(c.method, c.path, c.token, c.body, c.hdr)
			if status != c.status {
				t.Fatalf("status %d, want %d; body %s", status, c.status, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var eb api.ErrorBody
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&eb); err != nil || eb.Error == nil {
				t.Fatalf("error body %s: %v", body, err)
			}
			if eb.Error.Code != c.code || eb.Error.Field != c.field || eb.Error.Message == "" {
				t.Errorf("error %+v, want code %q field %q and a message", *eb.Error, c.code, c.field)
			}
			if after := e.dump(); after != before {
				t.Errorf("stored state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if n := len(e.starter.Calls()); n != starts {
				t.Errorf("StartRun called %d times", n-starts)
			}
			if n := len(e.resumer.Calls()); n != resumes {
				t.Errorf("Resume called %d times", n-resumes)
			}
			switch status {
			case http.StatusUnauthorized:
				if hdr.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			case http.StatusMethodNotAllowed:
				if hdr.Get("Allow") == "" {
					t.Error("405 without Allow")
				}
			}
		})
	}
}
