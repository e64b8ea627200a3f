package states

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// fakeClock is a manual clock. In auto mode a new timer fires at once and
// moves time to its deadline, so sleeps cost nothing and history
// timestamps show exactly the intervals the executor chose.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	auto   bool
	timers []*fakeTimer
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(auto bool) *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), auto: auto}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t.ch, func() bool { return false }
	}
	if c.auto {
		c.now = t.at
		t.ch <- c.now
		return t.ch, func() bool { return false }
	}
	c.timers = append(c.timers, t)
	return t.ch, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.timers {
			if x == t {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

// waitTimer blocks until a timer is pending that fires d from now: a state
// records its entry before it asks the clock for its timer, so advancing
// the clock as soon as the history shows the entry can come before the
// timer exists, and the timer would then never fire.
func (c *fakeClock) waitTimer(t testing.TB, d time.Duration) {
	t.Helper()
	for i := 0; i < 6000; i++ {
		c.mu.Lock()
		for _, x := range c.timers {
			if x.at.Equal(c.now.Add(d)) {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no timer of %v was ever pending", d)
}

// Advance moves time forward and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

type testEnv struct {
	t      testing.TB
	store  *Store
	exec   *Executor
	clock  Clock
	client *sfn.Client
	url    string
}

type envOpts struct {
	clock   Clock
	lambdas map[string]LambdaFunc
	tasks   TaskRunner
	rand    func() float64
	dbPath  string
}

func newEnv(t testing.TB, o envOpts) *testEnv {
	t.Helper()
	ctx := context.Background()
	if o.dbPath == "" {
		o.dbPath = filepath.Join(t.TempDir(), "keel.db")
	}
	st, err := OpenStore(ctx, o.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if o.clock == nil {
		o.clock = newFakeClock(false)
	}
	e, err := New(Config{Store: st, Lambdas: o.lambdas, Tasks: o.tasks, Clock: o.clock, Rand: o.rand})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(e, nil))
	env := &testEnv{t: t, store: st, exec: e, clock: o.clock, client: newClient(srv.URL), url: srv.URL}
	t.Cleanup(func() {
		srv.Close()
		e.Close()
		_ = st.Close()
	})
	return env
}

// newClient is the real SDK client pointed at the local API.
func newClient(url string) *sfn.Client {
	return sfn.New(sfn.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
		RetryMaxAttempts: 1,
	})
}

func (env *testEnv) register(name string, def string, subs map[string]string) string {
	env.t.Helper()
	m, err := Load([]byte(def), subs)
	if err != nil {
		env.t.Fatal(err)
	}
	arn, err := env.exec.Register(context.Background(), name, m)
	if err != nil {
		env.t.Fatal(err)
	}
	if err := env.exec.Start(context.Background()); err != nil {
		env.t.Fatal(err)
	}
	return arn
}

func (env *testEnv) start(machineARN, name, input string) string {
	env.t.Helper()
	out, err := env.client.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(machineARN), Name: aws.String(name), Input: aws.String(input)})
	if err != nil {
		env.t.Fatal(err)
	}
	return aws.ToString(out.ExecutionArn)
}

func (env *testEnv) history(arn string) []HistoryEvent {
	env.t.Helper()
	evs, err := env.exec.GetExecutionHistory(context.Background(), arn, 0, HistoryLimit, false)
	if err != nil {
		env.t.Fatal(err)
	}
	return evs
}

func countType(evs []HistoryEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// waitFor polls until cond holds for the execution's history. It polls
// (and gives up after a generous bound) only to learn that the executor
// goroutine got somewhere; no assertion depends on elapsed time.
func (env *testEnv) waitFor(arn, what string, cond func([]HistoryEvent) bool) []HistoryEvent {
	env.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs := env.history(arn)
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			env.t.Fatalf("gave up waiting for %s; history:\n%s", what, dumpHistory(evs))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (env *testEnv) waitEvent(arn, typ string, n int) []HistoryEvent {
	env.t.Helper()
	return env.waitFor(arn, fmt.Sprintf("%d × %s", n, typ), func(evs []HistoryEvent) bool { return countType(evs, typ) >= n })
}

func (env *testEnv) waitEntered(arn, state string, n int) []HistoryEvent {
	env.t.Helper()
	return env.waitFor(arn, fmt.Sprintf("%d × entering %s", n, state), func(evs []HistoryEvent) bool { return len(enteredStates(evs, state)) >= n })
}

// waitDone waits for the execution to close and returns its description.
func (env *testEnv) waitDone(arn string) ExecutionDescription {
	env.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := env.exec.DescribeExecution(context.Background(), arn)
		if err != nil {
			env.t.Fatal(err)
		}
		if d.Status != StatusRunning {
			return d
		}
		if time.Now().After(deadline) {
			env.t.Fatalf("gave up waiting for %s to close; history:\n%s", arn, dumpHistory(env.history(arn)))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stateEntered returns the state names entered, in order.
func statePath(evs []HistoryEvent) []string {
	var out []string
	for _, e := range evs {
		if strings.HasSuffix(e.Type, "StateEntered") {
			var d struct {
				D struct{ Name string } `json:"stateEnteredEventDetails"`
			}
			_ = json.Unmarshal(e.Details, &d)
			out = append(out, d.D.Name)
		}
	}
	return out
}

func enteredStates(evs []HistoryEvent, name string) []int {
	var idx []int
	for i, n := range statePath(evs) {
		if n == name {
			idx = append(idx, i)
		}
	}
	return idx
}

func dumpHistory(evs []HistoryEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%5d %s %s %s\n", e.ID, e.Timestamp.Format(time.RFC3339Nano), e.Type, e.Details)
	}
	return b.String()
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func canon(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type jsonRaw = json.RawMessage

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
