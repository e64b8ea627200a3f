package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/api"
	artfs "github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

type nopStarter struct{}

func (nopStarter) StartRun(context.Context, string) error { return nil }

type nopResumer struct{}

func (nopResumer) Resume(context.Context, run.Approval) error { return nil }

// newAPI is the real handler over SQLite and the file artifact store.
func newAPI(t *testing.T, maxStream time.Duration) (http.Handler, *sqlite.Store, *artfs.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "keel.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artfs.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Deps{Store: st, Artifacts: arts, Starter: nopStarter{}, Resumer: nopResumer{},
		Auth: api.Tokens{"tok": "me"}, Agents: api.AgentSet{"research": {}}, Records: st,
		PollInterval: time.Millisecond, MaxStreamDuration: maxStream})
	if err != nil {
		t.Fatal(err)
	}
	return h, st, arts
}

func newClient(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.New(url, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFollowReconnects: a server that ends every stream almost at once
// (a gateway's time bound) still delivers each event once, in order, to
// the end.
func TestFollowReconnects(t *testing.T) {
	h, st, _ := newAPI(t, time.Nanosecond)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx := context.Background()
	r, _, err := c.CreateRun(ctx, api.CreateRunRequest{Agent: "research", Input: "x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	go func() {
		for i := range n {
			data, _ := json.Marshal(map[string]int{"done": i + 1, "total": n})
			if _, err := st.AppendEvents(ctx, r.RunID, []run.Event{{Type: run.EventToolProgress, Data: data}}); err != nil {
				t.Error(err)
				return
			}
		}
		l, err := st.AcquireLease(ctx, r.RunID, "w", time.Minute)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := st.Commit(ctx, store.Commit{RunID: r.RunID, Token: l.Lease.Token, Run: &store.RunPatch{Status: run.StatusCancelled, ReleaseLease: true},
			Events: []run.Event{{Type: run.EventRunCancelled}}}); err != nil {
			t.Error(err)
		}
	}()
	var seqs []int64
	end, err := c.Follow(ctx, r.RunID, 0, func(ev api.Event) error {
		seqs = append(seqs, ev.Seq)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != run.StatusCancelled || end.LastSeq != n+2 || len(seqs) != n+2 {
		t.Fatalf("end %+v after %d events", end, len(seqs))
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("event %d has seq %d: %v", i, s, seqs)
		}
	}
}

func TestFollowUnknownRun(t *testing.T) {
	h, _, _ := newAPI(t, 0)
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, err := newClient(t, srv.URL).Follow(context.Background(), "run_nope", 0, func(api.Event) error { return nil })
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != api.CodeNotFound {
		t.Fatalf("err %v", err)
	}
}

// TestKeyedCreateSurvivesDroppedConnection: the first connection is cut
// before an answer; the client retries with the same key and exactly one
// run exists.
func TestKeyedCreateSurvivesDroppedConnection(t *testing.T) {
	h, st, _ := newAPI(t, 0)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			h.ServeHTTP(httptest.NewRecorder(), r) // the server did the work...
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // ...and the answer is lost
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	r, created, err := c.CreateRun(context.Background(), api.CreateRunRequest{Agent: "research", Input: "x"}, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.ListRuns(context.Background(), store.ListRunsQuery{})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != r.RunID || created {
		t.Fatalf("runs %v, got %s created=%v, %v", page.Runs, r.RunID, created, err)
	}
}

func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/runs/run_a/artifacts/cp/x.md":
			w.Header().Set("X-Content-SHA256", run.HashBytes([]byte("other")))
			fmt.Fprint(w, "content")
		default:
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html>bad gateway</html>")
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	_, err := c.GetRun(context.Background(), "run_a")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "http_502" || client.StatusOf(err) != 502 {
		t.Errorf("proxy error: %v", err)
	}
	if _, _, err := c.Download(context.Background(), "run_a", "cp", "x.md"); !errors.Is(err, client.ErrHashMismatch) {
		t.Errorf("download of bad content: %v", err)
	}
	if _, err := client.New("localhost:8080", "", nil); err == nil {
		t.Error("a URL without scheme was accepted")
	}
}

func TestDownload(t *testing.T) {
	h, _, arts := newAPI(t, 0)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx := context.Background()
	r, _, err := c.CreateRun(ctx, api.CreateRunRequest{Agent: "research", Input: "x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	// A name that needs escaping in the URL.
	k := artifact.Key{RunID: r.RunID, CheckpointID: "cp_1", Name: "report name.md"}
	if _, err := arts.Put(ctx, k, []byte("report body")); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListArtifacts(ctx, r.RunID)
	if err != nil || len(list) != 1 {
		t.Fatalf("artifacts %v %v", list, err)
	}
	b, sum, err := c.Download(ctx, r.RunID, list[0].CheckpointID, list[0].Name)
	if err != nil || string(b) != "report body" || sum != run.HashBytes(b) {
		t.Fatalf("download %q %s %v", b, sum, err)
	}
}
