package research_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/research"
	"github.com/keelrun/keel/examples/research/researchtest"
	"github.com/keelrun/keel/internal/artifact"
	artfs "github.com/keelrun/keel/internal/artifact/fs"
	"github.com/keelrun/keel/internal/ops"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/tool"
)

// publishers runs the same contract checks against both destinations.
func TestPublishersKeepTheirContract(t *testing.T) {
	ctx := context.Background()
	newHTTP := func(t *testing.T, opt research.ServerOptions) research.Publisher {
		srv, err := research.NewPublicationServer(opt)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		return research.HTTPPublisher{Base: ts.URL}
	}
	cases := map[string]func(t *testing.T) research.Publisher{
		"dir": func(t *testing.T) research.Publisher { return research.DirPublisher{Dir: t.TempDir()} },
		"http": func(t *testing.T) research.Publisher {
			return newHTTP(t, research.ServerOptions{Log: filepath.Join(t.TempDir(), "log")})
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			p := mk(t)
			content := []byte("# report\n")
			sha := run.HashBytes(content)
			if _, found, err := p.Find(ctx, "op_1"); err != nil || found {
				t.Fatalf("find before publish: %v %v", found, err)
			}
			// Concurrent repeats of one operation id make one publication.
			var wg sync.WaitGroup
			ids := make([]string, 8)
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, err := p.Publish(ctx, "op_1", sha, content)
					if err != nil {
						t.Error(err)
					}
					ids[i] = out.ExternalID
				}()
			}
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] || id == "" {
					t.Fatalf("repeats returned different publications: %v", ids)
				}
			}
			out, found, err := p.Find(ctx, "op_1")
			if err != nil || !found || out.ExternalID != ids[0] {
				t.Fatalf("find: %+v %v %v", out, found, err)
			}
			if p.Promises() != keel.IdempotentByKey|keel.LookupByKey {
				t.Fatalf("promises %v", p.Promises())
			}
		})
	}
	t.Run("dir refuses ids that escape", func(t *testing.T) {
		p := research.DirPublisher{Dir: t.TempDir()}
		for _, id := range []string{"", "../x", "a/b", ".hidden"} {
			if _, err := p.Publish(ctx, id, "x", nil); !errors.As(err, new(*ops.Rejected)) {
				t.Errorf("id %q: %v", id, err)
			}
		}
	})
}

func TestPublicationServerModes(t *testing.T) {
	ctx := context.Background()
	log := filepath.Join(t.TempDir(), "pubs.jsonl")
	srv, _ := research.NewPublicationServer(research.ServerOptions{Log: log, NoIdempotency: true, NoLookup: true})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	p := research.HTTPPublisher{Base: ts.URL, NoLookup: true, NotIdempotent: true}
	content := []byte("x")
	for i := 0; i < 2; i++ {
		if _, err := p.Publish(ctx, "op_1", run.HashBytes(content), content); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.Publications()); n != 2 {
		t.Fatalf("without idempotency two POSTs are two publications, got %d", n)
	}
	if _, found, _ := p.Find(ctx, "op_1"); found {
		t.Fatal("lookup answered in no-lookup mode")
	}
	// The log is the ground truth and survives a restart.
	again, err := research.NewPublicationServer(research.ServerOptions{Log: log})
	if err != nil || len(again.Publications()) != 2 {
		t.Fatalf("reloaded %d publications, %v", len(again.Publications()), err)
	}
	if _, err := p.Publish(ctx, "op_2", "bad-hash", content); !errors.As(err, new(*ops.Rejected)) {
		t.Fatalf("a body whose hash does not match: %v", err)
	}
}

// tools builds the research tools on the runtime's internals (as the
// harness sees them), by name.
func tools(t *testing.T, arts artifact.Store, to research.Publisher) map[string]tool.Tool {
	t.Helper()
	ts, err := researchtest.Tools(arts, to)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]tool.Tool{}
	for _, x := range ts {
		m[x.Info().Name] = x
	}
	return m
}

func TestPublishRevalidatesTheApprovedHash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	arts, err := artfs.New(filepath.Join(dir, "arts"))
	if err != nil {
		t.Fatal(err)
	}
	to := research.DirPublisher{Dir: filepath.Join(dir, "pub")}
	ts := tools(t, arts, to)
	res, err := ts["draft_report"].Run(ctx, tool.Call{RunID: "run_1", CheckpointID: "cp_1", Args: json.RawMessage(`{"title":"T"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var d research.PublishArgs
	_ = json.Unmarshal(res.Data, &d)
	if !strings.HasPrefix(d.ArtifactKey, "runs/run_1/checkpoints/cp_1/report-") {
		t.Fatalf("key %s", d.ArtifactKey)
	}
	pub := ts["publish_report"].(tool.Effectful)
	good, _ := json.Marshal(d)
	if in, err := pub.Intent(ctx, tool.Call{Args: good}); err != nil || in.ArtifactHash != d.SHA256 {
		t.Fatalf("intent %+v, %v", in, err)
	}
	d.SHA256 = strings.Repeat("0", 64)
	bad, _ := json.Marshal(d)
	if _, err := pub.Intent(ctx, tool.Call{Args: bad}); err == nil {
		t.Fatal("intent accepted a hash that is not the artifact's")
	}
	h, _ := run.ArgsHash(bad)
	op := run.Operation{ID: "op_1", IdempotencyKey: "op_1", Args: bad, ArgsHash: h, ArtifactHash: d.SHA256}
	if _, err := pub.Dispatch(ctx, op); !errors.As(err, new(*ops.Rejected)) {
		t.Fatalf("dispatch of a report whose content is not the approved hash: %v", err)
	}
	if n, _ := to.Count(); n != 0 {
		t.Fatal("published despite the mismatch")
	}
}

func TestAnalyzeReportsProgress(t *testing.T) {
	var got []int64
	a := tools(t, nil, research.DirPublisher{Dir: t.TempDir()})["analyze_documents"]
	args := json.RawMessage(`{"documents":["01-durable-state.md","02-side-effects.md"]}`)
	res, err := a.Run(context.Background(), tool.Call{Args: args, Progress: func(done, total int64, _ string) { got = append(got, done*100/total) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != 100 || !strings.Contains(res.Content, "keywords") {
		t.Fatalf("progress %v, result %s", got, res.Content)
	}
	if _, err := a.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"documents":["nope.md"]}`)}); err == nil {
		t.Fatal("unknown document accepted")
	}
}
