package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
)

// FuzzRequestBodies sends arbitrary bodies to every endpoint that reads
// one. Whatever the body, the answer is never a 5xx, always JSON, an
// error always names its code, and an accepted body was valid UTF-8.
//
//	go test ./internal/api -run '^$' -fuzz FuzzRequestBodies -fuzztime 30s
func FuzzRequestBodies(f *testing.F) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "keel.db"), sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	h, err := api.New(api.Deps{Store: st, Starter: &recStarter{}, Resumer: &recResumer{},
		Auth: api.Tokens{aliceToken: "alice"}, Agents: api.AgentSet{"research": {}}})
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now().UTC()
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "alice", Agent: "research",
		Request: "x", Status: run.StatusCreated, InputPolicy: run.InputQueue, Limits: run.DefaultLimits(), CreatedAt: now, UpdatedAt: now})
	if err != nil {
		f.Fatal(err)
	}
	paths := []string{"/v1/runs", "/v1/runs/" + r.ID + "/input", "/v1/runs/" + r.ID + "/approvals/apr_x",
		"/v1/runs/" + r.ID + "/fork", "/v1/runs/" + r.ID + "/cancel"}
	for i, body := range []string{
		`{"agent":"research","input":"hi","limits":{"max_steps":3,"deadline":"2030-01-02T15:04:05Z"},"input_policy":"queue"}`,
		`{"text":"more"}`,
		`{"decision":"approve","args_hash":"abc","reason":"ok"}`,
		`{"checkpoint_id":"cp_1"}`,
		``,
		`{"Agent":"research","agent":"x"}`,
		"{\"text\":\"\xff\"}",
		`{"limits":{"max_steps":1e400}}`,
		`[{"a":{"a":{"a":[]}}}]`,
	} {
		f.Add(uint8(i), []byte(body))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		req := httptest.NewRequest("POST", paths[int(which)%len(paths)], bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("the answer is not JSON: %q", rec.Body)
		}
		if rec.Code >= 400 {
			var eb api.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == nil || eb.Error.Code == "" {
				t.Fatalf("error body %s: %v", rec.Body, err)
			}
		} else if !utf8.Valid(body) {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
	})
}
