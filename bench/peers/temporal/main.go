// Command temporal is the Temporal contender of bench/peers, a module of
// its own so that Keel's go.mod carries no Temporal SDK. Against a running
// dev server (temporal server start-dev) it runs a worker and one workflow
// of N iterations of an instant model activity → an instant tool activity,
// two messages appended to the workflow's state per iteration (each
// activity's completion is the durable record), then a final answer, and
// prints one JSON line as bench/peers/keelstep does.
//
//	temporal-bench -addr 127.0.0.1:7233 -n N
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const queue = "keel-bench"

// Message is one entry of the transcript the workflow keeps.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text,omitempty"`
	Tool string `json:"tool,omitempty"`
}

// Model is the instant scripted model: a tool call for the first n turns,
// then the answer. It is given the transcript's length, not the
// transcript, so history stays linear in N.
func Model(_ context.Context, turn, n int) (Message, error) {
	if turn < n {
		return Message{Role: "assistant", Tool: "echo", Text: "hello"}, nil
	}
	return Message{Role: "assistant", Text: "done"}, nil
}

// Tool is the instant echo tool.
func Tool(_ context.Context, text string) (Message, error) {
	return Message{Role: "tool", Text: text}, nil
}

// Loop is the agent loop as a workflow.
func Loop(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var transcript []Message
	for turn := 0; ; turn++ {
		var m Message
		if err := workflow.ExecuteActivity(ctx, Model, turn, n).Get(ctx, &m); err != nil {
			return 0, err
		}
		transcript = append(transcript, m)
		if m.Tool == "" {
			return len(transcript), nil
		}
		var t Message
		if err := workflow.ExecuteActivity(ctx, Tool, m.Text).Get(ctx, &t); err != nil {
			return 0, err
		}
		transcript = append(transcript, t)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7233", "the dev server's frontend")
	n := flag.Int("n", 100, "iterations")
	flag.Parse()
	if err := run(*addr, *n); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-bench:", err)
		os.Exit(1)
	}
}

func run(addr string, n int) error {
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet{}})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(Loop)
	w.RegisterActivity(Model)
	w.RegisterActivity(Tool)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	ctx := context.Background()
	w0 := wchar()
	start := time.Now()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bench-%d-%d", n, time.Now().UnixNano()), TaskQueue: queue}, Loop, n)
	if err != nil {
		return err
	}
	var msgs int
	if err := wr.Get(ctx, &msgs); err != nil {
		return err
	}
	took := time.Since(start)
	if msgs != 2*n+1 {
		return fmt.Errorf("the workflow kept %d messages, want %d", msgs, 2*n+1)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"steps": n, "ms_per_step": float64(took.Nanoseconds()) / 1e6 / float64(n+1),
		"write_bytes": wchar() - w0, "note": "regular activities, default worker options"})
}

// quiet drops the SDK's log lines (the driver reads stdout).
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal:", msg}, kv...)...)
}

func wchar() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar:"); ok {
			var n int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &n)
			return n
		}
	}
	return 0
}
