package cost

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// handRun is a small run whose usage and price are worked by hand below:
// three Steps on Lambda (2 s, 1 s, 0.25 s), an approval between the first
// two, a long tool spilled to a Fargate task that ran 30 s (billed the
// minute minimum), a spilled third checkpoint, two artifacts.
func handRun(t *testing.T) Records {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	lease := func(owner string) json.RawMessage { return json.RawMessage(`{"owner":"` + owner + `","token":1}`) }
	cp := func(id string) json.RawMessage { return json.RawMessage(`{"checkpoint_id":"` + id + `"}`) }
	evs := []run.Event{
		{Type: run.EventRunCreated, Time: at(0)},
		{Type: run.EventLeaseAcquired, Time: at(0), Data: lease("lambda/step/aa")},
		{Type: run.EventToolCompleted, Time: at(1.5), Data: json.RawMessage(`{"tool":"search"}`)},
		{Type: run.EventCheckpointWritten, Time: at(2), Data: cp("cp1")},
		{Type: run.EventApprovalRequested, Time: at(2)},
		{Type: run.EventApprovalGranted, Time: at(60)}, // written by the API: does not stretch the first Step
		{Type: run.EventLeaseAcquired, Time: at(61), Data: lease("lambda/step/bb")},
		{Type: run.EventRunSpilled, Time: at(61.5)},
		{Type: run.EventCheckpointWritten, Time: at(62), Data: cp("cp2")},
		{Type: run.EventLeaseAcquired, Time: at(70), Data: lease("fargate/cc")},
		{Type: run.EventCheckpointWritten, Time: at(100), Data: cp("cp3")},
		{Type: run.EventLeaseAcquired, Time: at(101), Data: lease("lambda/step/dd")},
		{Type: run.EventRunCompleted, Time: at(101.25)},
	}
	for i := range evs {
		evs[i].RunID, evs[i].Seq = "run_1", int64(i+1)
	}
	r := run.Run{ID: "run_1", Agent: "research", Status: run.StatusCompleted,
		Budget: run.Budget{TokensUsed: 1500, SpendUsedMicroUSD: 12000}}
	rec := Records{Run: r, Events: evs, ArtifactBytes: []int64{1000, 3000}, Checkpoints: []run.Checkpoint{
		{ID: "cp1", State: bytes.Repeat([]byte("a"), 100), Size: 100},
		{ID: "cp2", State: bytes.Repeat([]byte("b"), 2000), Size: 2000},
		{ID: "cp3", StateRef: "s3://bucket/run_1/cp3", Size: 500000},
	}}
	// The hand count below takes every event and the run row under one
	// write unit (1 KB, with the item overhead) and every read under 4 KB.
	if n := jsonSize(r) + itemOverhead; n > wruBytes {
		t.Fatalf("run row is %d bytes: the hand count assumes under 1 KB", n)
	}
	for _, ev := range evs {
		if n := jsonSize(ev) + itemOverhead; n > wruBytes {
			t.Fatalf("event %d is %d bytes: the hand count assumes under 1 KB", ev.Seq, n)
		}
	}
	return rec
}

