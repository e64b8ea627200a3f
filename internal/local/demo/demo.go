// Package demo is `make demo`: it starts the publication service and
// `keel dev` as child processes, runs the research agent end to end through
// the HTTP API, approves the publish step, lets `keel dev` SIGKILL itself at
// the worst moment (the destination accepted the publication, Keel had not
// recorded it), restarts it, and shows the run finishing with exactly one
// publication and the event log that explains the recovery. The end-to-end
// test runs the same code and checks its result.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Config names the binaries and where to talk.
type Config struct {
	Keel      string // path of the keel binary
	PubServer string // path of the pubserver binary
	Dir       string // scratch directory (data dir, logs)
	Out       io.Writer
	// FaultPoint is where keel dev dies (default after_dispatch).
	FaultPoint string
	// Spill runs analyze_documents in the long-running task.
	Spill bool
}

// Result is what the demo observed.
type Result struct {
	RunID        string
	Status       run.Status
	Output       string
	Publications int
	Killed       bool
	Events       []api.Event
}

// Run plays the demo. Every child it starts is stopped before it returns.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.FaultPoint == "" {
		cfg.FaultPoint = "after_dispatch"
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	d := &demo{cfg: cfg, say: func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) },
		dataDir: filepath.Join(cfg.Dir, "keel-data"), pubLog: filepath.Join(cfg.Dir, "publications.jsonl")}
	say := d.say
	res := Result{}

	say("== Keel demo: the research agent, a crash at the worst moment, and the recovery")
	say("[1/6] starting the publication service (an external destination that records every effect it receives)")
	pub, pubURL, err := d.startPublications(ctx)
	if err != nil {
		return res, err
	}
	defer pub.stop()
	say("      %s (POST with Idempotency-Key; GET /publications/{operation_id} to look one up)", pubURL)

	d.env = []string{"RESEARCH_PUBLISH=" + pubURL, "KEEL_DATA_DIR=" + d.dataDir}
	if cfg.Spill {
		d.env = append(d.env, "KEEL_SPILL_TOOLS=analyze_documents")
	}
	say("[2/6] starting keel dev (SQLite store, local Step Functions executor) with KEEL_FAULTPOINT=%s", cfg.FaultPoint)
	keel, c, err := d.startKeel(ctx, 1, "KEEL_FAULTPOINT="+cfg.FaultPoint)
	if err != nil {
		return res, err
	}
	defer func() { keel.stop() }()
	say("      %s", c.BaseURL())

	r, _, err := c.CreateRun(ctx, api.CreateRunRequest{Agent: "research", Input: "Write a short report on durable agents and publish it."}, "demo-1")
	if err != nil {
		return res, fmt.Errorf("create run: %w", err)
	}
	res.RunID = r.RunID
	say("[3/6] run %s started: collect → analyze → draft → approval → publish", r.RunID)

	lastSeq, err := d.approveAndCrash(ctx, c, keel, r.RunID, &res)
	if err != nil {
		return res, err
	}

	say("[5/6] restarting keel dev on the same data directory (no fault point)")
	keel, c, err = d.startKeel(ctx, 2)
	if err != nil {
		return res, err
	}
	say("      %s — the executor resumes the execution, the harness reconciles before anything else", c.BaseURL())
	end, err := c.Follow(ctx, r.RunID, lastSeq, func(ev api.Event) error {
		narrate(say, ev)
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("follow after restart: %w", err)
	}
	final, err := c.GetRun(ctx, r.RunID)
	if err != nil {
		return res, err
	}
	res.Status, res.Output = final.Status, final.Output
	if res.Publications, err = countPublications(d.pubLog); err != nil {
		return res, err
	}
	if res.Events, err = allEvents(ctx, c, r.RunID); err != nil {
		return res, err
	}
	say("[6/6] run %s: %s — %q", r.RunID, end.Status, final.Output)
	say("      publications at the destination: %d (exactly one: nothing was sent twice)", res.Publications)
	d.sayRecovery(res.Events)
	keel.stop()
	pub.stop()
	d.sayStopped(r.RunID)
	return res, nil
}

