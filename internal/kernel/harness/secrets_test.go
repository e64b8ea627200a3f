package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/harness/harnesstest"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// recordingModel keeps every request the harness sends to the model.
type recordingModel struct {
	m    model.Model
	mu   sync.Mutex
	reqs [][]byte
}

func (r *recordingModel) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return model.Response{}, err
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, b)
	r.mu.Unlock()
	return r.m.Generate(ctx, req)
}

// vault is a read-only tool holding a credential from its constructor, as
// contract 10 asks, and using it on every call.
type vault struct{ apiKey string }

func (v vault) Info() tool.Info {
	return tool.Info{Name: "vault", Mode: run.ModeSafeReadonly, Description: "reads the balance",
		Schema: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"}},"required":["account"]}`)}
}

// Secrets names the credential (tool.SecretHolder).
func (v vault) Secrets() []string { return []string{v.apiKey} }

func (v vault) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	if v.apiKey == "" {
		return tool.Result{}, errors.New("vault: no credential")
	}
	if strings.Contains(string(c.Args), "acct-2") {
		// What net/http reports: the URL, credential and all.
		return tool.Result{}, &url.Error{Op: "Get", URL: "https://bank.example/balance?key=" + v.apiKey, Err: errors.New("connection refused")}
	}
	c.Progress(1, 2, "authenticated")
	c.Progress(2, 2, "read")
	return tool.Result{Content: "balance 42", Data: json.RawMessage(`{"balance":42}`)}, nil
}

// TestSecretsNeverRecorded is harness contract 10's canary: secrets planted
// in the environment and in a tool's credential appear in none of the model
// requests, events, checkpoints, plan items, operations, logs, artifacts,
// publications or the database files of a run that used them through a
// tool and an effect, even when the tool's error carries its credential
// (as a *url.Error does).
func TestSecretsNeverRecorded(t *testing.T) {
	const envCanary = "canary-env-5b0d0c8e1f"
	const credCanary = "canary-cred-9a77e21c44"
	t.Setenv("KEEL_CANARY_API_KEY", envCanary)
	e := newEnv(t)
	v := vault{apiKey: os.Getenv("KEEL_CANARY_API_KEY") + ":" + credCanary}
	to := ledger()
	n := harnesstest.Note{Mode: run.ModeMutating, To: to}
	script := `{"turns":[{"tool_calls":[{"name":"vault","args":{"account":"acct-1"}}]},` +
		`{"tool_calls":[{"name":"vault","args":{"account":"acct-2"}}]},` +
		`{"tool_calls":[{"name":"note","args":{"text":"the balance is 42"}}]},{"text":"done"}]}`
	rec := &recordingModel{m: e.Scripted(script)}
	reg, err := tool.NewRegistry(v, n)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := e.Harness(nil, harness.AgentMap{"a": {Name: "a", Model: rec, Tools: reg, MaxTokens: 100}}, func(o *harness.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	r := e.CreateRun("a", "s1", nil)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextApproval {
		t.Fatalf("%+v", d)
	}
	e.Decide(r.ID, e.PendingApproval(r.ID), true)
	if d := e.StepUntil(h, r.ID); d.Next != harness.NextDone {
		t.Fatalf("%+v", d)
	}

	records := map[string][]byte{"logs": logs.Bytes()}
	for i, q := range rec.reqs {
		records["model request "+string(rune('1'+i))] = q
	}
	add := func(name string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		records[name] = b
	}
	add("run", e.GetRun(r.ID), nil)
	add("events", e.Events(r.ID), nil)
	items, err := e.Store.ListPlanItems(e.Ctx, r.ID)
	add("plan items", items, err)
	opList, err := e.Store.ListOperations(e.Ctx, r.ID, false)
	add("operations", opList, err)
	aps, err := e.Store.ListApprovals(e.Ctx, r.ID)
	add("approvals", aps, err)
	cps, err := e.Store.ListCheckpoints(e.Ctx, r.ID, 0, 1000)
	add("checkpoints", cps, err)
	for _, cp := range cps {
		full, err := e.Store.GetCheckpoint(e.Ctx, r.ID, cp.ID)
		add("checkpoint "+cp.ID, full, err)
	}
	for _, en := range to.Entries() {
		records["publication "+en.ID] = append([]byte(en.Key+"\n"), en.Content...)
	}
	// Every byte on disk: the database (and its WAL), artifacts.
	err = filepath.WalkDir(e.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		records["file "+strings.TrimPrefix(path, e.Dir)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(records["events"], []byte("connection refused")) || !bytes.Contains(records["events"], []byte(`key=[redacted]`)) {
		t.Fatalf("the failing call was not recorded with its secret redacted: %s", records["events"])
	}
	if len(rec.reqs) < 4 || count(e.Events(r.ID), run.EventToolProgress) == 0 {
		t.Fatalf("the run did not exercise the tools: %d model requests", len(rec.reqs))
	}
	for name, b := range records {
		for _, c := range []string{envCanary, credCanary} {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("secret %s found in %s", c, name)
			}
		}
	}
}