func TestMeasureHandWorked(t *testing.T) {
	got := Measure(handRun(t), DefaultResources())
	want := Usage{
		// Init 1 + 3 Steps × 3 (Step, Count, Route) + 1 AwaitApproval
		// + 1 task × 3 (RunOnFargate, Count, Route) + Finalize, Outcome, Done 3.
		StateTransitions: 1 + 9 + 1 + 3 + 3,
		StepInvocations:  3,
		StepSeconds:      2 + 1 + 0.25,
		// 3 Steps + 1 approval function + 1 finalize + 2 API calls
		// (the create, the approval's decision).
		LambdaInvocations: 3 + 1 + 1 + 2,
		// step 1 GB × 3.25 s + finalize 0.5 GB × 0.05 s + approval
		// 0.25 GB × 0.05 s + API 0.5 GB × 0.05 s × 2
		// = 3.25 + 0.025 + 0.0125 + 0.05.
		LambdaGBSeconds: 3.3375,
		// 13 events × 2 (transactional) = 26; 4 lease acquisitions × 1
		// (run row) = 4; checkpoint items 2×⌈200/1024⌉ + 2×⌈2100/1024⌉ +
		// 2×⌈100/1024⌉ = 2 + 6 + 2 = 10; one plan item written twice,
		// transactional: 4; 3 commits rewriting the run row × 2 = 6.
		DynamoWRU: 26 + 4 + 10 + 4 + 6,
		// Each of the 4 loads reads the run row, the resume checkpoint and
		// the plan, each under 4 KB: 4 × 3.
		DynamoRRU: 12,
		// The spilled cp3 and two artifacts; the last Step reads cp3 back.
		S3Puts: 3, S3Gets: 1, S3BytesWritten: 500000 + 1000 + 3000,
		// 30 s of task billed as the 60 s minimum.
		FargateTasks: 1, FargateSeconds: 60,
		Tokens: 1500, ModelSpendMicroUSD: 12000,
	}
	if !near(got.StepSeconds, want.StepSeconds) || !near(got.LambdaGBSeconds, want.LambdaGBSeconds) {
		t.Errorf("seconds: got step %v GB-s %v, want %v and %v", got.StepSeconds, got.LambdaGBSeconds, want.StepSeconds, want.LambdaGBSeconds)
	}
	got.StepSeconds, got.LambdaGBSeconds = want.StepSeconds, want.LambdaGBSeconds
	if got != want {
		t.Errorf("usage\n got %+v\nwant %+v", got, want)
	}
}

func TestPriceHandWorked(t *testing.T) {
	res := DefaultResources()
	rep := Price("run_1", Measure(handRun(t), res), res, Default())
	want := map[string]float64{
		"step functions":  17 * 0.000025,              // 0.000425
		"lambda requests": 7 * 0.0000002,              // 0.0000014
		"lambda compute":  3.3375 * 0.0000133334,      // 0.0000445002225
		"dynamodb writes": 50 * 0.000000625,           // 0.00003125
		"dynamodb reads":  12 * 0.000000125,           // 0.0000015
		"s3 puts":         3 * 0.000005,               // 0.000015
		"s3 gets":         1 * 0.0000004,              // 0.0000004
		"fargate":         (0.03238 + 2*0.00356) / 60, // 1 vCPU + 2 GB for a minute: 0.000658333…
		"model":           0.012,
	}
	for _, l := range rep.Lines {
		if w, ok := want[l.Part]; !ok || !near(l.USD, w) {
			t.Errorf("%s: $%.10f, want $%.10f", l.Part, l.USD, w)
		}
		delete(want, l.Part)
	}
	if len(want) != 0 {
		t.Errorf("parts missing from the report: %v", want)
	}
	// 0.000425 + 0.0000014 + 0.0000445002225 + 0.00003125 + 0.0000015
	// + 0.000015 + 0.0000004 + 0.000658333333 = 0.001177383556
	if !near(rep.AWSUSD, 0.001177383556) || !near(rep.TotalUSD, 0.013177383556) {
		t.Errorf("aws $%.12f total $%.12f", rep.AWSUSD, rep.TotalUSD)
	}
	var out strings.Builder
	if err := rep.Print(&out); err != nil || !strings.Contains(out.String(), "0.013177") {
		t.Errorf("printed %q (%v)", out.String(), err)
	}
}

func TestParsePrices(t *testing.T) {
	cases := []struct {
		name, json, wantErr string
		check               func(Prices) bool
	}{
		{name: "override one field", json: `{"region":"eu-west-1","dynamodb_wru":0.000001}`,
			check: func(p Prices) bool {
				return p.Region == "eu-west-1" && p.DynamoWRU == 0.000001 && p.S3Put == Default().S3Put
			}},
		{name: "negative", json: `{"s3_get":-1}`, wantErr: "s3_get"},
		{name: "not JSON", json: `{`, wantErr: "KEEL_PRICES"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte(tc.json))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(p) {
				t.Fatalf("%+v %v", p, err)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }
