package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/notify"
	"github.com/keelrun/keel/internal/observe/telemetry"
	"github.com/keelrun/keel/internal/observe/viewer"
	"github.com/keelrun/keel/internal/scrub"
)

// Store is what the API needs from durable storage: a subset of
// store.Store, whose doc comments are the contract.
type Store interface {
	store.Runs
	store.Events
	GetApproval(ctx context.Context, runID, approvalID string) (run.Approval, error)
	ListApprovals(ctx context.Context, runID string) ([]run.Approval, error)
	DecideApproval(ctx context.Context, d store.Decision) (run.Approval, error)
	RequestCancel(ctx context.Context, runID, by string) (run.Run, []run.Approval, error)
	EnqueueInput(ctx context.Context, runID, text string) (run.Input, error)
	ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error)
	GetCheckpoint(ctx context.Context, runID, checkpointID string) (run.Checkpoint, error)
	ListCheckpoints(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Checkpoint, error)
	ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error)
	store.Settler
	ListNotifications(ctx context.Context, runID string) ([]run.Notification, error)
}

// Artifacts is what the API needs from the artifact store (downloads).
type Artifacts interface {
	Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error)
	List(ctx context.Context, runID string) ([]artifact.Info, error)
}

// Starter starts a stored run's execution. StartRun must be idempotent: it
// is called again for a run that may already be running (a retried create),
// and a second call for the same run must not start a second execution. On
// AWS it is StartExecution with name = run id; in `keel dev` it hands the
// run to the local executor.
type Starter interface {
	StartRun(ctx context.Context, runID string) error
}

// Resumer wakes a run that waits on an approval, after the approval was
// decided or cancelled, through the approval's task token. It must be
// idempotent, and may be a no-op when no token is attached yet (whoever
// attaches the token later sees the decision and resumes at once).
type Resumer interface {
	Resume(ctx context.Context, approval run.Approval) error
}

// Authenticator names the principal making a request. An error means the
// request is not authenticated (401); its text is not shown to the client.
type Authenticator interface {
	Principal(r *http.Request) (string, error)
}

// Agents says which agent names a run may ask for, and the defaults of
// each agent's runs.
type Agents interface {
	Agent(name string) (AgentDefaults, bool)
}

// AgentNamer is an optional capability of [Agents]: the names it knows,
// so that a request naming an unknown agent is answered with the valid
// ones.
type AgentNamer interface {
	AgentNames() []string
}

// AgentSet is an [Agents] backed by a map from name to defaults.
type AgentSet map[string]AgentDefaults

var _ AgentNamer = AgentSet(nil)

// AgentNames returns the set's names, sorted.
func (s AgentSet) AgentNames() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Agent returns the defaults of the named agent, if it is in the set.
func (s AgentSet) Agent(name string) (AgentDefaults, bool) {
	d, ok := s[name]
	return d, ok
}

// AgentDefaults are what an agent declares for its runs: limits and an
// input policy used where the run's creator names none.
type AgentDefaults struct {
	// Limits fill the fields a new run leaves zero; Keel's own defaults
	// (run.DefaultLimits) fill what is still zero.
	Limits run.Limits
	// Timeout, when set, makes a run's deadline its creation time plus
	// Timeout, unless the run names its own deadline.
	Timeout time.Duration
	// InputPolicy is used when the run names none (empty: queue).
	InputPolicy run.InputPolicy
	// Version is the agent's version (package agentver) in this
	// process: a run created here records it (run.Run.AgentVersion).
	Version string
}

// Apply fills l and p from the defaults, then from Keel's, as of now.
func (d AgentDefaults) Apply(l run.Limits, p run.InputPolicy, now time.Time) (run.Limits, run.InputPolicy) {
	if l.MaxSteps == 0 {
		l.MaxSteps = d.Limits.MaxSteps
	}
	if l.MaxToolCalls == 0 {
		l.MaxToolCalls = d.Limits.MaxToolCalls
	}
	if l.MaxTokens == 0 {
		l.MaxTokens = d.Limits.MaxTokens
	}
	if l.MaxSpendMicroUSD == 0 {
		l.MaxSpendMicroUSD = d.Limits.MaxSpendMicroUSD
	}
	if l.Deadline.IsZero() && d.Timeout > 0 {
		l.Deadline = now.Add(d.Timeout).UTC()
	}
	if p == "" {
		p = d.InputPolicy
	}
	if p == "" {
		p = run.InputQueue
	}
	return l.WithDefaults(), p
}

