package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// ownStart is one cold start of bootstrap on a Lambda Runtime API served
// here (the subset aws-lambda-go uses: /invocation/next, /response,
// /error, /init/error), with no emulator in between: the bootstrap's own
// time from exec to its first GET /next (the Go runtime and Keel's init)
// and from then to the answer (the invocation itself).
type ownStart struct {
	ToNext   time.Duration // exec → first /invocation/next
	ToAnswer time.Duration // exec → /response or /error
	Errored  bool          // the handler answered on /error
	Body     []byte
	// CPU is the user+system time the bootstrap had used when it was
	// killed, waiting for its second event: the CPU its init and the
	// invocation cost, which waiting for a core on a busy machine does not
	// change as it changes the wall-clock figures.
	CPU time.Duration
}

// runOwn execs bootstrap with env on a fresh Runtime API and hands it one
// event. It returns when the bootstrap has answered (or after within).
func runOwn(ctx context.Context, bootstrap string, env []string, event string, within time.Duration) (ownStart, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ownStart{}, err
	}
	api := newRuntimeAPI(event)
	nextAt, answered := api.nextAt, api.answered
	srv := &http.Server{Handler: api.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	cmd := exec.CommandContext(ctx, bootstrap)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+l.Addr().String())
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return ownStart{}, err
	}
	var out ownStart
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	timeout := time.After(within)
	select {
	case t := <-nextAt:
		out.ToNext = t.Sub(start)
	case a := <-answered:
		return out, fmt.Errorf("init failed: %s\n%s", a.body, logs.String())
	case <-timeout:
		return out, fmt.Errorf("no /invocation/next within %v\n%s", within, logs.String())
	}
	select {
	case a := <-answered:
		out.ToAnswer, out.Errored, out.Body = a.at.Sub(start), a.errored, a.body
	case <-timeout:
		return out, fmt.Errorf("no answer within %v\n%s", within, logs.String())
	}
	// Let it reach its second GET /next (it then blocks), then stop it.
	time.Sleep(20 * time.Millisecond)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if cmd.ProcessState != nil {
		out.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return out, nil
}

// runtimeAnswer is the bootstrap's answer to its event: when it came,
// whether to an error endpoint, and its body.
type runtimeAnswer struct {
	at      time.Time
	errored bool
	body    []byte
}

// runtimeAPI is a Lambda runtime API that hands out one event and takes
// its answer; it reports when the event was asked for on nextAt and the
// answer (or an init error) on answered.
type runtimeAPI struct {
	event    string
	nextAt   chan time.Time
	answered chan runtimeAnswer
	served   atomic.Bool
}

func newRuntimeAPI(event string) *runtimeAPI {
	return &runtimeAPI{event: event, nextAt: make(chan time.Time, 1), answered: make(chan runtimeAnswer, 1)}
}

func (a *runtimeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", a.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", a.reply(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", a.reply(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", a.reply(true))
	return mux
}

// next hands out the event once.
func (a *runtimeAPI) next(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if a.served.Swap(true) {
		// The bootstrap asks for its second event: there is none; hold
		// it until the run ends, as Lambda freezes it.
		<-r.Context().Done()
		return
	}
	a.nextAt <- now
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", "bench-1")
	h.Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(30*time.Second).UnixMilli()))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:keel-bench")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
	_, _ = io.WriteString(w, a.event)
}

// reply takes an answer; only the first is reported.
func (a *runtimeAPI) reply(errored bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		select {
		case a.answered <- runtimeAnswer{at: now, errored: errored, body: b}:
		default:
		}
	}
}

// checkAnswer says whether body is what role answers to its bench event.
func checkAnswer(role string, errored bool, body []byte) error {
	s := string(body)
	switch {
	case role == "api" && !errored && strings.Contains(s, `"statusCode":200`) && strings.Contains(s, `ok`):
		return nil
	case role != "api" && errored && strings.Contains(s, wantError[role]):
		return nil
	}
	return errors.New("not the expected answer: " + s)
}