// startPublications starts the publication service and waits for its URL;
// apart from Run so that Run reads as its six steps. The service is
// stopped again when it does not come up.
func (d *demo) startPublications(ctx context.Context) (*proc, string, error) {
	pub, err := start(d.cfg.PubServer, []string{"-log", d.pubLog, "-url-file", filepath.Join(d.cfg.Dir, "pub.url")}, nil, filepath.Join(d.cfg.Dir, "pubserver.log"))
	if err != nil {
		return nil, "", err
	}
	pubURL, err := waitFile(ctx, filepath.Join(d.cfg.Dir, "pub.url"), pub)
	if err != nil {
		pub.stop()
		return nil, "", err
	}
	return pub, pubURL, nil
}

// demo is what the steps of Run share: the configuration, where it
// narrates, and the files and environment of the processes it starts.
type demo struct {
	cfg     Config
	say     func(format string, a ...any)
	dataDir string   // keel dev's KEEL_DATA_DIR
	pubLog  string   // the publication service's record of effects
	env     []string // keel dev's environment
}

// startKeel starts keel dev (its n-th start, logged to keel-dev-n.log)
// and returns a client of it once it has written its URL.
func (d *demo) startKeel(ctx context.Context, n int, extra ...string) (*proc, *client.Client, error) {
	_ = os.Remove(filepath.Join(d.dataDir, "url"))
	p, err := start(d.cfg.Keel, []string{"dev", "--addr", "127.0.0.1:0"}, append(d.env, extra...), filepath.Join(d.cfg.Dir, fmt.Sprintf("keel-dev-%d.log", n)))
	if err != nil {
		return nil, nil, err
	}
	u, err := waitFile(ctx, filepath.Join(d.dataDir, "url"), p)
	if err != nil {
		p.stop()
		return nil, nil, err
	}
	tok, err := os.ReadFile(filepath.Join(d.dataDir, "token"))
	if err != nil {
		p.stop()
		return nil, nil, err
	}
	c, err := client.New(u, strings.TrimSpace(string(tok)), nil)
	if err != nil {
		p.stop()
		return nil, nil, err
	}
	return p, c, nil
}

// approveAndCrash narrates the run up to its approval, approves it, and
// checks that keel dev died (SIGKILL) at the fault point, setting
// res.Killed. It returns the seq of the last event narrated.
func (d *demo) approveAndCrash(ctx context.Context, c *client.Client, keel *proc, runID string, res *Result) (int64, error) {
	say := d.say
	lastSeq, approvalID, ferr := watchApproval(ctx, c, runID, say)
	if approvalID == "" {
		return lastSeq, fmt.Errorf("no approval was requested (stream: %v)", ferr)
	}
	ap, err := c.GetApproval(ctx, runID, approvalID)
	if err != nil {
		return lastSeq, err
	}
	say("[4/6] approving the exact action: %s %s", ap.Tool, compact(ap.Args))
	say("      args_hash %s", ap.ArgsHash)
	if _, err := c.Decide(ctx, runID, approvalID, api.DecisionRequest{Decision: api.DecisionApprove, ArgsHash: ap.ArgsHash}); err != nil {
		return lastSeq, fmt.Errorf("approve: %w", err)
	}
	res.Killed = killedWithin(keel, 30*time.Second)
	if !res.Killed {
		return lastSeq, fmt.Errorf("keel dev did not die at fault point %s", d.cfg.FaultPoint)
	}
	n, err := countPublications(d.pubLog)
	if err != nil {
		return lastSeq, err
	}
	say("      ✗ keel dev was killed with SIGKILL at %q: the destination accepted the", d.cfg.FaultPoint)
	say("        publication (it now holds %d), but Keel never recorded the result. Its operation is", n)
	say("        still `pending`: whether it happened is, for Keel, unknown.")
	return lastSeq, nil
}

