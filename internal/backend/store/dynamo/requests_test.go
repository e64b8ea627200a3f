package dynamo_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestRequestsPerCall counts the HTTP requests each store call makes, with
// a middleware on the real SDK client. The numbers are the design: a plain
// step commit is exactly one TransactWriteItems.
func TestRequestsPerCall(t *testing.T) {
	ep := startEndpoint(t)
	counter := newCounter()
	table := ep.newTable(t)
	s, err := dynamo.New(ep.ddb(counter), dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r := run.Run{ID: run.NewID("run"), SessionID: "sess", Owner: "alice", Request: "go",
		Limits: run.Limits{MaxTokens: 10_000, MaxSpendMicroUSD: 1_000_000, MaxToolCalls: 10}}
	var token int64
	step := func(n int) store.Commit {
		return store.Commit{
			RunID: r.ID, Token: token,
			Run: &store.RunPatch{Status: run.StatusRunning, StepsDelta: 1},
			Events: []run.Event{
				{Type: run.EventModelCallCompleted, Data: json.RawMessage(`{"tokens":12}`)},
				{Type: run.EventToolCompleted},
				{Type: run.EventCheckpointWritten},
			},
			Checkpoint: &run.Checkpoint{ID: "cp" + string(rune('a'+n)), Step: int64(n), State: []byte(`{"messages":["hi"]}`)},
			PlanItems:  []run.PlanItem{{ID: "p1", Order: 1, Tool: "web", Args: json.RawMessage(`{"q":1}`), Mode: run.ModeSafeReadonly}},
			Used:       store.Amounts{Tokens: 12, ToolCalls: 1},
			Released:   store.Amounts{Tokens: 100, ToolCalls: 1},
		}
	}
	cases := []struct {
		name string
		call func() error
		want map[string]int
	}{
		{"CreateRun", func() error { _, _, err := s.CreateRun(ctx, r); return err },
			map[string]int{"TransactWriteItems": 1}},
		{"AcquireLease", func() error {
			l, err := s.AcquireLease(ctx, r.ID, "worker", time.Minute)
			token = l.Lease.Token
			return err
		}, map[string]int{"UpdateItem": 1}},
		{"Reserve", func() error {
			_, err := s.Reserve(ctx, r.ID, store.Amounts{Tokens: 100, ToolCalls: 1})
			return err
		}, map[string]int{"UpdateItem": 1}},
		{"PlainStepCommit", func() error { _, err := s.Commit(ctx, step(1)); return err },
			map[string]int{"TransactWriteItems": 1}},
		{"SecondStepCommit", func() error {
			if _, err := s.Reserve(ctx, r.ID, store.Amounts{Tokens: 100, ToolCalls: 1}); err != nil {
				return err
			}
			counter.take()
			_, err := s.Commit(ctx, step(2))
			return err
		}, map[string]int{"TransactWriteItems": 1}},
		{"AppendEvents", func() error {
			_, err := s.AppendEvents(ctx, r.ID, []run.Event{{Type: run.EventToolProgress}})
			return err
		}, map[string]int{"TransactWriteItems": 1}},
		{"EnqueueInput", func() error { _, err := s.EnqueueInput(ctx, r.ID, "more"); return err },
			map[string]int{"TransactWriteItems": 1}},
		{"GetRun", func() error { _, err := s.GetRun(ctx, r.ID); return err },
			map[string]int{"GetItem": 1}},
		{"ReleaseLease", func() error { return s.ReleaseLease(ctx, r.ID, token) },
			map[string]int{"UpdateItem": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counter.take()
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			got := counter.take()
			t.Logf("%s: %v", tc.name, got)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("requests = %v, want %v", got, tc.want)
			}
		})
	}

	// A store whose knowledge of the run is stale (another process
	// appended since) pays one failed transaction and one read, then
	// commits with the right seqs.
	t.Run("CommitFromColdStore", func(t *testing.T) {
		cold, err := dynamo.New(ep.ddb(counter), dynamo.Options{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		l, err := cold.AcquireLease(ctx, r.ID, "worker-2", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		token = l.Lease.Token
		if _, err := s.AppendEvents(ctx, r.ID, []run.Event{{Type: run.EventToolProgress}}); err != nil {
			t.Fatal(err) // moves the run's version behind cold's back
		}
		counter.take()
		c := step(3)
		c.Released = store.Amounts{}
		if _, err := cold.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
		got := counter.take()
		want := map[string]int{"TransactWriteItems": 2, "GetItem": 1}
		if !maps.Equal(got, want) {
			t.Fatalf("requests = %v, want %v (a stale version costs one failed write and one read)", got, want)
		}
		evs, err := cold.ReadEvents(ctx, r.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("log not gapless after the retried commit: %d at %d", e.Seq, i)
			}
		}
	})
}

// TestCheckpointSpillsToS3: a state over the threshold round-trips through
// the artifact store (S3 on gofakes3) with one PutObject and one
// transaction, the item holds only the key and hash, and a corrupted
// object is detected on read.
func TestCheckpointSpillsToS3(t *testing.T) {
	ep := startEndpoint(t)
	counter := newCounter()
	table := ep.newTable(t)
	arts, prefix := ep.artifacts(t, counter)
	ddb := ep.ddb(counter)
	s, err := dynamo.New(ddb, dynamo.Options{Table: table, Artifacts: arts})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r, _, err := s.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "sess", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, r.ID, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		size    int
		spilled bool
	}{
		{"AtThreshold", dynamo.DefaultSpillThreshold, false},
		{"OverThreshold", dynamo.DefaultSpillThreshold + 1, true},
		{"Large", store.MaxInlineState, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := bytes.Repeat([]byte{byte('a' + i)}, tc.size)
			cpID := "cp_" + tc.name
			counter.take()
			if _, err := s.Commit(ctx, store.Commit{RunID: r.ID, Token: l.Lease.Token,
				Checkpoint: &run.Checkpoint{ID: cpID, State: state}}); err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"TransactWriteItems": 1}
			if tc.spilled {
				want["PutObject"] = 1
			}
			if got := counter.take(); !maps.Equal(got, want) {
				t.Fatalf("requests = %v, want %v", got, want)
			}
			cp, err := s.GetCheckpoint(ctx, r.ID, cpID)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(cp.State, state) || cp.StateHash != run.HashBytes(state) || cp.Size != int64(tc.size) || cp.StateRef != "" {
				t.Fatalf("checkpoint read back: %d bytes, hash %s, size %d, ref %q", len(cp.State), cp.StateHash, cp.Size, cp.StateRef)
			}
			raw := rawCheckpoint(t, ddb, table, r.ID, cp.Seq)
			_, inline := raw["state"]
			key, _ := raw["spill_key"].(*ddbtypes.AttributeValueMemberS)
			if inline == tc.spilled || (key != nil) != tc.spilled {
				t.Fatalf("item: inline state %t, spill key %v; want spilled=%t", inline, key, tc.spilled)
			}
			if tc.spilled && !strings.HasPrefix(key.Value, "runs/"+r.ID+"/checkpoints/"+cpID+"/state.") {
				t.Fatalf("spill key %q", key.Value)
			}
		})
	}
	t.Run("CorruptObjectDetected", func(t *testing.T) {
		cp, err := s.GetCheckpoint(ctx, r.ID, "cp_OverThreshold")
		if err != nil {
			t.Fatal(err)
		}
		key := rawCheckpoint(t, ddb, table, r.ID, cp.Seq)["spill_key"].(*ddbtypes.AttributeValueMemberS).Value
		corruptObject(t, ep, prefix+key)
		if _, err := s.GetCheckpoint(ctx, r.ID, "cp_OverThreshold"); !errors.Is(err, artifact.ErrCorrupt) {
			t.Fatalf("GetCheckpoint of a corrupted state: %v, want artifact.ErrCorrupt", err)
		}
		if _, err := s.ListCheckpoints(ctx, r.ID, 0, 0); !errors.Is(err, artifact.ErrCorrupt) {
			t.Fatalf("ListCheckpoints over a corrupted state: %v, want artifact.ErrCorrupt", err)
		}
	})
}

func rawCheckpoint(t *testing.T, c *dynamodb.Client, table, runID string, seq int64) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "RUN#" + runID},
			"sk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("CP#%020d", seq)},
		}})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("raw checkpoint item: %v (found %t)", err, out != nil && len(out.Item) > 0)
	}
	return out.Item
}

// corruptObject overwrites a blob behind the store's back (plain PutObject,
// keeping its metadata), as an out-of-band write or bit rot would.
func corruptObject(t *testing.T, ep endpoint, full string) {
	t.Helper()
	c := ep.s3(nil)
	out, err := c.GetObject(t.Context(), &awss3.GetObjectInput{Bucket: aws.String(ep.bucket), Key: aws.String(full)})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	data[len(data)/2] ^= 0xff
	if _, err := c.PutObject(t.Context(), &awss3.PutObjectInput{Bucket: aws.String(ep.bucket), Key: aws.String(full),
		Body: bytes.NewReader(data), Metadata: out.Metadata}); err != nil {
		t.Fatal(err)
	}
}
