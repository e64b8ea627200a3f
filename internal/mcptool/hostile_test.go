package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/ops"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/mcptool"
	"github.com/keelrun/keel/keeltest"
)

// open starts the fixture over stdio with flags and returns its tools by
// name, on a real artifact store, and the fixture's log.
func open(t *testing.T, s mcptool.Server, flags ...string) (map[string]tool.Tool, string, error) {
	t.Helper()
	fx, _ := binaries(t)
	log := filepath.Join(t.TempDir(), "applied.jsonl")
	arts, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Name = "fx"
	s.Command = append([]string{fx, "-log", log}, flags...)
	ts, err := mcptool.Open(context.Background(), s, arts)
	out := map[string]tool.Tool{}
	for _, x := range ts {
		out[x.Info().Name] = x
	}
	return out, log, err
}

func call(runID, args string) tool.Call {
	return tool.Call{RunID: runID, PlanItemID: "item_1", Args: json.RawMessage(args), Progress: func(int64, int64, string) {}}
}

// TestHostileServers: each hostile server gets a clear error naming it,
// and nothing runs that the operator did not allow.
func TestHostileServers(t *testing.T) {
	t.Run("many tools", func(t *testing.T) {
		_, _, err := open(t, mcptool.Server{}, "-hostile", "many-tools")
		if err == nil || !strings.Contains(err.Error(), `MCP server "fx" lists more than 256 tools (MaxTools): refused`) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("not JSON-RPC", func(t *testing.T) {
		_, _, err := open(t, mcptool.Server{}, "-hostile", "garbage")
		if err == nil || !strings.Contains(err.Error(), `MCP server "fx": connect: the server does not speak MCP`) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("OAuth with a wrong client secret", func(t *testing.T) {
		arts, err := fs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		url := httpFixture(t, filepath.Join(t.TempDir(), "applied.jsonl"), "-oauth", "keel-client:right-secret-123")
		_, err = mcptool.Open(context.Background(), mcptool.Server{Name: "fx", URL: url,
			OAuthClientID: "keel-client", OAuthClientSecret: "wrong-secret-456"}, arts)
		if err == nil || !strings.Contains(err.Error(), `MCP server "fx": connect: OAuth authorization failed`) ||
			!strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), "wrong-secret-456") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("10 MB result", func(t *testing.T) {
		ts, _, err := open(t, mcptool.Server{Trusted: true}, "-hostile", "big-result")
		if err != nil {
			t.Fatal(err)
		}
		_, err = ts["fx_lookup"].Run(context.Background(), call("run_big", `{"key":"a"}`))
		if err == nil || !strings.Contains(err.Error(), "answered 10485760 bytes, over MaxResultBytes 1048576: dropped") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("read-only claim on a tool that writes", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			s      mcptool.Server
			mode   run.Mode
			effect bool
		}{
			{"untrusted", mcptool.Server{}, run.ModeConfirmOnce, true},
			{"trusted", mcptool.Server{Trusted: true}, run.ModeSafeReadonly, false},
			{"operator says effect", mcptool.Server{Tools: map[string]mcptool.Override{"wipe": {Mode: run.ModeMutating}}}, run.ModeMutating, true},
		} {
			ts, log, err := open(t, c.s, "-hostile", "liar")
			if err != nil {
				t.Fatal(err)
			}
			w := ts["fx_wipe"]
			_, isEffect := w.(tool.Effectful)
			if w.Info().Mode != c.mode || isEffect != c.effect {
				t.Errorf("%s: wipe is %s (effect %v), want %s (effect %v)", c.name, w.Info().Mode, isEffect, c.mode, c.effect)
			}
			if es := readLog(t, log); len(es) != 0 {
				t.Errorf("%s: the fixture applied %+v before any call", c.name, es)
			}
		}
	})
}

// TestTermsChangedMidRun: a run's first call records the server's tool
// list; when the server then changes lookup's schema, lookup refuses in
// that run (set_flag, unchanged, still runs), while a new run records the
// new list and may call it.
func TestTermsChangedMidRun(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "changed")
	ts, log, err := open(t, mcptool.Server{Trusted: true}, "-schema-file", flag)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ts["fx_lookup"].Run(ctx, call("run_a", `{"key":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ts["fx_lookup"].Run(ctx, call("run_a", `{"key":"a"}`))
	if !errors.Is(err, mcptool.ErrTermsChanged) || !strings.Contains(err.Error(), `MCP server "fx" changed the schema or annotations of tool "lookup" since this run first listed it`) {
		t.Fatalf("err %v", err)
	}
	if _, err := ts["fx_set_flag"].(tool.Effectful).Intent(ctx, call("run_a", `{"name":"n","value":"v"}`)); err != nil {
		t.Errorf("set_flag, unchanged, refused: %v", err)
	}
	if _, err := ts["fx_lookup"].Run(ctx, call("run_b", `{"key":"a"}`)); err != nil {
		t.Errorf("a new run refused the changed lookup: %v", err)
	}
	if n := countLog(readLog(t, log), "lookup", "read"); n != 2 {
		t.Errorf("lookup read %d times, want 2 (the refused call never reached the server)", n)
	}
}

// waitLog waits until the fixture's log has an entry of tool and kind.
func waitLog(t *testing.T, log, tool, kind string) {
	t.Helper()
	for deadline := time.Now().Add(keeltest.HangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if countLog(readLog(t, log), tool, kind) > 0 {
			return
		}
	}
	t.Fatalf("the fixture never logged %s %s", tool, kind)
}

// TestHangingServer: a call that never answers ends at the tool's
// timeout, and a cancelled context (a cancelled run) cancels the request
// at the server, which sees it.
func TestHangingServer(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		ts, log, err := open(t, mcptool.Server{Trusted: true, Timeout: 200 * time.Millisecond}, "-hostile", "hang")
		if err != nil {
			t.Fatal(err)
		}
		_, err = ts["fx_lookup"].Run(context.Background(), call("run_h", `{"key":"a"}`))
		if err == nil || !strings.Contains(err.Error(), `MCP server "fx": lookup: no answer within 200ms`) {
			t.Fatalf("err %v", err)
		}
		waitLog(t, log, "lookup", "cancelled")
	})
	t.Run("cancel", func(t *testing.T) {
		ts, log, err := open(t, mcptool.Server{Trusted: true}, "-hostile", "hang")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := ts["fx_lookup"].Run(ctx, call("run_c", `{"key":"a"}`))
			done <- err
		}()
		waitLog(t, log, "lookup", "started")
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
		waitLog(t, log, "lookup", "cancelled")
	})
}

// TestDisconnectMidCall: the server applies delete_item and dies before
// answering. The outcome is unknown (not a rejection); the operation
// protocol, with no promise declared, hands it to a person; the next
// call connects again.
func TestDisconnectMidCall(t *testing.T) {
	ts, log, err := open(t, mcptool.Server{Tools: map[string]mcptool.Override{"set_flag": {Contract: ops.Contract{Idempotent: true}}}}, "-hostile", "die")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	del := ts["fx_delete_item"].(tool.Effectful)
	op := operation(t, "run_d", "op_1", `{"id":"x"}`)
	if _, err := del.Dispatch(ctx, op); err == nil || errors.As(err, new(*ops.Rejected)) {
		t.Fatalf("dispatch: %v, want an unknown outcome", err)
	}
	v, _, err := ops.Reconcile(ctx, del, op)
	if err != nil || v != ops.NeedsHuman {
		t.Fatalf("reconcile: %v %v, want needs_human", v, err)
	}
	set := ts["fx_set_flag"].(tool.Effectful)
	out, err := set.Dispatch(ctx, operation(t, "run_d", "op_2", `{"name":"n","value":"v"}`))
	if err != nil {
		t.Fatalf("the call after the disconnect: %v", err)
	}
	es := readLog(t, log)
	if countLog(es, "delete_item", "applied") != 1 || countLog(es, "set_flag", "applied") != 1 {
		t.Errorf("log %+v", es)
	}
	if !strings.Contains(string(out.Result), `"operation_id":"op_2"`) {
		t.Errorf("set_flag's result %s does not echo the operation id sent in _meta", out.Result)
	}
}

func operation(t *testing.T, runID, id, args string) run.Operation {
	t.Helper()
	h, err := run.ArgsHash([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	return run.Operation{ID: id, RunID: runID, PlanItemID: "item_" + id, Args: json.RawMessage(args), ArgsHash: h,
		IdempotencyKey: id, Status: run.OpPending}
}

// TestProgress: the server's progress notifications reach the call's
// Progress (ReportProgress's sink: tool_progress events).
func TestProgress(t *testing.T) {
	ts, _, err := open(t, mcptool.Server{Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	c := call("run_p", `{"key":"a"}`)
	c.Progress = func(done, total int64, note string) { got <- fmt.Sprintf("%d/%d %s", done, total, note) }
	if _, err := ts["fx_lookup"].Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "1/2 reading" {
			t.Errorf("progress %q, want 1/2 reading", s)
		}
	case <-time.After(keeltest.HangGuard):
		t.Fatal("no progress reached the call")
	}
}
