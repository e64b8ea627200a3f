package states

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/keelrun/keel/internal/testbin"
)

const crashExecARN = "arn:aws:states:us-east-1:000000000000:execution:keel-run:run-crash"

// appendLine appends a line to a file and returns how many lines it has.
func appendLine(t testing.TB, path, line string) int {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

// TestCrashResume kills a real executor process with SIGKILL at three
// points of run.asl.json (a Lambda step in flight, an approval awaiting its
// token, a durable wait) and resumes the execution in this process.
func TestCrashResume(t *testing.T) {
	testbin.SkipShort(t, "starts child processes")
	tests := []struct {
		name  string
		mode  string
		wantP []string
		steps int // Step invocations in both processes
	}{
		{name: "in-flight step is invoked again", mode: "step", steps: 3,
			wantP: []string{"Init", "Step", "Count", "Route", "Step", "Count", "Route", "Finalize", "Outcome", "Done"}},
		{name: "approval token survives the restart", mode: "approval", steps: 2,
			wantP: []string{"Init", "Step", "Count", "Route", "AwaitApproval", "Step", "Count", "Route", "Finalize", "Outcome", "Done"}},
		{name: "wait keeps its absolute end time", mode: "wait", steps: 2,
			wantP: []string{"Init", "Step", "Count", "Route", "Wait", "Step", "Count", "Route", "Finalize", "Outcome", "Done"}},
		// Issue #32 item 5: the spilled task dies with the executor's
		// process, and the next process takes its wait as lost at once
		// (the fake clock never reaches the heartbeat timeout).
		{name: "spilled task dies with it and its wait ends", mode: "spill", steps: 2,
			wantP: []string{"Init", "Step", "Count", "Route", "RunOnFargate", "Step", "Count", "Route", "Finalize", "Outcome", "Done"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
			cmd.Env = append(os.Environ(), "KEEL_CRASH_CHILD="+tc.mode, "KEEL_CRASH_DIR="+dir)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			ready := filepath.Join(dir, "ready")
			deadline := time.Now().Add(60 * time.Second)
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("child exited before the kill point: %v\n%s", err, out.String())
				default:
				}
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("child never reached the kill point\n%s", out.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("child did not die by SIGKILL: %v", err)
			}

			if tc.mode == "spill" {
				waitGone(t, filepath.Join(dir, "task.pid"))
			}

			// What the dead process left behind.
			ctx := context.Background()
			st, err := OpenStore(ctx, filepath.Join(dir, "keel.db"))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := st.execution(ctx, crashExecARN)
			if err != nil {
				t.Fatal(err)
			}
			_ = st.Close()
			var cur cursor
			if err := json.Unmarshal(rec.Cursor, &cur); err != nil {
				t.Fatal(err)
			}
			if rec.Status != StatusRunning {
				t.Fatalf("status after kill %s", rec.Status)
			}

			// A new process resumes it.
			clock := newFakeClock(false)
			clock.now = time.Now()
			if tc.mode == "wait" {
				// Ten seconds before the end the dead process persisted: a
				// wait that restarted on resume would need an hour.
				clock.now = time.UnixMilli(cur.WaitUntil).Add(-10 * time.Second)
			}
			var mu sync.Mutex
			approvals := 0
			lambdas := map[string]LambdaFunc{
				"keel-step": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
					appendLine(t, filepath.Join(dir, "steps.log"), "parent")
					return json.Marshal(decision{Next: "done", Code: "keel-step"})
				},
				"keel-approval": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
					mu.Lock()
					approvals++
					mu.Unlock()
					return json.RawMessage(`{}`), nil
				},
				"keel-finalize": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
					appendLine(t, filepath.Join(dir, "finalize.log"), "parent")
					return json.RawMessage(`{}`), nil
				},
			}
			env := newEnv(t, envOpts{dbPath: filepath.Join(dir, "keel.db"), clock: clock, lambdas: lambdas,
				tasks: &ExecTaskRunner{Command: "/nonexistent"}})
			env.register("keel-run", string(runASL(t)), runSubs) // also Start: resumes
			switch tc.mode {
			case "approval":
				token, err := os.ReadFile(filepath.Join(dir, "token"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := env.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(string(token)), Output: aws.String(`{"approved": true}`)}); err != nil {
					t.Fatal(err)
				}
			case "wait":
				clock.Advance(10 * time.Second)
			}
			d := env.waitDone(crashExecARN)
			if d.Status != StatusSucceeded {
				t.Fatalf("status %s\n%s", d.Status, dumpHistory(env.history(crashExecARN)))
			}
			evs := env.history(crashExecARN)
			wantPath(t, evs, tc.wantP...)
			if n := countType(evs, "ExecutionStarted"); n != 1 {
				t.Fatalf("%d ExecutionStarted", n)
			}
			if got := lines(filepath.Join(dir, "steps.log")); len(got) != tc.steps {
				t.Fatalf("step invocations %v, want %d", got, tc.steps)
			}
			if got := lines(filepath.Join(dir, "finalize.log")); len(got) != 1 || got[0] != "parent" {
				t.Fatalf("finalize invocations %v", got)
			}
			if approvals != 0 {
				t.Fatalf("the approval function ran again after its token was submitted")
			}
		})
	}
}

