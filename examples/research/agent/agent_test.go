package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/research/agent"
	"github.com/keelrun/keel/keeltest"
)

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// httpDestination is a PublicationServer in this process and the
// publisher that talks to it.
func httpDestination(t *testing.T, opt agent.ServerOptions, pub agent.HTTPPublisher) (*agent.PublicationServer, agent.HTTPPublisher) {
	t.Helper()
	srv, err := agent.NewPublicationServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	pub.Base = ts.URL
	return srv, pub
}

// TestPublishersKeepTheirContract runs the same checks against both
// destinations: what Promises declares is what the destination does.
func TestPublishersKeepTheirContract(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T) agent.Publisher{
		"dir": func(t *testing.T) agent.Publisher { return agent.DirPublisher{Dir: t.TempDir()} },
		"http": func(t *testing.T) agent.Publisher {
			_, p := httpDestination(t, agent.ServerOptions{Log: filepath.Join(t.TempDir(), "log")}, agent.HTTPPublisher{})
			return p
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			p := mk(t)
			content := []byte("# report\n")
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
					out, err := p.Publish(ctx, "op_1", hash(content), content)
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
		p := agent.DirPublisher{Dir: t.TempDir()}
		for _, id := range []string{"", "../x", "a/b", ".hidden"} {
			if _, err := p.Publish(ctx, id, "x", nil); !keel.IsRejected(err) {
				t.Errorf("id %q: %v", id, err)
			}
		}
	})
}

// TestPublicationServerModes: a server that promises neither idempotency
// nor lookup makes a repeat a second publication and answers no lookup;
// its log survives a restart.
func TestPublicationServerModes(t *testing.T) {
	ctx := context.Background()
	log := filepath.Join(t.TempDir(), "pubs.jsonl")
	srv, p := httpDestination(t, agent.ServerOptions{Log: log, NoIdempotency: true, NoLookup: true},
		agent.HTTPPublisher{NoLookup: true, NotIdempotent: true})
	content := []byte("x")
	for i := 0; i < 2; i++ {
		if _, err := p.Publish(ctx, "op_1", hash(content), content); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.Publications()); n != 2 {
		t.Fatalf("without idempotency two POSTs are two publications, got %d", n)
	}
	if _, found, _ := p.Find(ctx, "op_1"); found {
		t.Fatal("lookup answered in no-lookup mode")
	}
	again, err := agent.NewPublicationServer(agent.ServerOptions{Log: log})
	if err != nil || len(again.Publications()) != 2 {
		t.Fatalf("reloaded %d publications, %v", len(again.Publications()), err)
	}
	if _, err := p.Publish(ctx, "op_2", "bad-hash", content); !keel.IsRejected(err) {
		t.Fatalf("a body whose hash does not match: %v", err)
	}
}

// TestAnalyze: the keywords of the named documents; an unknown document
// is an error the model sees.
func TestAnalyze(t *testing.T) {
	analyze := agent.Analyze(agent.SampleCorpus())
	res, err := analyze(context.Background(), agent.AnalyzeArgs{Documents: []string{"01-durable-state.md", "02-side-effects.md"}})
	if err != nil || res.Documents != 2 || res.Words == 0 || len(res.Keywords) == 0 {
		t.Fatalf("analysis %+v, %v", res, err)
	}
	if _, err := analyze(context.Background(), agent.AnalyzeArgs{Documents: []string{"nope.md"}}); err == nil {
		t.Fatal("unknown document accepted")
	}
}

// TestResearchRun plays the scripted run on the embedded runtime: a
// person approves the exact report, which is published once, to the
// destination the configuration names.
func TestResearchRun(t *testing.T) {
	srv, pub := httpDestination(t, agent.ServerOptions{}, agent.HTTPPublisher{})
	a, err := agent.New(agent.Config{Publish: pub.Base})
	if err != nil {
		t.Fatal(err)
	}
	rt := keeltest.Start(t, a)
	id := rt.StartRun(t, agent.Name, "Write the research report on durable agents.")
	ap := rt.WaitApproval(t, id)
	var args agent.PublishArgs
	if err := json.Unmarshal(ap.Args, &args); err != nil || ap.Tool != "publish_report" || ap.Mode != "mutating" {
		t.Fatalf("approval %+v (args %s): %v", ap, ap.Args, err)
	}
	if n := len(srv.Publications()); n != 0 {
		t.Fatalf("%d publications before the approval", n)
	}
	rt.Approve(t, id, ap)
	if r := rt.WaitFor(t, id, "completed"); !strings.Contains(r.Output, "published") {
		t.Fatalf("run %+v", r)
	}
	pubs := srv.Publications()
	if len(pubs) != 1 || pubs[0].SHA256 != args.SHA256 {
		t.Fatalf("publications %+v, want exactly the approved sha256 %s", pubs, args.SHA256)
	}
	evs := rt.Events(t, id)
	if keeltest.Count(evs, "op_intent") != 1 || keeltest.Count(evs, "op_succeeded") != 1 || keeltest.Count(evs, "tool_progress") == 0 {
		t.Fatalf("events: %d op_intent, %d op_succeeded, %d tool_progress",
			keeltest.Count(evs, "op_intent"), keeltest.Count(evs, "op_succeeded"), keeltest.Count(evs, "tool_progress"))
	}
}
