package states

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
)

// maxPayload is Step Functions' limit on a state's input or output.
const maxPayload = 256 * 1024

const timeLayout = "2006-01-02T15:04:05.000Z"

var (
	errShutdown = errors.New("executor shutting down")
	errFinished = errors.New("execution finished")
)

// Config holds an Executor's dependencies.
type Config struct {
	Store *Store
	// Lambdas maps a FunctionName (after substitution) to its handler.
	Lambdas map[string]LambdaFunc
	// LambdaNamed, when set, is asked for a FunctionName Lambdas does
	// not hold: a qualified name (NAME:N, an alias ARN) a state computed.
	LambdaNamed func(name string) (LambdaFunc, bool)
	// Tasks runs ecs:runTask; nil makes such tasks fail.
	Tasks TaskRunner
	// Clock defaults to the wall clock.
	Clock Clock
	// Rand returns a number in [0,1) for FULL retry jitter; defaults to
	// math/rand/v2.
	Rand func() float64
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Region and Account go into ARNs; they default to us-east-1 and
	// 000000000000.
	Region, Account string
	// MaxInvocations bounds the Lambda invocations running at once; a
	// free slot goes to the execution that started first (slots.go).
	// 0: unbounded.
	MaxInvocations int
}

// Executor runs state machine executions durably. See the package
// documentation for its guarantees.
type Executor struct {
	store   *Store
	lambdas map[string]LambdaFunc
	named   func(name string) (LambdaFunc, bool)
	tasks   TaskRunner
	clock   Clock
	rand    func() float64
	log     *slog.Logger
	region  string
	account string
	slots   *slots // nil: unbounded

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	runs     map[string]*execRun
	machines map[string]*Machine // by definition hash
	closed   bool
}

// New builds an Executor. Call Register for each state machine, then Start
// to resume executions left running by an earlier process.
func New(cfg Config) (*Executor, error) {
	if cfg.Store == nil {
		return nil, errors.New("states: Config.Store is required")
	}
	e := &Executor{
		store: cfg.Store, lambdas: cfg.Lambdas, named: cfg.LambdaNamed, tasks: cfg.Tasks, clock: cfg.Clock, rand: cfg.Rand,
		log: cfg.Logger, region: cfg.Region, account: cfg.Account,
		runs: map[string]*execRun{}, machines: map[string]*Machine{},
	}
	if e.clock == nil {
		e.clock = SystemClock{}
	}
	if e.rand == nil {
		e.rand = mrand.Float64
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.region == "" {
		e.region = "us-east-1"
	}
	if e.account == "" {
		e.account = "000000000000"
	}
	if e.lambdas == nil {
		e.lambdas = map[string]LambdaFunc{}
	}
	if cfg.MaxInvocations < 0 {
		return nil, errors.New("states: Config.MaxInvocations must be 0 (unbounded) or more")
	}
	if cfg.MaxInvocations > 0 {
		e.slots = newSlots(cfg.MaxInvocations)
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e, nil
}

// StateMachineARN returns the ARN Register gives the named machine.
func (e *Executor) StateMachineARN(name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", e.region, e.account, name)
}

func (e *Executor) executionARN(machine, name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", e.region, e.account, machine, name)
}

// Register stores m as the current definition of the named state machine
// and returns its ARN. New executions use it; running ones keep the
// definition they started with.
func (e *Executor) Register(ctx context.Context, name string, m *Machine) (string, error) {
	if err := validateName(name); err != nil {
		return "", err
	}
	sum := sha256.Sum256(m.Definition)
	hash := hex.EncodeToString(sum[:])
	arn := e.StateMachineARN(name)
	if err := e.store.putDefinition(ctx, arn, name, hash, m.Definition, e.clock.Now()); err != nil {
		return "", fmt.Errorf("states: register %s: %w", name, err)
	}
	e.mu.Lock()
	e.machines[hash] = m
	e.mu.Unlock()
	return arn, nil
}

// Start resumes every execution the store has as RUNNING. Waits keep their
// absolute end times, task tokens stay valid, and a task that was in
// flight when the previous process died is invoked again.
func (e *Executor) Start(ctx context.Context) error {
	recs, err := e.store.runningExecutions(ctx)
	if err != nil {
		return fmt.Errorf("states: list running executions: %w", err)
	}
	for _, rec := range recs {
		if err := e.launch(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

// Close stops driving executions (they stay RUNNING in the store and resume
// on the next Start) and waits for the goroutines to return.
func (e *Executor) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
}

func (e *Executor) machineFor(ctx context.Context, hash string) (*Machine, error) {
	e.mu.Lock()
	m, ok := e.machines[hash]
	e.mu.Unlock()
	if ok {
		return m, nil
	}
	def, err := e.store.definition(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("states: definition %s: %w", hash, err)
	}
	if m, err = Load(def, nil); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.machines[hash] = m
	e.mu.Unlock()
	return m, nil
}
