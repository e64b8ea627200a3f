package research_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/keelrun/keel/examples/research"
	"github.com/keelrun/keel/examples/research/researchtest"
	artfs "github.com/keelrun/keel/internal/artifact/fs"
	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/model/provider"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/store/sqlite"
)

const runRequest = "Write the research report on durable agents."

// The draft turn (collect, analyze, draft, publish, final: index 2) is cut
// inside its tool call's arguments on its first attempt.
const draftTurn = 2

// TestResearchRunOnEachProvider runs the research agent end to end through
// the harness with each real provider: the official SDK client, built by
// provider.New from configuration, talks to a server that speaks the
// provider's streaming wire format and answers with the agent's turns. One
// stream is cut in the middle of the run; the transport retries the call
// whole and the run still publishes exactly once, the approved report.
func TestResearchRunOnEachProvider(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		wire  wire
		fault string // what the cut of the draft turn looks like on this wire
		set   func(url string) provider.Settings
		deps  func(url string) provider.Deps
		keys  []string // secrets that must appear in no event
	}{
		{
			name: "anthropic", spec: "anthropic:claude-sonnet-4-5", wire: anthropicWire,
			fault: "connection reset inside input_json_delta fragments",
			set: func(url string) provider.Settings {
				return provider.Settings{AnthropicAPIKey: anthropicKey, AnthropicBaseURL: url}
			},
			deps: func(string) provider.Deps { return provider.Deps{} },
			keys: []string{anthropicKey},
		},
		{
			name: "openai", spec: "openai:gpt-4.1", wire: openaiWire,
			fault: "stream ends cleanly inside tool_calls arguments, no finish_reason, usage or [DONE]",
			set: func(url string) provider.Settings {
				return provider.Settings{OpenAIAPIKey: openaiKey, OpenAIBaseURL: url + "/v1/"}
			},
			deps: func(string) provider.Deps { return provider.Deps{} },
			keys: []string{openaiKey},
		},
		{
			name: "bedrock", spec: "bedrock:" + bedrockModel, wire: bedrockWire,
			fault: "half an event-stream frame inside the toolUse input, then the connection drops",
			deps: func(url string) provider.Deps {
				cfg := aws.Config{
					Region:       "us-east-1",
					Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(bedrockAccessKey, bedrockSecret, "")),
					BaseEndpoint: aws.String(url),
				}
				return provider.Deps{AWS: &cfg}
			},
			set:  func(string) provider.Settings { return provider.Settings{} },
			keys: []string{bedrockSecret},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := newAgentServer(t, tc.wire, draftTurn)

			deps := tc.deps(srv.srv.URL)
			deps.HTTPClient = srv.srv.Client()
			var slept []time.Duration
			deps.Transport = model.TransportOptions{
				// Backoff is recorded, not waited for.
				Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil },
				// Long enough that a slow -race run never stalls.
				IdleTimeout: 30 * time.Second,
			}
			m, err := provider.New(ctx, tc.spec, tc.set(srv.srv.URL), deps)
			if err != nil {
				t.Fatal(err)
			}

			dir := t.TempDir()
			st, err := sqlite.Open(ctx, filepath.Join(dir, "keel.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			arts, err := artfs.New(filepath.Join(dir, "artifacts"))
			if err != nil {
				t.Fatal(err)
			}
			pub := research.DirPublisher{Dir: filepath.Join(dir, "published")}
			agent, err := researchtest.Agent(m, arts, pub)
			if err != nil {
				t.Fatal(err)
			}
			h, err := harness.New(harness.Options{Store: st, Artifacts: arts, Agents: harness.AgentMap{research.AgentName: agent}, Owner: "provider-test"})
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s1", Owner: "alice", Agent: research.AgentName,
				Request: runRequest, InputPolicy: run.InputQueue, Limits: run.Limits{}.WithDefaults()})
			if err != nil {
				t.Fatal(err)
			}

			// collect → analyze → draft → publish: the harness stops for
			// the approval of the exact publish call.
			if d := stepUntil(t, h, r.ID); d.Next != harness.NextApproval {
				t.Fatalf("want an approval, got %+v", d)
			}
			aps, err := st.ListApprovals(ctx, r.ID)
			if err != nil || len(aps) != 1 || aps[0].Status != run.ApprovalPending || aps[0].Tool != "publish_report" {
				t.Fatalf("approvals %+v, %v", aps, err)
			}
			ap := aps[0]
			if n, _ := pub.Count(); n != 0 {
				t.Fatalf("published %d before approval", n)
			}
			if _, err := st.DecideApproval(ctx, store.Decision{RunID: r.ID, ApprovalID: ap.ID, Approve: true, ArgsHash: ap.ArgsHash, DecidedBy: "bob"}); err != nil {
				t.Fatal(err)
			}
			if d := stepUntil(t, h, r.ID); d.Next != harness.NextDone {
				t.Fatalf("after approval: %+v", d)
			}

			// Exactly one publication, and it is the approved report: the
			// hash the server read from the draft result in its request.
			files, err := filepath.Glob(filepath.Join(pub.Dir, "*.md"))
			if err != nil || len(files) != 1 {
				t.Fatalf("publications %v, %v; want exactly 1", files, err)
			}
			content, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var args struct {
				ArtifactKey string `json:"artifact_key"`
				SHA256      string `json:"sha256"`
			}
			if err := json.Unmarshal(ap.Args, &args); err != nil {
				t.Fatal(err)
			}
			if args.SHA256 != run.HashBytes(content) || !strings.HasPrefix(args.ArtifactKey, "runs/"+r.ID+"/") {
				t.Fatalf("approved %+v, published a report with sha256 %s", args, run.HashBytes(content))
			}

			got, err := st.GetRun(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != run.StatusCompleted || got.Output != srv.script.Final {
				t.Fatalf("run %s, output %q", got.Status, got.Output)
			}

			// The server: five turns, the draft turn twice, its first
			// attempt cut; every other turn answered once.
			log := srv.served()
			var wantTokens, wantSpend int64
			prices := provider.DefaultPrices()
			price, ok := prices.Lookup(tc.spec[strings.Index(tc.spec, ":")+1:])
			if !ok {
				t.Fatalf("no default price for %s", tc.spec)
			}
			cuts := 0
			for i, s := range log {
				wantTurn, wantAttempt := i, 0
				if i > draftTurn {
					wantTurn = i - 1
				}
				if i == draftTurn+1 {
					wantAttempt = 1
				}
				if s.Turn != wantTurn || s.Attempt != wantAttempt {
					t.Errorf("request %d answered turn %d attempt %d, want turn %d attempt %d", i, s.Turn, s.Attempt, wantTurn, wantAttempt)
				}
				if s.Cut {
					cuts++
					continue
				}
				u := model.Usage{InputTokens: s.Answer.Input, OutputTokens: s.Answer.Output, CacheReadTokens: s.Answer.Cached}
				wantTokens += u.Total()
				wantSpend += price.Cost(u)
			}
			if len(log) != 6 || cuts != 1 || !log[draftTurn].Cut {
				t.Fatalf("server answered %d requests with %d cut (%+v); want 6, the first draft attempt cut", len(log), cuts, log)
			}
			// The cut call never reached the transcript: no later request
			// names it, every later one carries the retried call instead.
			cutID, retryID := tc.wire.callID(draftTurn, 0), tc.wire.callID(draftTurn, 1)
			for i, s := range log {
				if strings.Contains(string(s.Body), cutID) {
					t.Errorf("request %d carries the cut call %s", i, cutID)
				}
				if i > draftTurn+1 && !strings.Contains(string(s.Body), retryID) {
					t.Errorf("request %d lacks the retried call %s", i, retryID)
				}
			}
			if len(slept) != 1 || slept[0] <= 0 {
				t.Errorf("backoffs %v, want one before the retry of the cut call", slept)
			}

			// Usage from each stream reached the run's budget, and nothing
			// of the cut attempt did.
			if got.Budget.TokensUsed != wantTokens || wantTokens <= 0 {
				t.Errorf("tokens_used = %d, want %d (the usage the server streamed)", got.Budget.TokensUsed, wantTokens)
			}
			if got.Budget.SpendUsedMicroUSD != wantSpend || wantSpend <= 0 {
				t.Errorf("spend_used = %d µUSD, want %d", got.Budget.SpendUsedMicroUSD, wantSpend)
			}

			// The events: the cut is recorded as a retried stream_cut, no
			// tool ever ran on the partial call, and no key leaked.
			evs, err := st.ReadEvents(ctx, r.ID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[run.EventType]int{}
			for i, ev := range evs {
				counts[ev.Type]++
				if ev.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d", i, ev.Seq)
				}
				for _, k := range tc.keys {
					if strings.Contains(string(ev.Data), k) {
						t.Fatalf("event %s carries a secret", ev.Type)
					}
				}
				if ev.Type == run.EventModelCallFailed {
					var d struct {
						Kind    string `json:"kind"`
						Retried bool   `json:"retried"`
					}
					if err := json.Unmarshal(ev.Data, &d); err != nil {
						t.Fatal(err)
					}
					if d.Kind != model.AttemptStreamCut || !d.Retried {
						t.Errorf("model_call_failed %s, want a retried stream_cut (%s)", ev.Data, tc.fault)
					}
				}
				if ev.Type == run.EventToolStarted && strings.Contains(string(ev.Data), tc.wire.callID(draftTurn, 0)) {
					t.Errorf("a tool started for the cut call: %s", ev.Data)
				}
			}
			for typ, want := range map[run.EventType]int{
				run.EventModelCallFailed: 1, run.EventModelCallCompleted: 5, run.EventToolCompleted: 4,
				run.EventApprovalRequested: 1, run.EventApprovalGranted: 1, run.EventOpIntent: 1, run.EventOpSucceeded: 1,
				run.EventRunCompleted: 1,
			} {
				if counts[typ] != want {
					t.Errorf("%s events = %d, want %d", typ, counts[typ], want)
				}
			}
		})
	}
}

// stepUntil steps a run until it needs something other than another step.
func stepUntil(t *testing.T, h *harness.Harness, runID string) harness.Decision {
	t.Helper()
	for i := 0; i < 50; i++ {
		d, err := h.Step(context.Background(), runID, time.Minute)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		switch d.Next {
		case harness.NextContinue:
		case harness.NextWait:
			t.Fatalf("step %d asks to wait %ds: nothing here should rate-limit", i, d.WaitSeconds)
		default:
			return d
		}
	}
	t.Fatal("the run did not reach a decision in 50 steps")
	return harness.Decision{}
}
