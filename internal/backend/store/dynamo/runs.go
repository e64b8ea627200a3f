package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// CreateRun implements store.Runs in one TransactWriteItems: the client key
// (first, so a retry is recognised before anything else), the run row, the
// run_created event and the session upsert. Limits are stored as given (0
// = no limit); an empty input policy becomes queue.
func (s *Store) CreateRun(ctx context.Context, in run.Run) (run.Run, bool, error) {
	r, err := store.ValidateNewRun(in)
	if err != nil {
		return run.Run{}, false, err
	}
	now := s.now()
	r.CreatedAt, r.UpdatedAt = now, now
	evs, _, head := s.eventPuts(r.ID, 0, "", []run.Event{{Type: run.EventRunCreated, Time: now}}, now)
	r.LastHash = head
	row := runItem(r)

	var items []types.TransactWriteItem
	ckeyIdx := -1
	if r.ClientKey != "" {
		ck := item{"pk": sv(clientKeyPK(r.Owner, r.ClientKey)), "sk": sv(ckeySK), "run_id": sv(r.ID)}
		ckeyIdx = len(items)
		items = append(items, s.putNew(ck))
	}
	runIdx := len(items)
	items = append(items, s.putNew(row))
	items = append(items, evs...)
	e := newExpr()
	sessIdx := len(items)
	items = append(items, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table),
		Key:       key(sessionPK(r.SessionID), sessionSK),
		UpdateExpression: aws.String("SET " + e.name("owner") + " = if_not_exists(" + e.name("owner") + ", " + e.value(sv(r.Owner)) + "), " +
			e.name("created_at") + " = if_not_exists(" + e.name("created_at") + ", " + e.value(tv(now)) + ")"),
		ConditionExpression:       aws.String("attribute_not_exists(" + e.name("pk") + ") OR " + e.name("owner") + " = " + e.value(sv(r.Owner))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}})

	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			return run.Run{}, false, err
		}
		err := s.transact(ctx, items)
		if err == nil {
			stored := itemToRun(row)
			s.remember(r.ID, stateOf(row))
			return stored, true, nil
		}
		f, ok := asTxFailure(err)
		switch {
		case !ok:
			return run.Run{}, false, fmt.Errorf("dynamo: create run %q: %w", r.ID, err)
		case ckeyIdx >= 0 && f.failed[ckeyIdx]:
			return s.existingForKey(ctx, r)
		case f.failed[runIdx]:
			return s.existingChild(ctx, r)
		case f.failed[sessIdx]:
			return run.Run{}, false, fmt.Errorf("dynamo: create run: %w: session %q belongs to another owner", store.ErrConflict, r.SessionID)
		case f.retryable:
			continue
		default:
			return run.Run{}, false, fmt.Errorf("dynamo: create run %q: %w", r.ID, err)
		}
	}
	return run.Run{}, false, tooContended("create", r.ID)
}

// existingForKey returns the run an owner's client key already names.
func (s *Store) existingForKey(ctx context.Context, r run.Run) (run.Run, bool, error) {
	ck, err := s.getItem(ctx, clientKeyPK(r.Owner, r.ClientKey), ckeySK)
	if err != nil {
		return run.Run{}, false, err
	}
	if ck == nil {
		return run.Run{}, false, fmt.Errorf("dynamo: create run: client key %q vanished", r.ClientKey)
	}
	it, err := s.readRun(ctx, ck.s("run_id"))
	if err != nil {
		return run.Run{}, false, err
	}
	return itemToRun(it), false, nil
}

// GetRun implements store.Runs with a strongly consistent read.
func (s *Store) GetRun(ctx context.Context, id string) (run.Run, error) {
	if err := store.ValidateID("run id", id); err != nil {
		return run.Run{}, err
	}
	it, err := s.readRun(ctx, id)
	if err != nil {
		return run.Run{}, err
	}
	return itemToRun(it), nil
}

// Index names; CreateTable creates them.
const (
	indexAll     = "runs-all"
	indexStatus  = "runs-by-status"
	indexSession = "runs-by-session"
	indexOwner   = "runs-by-owner"
)

