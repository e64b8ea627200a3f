// Command keelstep is the Keel and floor contenders of bench/peers, each
// in a process of its own so that its peak RSS and the bytes it writes
// are its own. It runs the workload once and prints one JSON line:
//
//	keelstep -system keel|floor -n N -dir DIR
//
// keel: N iterations of the real harness on the real SQLite store (an
// instant scripted model call → an instant read-only tool → the durable
// checkpoint, two messages appended per iteration), then the final
// answer, all in one Step as internal/kernel/harness's BenchmarkStepVsFloor runs
// it. floor: Go + SQLite, one append transaction of the same two messages
// per step, WAL and synchronous=FULL.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// Result is what the driver reads from stdout.
type Result struct {
	Steps      int     `json:"steps"`
	MSPerStep  float64 `json:"ms_per_step"`
	StoreBytes int64   `json:"store_bytes"`
	// WriteBytes is what this process wrote through write(2) during the
	// steps (/proc/self/io wchar), WAL and checkpoints included.
	WriteBytes int64 `json:"write_bytes"`
}

func main() {
	system := flag.String("system", "keel", "keel or floor")
	n := flag.Int("n", 100, "iterations")
	dir := flag.String("dir", "", "directory for the store (required)")
	flag.Parse()
	if *dir == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "keelstep: -dir is required and -n must be at least 1")
		os.Exit(2)
	}
	var res Result
	var err error
	switch *system {
	case "keel":
		res, err = keel(context.Background(), *dir, *n)
	case "floor":
		res, err = floor(*dir, *n)
	default:
		err = fmt.Errorf("-system %q: want keel or floor", *system)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "keelstep:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func floor(dir string, n int) (Result, error) {
	path := filepath.Join(dir, "floor.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE messages (thread TEXT, seq INTEGER, body BLOB, PRIMARY KEY (thread, seq))`); err != nil {
		return Result{}, err
	}
	body := []byte(`{"role":"assistant","tool_calls":[{"id":"call_1","name":"echo","args":{"text":"hello"}}]}`)
	w0 := wchar()
	start := time.Now()
	for i := 0; i < n; i++ {
		tx, err := db.Begin()
		if err != nil {
			return Result{}, err
		}
		for j := 0; j < 2; j++ {
			if _, err := tx.Exec(`INSERT INTO messages VALUES ('t', ?, ?)`, 2*i+j, body); err != nil {
				tx.Rollback()
				return Result{}, err
			}
		}
		if err := tx.Commit(); err != nil {
			return Result{}, err
		}
	}
	took := time.Since(start)
	res := Result{Steps: n, MSPerStep: ms(took) / float64(n), WriteBytes: wchar() - w0}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return res, err
	}
	res.StoreBytes, err = size(path)
	return res, err
}

// echo is the instant read-only tool.
type echo struct{}

func (echo) Info() tool.Info {
	return tool.Info{Name: "echo", Mode: run.ModeSafeReadonly, Description: "echo",
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
}

func (echo) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Content: a.Text}, nil
}

func keel(ctx context.Context, dir string, n int) (Result, error) {
	path := filepath.Join(dir, "keel.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return Result{}, err
	}
	defer st.Close()
	arts, err := artfs.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		return Result{}, err
	}
	script := fmt.Sprintf(`{"turns":[{"repeat":%d,"tool_calls":[{"name":"echo","args":{"text":"hello"}}],"usage":{"input_tokens":20,"output_tokens":10}}]}`, n)
	sm, err := scripted.Parse([]byte(script))
	if err != nil {
		return Result{}, err
	}
	reg, err := tool.NewRegistry(echo{})
	if err != nil {
		return Result{}, err
	}
	h, err := harness.New(harness.Options{Store: st, Artifacts: arts, Owner: "bench",
		Agents: harness.AgentMap{"bench": {Name: "bench", Model: model.Direct(sm), Tools: reg, MaxTokens: 100}}})
	if err != nil {
		return Result{}, err
	}
	r := run.Run{ID: run.NewID("run"), SessionID: "bench", Owner: "bench", Agent: "bench", Request: "loop",
		InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()}
	r.Limits.MaxSteps, r.Limits.MaxToolCalls, r.Limits.MaxTokens = int64(10*n), int64(10*n), 1<<40
	if r, _, err = st.CreateRun(ctx, r); err != nil {
		return Result{}, err
	}
	w0 := wchar()
	start := time.Now()
	d, err := h.Step(ctx, r.ID, time.Hour)
	took := time.Since(start)
	if err != nil {
		return Result{}, err
	}
	if d.Next != harness.NextDone {
		return Result{}, fmt.Errorf("the run did not finish in one Step: %+v", d)
	}
	got, err := st.GetRun(ctx, r.ID)
	if err != nil {
		return Result{}, err
	}
	if got.Status != run.StatusCompleted || got.Budget.ToolCallsUsed != int64(n) {
		return Result{}, fmt.Errorf("run %s with %d tool calls, want completed with %d", got.Status, got.Budget.ToolCallsUsed, n)
	}
	res := Result{Steps: n, MSPerStep: ms(took) / float64(n+1), WriteBytes: wchar() - w0}
	if _, err := st.DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return res, err
	}
	res.StoreBytes, err = size(path)
	return res, err
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func size(path string) (int64, error) {
	var total int64
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		total += fi.Size()
	}
	return total, nil
}

// wchar reads this process's bytes written (/proc/self/io); 0 where there
// is no /proc.
func wchar() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	var v int64
	for _, line := range splitLines(string(b)) {
		if _, err := fmt.Sscanf(line, "wchar: %d", &v); err == nil {
			return v
		}
	}
	return 0
}

func splitLines(s string) []string { return strings.Split(s, "\n") }