// Deps are the dependencies of the handler. Store, Starter, Resumer, Auth
// and Agents are required; the rest have defaults.
type Deps struct {
	// Instance, when set, is answered by the unauthenticated GET /healthz
	// as "instance": keel dev's id of its data directory, so that a client
	// checks it talks to the dev its .keel/ names before it sends that
	// directory's token.
	Instance string
	Store    Store
	Starter  Starter
	Resumer  Resumer
	Auth     Authenticator
	Agents   Agents
	// Artifacts may be nil: the artifact list is then empty and downloads 404.
	Artifacts Artifacts
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger gets one line per request and every internal error; nil
	// discards.
	Logger *slog.Logger

	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Notifier, when set, wakes SSE streams when their run's log grows
	// (keel dev: the SQLite store's commits); nil: streams only poll.
	Notifier Notifier
	// PollInterval is how often an SSE stream polls the store for new
	// events; 0 means 1s, or 2s with a Notifier (then polling only
	// catches what the notifier cannot see, such as another process's
	// commits).
	PollInterval time.Duration
	// MaxStreamsPerPrincipal bounds the SSE streams one principal may
	// hold open at once; more get 429 too_many_streams. 0 means 32.
	MaxStreamsPerPrincipal int
	// KeepAlive is how long an SSE stream may stay silent before it sends a
	// comment line, so proxies keep the connection; 0 means 15s.
	KeepAlive time.Duration
	// MaxStreamDuration ends an SSE stream after this long, with a retry
	// hint; the client reconnects with Last-Event-ID and loses nothing.
	// Needed behind gateways with a request timeout. 0 means no bound.
	MaxStreamDuration time.Duration

	// Records, when set, serve a run's story and debug bundle
	// (GET /v1/runs/{id}/explain and /bundle) and its version check
	// (/version); nil: those answer 404.
	Records RunRecords
	// BundleEnv is what env.txt of a bundle served on demand says.
	BundleEnv telemetry.Env
	// Deployment, when set, serves GET /v1/deployment (keel doctor).
	Deployment Deployment
	// Links, when set, says whether a one-time link's token was derived
	// from the current link key (notify.Worker): a link whose hash matches
	// but whose key was rotated away is refused as revoked. nil: a token
	// is checked against its stored hash only.
	Links LinkChecker
	// Secrets are masked in every text response (JSON and SSE): the
	// deployment's facts, and run data that echoes a credential. Stored
	// records are not changed; artifacts are served as stored. A request
	// body that holds one of them (MinRefusedSecret bytes or longer) is
	// refused (refuseSecret): masking a caller's own text in the answer
	// would tell it which of its guesses is a secret.
	Secrets scrub.Secrets
}

// LinkChecker checks a link token against the current link key.
type LinkChecker interface {
	LinkCurrent(n run.Notification, token string) bool
}

// DefaultMaxBodyBytes bounds request bodies: room for a full-size input
// (store.MaxText) after JSON escaping.
const DefaultMaxBodyBytes = 1 << 20

// server holds the handler's dependencies; each handler is a method.
type server struct {
	instance  string
	store     Store
	starter   Starter
	resumer   Resumer
	auth      Authenticator
	agents    Agents
	artifacts Artifacts
	now       func() time.Time
	log       *slog.Logger
	maxBody   int64
	poll      time.Duration
	keepAlive time.Duration
	maxStream time.Duration
	notifier  Notifier
	streams   streamCounter
	records   RunRecords
	bundleEnv telemetry.Env
	deploy    Deployment
	links     LinkChecker
	// guard are the secrets a request body may not hold (refuseSecret).
	guard scrub.Secrets
}

