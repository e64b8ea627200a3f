package crash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// simWorld is one episode of a simulation: a node (the publication
// server with one contract, keel dev on one data directory) with a
// webhook receiver the simulator serves itself, where keel's
// notifications — and their one-time links — arrive, as they would in a
// person's inbox.
type simWorld struct {
	n     *node
	hook  *http.Server
	links *linkBox
	runs  []*simRun
	keys  map[string]*simRun // idempotency key → the run it created
	// kills, restarts: keel dev SIGKILLs seen in this world and starts.
	kills, restarts int
	// dups are the operation ids already reported as published twice.
	dups map[string]bool
	// failed: a violation was found in this world; its directory (and
	// table) is kept.
	failed bool
	// build is the build of the agent program keel dev runs now;
	// versions the build each agent version was seen under (agent and
	// version → build); deploys counts the starts on another build, and
	// resolves the resolutions played (they alternate their decision).
	build             simBuild
	versions          map[string]simBuild
	deploys, resolves int
}

func (w *simWorld) keep() { w.failed = true }

// simRun is what the simulator knows of one run it created or forked.
type simRun struct {
	id, key string
	req     api.CreateRunRequest
	// decided are the decisions keel accepted with a 2xx, by approval id:
	// the status the approval must keep.
	decided map[string]run.ApprovalStatus
	// unsure are approvals a decision was sent for whose answer was lost
	// (keel dev killed under it), by channel.
	unsure map[string]string
	// parent is the run whose sub-agent call started this one (its
	// caller), callerOp that call's operation.
	parent, callerOp string
	// resolves counts the resolutions keel accepted with a 2xx: each
	// must leave a run_resolved event.
	resolves int
	// blocksSeen: the events checkBlocks has read.
	blocksSeen int
	status     run.Status
	events     []api.Event
	// logDone: the API called the log complete at the last read.
	logDone bool
	// lastSeq moves when the run does; movedAt is when it last did.
	lastSeq int64
	movedAt time.Time
	ended   bool // terminal, checked once
	// abandoned: a liveness violation was reported for this run; it is
	// left out of further liveness checks so one bug is reported once.
	abandoned bool
	nhMoved   int // needs_human breaches already reported
}

// linkBox holds the approval links the webhook received, by run and
// approval id (an approval id is unique within its run only: every run
// paused at two tool calls asks apr_limit_max_tool_calls_2).
type linkBox struct {
	mu    sync.Mutex
	links map[[2]string]string
}

func (b *linkBox) get(runID, approvalID string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.links[[2]string{runID, approvalID}]
}

// simHookSecret signs the webhook's deliveries; the receiver does not
// check it (it is the person's inbox, not a security boundary under
// test).
const simHookSecret = "keel-sim-webhook-secret"

func startHook() (*http.Server, *linkBox, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, "", err
	}
	box := &linkBox{links: map[[2]string]string{}}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			RunID      string `json:"run_id"`
			ApprovalID string `json:"approval_id"`
			Link       string `json:"link"`
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if json.Unmarshal(b, &m) == nil && m.ApprovalID != "" && m.Link != "" {
			box.mu.Lock()
			box.links[[2]string{m.RunID, m.ApprovalID}] = m.Link
			box.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	return srv, box, "http://" + ln.Addr().String() + "/hook", nil
}