// watchApproval narrates the run's events until an approval is requested
// and returns the last seq seen and the approval's id ("" when the stream
// ended first, with the stream's error).
func watchApproval(ctx context.Context, c *client.Client, runID string, say func(string, ...any)) (int64, string, error) {
	var lastSeq int64
	var approvalID string
	watchCtx, stopWatch := context.WithCancel(ctx)
	_, ferr := c.Follow(watchCtx, runID, 0, func(ev api.Event) error {
		lastSeq = ev.Seq
		narrate(say, ev)
		if ev.Type == run.EventApprovalRequested {
			var d struct {
				ApprovalID string `json:"approval_id"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			approvalID = d.ApprovalID
			stopWatch()
		}
		return nil
	})
	stopWatch()
	return lastSeq, approvalID, ferr
}

// killedWithin reports whether p exits by SIGKILL within timeout.
func killedWithin(p *proc, timeout time.Duration) bool {
	select {
	case <-p.exited:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				return true
			}
		}
	case <-time.After(timeout):
	}
	return false
}

// allEvents reads the run's whole event log, page by page.
func allEvents(ctx context.Context, c *client.Client, runID string) ([]api.Event, error) {
	var events []api.Event
	for after := int64(0); ; {
		page, err := c.Events(ctx, runID, after, 500)
		if err != nil {
			return events, err
		}
		events = append(events, page.Events...)
		if len(page.Events) == 0 {
			break
		}
		after = page.Events[len(page.Events)-1].Seq
	}
	return events, nil
}

// sayRecovery prints the event log from the last op_intent on: the
// operation the crash left pending and how it was reconciled.
func (d *demo) sayRecovery(events []api.Event) {
	d.say("      the event log of the recovery:")
	from := 0
	for i, ev := range events {
		if ev.Type == run.EventOpIntent {
			from = i
		}
	}
	for _, ev := range events[from:] {
		d.say("        %4d %-20s %s", ev.Seq, ev.Type, compact(ev.Data))
	}
}

// sayStopped closes the narration. The hint comes after the stop, and
// starts dev again: a client command alone would find nothing answering
// at the old URL.
func (d *demo) sayStopped(runID string) {
	say := d.say
	say("stopped keel dev and the publication service; nothing is left running.")
	say("the run's records stay in %s; to read them again, start dev on them and ask in another shell:", d.dataDir)
	say("  KEEL_DATA_DIR=%s %s dev", d.dataDir, d.cfg.Keel)
	say("  KEEL_DATA_DIR=%s %s events %s", d.dataDir, d.cfg.Keel, runID)
}

func narrate(say func(string, ...any), ev api.Event) {
	var d map[string]any
	_ = json.Unmarshal(ev.Data, &d)
	switch ev.Type {
	case run.EventToolStarted:
		say("      • %v started", d["tool"])
	case run.EventToolProgress:
		say("        %v: %v/%v %v", d["tool"], d["done"], d["total"], d["note"])
	case run.EventToolCompleted:
		say("      • %v done", d["tool"])
	case run.EventRunSpilled:
		say("      ↪ %v runs in the long-running task (a child process here, Fargate on AWS)", d["tool"])
	case run.EventApprovalRequested:
		say("      ⏸ approval requested for %v (%v), args_hash %v", d["tool"], d["mode"], d["args_hash"])
	case run.EventOpIntent:
		say("      • operation intent recorded before dispatch: %s", ev.OperationID)
	case run.EventOpReconciled:
		say("      ✓ %s reconciled (%v): the destination already has it, external id %v — not sent again", ev.OperationID, d["how"], d["external_id"])
	case run.EventOpSucceeded:
		say("      ✓ %s succeeded, external id %v", ev.OperationID, d["external_id"])
	case run.EventRunCompleted:
		say("      ✓ run completed")
	case run.EventRunFailed, run.EventRunNeedsHuman, run.EventRunCancelled:
		say("      ✗ %s: %s", ev.Type, compact(ev.Data))
	}
}

func compact(b json.RawMessage) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func countPublications(path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			n++
		}
	}
	return n, sc.Err()
}
