package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// TestDerivedHashesPage: only a commit's last event stores its hash, so a
// page that starts inside a commit derives its first PrevHash from the
// stored hash before it; every page agrees with the whole log.
func TestDerivedHashesPage(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keel.db"), sqlite.Options{})
	must(t, err)
	defer s.Close()
	r, _, err := s.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "ses_1", Owner: "alice", Agent: "a", Request: "q"})
	must(t, err)
	for c := 0; c < 3; c++ {
		var evs []run.Event
		for i := 0; i < 4; i++ {
			evs = append(evs, run.Event{Type: run.EventToolProgress, Data: []byte(fmt.Sprintf(`{"commit":%d,"i":%d}`, c, i))})
		}
		_, err := s.AppendEvents(ctx, r.ID, evs)
		must(t, err)
	}
	all, err := s.ReadEvents(ctx, r.ID, 0, 0)
	must(t, err)
	if len(all) != 13 {
		t.Fatalf("%d events", len(all))
	}
	for after := int64(0); after < 13; after++ {
		for _, limit := range []int{1, 2, 5} {
			page, err := s.ReadEvents(ctx, r.ID, after, limit)
			must(t, err)
			want := all[after:min(int(after)+limit, len(all))]
			if !reflect.DeepEqual(page, want) {
				t.Fatalf("after %d limit %d:\n got %+v\nwant %+v", after, limit, page, want)
			}
		}
	}
	var stored int
	must(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FROM events WHERE hash IS NOT NULL`).Scan(&stored))
	if stored != 4 { // run_created, and the last of each append
		t.Fatalf("%d events store their hash, want 4", stored)
	}
	a, err := store.ReadAudit(ctx, s, r.ID)
	must(t, err)
	if len(a.Problems) != 0 || a.Run.LastHash != all[12].Hash {
		t.Fatalf("audit: %v", a.Problems)
	}
}

// TestPayloadForms: payloads come back byte for byte whether they are
// stored tokenized, deflated, raw, or escaped (raw bytes that start with a
// tag byte), and a Keel-shaped payload is stored packed.
func TestPayloadForms(t *testing.T) {
	ctx := context.Background()
	s, r := leasedRun(t)
	keelShaped := []byte(`{"messages":[{"role":"assistant","tool_calls":[{"id":"call_9","name":"lookup","args":{"q":"x"}}]},{"role":"tool","tool_results":[{"call_id":"call_9","content":"y"}]}]}`)
	cases := []struct {
		name  string
		state []byte
		form  string // the stored form's first byte: tokens, deflate, escaped, raw
	}{
		{"KeelShaped", keelShaped, "tokens"},
		{"LargeKeelShaped", bytes.Repeat(keelShaped, 4), "deflate"},
		{"Short", []byte(`{}`), "raw"},
		{"Incompressible", []byte("\x03\x9f\x13\xe7\x51\xc2\x88\x0d\x41\x77\xfe\x3a\x6b\x90\x14\x2e\xd5\x63\xb8\x07\xaf\x3c\x59\xe1\x4a"), "raw"},
		{"HoldsACodeByte", []byte("{\"role\":\"assistant\",\"text\":\"\x05\"}"), "raw"},
		{"StartsWithDeflateTag", append([]byte{0x01}, "abc"...), "escaped"},
		{"StartsWithTokensTag", append([]byte{0x02}, "abc"...), "escaped"},
		{"StartsWithRawTag", append([]byte{0x00}, "abc"...), "escaped"},
		{"LongBinaryWithTag", append([]byte{0x01}, bytes.Repeat([]byte("xyz"), 200)...), "deflate"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("cp_%028x", i+1)
			_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Token: r.Lease.Token,
				Checkpoint: &run.Checkpoint{ID: id, Seq: int64(i + 1), State: tc.state}})
			must(t, err)
			cp, err := s.GetCheckpoint(ctx, r.ID, id)
			must(t, err)
			if !bytes.Equal(cp.State, tc.state) || cp.StateHash != run.HashBytes(tc.state) || cp.Size != int64(len(tc.state)) {
				t.Fatalf("read back %+v", cp)
			}
			var first []byte
			must(t, s.DB().QueryRowContext(ctx, `SELECT substr(state, 1, 1) FROM checkpoints WHERE ck & 4294967295 = ?`, i+1).Scan(&first))
			form := map[byte]string{0x00: "escaped", 0x01: "deflate", 0x02: "tokens"}[first[0]]
			if form == "" {
				form = "raw"
			}
			if form != tc.form {
				t.Fatalf("stored as %s, want %s", form, tc.form)
			}
		})
	}
	// A corrupt deflated row is an error, not a record.
	_, err := s.DB().ExecContext(ctx, `UPDATE checkpoints SET state = x'01ffffffff' WHERE ck & 4294967295 = 1`)
	must(t, err)
	if _, err := s.GetCheckpoint(ctx, r.ID, fmt.Sprintf("cp_%028x", 1)); err == nil || !strings.Contains(err.Error(), "payload") {
		t.Fatalf("corrupt payload read: %v", err)
	}
}
