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
	"net/http"
	"path/filepath"
	"time"

	"github.com/keelrun/keel/internal/aws/states"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/compose"
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

// Start opens everything, resumes executions and serves until Close. It
// runs its phases in dependency order — take the lock, claim the store,
// listen, build the executor, build the API, serve, then resume the
// executions, sweep and deliver notifications — and a failure in any
// closes what the phases before it opened: Close, and the listeners until
// they are served. On success Close closes it all, Runtime and Lock too.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rt := cfg.Runtime
	s := &Server{serveErr: make(chan error, 1), rt: rt, lock: cfg.Lock}
	if err := s.takeLock(cfg); err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		s.Close()
		return nil, err
	}
	owner, log, err := s.claimStore(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	h, err := rt.Harness(owner, len(cfg.TaskCommand) > 0)
	if err != nil {
		return fail(err)
	}
	lns, err := s.listen(cfg)
	if err != nil {
		return fail(err)
	}
	arn, err := s.buildExecutor(ctx, cfg, h, owner, log)
	if err != nil {
		lns.close()
		return fail(err)
	}
	outbox, handler, err := s.buildAPI(cfg, arn, log)
	if err != nil {
		lns.close()
		return fail(err)
	}
	s.serve(cfg, lns, handler, log)
	if err := s.exec.Start(ctx); err != nil {
		return fail(err)
	}
	s.startSweeper(ctx, cfg, rt, execSweep{e: s.exec, arn: arn}, h, log)
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