// New returns the API handler. It fails if Deps.Store, Starter, Resumer,
// Auth or Agents is missing.
func New(d Deps) (http.Handler, error) {
	if d.Store == nil || d.Starter == nil || d.Resumer == nil || d.Auth == nil || d.Agents == nil {
		return nil, errors.New("api.New: Store, Starter, Resumer, Auth and Agents are required")
	}
	s := &server{
		instance: d.Instance,
		store:    d.Store, starter: d.Starter, resumer: d.Resumer, auth: d.Auth,
		agents: d.Agents, artifacts: d.Artifacts, now: d.Now, log: d.Logger,
		maxBody: d.MaxBodyBytes, poll: d.PollInterval, keepAlive: d.KeepAlive,
		maxStream: d.MaxStreamDuration, notifier: d.Notifier,
		streams: streamCounter{max: d.MaxStreamsPerPrincipal, open: map[string]int{}},
		records: d.Records, bundleEnv: d.BundleEnv, deploy: d.Deployment, links: d.Links,
		guard: d.Secrets.AtLeast(MinRefusedSecret),
	}
	if s.streams.max <= 0 {
		s.streams.max = 32
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.poll <= 0 {
		s.poll = time.Second
		if s.notifier != nil {
			s.poll = 2 * time.Second
		}
	}
	if s.keepAlive <= 0 {
		s.keepAlive = 15 * time.Second
	}
	return d.Secrets.Middleware(s.routes()), nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	// The web run viewer (internal/observe/viewer): public static assets, no data;
	// the page calls the /v1 routes below with the person's token.
	view := viewer.Handler()
	mux.Handle("GET /{$}", view)
	mux.Handle("GET "+viewer.Prefix, view)
	// One-time approval links: the token in the path is the credential.
	mux.HandleFunc("GET "+notify.LinkPath+"{token}", s.linkShow)
	mux.HandleFunc("POST "+notify.LinkPath+"{token}", s.linkDecide)
	authed := func(pattern string, h func(w http.ResponseWriter, r *http.Request, principal string)) {
		mux.HandleFunc(pattern, s.authenticate(h))
	}
	authed("POST /v1/runs", s.createRun)
	authed("GET /v1/runs", s.listRuns)
	authed("GET /v1/runs/{id}", s.getRun)
	authed("GET /v1/runs/{id}/events", s.events)
	authed("GET /v1/runs/{id}/audit", s.audit)
	authed("GET /v1/runs/{id}/approvals", s.listApprovals)
	authed("GET /v1/runs/{id}/operations", s.listOperations)
	authed("GET /v1/runs/{id}/notifications", s.listNotifications)
	authed("POST /v1/runs/{id}/operations/{op}/settle", s.settle)
	authed("GET /v1/runs/{id}/approvals/{approval_id}", s.getApproval)
	authed("POST /v1/runs/{id}/approvals/{approval_id}", s.decide)
	authed("POST /v1/runs/{id}/limits", s.decideLimit)
	authed("POST /v1/runs/{id}/cancel", s.cancel)
	authed("POST /v1/runs/{id}/input", s.input)
	authed("POST /v1/runs/{id}/fork", s.fork)
	authed("GET /v1/runs/{id}/checkpoints", s.listCheckpoints)
	authed("GET /v1/runs/{id}/cost", s.runCost)
	authed("GET /v1/runs/{id}/artifacts", s.listArtifacts)
	authed("GET /v1/runs/{id}/artifacts/{checkpoint_id}/{name}", s.downloadArtifact)
	authed("GET /v1/runs/{id}/workspace", s.listWorkspace)
	authed("GET /v1/runs/{id}/workspace/files", s.workspaceFiles)
	authed("GET /v1/runs/{id}/explain", s.explainRun)
	authed("GET /v1/runs/{id}/bundle", s.bundle)
	authed("GET /v1/runs/{id}/version", s.runVersion)
	authed("GET /v1/deployment", s.deployment)
	return s.recoverer(s.logRequests(s.jsonFallbacks(mux)))
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	out := map[string]string{"status": "ok"}
	if s.instance != "" {
		out["instance"] = s.instance
	}
	writeJSON(w, http.StatusOK, out)
}
