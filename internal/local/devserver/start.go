// The phases of Start, in the order it runs them (split from
// devserver.go so that each phase reads on its own).

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
	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/notify"
	"github.com/keelrun/keel/internal/scrub"
	"github.com/keelrun/keel/stepfunctions"
)

// takeLock holds the data directory and the SQLite database for this
// process (AcquireLock), unless the caller took the lock already
// (Config.Lock). On failure it closes the runtime, which Start owns.
func (s *Server) takeLock(cfg Config) error {
	if s.lock != nil {
		return nil
	}
	spec := ""
	if s.rt.SQLite != nil {
		spec = s.rt.Config.Store
	}
	var err error
	if s.lock, err = AcquireLock(cfg.DataDir, spec); err != nil {
		_ = s.rt.Close()
		return err
	}
	return nil
}

// claimStore makes the store this process's to serve: the bearer token
// (a secret keel dev made, masked from here on like the configured ones:
// in the logs — the returned logger —, spans, API answers and bundles),
// and on SQLite the database's integrity checked and a previous keel
// dev's leases ended. owner names this process in leases.
func (s *Server) claimStore(ctx context.Context, cfg Config) (owner string, log *slog.Logger, err error) {
	rt := s.rt
	if s.Token, err = token(cfg.DataDir, cfg.Token); err != nil {
		return "", nil, err
	}
	rt.AddSecrets(s.Token)
	log = slog.New(scrub.Handler(cfg.Logger.Handler(), rt.Secrets))
	owner = fmt.Sprintf("%s%d-%s", ownerPrefix, os.Getpid(), randHex(4))
	if rt.SQLite == nil {
		// A shared store (DynamoDB) may hold leases of live workers
		// elsewhere, so none is ended; a lease of a crashed keel dev
		// expires (its TTL) and the Step retries until then.
		return owner, log, nil
	}
	// A damaged database is refused, not served: what it answers (an
	// empty event list, a run without its log) would be taken for the
	// truth.
	if err := rt.SQLite.CheckIntegrity(ctx); err != nil {
		return "", nil, fmt.Errorf("%s: %w: keel dev will not serve it (restore a copy, or move it aside to start afresh)", rt.Config.Store, err)
	}
	if n, err := rt.SQLite.ExpireLeases(ctx, ownerPrefix, owner); err != nil {
		return "", nil, err
	} else if n > 0 {
		log.Info("ended leases of a previous keel dev", "runs", n)
		rt.OTel.Telemetry().Takeover(ctx, owner, n)
	}
	return owner, log, nil
}

// listeners are the API's listener and, with a TaskCommand, the task
// children's Step Functions endpoint's; Start closes them on a failure
// until serve hands them to their servers.
type listeners struct{ api, sfn net.Listener }

func (l listeners) close() {
	l.api.Close()
	if l.sfn != nil {
		l.sfn.Close()
	}
}

// listen opens the listeners and sets URL and SFNURL.
func (s *Server) listen(cfg Config) (listeners, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// Another keel dev (another project's, with its own data
			// directory) or another program on the port.
			return listeners{}, fmt.Errorf("listen %s: %w: another program listens there (another project's dev? its URL is in its data directory's url file); "+
				"stop it, or pick another address with --addr or KEEL_ADDR (port 0: a free one)", cfg.Addr, err)
		}
		return listeners{}, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	s.URL = "http://" + ln.Addr().String()
	lns := listeners{api: ln}
	if len(cfg.TaskCommand) > 0 {
		// The task children's Step Functions endpoint: loopback only, on a
		// port of its own that nothing but them is told.
		if lns.sfn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			ln.Close()
			return listeners{}, fmt.Errorf("listen for the local Step Functions endpoint: %w", err)
		}
		s.SFNURL = "http://" + lns.sfn.Addr().String()
	}
	return lns, nil
}

// openSFNStore opens the executor's store. Step Functions state is always
// local: in keel.db beside the runs on SQLite (its transitions joining
// the run store's group commit), in its own sfn.db otherwise (which Close
// closes).
func (s *Server) openSFNStore(ctx context.Context, cfg Config) (*states.Store, error) {
	if s.rt.SQLite != nil {
		return states.NewStoreWith(ctx, s.rt.SQLite.DB(), s.rt.SQLite)
	}
	sfnStore, err := states.OpenStore(ctx, filepath.Join(cfg.DataDir, "sfn.db"))
	s.sfnStore = sfnStore
	return sfnStore, err
}