// newWorld starts a world: its webhook receiver, publication server,
// store (a table and a bucket on dynamo) and first keel dev.
func (s *sim) newWorld(ctx context.Context, contract string) (*simWorld, error) {
	dir, err := os.MkdirTemp(s.cfg.Dir, fmt.Sprintf("sim-%d-%s-", s.worlds, contract))
	if err != nil {
		return nil, err
	}
	s.worlds++
	hook, box, hookURL, err := startHook()
	if err != nil {
		return nil, err
	}
	sc := &Scenario{Name: "sim", Contract: contract, Env: []string{
		"KEEL_NOTIFY_WEBHOOK_URL=" + hookURL, "KEEL_NOTIFY_WEBHOOK_SECRET=" + simHookSecret,
		"KEEL_MCP=decisions", "RESEARCH_ON_LIMIT=pause",
		// research_lead: runs whose sub-agent calls start child runs.
		"RESEARCH_SUBAGENT=on",
		// Links reach the inbox within a step or two: on DynamoDB the
		// worker only polls (2s by default, from each start), and keel
		// dev restarts every few steps.
		"KEEL_NOTIFY_INTERVAL=250ms",
	}}
	if s.cfg.Store == "dynamo" {
		// keel dev keeps its own link key in the data directory on
		// SQLite only; without a key no notification carries a link.
		sc.Env = append(sc.Env, "KEEL_NOTIFY_LINK_KEY="+randHex(32))
	}
	if s.cfg.Lease == "short" {
		// The sweeper repairs lost wakes (the law of moves); with short
		// leases it sweeps as often, so liveness is checked within a
		// few sweeps rather than keel dev's 5 minutes.
		sc.Env = append(sc.Env, "KEEL_SWEEP_INTERVAL="+shortSweepInterval.String(), "KEEL_SWEEP_MIN_AGE="+shortSweepMinAge.String())
	}
	w := &simWorld{n: newNode(s.cfg, sc, dir), hook: hook, links: box, keys: map[string]*simRun{}, dups: map[string]bool{},
		versions: map[string]simBuild{}}
	if err := w.n.startPub(ctx); err != nil {
		w.close()
		return nil, err
	}
	if s.cfg.Store == "dynamo" {
		table, bucket, err := s.cfg.AWS.newWorld(ctx)
		if err != nil {
			w.close()
			return nil, err
		}
		w.n.table, w.n.bucket = table, bucket
	}
	if err := w.start(ctx, ""); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *simWorld) close() {
	w.n.close()
	_ = w.hook.Close()
}

// start starts the next keel dev, armed at fault when set. A keel dev
// that dies at its fault point before it serves is counted and started
// again unarmed.
func (w *simWorld) start(ctx context.Context, fault string) error {
	for range 3 {
		w.restarts++
		err := w.n.startKeel(ctx, fault)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errExited) {
			return err
		}
		if !w.n.keel.sigkilled() {
			return fmt.Errorf("keel dev exited without being killed: %v (log %s)", w.n.keel.err, w.n.keel.log)
		}
		w.kills++
		w.n.keel.signalGroup(syscall.SIGKILL)
		fault = ""
	}
	return errors.New("keel dev died three times before serving")
}

// kill SIGKILLs keel dev (its process group) and counts the kill.
func (w *simWorld) kill() {
	if w.n.keel == nil || w.n.keel.done() {
		return
	}
	w.n.keel.kill()
	w.kills++
}

// ensure restarts keel dev if it died (at a fault point, or under a
// racing kill), counting a death by SIGKILL.
func (w *simWorld) ensure(ctx context.Context) error {
	if w.n.keel != nil && !w.n.keel.done() {
		return nil
	}
	if w.n.keel != nil {
		if !w.n.keel.sigkilled() {
			return fmt.Errorf("keel dev exited without being killed: %v (log %s)", w.n.keel.err, w.n.keel.log)
		}
		w.n.keel.signalGroup(syscall.SIGKILL)
		w.kills++
	}
	return w.start(ctx, "")
}

// base is the API root of the keel dev serving now.
func (w *simWorld) base() string { return strings.TrimSuffix(w.n.c.BaseURL(), "/") }

// token is the API's bearer token (the data directory's token file).
func (w *simWorld) token() string {
	b, _ := os.ReadFile(filepath.Join(w.n.data, "token"))
	return strings.TrimSpace(string(b))
}

// live are the runs not ended and not abandoned, in creation order.
func (w *simWorld) live() []*simRun {
	var out []*simRun
	for _, r := range w.runs {
		if !r.ended {
			out = append(out, r)
		}
	}
	return out
}

// alive reports whether the keel dev of the world serves (not killed).
func (w *simWorld) alive() bool { return w.n.keel != nil && !w.n.keel.done() && w.n.c != nil }
