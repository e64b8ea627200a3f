// Package devserver is `keel dev`: one process serving Keel's HTTP API, the
// local Step Functions executor running stepfunctions/run.asl.json (and its
// API, for the SDK clients of the long-running task), the SQLite store and
// the file artifact store, all under one data directory.
//
// The runtime (store, artifacts, agents) is opened by internal/compose from
// the one configuration; the store and artifacts may be DynamoDB and S3
// (dynamo:TABLE / s3:BUCKET, e.g. against LocalStack through
// AWS_ENDPOINT_URL). Step Functions state stays local either way:
// in keel.db with SQLite, in DIR/sfn.db otherwise.
//
// The data directory is held exclusively (an flock on DIR/lock), and so is
// the SQLite database file (an flock on the file itself, whatever path,
// link or mount names it; see Lock): a second `keel dev` on the same
// directory or database is refused. Because of that, leases held
// by an earlier incarnation belong to a dead process and are ended at start,
// so recovery after a crash does not wait for them to expire (on SQLite
// only: a shared DynamoDB table may hold leases of live workers elsewhere,
// so there a crashed keel dev's leases run out their TTL: Config.StepBudget
// plus Config.LeaseTTL, 90s by default, less where the caller sets them
// shorter, as the crash suite does). Restarting resumes every execution where it stopped: waits keep their end times,
// task tokens stay valid, and an in-flight step is run again (the harness
// reconciles before it does anything).
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/aws/states"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/scrub"
	"github.com/keelrun/keel/stepfunctions"
)

// Function names the local executor binds run.asl.json's placeholders to.
const (
	stepFn      = "keel-step"
	approvalFn  = "keel-approval"
	finalizeFn  = "keel-finalize"
	machineName = "keel-run"
	ownerPrefix = "keel-dev/"
)

// Server is a running dev server.
type Server struct {
	URL   string
	Token string
	// SFNURL is the local Step Functions endpoint (a loopback listener of
	// its own, empty without TaskCommand): only the task children are
	// given it, and it answers only requests signed by the dev token.
	SFNURL string

	http     *http.Server
	sfnHTTP  *http.Server
	exec     *states.Executor
	tasks    *states.ExecTaskRunner
	rt       *compose.Runtime
	sfnStore *states.Store // opened here (not on the run store's database)
	lock     *Lock
	serveErr chan error
	sweeper  *sweeper.Sweeper
	stopSwp  context.CancelFunc
	swept    chan struct{}
	// stopNotify stops the notification worker (startNotify).
	stopNotify func()
}