// taskRunner is the runner of the long-running task's children
// (TaskCommand), nil without one.
func (s *Server) taskRunner(cfg Config, owner string, log *slog.Logger) *states.ExecTaskRunner {
	if len(cfg.TaskCommand) == 0 {
		return nil
	}
	rt := s.rt
	// The task gets its own fault point (KEEL_TASK_FAULTPOINT), never the
	// server's.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEL_FAULTPOINT=") && !strings.HasPrefix(kv, "KEEL_TASK_FAULTPOINT=") {
			env = append(env, kv)
		}
	}
	if fp := os.Getenv("KEEL_TASK_FAULTPOINT"); fp != "" {
		env = append(env, "KEEL_FAULTPOINT="+fp)
	}
	// The child builds its runtime from the same configuration: the store
	// and artifacts as resolved here (flags included), the rest from the
	// environment it inherits.
	env = append(env,
		"KEEL_STORE="+rt.Config.Store, "KEEL_ARTIFACTS="+rt.Config.Artifacts, "KEEL_DATA_DIR="+cfg.DataDir,
		"KEEL_SFN_ENDPOINT="+s.SFNURL, "KEEL_SFN_TOKEN="+s.Token, "KEEL_OWNER="+taskOwner(owner))
	if rt.Config.Model != "" {
		env = append(env, "KEEL_MODEL="+rt.Config.Model)
	}
	return &states.ExecTaskRunner{Command: cfg.TaskCommand[0], Args: cfg.TaskCommand[1:], Env: env,
		Stdout: os.Stderr, Stderr: os.Stderr, Logger: log}
}

// buildExecutor builds the local Step Functions executor (s.exec) on its
// store, with the Step, Approval and Finalize handlers on h and the task
// runner, and registers run.asl.json with it; it returns the state
// machine's ARN.
func (s *Server) buildExecutor(ctx context.Context, cfg Config, h *harness.Harness, owner string, log *slog.Logger) (string, error) {
	rt := s.rt
	sfnStore, err := s.openSFNStore(ctx, cfg)
	if err != nil {
		return "", err
	}
	s.tasks = s.taskRunner(cfg, owner, log)
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
		return "", errors.New("devserver: MaxInvocations must be 0 (the default) or more")
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
		return "", err
	}
	tokens.e = s.exec
	machine, err := states.Load(stepfunctions.Definition, map[string]string{
		"StepFunctionArn": stepFn, "ApprovalFunctionArn": approvalFn, "FinalizeFunctionArn": finalizeFn,
		"ClusterArn": "local", "TaskDefinitionArn": "keel-task", "SubnetIds": "local", "SecurityGroupIds": "local",
		"AssignPublicIp": "DISABLED", "ContainerName": "keel",
	})
	if err != nil {
		return "", err
	}
	return s.exec.Register(ctx, machineName, machine)
}

// buildAPI builds the notification worker and the HTTP API on the
// executor whose state machine is arn: the documented API, MCP at
// /v1/mcp included, and nothing else.
func (s *Server) buildAPI(cfg Config, arn string, log *slog.Logger) (*notify.Worker, http.Handler, error) {
	rt := s.rt
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
		return nil, nil, err
	}
	inst, err := instance(cfg.DataDir)
	if err != nil {
		return nil, nil, err
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
		Versions:   rt,
	})
	if err != nil {
		return nil, nil, err
	}
	return outbox, compose.MountMCP(apiHandler, auth, rt.Config, rt.BundleEnv().Version, log), nil
}

// serve serves the API on its listener and, with one, the local Step
// Functions endpoint on its own, each in a goroutine; the servers own the
// listeners from here on (Close shuts them down).
func (s *Server) serve(cfg Config, lns listeners, handler http.Handler, log *slog.Logger) {
	lim := cfg.HTTP.withDefaults()
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout, IdleTimeout: lim.IdleTimeout}
	ln := limitListener(lns.api, lim.MaxConns)
	if lns.sfn != nil {
		// The SDK of the task signs with access key "keel-dev" and the dev
		// token as its secret: the signature is verified.
		sfnAPI := requireSigV4(s.Token, time.Now, states.NewHandler(s.exec, log))
		s.sfnHTTP = &http.Server{Handler: sfnAPI, ReadHeaderTimeout: lim.ReadHeaderTimeout,
			ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout, IdleTimeout: lim.IdleTimeout}
		go func() { _ = s.sfnHTTP.Serve(limitListener(lns.sfn, 64)) }()
	}
	go func() { s.serveErr <- s.http.Serve(ln) }()
}
