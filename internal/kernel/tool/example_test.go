package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// wordCount is a read-only tool: it runs without asking and may run again
// after a crash.
type wordCount struct{}

func (wordCount) Info() tool.Info {
	return tool.Info{
		Name:        "word_count",
		Description: "Count the words of a text.",
		Mode:        run.ModeSafeReadonly,
		Schema:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
	}
}

func (wordCount) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	var args struct{ Text string }
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return tool.Result{}, err
	}
	n := len(strings.Fields(args.Text))
	if c.Progress != nil {
		c.Progress(1, 1, "counted")
	}
	return tool.Result{Content: fmt.Sprintf(`{"words":%d}`, n)}, nil
}

// Define a tool, register it, and let the registry validate what a model
// proposes before anything runs.
func Example_defineTool() {
	reg, err := tool.NewRegistry(wordCount{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, args := range []string{`{"text":"one two three"}`, `{"text":3}`, `{"text":"cut mid`} {
		t, err := reg.Validate("word_count", json.RawMessage(args))
		if err != nil {
			fmt.Println("refused:", strings.SplitN(err.Error(), ":", 2)[0])
			continue
		}
		res, _ := t.Run(context.Background(), tool.Call{Args: json.RawMessage(args)})
		fmt.Println("ran:", res.Content)
	}
	// Output:
	// ran: {"words":3}
	// refused: invalid tool arguments for word_count
	// refused: invalid tool arguments for word_count
}
