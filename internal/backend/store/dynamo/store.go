package dynamo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Client is the part of *dynamodb.Client the store uses.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// DefaultSpillThreshold is the checkpoint state size above which state goes
// to the artifact store.
const DefaultSpillThreshold = 64 << 10

// maxTxPayload keeps a transaction under DynamoDB's 4 MB with room for keys
// and attribute names.
const maxTxPayload = 3_500_000

// invalid reports input refused for a DynamoDB limit; the checks every
// backend shares are package store's.
func invalid(format string, args ...any) error {
	return fmt.Errorf("dynamo: %w: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
}

// cacheSize bounds the per-run state cache.
const cacheSize = 4096

// Options configure a Store.
type Options struct {
	// Table is the table name (created by CreateTable).
	Table string
	// Clock is the time source; nil means time.Now.
	Clock func() time.Time
	// Artifacts receives checkpoint states over SpillThreshold; nil keeps
	// every state inline (up to store.MaxInlineState).
	Artifacts artifact.Store
	// SpillThreshold defaults to DefaultSpillThreshold.
	SpillThreshold int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Store is store.Store on DynamoDB. It is safe for concurrent use, and any
// number of Stores (in any number of processes) may share one table.
type Store struct {
	c         Client
	table     string
	clock     func() time.Time
	artifacts artifact.Store
	spill     int
	log       *slog.Logger

	mu    sync.Mutex
	known map[string]runState
}

var _ store.Store = (*Store)(nil)

// New returns a Store on opts.Table through c. It makes no request.
func New(c Client, opts Options) (*Store, error) {
	if c == nil {
		return nil, errors.New("dynamo: nil client")
	}
	if opts.Table == "" {
		return nil, errors.New("dynamo: empty table name")
	}
	s := &Store{c: c, table: opts.Table, clock: opts.Clock, artifacts: opts.Artifacts,
		spill: opts.SpillThreshold, log: opts.Logger, known: map[string]runState{}}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.spill <= 0 {
		s.spill = DefaultSpillThreshold
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// Close implements store.Store. The client belongs to the caller; Close
// only drops the cache and may be called more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	s.known = map[string]runState{}
	s.mu.Unlock()
	return nil
}

func (s *Store) now() time.Time { return s.clock().UTC() }

// runState is what the store last knew of a run row: enough to build a
// conditional write without reading first.
type runState struct {
	ver       int64
	lastSeq   int64
	lastHash  string // the chain's head: the hash of the event at lastSeq
	cpSeq     int64
	status    run.Status
	sessionID string
	limits    run.Limits
	token     int64
	leased    bool
	reserved  store.Amounts
}

func stateOf(it item) runState {
	r := itemToRun(it)
	return runState{ver: it.n("ver"), lastSeq: r.LastSeq, lastHash: r.LastHash, cpSeq: it.n("cp_seq"), status: r.Status,
		sessionID: r.SessionID, limits: r.Limits, token: r.Lease.Token, leased: r.Lease.Owner != "",
		reserved: store.Amounts{Tokens: r.Budget.TokensReserved, SpendMicroUSD: r.Budget.SpendReservedMicroUSD,
			ToolCalls: r.Budget.ToolCallsReserved}}
}

// remember records st unless the cache already knows a newer version.
func (s *Store) remember(id string, st runState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.known[id]; ok && old.ver > st.ver {
		return
	}
	if len(s.known) >= cacheSize {
		for k := range s.known { // drop any one: a miss only costs a read
			delete(s.known, k)
			break
		}
	}
	s.known[id] = st
}

func (s *Store) forget(id string) {
	s.mu.Lock()
	delete(s.known, id)
	s.mu.Unlock()
}

func (s *Store) cached(id string) (runState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.known[id]
	return st, ok
}

// readRun reads the run row with a strongly consistent read and refreshes
// the cache.
func (s *Store) readRun(ctx context.Context, id string) (item, error) {
	it, err := s.getItem(ctx, runPK(id), runSK)
	if err != nil {
		return nil, err
	}
	if it == nil {
		s.forget(id)
		return nil, fmt.Errorf("dynamo: run %q: %w", id, store.ErrNotFound)
	}
	s.remember(id, stateOf(it))
	return it, nil
}

// updateRun applies one conditional UpdateItem to the run row and returns
// the row as stored afterwards, with applied set. When the condition fails
// it returns the row as read just now, with applied false, so the caller
// can say why (ErrNotFound if the run does not exist). Both refresh the
// cache. what names the action in errors.
func (s *Store) updateRun(ctx context.Context, what, runID string, e *expr, update, cond string) (it item, applied bool, err error) {
	out, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(runPK(runID), runSK),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err == nil {
		it := item(out.Attributes)
		s.remember(runID, stateOf(it))
		return it, true, nil
	}
	if !isConditionFailed(err) {
		return nil, false, fmt.Errorf("dynamo: %s on %q: %w", what, runID, err)
	}
	it, err = s.readRun(ctx, runID)
	return it, false, err
}

// state returns the cached state of a run, or reads it when fresh is set
// or nothing is cached. The bool reports whether it was read just now.
func (s *Store) state(ctx context.Context, id string, fresh bool) (runState, bool, error) {
	if !fresh {
		if st, ok := s.cached(id); ok {
			return st, false, nil
		}
	}
	it, err := s.readRun(ctx, id)
	if err != nil {
		return runState{}, false, err
	}
	return stateOf(it), true, nil
}

// getItem returns nil, nil when the item does not exist (an internal
// helper; the public methods turn that into ErrNotFound).
func (s *Store) getItem(ctx context.Context, pk, sk string) (item, error) {
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(pk, sk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: get %s/%s: %w", pk, sk, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return item(out.Item), nil
}

// queryAll pages through a base-table query and returns every item.
func (s *Store) queryAll(ctx context.Context, in *dynamodb.QueryInput) ([]item, error) {
	var out []item
	p := dynamodb.NewQueryPaginator(s.c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: query: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, item(it))
		}
	}
	return out, nil
}

// children returns every item of the run whose sk starts with prefix.
func (s *Store) children(ctx context.Context, runID, prefix string) ([]item, error) {
	e := newExpr()
	cond := e.name("pk") + " = " + e.value(sv(runPK(runID))) + " AND begins_with(" + e.name("sk") + ", " + e.value(sv(prefix)) + ")"
	return s.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ConsistentRead:            aws.Bool(true),
	})
}

// runExists returns nil or ErrNotFound; list methods call it only when
// their result is empty, to tell "none" from "no such run".
func (s *Store) runExists(ctx context.Context, id string) error {
	_, err := s.readRun(ctx, id)
	return err
}