// Start opens everything, resumes executions and serves until Close.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = ".keel"
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.Principal == "" {
		cfg.Principal = "dev"
	}
	if cfg.StepBudget <= 0 {
		cfg.StepBudget = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := cfg.Logger
	if err := CheckAddr(cfg.Addr, cfg.AllowRemote); err != nil {
		return nil, err
	} else if !isLoopback(cfg.Addr) {
		log.Warn("keel dev is serving on a non-loopback address: anyone who reaches it over plain HTTP can try the bearer token", "addr", cfg.Addr)
	}
	if cfg.Runtime == nil {
		return nil, errors.New("devserver: no runtime")
	}
	s := &Server{serveErr: make(chan error, 1), rt: cfg.Runtime, lock: cfg.Lock}
	rt := cfg.Runtime
	var err error
	if s.lock == nil {
		spec := ""
		if rt.SQLite != nil {
			spec = rt.Config.Store
		}
		if s.lock, err = AcquireLock(cfg.DataDir, spec); err != nil {
			_ = rt.Close()
			return nil, err
		}
	}
	fail := func(err error) (*Server, error) {
		s.Close()
		return nil, err
	}
	if s.Token, err = token(cfg.DataDir, cfg.Token); err != nil {
		return fail(err)
	}
	// The token is a secret keel dev made: masked like the configured ones
	// in the logs, spans, API answers and bundles.
	rt.AddSecrets(s.Token)
	log = slog.New(scrub.Handler(log.Handler(), rt.Secrets))
	owner := fmt.Sprintf("%s%d-%s", ownerPrefix, os.Getpid(), randHex(4))
	if rt.SQLite != nil {
		// A damaged database is refused, not served: what it answers
		// (an empty event list, a run without its log) would be taken
		// for the truth.
		if err := rt.SQLite.CheckIntegrity(ctx); err != nil {
			return fail(fmt.Errorf("%s: %w: keel dev will not serve it (restore a copy, or move it aside to start afresh)", rt.Config.Store, err))
		}
		if n, err := rt.SQLite.ExpireLeases(ctx, ownerPrefix, owner); err != nil {
			return fail(err)
		} else if n > 0 {
			log.Info("ended leases of a previous keel dev", "runs", n)
			rt.OTel.Telemetry().Takeover(ctx, owner, n)
		}
	}
	// else: a shared store (DynamoDB) may hold leases of live workers
	// elsewhere, so none is ended; a lease of a crashed keel dev expires
	// (its TTL) and the Step retries until then.
	h, err := rt.Harness(owner, len(cfg.TaskCommand) > 0)
	if err != nil {
		return fail(err)
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// Another keel dev (another project's, with its own data
			// directory) or another program on the port.
			return fail(fmt.Errorf("listen %s: %w: another program listens there (another project's dev? its URL is in its data directory's url file); "+
				"stop it, or pick another address with --addr or KEEL_ADDR (port 0: a free one)", cfg.Addr, err))
		}
		return fail(fmt.Errorf("listen %s: %w", cfg.Addr, err))
	}
	s.URL = "http://" + ln.Addr().String()
	var sfnLn net.Listener
	if len(cfg.TaskCommand) > 0 {
		// The task children's Step Functions endpoint: loopback only, on a
		// port of its own that nothing but them is told.
		if sfnLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			ln.Close()
			return fail(fmt.Errorf("listen for the local Step Functions endpoint: %w", err))
		}
		s.SFNURL = "http://" + sfnLn.Addr().String()
	}
	closeLns := func() {
		ln.Close()
		if sfnLn != nil {
			sfnLn.Close()
		}
	}

	// Step Functions state is always local: in keel.db beside the runs on
	// SQLite (its transitions joining the run store's group commit), in its
	// own sfn.db otherwise.
	var sfnStore *states.Store
	if rt.SQLite != nil {
		sfnStore, err = states.NewStoreWith(ctx, rt.SQLite.DB(), rt.SQLite)
	} else {
		sfnStore, err = states.OpenStore(ctx, filepath.Join(cfg.DataDir, "sfn.db"))
		s.sfnStore = sfnStore
	}
	if err != nil {
		closeLns()
		return fail(err)
	}
	if len(cfg.TaskCommand) > 0 {
		// The task gets its own fault point (KEEL_TASK_FAULTPOINT), never
		// the server's.
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "KEEL_FAULTPOINT=") && !strings.HasPrefix(kv, "KEEL_TASK_FAULTPOINT=") {
				env = append(env, kv)
			}
		}
		if fp := os.Getenv("KEEL_TASK_FAULTPOINT"); fp != "" {
			env = append(env, "KEEL_FAULTPOINT="+fp)
		}
		// The child builds its runtime from the same configuration: the
		// store and artifacts as resolved here (flags included), the rest
		// from the environment it inherits.
		env = append(env,
			"KEEL_STORE="+rt.Config.Store, "KEEL_ARTIFACTS="+rt.Config.Artifacts, "KEEL_DATA_DIR="+cfg.DataDir,
			"KEEL_SFN_ENDPOINT="+s.SFNURL, "KEEL_SFN_TOKEN="+s.Token, "KEEL_OWNER="+taskOwner(owner))
		if rt.Config.Model != "" {
			env = append(env, "KEEL_MODEL="+rt.Config.Model)
		}
		s.tasks = &states.ExecTaskRunner{Command: cfg.TaskCommand[0], Args: cfg.TaskCommand[1:], Env: env,
			Stdout: os.Stderr, Stderr: os.Stderr, Logger: log}
	}
	step := roles.Step{Harness: h, Budget: func(context.Context) time.Duration { return cfg.StepBudget }}
	fin := rt.Finalizer(h)
	var taskRunner states.TaskRunner
	if s.tasks != nil {
		taskRunner = s.tasks
	}
	// The approval handler answers through the executor it is registered
	// with: tokens points at it once it exists.
	tokens := &lateTokens{}
	appr := roles.Approval{Store: rt.Store, Tokens: tokens}
	if cfg.MaxInvocations < 0 {
		closeLns()
		return fail(errors.New("devserver: MaxInvocations must be 0 (the default) or more"))
	}
	if cfg.MaxInvocations == 0 {
		cfg.MaxInvocations = DefaultMaxInvocations
	}
	s.exec, err = states.New(states.Config{Store: sfnStore, Tasks: taskRunner, Logger: log, MaxInvocations: cfg.MaxInvocations, Lambdas: map[string]states.LambdaFunc{
		stepFn:     lambda(step.Handle),
		approvalFn: lambda(appr.Handle),
		finalizeFn: lambda(fin.Handle),
	}})
	if err != nil {
		closeLns()
		return fail(err)
	}
	tokens.e = s.exec
	machine, err := states.Load(stepfunctions.Definition, map[string]string{
		"StepFunctionArn": stepFn, "ApprovalFunctionArn": approvalFn, "FinalizeFunctionArn": finalizeFn,
		"ClusterArn": "local", "TaskDefinitionArn": "keel-task", "SubnetIds": "local", "SecurityGroupIds": "local",
		"AssignPublicIp": "DISABLED", "ContainerName": "keel",
	})
	if err != nil {
		closeLns()
		return fail(err)
	}
	arn, err := s.exec.Register(ctx, machineName, machine)
	if err != nil {
		closeLns()
		return fail(err)
	}
	// Live streams wait on the store's commits (this process's: a task
	// child's reach them by polling, every 2s).
	var notifier api.Notifier
	if rt.SQLite != nil {
		b := &api.Broadcaster{}
		rt.SQLite.OnEvents(b.Notify)
		notifier = b
	}
	starter := roles.Starter{Executions: execStarter{s.exec}, StateMachineARN: arn, Statuses: execSweep{e: s.exec, arn: arn}}
	rt.Children.Bind(starter, roles.Resumer{Tokens: s.exec}) // sub-agents start their child runs as the API does
	auth := api.Tokens{s.Token: cfg.Principal}
	// The notification worker is built before the API: the link page
	// checks each link against the worker's current key (a rotated key
	// revokes the links sent under the old one).
	outbox, err := rt.NotifyWorker(s.URL)
	if err != nil {
		closeLns()
		return fail(err)
	}
	inst, err := instance(cfg.DataDir)
	if err != nil {
		closeLns()
		return fail(err)
	}
	apiHandler, err := api.New(api.Deps{
		Instance: inst,
		Store:    rt.Store, Artifacts: rt.Artifacts,
		Starter:  starter,
		Resumer:  wakeFaults{Resumer: roles.Resumer{Tokens: s.exec}, faults: rt.Faults},
		Auth:     auth,
		Agents:   rt.Catalog,
		Notifier: notifier,
		Logger:   log,
		Records:  rt.Store, BundleEnv: rt.BundleEnv(),
		Deployment: compose.Reporter{Runtime: rt, Executor: "local"},
		Secrets:    rt.Secrets,
		Links:      outbox,
	})
	if err != nil {
		closeLns()
		return fail(err)
	}
	// The API port serves the documented API (MCP at /v1/mcp included)
	// and nothing else.
	apiHandler = compose.MountMCP(apiHandler, auth, rt.Config, rt.BundleEnv().Version, log)
	lim := cfg.HTTP.withDefaults()
	s.http = &http.Server{Handler: apiHandler, ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout, IdleTimeout: lim.IdleTimeout}
	ln = limitListener(ln, lim.MaxConns)
	if sfnLn != nil {
		// The SDK of the task signs with access key "keel-dev" and the dev
		// token as its secret: the signature is verified.
		sfnAPI := requireSigV4(s.Token, time.Now, states.NewHandler(s.exec, log))
		s.sfnHTTP = &http.Server{Handler: sfnAPI, ReadHeaderTimeout: lim.ReadHeaderTimeout,
			ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout, IdleTimeout: lim.IdleTimeout}
		go func() { _ = s.sfnHTTP.Serve(limitListener(sfnLn, 64)) }()
	}
	go func() { s.serveErr <- s.http.Serve(ln) }()
	if err := s.exec.Start(ctx); err != nil {
		return fail(err)
	}
	// The sweeper: once now — on SQLite nothing else can be starting a
	// run of this store (the data directory is held), so it need not wait
	// for runs to age — then every SweepInterval.
	s.sweeper = rt.Sweeper(execSweep{e: s.exec, arn: arn}, h, roles.Resumer{Tokens: s.exec})
	first := *s.sweeper
	if rt.SQLite != nil {
		first.MinAge = 0
	}
	if _, err := first.Sweep(ctx); err != nil {
		log.Warn("sweep at start failed", "err", err)
	}
	interval := cfg.SweepInterval
	if interval <= 0 {
		interval = rt.Config.SweepInterval
	}
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	swpCtx, stop := context.WithCancel(context.Background())
	s.stopSwp, s.swept = stop, make(chan struct{})
	go func() {
		defer close(s.swept)
		for {
			select {
			case <-swpCtx.Done():
				return
			case <-time.After(interval):
			}
			if _, err := s.sweeper.Sweep(swpCtx); err != nil && swpCtx.Err() == nil {
				log.Warn("sweep failed", "err", err)
			}
		}
	}()
	s.stopNotify = startNotify(outbox, rt.Config.Notify.Interval)
	if err := writeFile(filepath.Join(cfg.DataDir, "url"), s.URL); err != nil {
		return fail(err)
	}
	log.Info("keel dev ready", "url", s.URL, "data_dir", cfg.DataDir)
	return s, nil
}

// Wait blocks until the HTTP server stops.
func (s *Server) Wait() error {
	err := <-s.serveErr
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and driving executions; they resume at the next Start.
func (s *Server) Close() error {
	if s.stopNotify != nil {
		s.stopNotify()
	}
	if s.stopSwp != nil {
		s.stopSwp()
		<-s.swept
	}
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.http.Shutdown(ctx)
		cancel()
	}
	if s.sfnHTTP != nil {
		_ = s.sfnHTTP.Close()
	}
	if s.exec != nil {
		s.exec.Close()
	}
	var err error
	if s.rt != nil {
		err = s.rt.Close()
	}
	if s.sfnStore != nil {
		err = errors.Join(err, s.sfnStore.Close())
	}
	return errors.Join(err, s.lock.Close())
}

// taskOwner is the lease owner of a task child of the keel dev whose owner
// is devOwner: under the same prefix, so that the next keel dev ends its
// leases at start with its parent's (ExpireLeases) rather than waiting for
// them to expire. A task child dies with its parent (states.ExecTaskRunner).
func taskOwner(devOwner string) string { return devOwner + "/task-" + randHex(4) }
