package crash

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
)

// node is one scenario's world: a publication server (the external
// destination, its own process and log) and the successive incarnations of
// `keel dev` on one data directory, with their store: the SQLite file in
// it, or (Store "dynamo") a DynamoDB table and an S3 bucket of their own.
type node struct {
	cfg    Config
	sc     *Scenario
	dir    string
	data   string
	table  string // dynamo only
	bucket string // dynamo only
	pubLog string
	pub    *proc
	pubURL string
	keel   *proc
	c      *client.Client
	starts int
	// wsRoots are the incarnations' workspace roots, removed by close.
	wsRoots []string
	// build is added to the environment of the next incarnations: the
	// simulator's build of the agent program (RESEARCH_VARIANT).
	build []string
}

func newNode(cfg Config, sc *Scenario, dir string) *node {
	return &node{cfg: cfg, sc: sc, dir: dir, data: filepath.Join(dir, "keel-data"), pubLog: filepath.Join(dir, "publications.jsonl")}
}

// contractFlags are the pubserver flags that make the destination keep
// exactly the promises RESEARCH_PUBLISH_CONTRACT declares.
func contractFlags(contract string) ([]string, error) {
	switch contract {
	case "full":
		return nil, nil
	case "idempotent":
		return []string{"-no-lookup"}, nil
	case "lookup":
		return []string{"-no-idempotency"}, nil
	case "none":
		return []string{"-no-lookup", "-no-idempotency"}, nil
	}
	return nil, fmt.Errorf("unknown contract %q: want full, idempotent, lookup or none", contract)
}

func (n *node) startPub(ctx context.Context) error {
	flags, err := contractFlags(n.sc.Contract)
	if err != nil {
		return err
	}
	urlFile := filepath.Join(n.dir, "pub.url")
	args := append([]string{"-log", n.pubLog, "-url-file", urlFile}, flags...)
	if n.sc.Hang {
		args = append(args, "-hang")
	}
	p, err := startProc("pubserver", n.cfg.PubServer, args, nil, filepath.Join(n.dir, "pubserver.log"))
	if err != nil {
		return err
	}
	n.pub = p
	n.pubURL, err = waitFile(ctx, urlFile, p)
	return err
}

// keelEnv is the environment of every keel process of the scenario.
func (n *node) keelEnv() []string {
	env := append([]string(nil), n.cfg.Env...)
	if n.cfg.Counter == nil {
		env = append(env, "RESEARCH_PUBLISH="+n.pubURL, "RESEARCH_PUBLISH_CONTRACT="+n.sc.Contract)
	}
	if n.sc.PublishTimeout > 0 {
		env = append(env, "RESEARCH_PUBLISH_TIMEOUT="+n.sc.PublishTimeout.String())
	}
	if n.table != "" {
		env = append(env, n.cfg.AWS.env...)
		env = append(env, "KEEL_STORE=dynamo:"+n.table, "KEEL_ARTIFACTS=s3:"+n.bucket)
	}
	if n.cfg.Lease == "short" {
		env = append(env, "KEEL_STEP_BUDGET="+shortStepBudget.String(), "KEEL_LEASE_TTL="+shortLeaseTTL.String())
	}
	env = append(env, n.sc.Env...)
	return append(env, n.build...)
}