// pageToken is the position after which the next page starts: the index
// and the keys of the last run returned.
type pageToken struct {
	Index string `json:"i"`
	PK    string `json:"p"`
	SK    string `json:"s"`
	IdxPK string `json:"k"`
	Sort  string `json:"o"`
}

// ListRuns implements store.Runs. It queries the most selective index
// (session, then owner, then status, then all runs), filters the rest on
// projected attributes, and reads the full rows with BatchGetItem. The page
// token encodes the index position of the last run returned.
func (s *Store) ListRuns(ctx context.Context, q store.ListRunsQuery) (store.RunPage, error) {
	limit, err := store.ValidateRunsQuery(q)
	if err != nil {
		return store.RunPage{}, err
	}
	index, idxAttr, idxVal := indexAll, "g_all", runSK
	switch {
	case q.SessionID != "":
		index, idxAttr, idxVal = indexSession, "g_session", q.SessionID
	case q.Owner != "":
		index, idxAttr, idxVal = indexOwner, "g_owner", q.Owner
	case q.Status != "":
		index, idxAttr, idxVal = indexStatus, "g_status", string(q.Status)
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		IndexName:              aws.String(index),
		KeyConditionExpression: aws.String(e.name(idxAttr) + " = " + e.value(sv(idxVal))),
		ScanIndexForward:       aws.Bool(false),
	}
	if filters := runFilters(e, q, idxAttr); len(filters) > 0 {
		in.FilterExpression = aws.String(and(filters))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	if q.PageToken != "" {
		tok, err := decodeToken(q.PageToken)
		if err != nil || tok.Index != index {
			return store.RunPage{}, invalid("malformed page token")
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			"pk": sv(tok.PK), "sk": sv(tok.SK), idxAttr: sv(tok.IdxPK), "g_sort": sv(tok.Sort)}
	}

	keys, children, err := s.collectRuns(ctx, in, q.Parent, limit)
	if err != nil {
		return store.RunPage{}, err
	}
	var page store.RunPage
	if len(keys) > limit {
		keys = keys[:limit]
		last := keys[limit-1]
		page.NextPageToken = encodeToken(pageToken{Index: index, PK: last.s("pk"), SK: last.s("sk"),
			IdxPK: last.s(idxAttr), Sort: last.s("g_sort")})
	}
	runs := children
	if q.Parent == "" {
		if runs, err = s.batchGetRuns(ctx, keys); err != nil {
			return store.RunPage{}, err
		}
	} else if len(runs) > limit {
		runs = runs[:limit]
	}
	for _, r := range runs {
		// The index is eventually consistent on DynamoDB: keep only rows
		// that still match.
		if (q.Owner != "" && r.Owner != q.Owner) || (q.Status != "" && r.Status != q.Status) ||
			(q.SessionID != "" && r.SessionID != q.SessionID) || (q.Parent != "" && r.Caller.RunID != q.Parent) {
			continue
		}
		page.Runs = append(page.Runs, r)
	}
	return page, nil
}

// collectRuns queries in until it has one match more than limit, to
// know whether a next page exists, or the index ends.
func (s *Store) collectRuns(ctx context.Context, in *dynamodb.QueryInput, parent string, limit int) ([]item, []run.Run, error) {
	// A child's caller is not projected into the indexes (a filter on it
	// there matches nothing: only the keys, g_owner and g_status are), so
	// children are matched on the runs as read.
	var keys []item
	var children []run.Run // with a parent: the runs of keys, as read
	for len(keys) <= limit {
		in.Limit = aws.Int32(int32(limit + 1 - len(keys)))
		if parent != "" {
			in.Limit = aws.Int32(childScanPage)
		}
		out, err := s.c.Query(ctx, in)
		if err != nil {
			return nil, nil, fmt.Errorf("dynamo: list runs: %w", err)
		}
		page := make([]item, 0, len(out.Items))
		for _, it := range out.Items {
			page = append(page, item(it))
		}
		if parent != "" {
			if page, children, err = s.childrenOf(ctx, parent, page, children, limit+1-len(keys)); err != nil {
				return nil, nil, err
			}
		}
		keys = append(keys, page...)
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return keys, children, nil
}

// batchGetRuns reads run rows by key, in the order given, skipping rows
// that no longer exist. BatchGetItem takes at most 100 keys and may leave
// some unprocessed under load; those are asked again with backoff.
func (s *Store) batchGetRuns(ctx context.Context, keys []item) ([]run.Run, error) {
	byID := map[string]run.Run{}
	for start := 0; start < len(keys); start += 100 {
		var req []map[string]types.AttributeValue
		for _, k := range keys[start:min(start+100, len(keys))] {
			req = append(req, key(k.s("pk"), k.s("sk")))
		}
		pending := map[string]types.KeysAndAttributes{s.table: {Keys: req, ConsistentRead: aws.Bool(true)}}
		for attempt := 1; len(pending) > 0; attempt++ {
			if attempt > maxAttempts {
				return nil, fmt.Errorf("dynamo: list runs: keys left unprocessed after %d attempts", maxAttempts)
			}
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
			out, err := s.c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("dynamo: list runs: %w", err)
			}
			for _, it := range out.Responses[s.table] {
				r := itemToRun(item(it))
				byID[r.ID] = r
			}
			pending = out.UnprocessedKeys
		}
	}
	var out []run.Run
	for _, k := range keys {
		id := k.s("pk")[len("RUN#"):]
		if r, ok := byID[id]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func encodeToken(t pageToken) string {
	b, _ := json.Marshal(t) // a struct of strings always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (pageToken, error) {
	var t pageToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, err
	}
	if t.Index == "" || t.PK == "" || t.SK == "" || t.IdxPK == "" || t.Sort == "" {
		return t, fmt.Errorf("incomplete token")
	}
	return t, nil
}

// existingChild answers CreateRun for an id that exists: the same child
// run of the same sub-agent call is found (created=false); anything else
// is a conflict.
func (s *Store) existingChild(ctx context.Context, r run.Run) (run.Run, bool, error) {
	if r.Caller == (run.Caller{}) {
		return run.Run{}, false, fmt.Errorf("dynamo: create run: %w: run %q exists", store.ErrConflict, r.ID)
	}
	got, err := s.GetRun(ctx, r.ID)
	if err != nil {
		return run.Run{}, false, err
	}
	if got.Caller.RunID != r.Caller.RunID || got.Caller.OperationID != r.Caller.OperationID {
		return run.Run{}, false, fmt.Errorf("dynamo: create run: %w: run %q exists for another caller", store.ErrConflict, r.ID)
	}
	return got, false, nil
}

// childScanPage is how many index rows a listing of children reads per
// query: children are matched on the runs themselves (see ListRuns), so
// a page of them may take several pages of the index. Not an index of
// its own: children are listed per parent, rarely, and an index would be
// a write on every run's every commit.
const childScanPage = 100

// childrenOf keeps the rows of page whose runs are children of parent, at
// most want of them, and appends those runs to children.
func (s *Store) childrenOf(ctx context.Context, parent string, page []item, children []run.Run, want int) ([]item, []run.Run, error) {
	runs, err := s.batchGetRuns(ctx, page)
	if err != nil {
		return nil, nil, err
	}
	byPK := make(map[string]run.Run, len(runs))
	for _, r := range runs {
		byPK[runPK(r.ID)] = r
	}
	var kept []item
	for _, k := range page {
		if r, ok := byPK[k.s("pk")]; ok && r.Caller.RunID == parent && len(kept) < want {
			kept = append(kept, k)
			children = append(children, r)
		}
	}
	return kept, children, nil
}

// runFilters are the conditions of q that idxAttr, the index queried,
// does not answer.
func runFilters(e *expr, q store.ListRunsQuery, idxAttr string) []string {
	var filters []string
	if q.Owner != "" && idxAttr != "g_owner" {
		filters = append(filters, e.name("g_owner")+" = "+e.value(sv(q.Owner)))
	}
	if q.Status != "" && idxAttr != "g_status" {
		filters = append(filters, e.name("g_status")+" = "+e.value(sv(string(q.Status))))
	}
	return filters
}