// TestCrashChild is the process TestCrashResume kills. It runs
// run.asl.json until the kill point named by KEEL_CRASH_CHILD, writes the
// file "ready" and then blocks.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv("KEEL_CRASH_CHILD")
	if mode == "" {
		t.Skip("helper process")
	}
	dir := os.Getenv("KEEL_CRASH_DIR")
	ready := func() {
		if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
			t.Error(err)
		}
	}
	lambdas := map[string]LambdaFunc{
		"keel-step": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			n := appendLine(t, filepath.Join(dir, "steps.log"), "child")
			switch {
			case mode == "step" && n == 1:
				return json.Marshal(decision{Next: "continue", Code: "keel-step"})
			case mode == "step":
				ready()
				<-ctx.Done() // in flight until killed
				return nil, ctx.Err()
			case mode == "approval":
				return json.Marshal(decision{Next: "approval", ApprovalID: "ap-1", ApprovalTimeoutSeconds: 86400, Code: "keel-step"})
			case mode == "spill":
				return json.Marshal(decision{Next: "spill", Code: "keel-step"})
			default:
				return json.Marshal(decision{Next: "wait", WaitSeconds: 3600, Code: "keel-step"})
			}
		},
		"keel-approval": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			var in struct {
				Token string `json:"task_token"`
			}
			if err := json.Unmarshal(p, &in); err != nil {
				return nil, err
			}
			return json.RawMessage(`{}`), os.WriteFile(filepath.Join(dir, "token"), []byte(in.Token), 0o600)
		},
		"keel-finalize": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			appendLine(t, filepath.Join(dir, "finalize.log"), "child")
			return json.RawMessage(`{}`), nil
		},
	}
	tasks := &ExecTaskRunner{Command: os.Args[0], Args: []string{"-test.run=^TestHelperOrphanTask$"},
		Env: append(os.Environ(), "KEEL_HELPER=orphan")}
	env := newEnv(t, envOpts{dbPath: filepath.Join(dir, "keel.db"), clock: SystemClock{}, lambdas: lambdas, tasks: tasks})
	arn := env.register("keel-run", string(runASL(t)), runSubs)
	if ex := env.start(arn, "run-crash", `{"run_id": "run-crash", "generation": 0}`); ex != crashExecARN {
		t.Fatalf("arn %s", ex)
	}
	switch mode {
	case "approval":
		env.waitEvent(crashExecARN, "TaskSubmitted", 1)
		ready()
	case "wait":
		env.waitFor(crashExecARN, "the persisted wait", func([]HistoryEvent) bool {
			rec, err := env.store.execution(context.Background(), crashExecARN)
			return err == nil && strings.Contains(string(rec.Cursor), "wait_until_ms")
		})
		ready()
	}
	time.Sleep(10 * time.Minute) // until SIGKILL
}

// TestHelperOrphanTask is the spilled task of TestCrashChild's "spill"
// mode: it writes its pid and works (sleeps) until it is killed.
func TestHelperOrphanTask(t *testing.T) {
	if os.Getenv("KEEL_HELPER") != "orphan" {
		t.Skip("helper process")
	}
	dir := os.Getenv("KEEL_CRASH_DIR")
	if err := os.WriteFile(filepath.Join(dir, "task.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Minute) // until killed
}

// waitGone waits until the process whose pid is in pidFile has exited
// (a zombie nobody reaps counts as exited). It polls under a generous
// bound only to learn that the kernel got there.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// The state follows the parenthesised command name.
		if err != nil || strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), " Z ") {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the spilled task (pid %d) outlived the killed executor", pid)
		}
	}
}