// startKeel starts the next incarnation of keel dev and waits until it
// serves. When it dies before that (a fault point reached while resuming),
// the error wraps errExited and n.keel is the dead process.
func (n *node) startKeel(ctx context.Context, fault string) error {
	n.starts++
	n.c = nil
	urlFile := filepath.Join(n.data, "url")
	if err := os.Remove(urlFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Every incarnation is another worker: its workspace root is new and
	// empty, so a run with a workspace goes on only from what its
	// checkpoints recorded. Under the system's temporary directory, which
	// the sandbox's uid can reach; the scenario's own Env may replace it.
	root, err := os.MkdirTemp("", "keel-crash-ws-")
	if err != nil {
		return err
	}
	n.wsRoots = append(n.wsRoots, root)
	env := append([]string{"KEEL_WORKSPACE_ROOT=" + root}, n.keelEnv()...)
	if fault != "" {
		env = append(env, "KEEL_FAULTPOINT="+fault)
	}
	p, err := startProc(fmt.Sprintf("keel dev #%d", n.starts), n.cfg.Keel,
		[]string{"dev", "--addr", "127.0.0.1:0", "--data-dir", n.data}, env,
		filepath.Join(n.dir, fmt.Sprintf("keel-dev-%d.log", n.starts)))
	if err != nil {
		return err
	}
	n.keel = p
	u, err := waitFile(ctx, urlFile, p)
	if err != nil {
		return err
	}
	tok, err := os.ReadFile(filepath.Join(n.data, "token"))
	if err != nil {
		return err
	}
	// A client of its own: connections to a killed incarnation are not
	// reused for the next one.
	n.c, err = client.New(u, strings.TrimSpace(string(tok)), &http.Client{Transport: &http.Transport{}})
	return err
}

// close ends every process of the node.
func (n *node) close() {
	n.keel.kill()
	n.pub.stop()
	for _, r := range n.wsRoots {
		_ = os.RemoveAll(r)
	}
}

// Evidence is what the suite reads after a run ended: Keel's records
// through the HTTP API, the operations and plan items from the store (the
// API does not show operations), and the destination's own log.
type Evidence struct {
	Run       api.Run
	Events    []api.Event
	LogDone   bool // the API says the log is complete (terminal run, end reached)
	Approvals []api.Approval
	Ops       []run.Operation
	Items     []run.PlanItem
	Pubs      []Publication
	// Observed is what an EffectCounter said of each operation (by id);
	// nil when the destination is the publication server.
	Observed map[string]Observation
}

// collectAPI reads the run's records through the API of the live keel dev.
func (n *node) collectAPI(ctx context.Context, runID string, ev *Evidence) error {
	var err error
	if ev.Run, err = n.c.GetRun(ctx, runID); err != nil {
		return fmt.Errorf("get run: %w", err)
	}
	for after := int64(0); ; {
		page, err := n.c.Events(ctx, runID, after, 500)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		ev.Events = append(ev.Events, page.Events...)
		ev.LogDone = page.Done
		if len(page.Events) == 0 {
			break
		}
		after = page.Events[len(page.Events)-1].Seq
	}
	if ev.Approvals, err = n.c.ListApprovals(ctx, runID); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	return nil
}

// collectRecords reads what the API does not show, once every keel
// process has stopped: the operations and plan items, through the store
// (internal/backend/store/sqlite on a copy of the SQLite file, so the evidence
// itself is never written; internal/backend/store/dynamo on the scenario's table),
// and the publications from the destination's log.
func (n *node) collectRecords(ctx context.Context, runID string, ev *Evidence) error {
	var err error
	if n.cfg.Counter == nil {
		if ev.Pubs, err = readPublications(n.pubLog); err != nil {
			return err
		}
	}
	st, err := n.records(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if ev.Ops, err = st.ListOperations(ctx, runID, false); err != nil {
		return fmt.Errorf("operations: %w", err)
	}
	if ev.Items, err = st.ListPlanItems(ctx, runID); err != nil {
		return fmt.Errorf("plan items: %w", err)
	}
	return nil
}

// recordReader is what the suite reads from a store.
type recordReader interface {
	GetRun(ctx context.Context, id string) (run.Run, error)
	ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error)
	ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error)
	Close() error
}

var (
	_ recordReader = (*sqlite.Store)(nil)
	_ recordReader = (*dynamo.Store)(nil)
)

// records opens the scenario's store for reading: the table on DynamoDB,
// a snapshot of the SQLite file otherwise.
func (n *node) records(ctx context.Context) (recordReader, error) {
	if n.table != "" {
		return n.cfg.AWS.store(n.table)
	}
	snap := filepath.Join(n.dir, "snapshot")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return nil, err
	}
	for _, suffix := range []string{"", "-wal"} {
		if err := copyFile(filepath.Join(n.data, "keel.db"+suffix), filepath.Join(snap, "keel.db"+suffix)); err != nil {
			if suffix != "" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	return sqlite.Open(ctx, filepath.Join(snap, "keel.db"), sqlite.Options{})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// readPublications reads the destination's fsync'd log of every effect.
func readPublications(path string) ([]Publication, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pubs []Publication
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var p Publication
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			return nil, fmt.Errorf("publication log %s: %w", path, err)
		}
		pubs = append(pubs, p)
	}
	return pubs, sc.Err()
}

// AgentName is the agent the suite runs: the research fixture
// (internal/fixture) of the keel binary under test.
const AgentName = "research"

// Publication is one line of the publication server's log (the
// destination's own record of every effect it received). The suite reads
// it as an independent observer, with its own copy of the format.
type Publication struct {
	ID          string    `json:"id"`
	OperationID string    `json:"operation_id"`
	SHA256      string    `json:"sha256"`
	Bytes       int       `json:"bytes"`
	At          time.Time `json:"at"`
}
