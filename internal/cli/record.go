package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/scripted"
	"github.com/keelrun/keel/internal/kernel/run"
)

// recordCommand turns a completed run's recorded model answers into a
// scripted-model script (internal/kernel/model/scripted), so that the run's
// decisions can be replayed without the model: KEEL_MODEL=scripted:FILE.
func recordCommand() command {
	cmd := command{usage: "[-o FILE] RUN_ID", summary: "write a completed run's model answers as a scripted-model script (for crashtest)"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("record")
		out := fs.String("o", "", "write the script to FILE (default: stdout)")
		pos, err := parseArgs(fs, args, "RUN_ID")
		if err != nil {
			return err
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		s, err := recordScript(ctx, cl, pos[0])
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if *out == "" {
			_, err = c.stdout.Write(b)
			return err
		}
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "%s: %d turns of run %s\n", *out, len(s.Turns), pos[0])
		return nil
	}
	return cmd
}

// recordedAnswer is what model_call_completed records of an answer
// (internal/kernel/harness).
type recordedAnswer struct {
	Usage  model.Usage `json:"usage"`
	Answer *struct {
		OmittedBytes int    `json:"omitted_bytes"`
		Text         string `json:"text"`
		Calls        []struct {
			Name       string          `json:"name"`
			Args       json.RawMessage `json:"args"`
			ReplayArgs json.RawMessage `json:"replay_args"`
		} `json:"calls"`
	} `json:"answer"`
}

// recordScript reads the run's events and makes one scripted turn per
// model_call_completed, in order: the scripted model plays the turn the
// transcript is at (its count of assistant messages), and every committed
// model_call_completed is one assistant message of the transcript.
func recordScript(ctx context.Context, cl *client.Client, runID string) (scripted.Script, error) {
	r, err := cl.GetRun(ctx, runID)
	if err != nil {
		return scripted.Script{}, err
	}
	if r.Status != run.StatusCompleted {
		return scripted.Script{}, &conflictError{err: fmt.Errorf("run %s is %s: record a completed run", runID, r.Status)}
	}
	var evs []api.Event
	for after := int64(0); ; {
		page, err := cl.Events(ctx, runID, after, 1000)
		if err != nil {
			return scripted.Script{}, err
		}
		evs = append(evs, page.Events...)
		if len(page.Events) == 0 {
			break
		}
		after = page.Events[len(page.Events)-1].Seq
	}
	var s scripted.Script
	for _, e := range evs {
		if e.Type != run.EventModelCallCompleted {
			continue
		}
		var a recordedAnswer
		if err := json.Unmarshal(e.Data, &a); err != nil {
			return scripted.Script{}, fmt.Errorf("event %d: %w", e.Seq, err)
		}
		if a.Answer == nil {
			return scripted.Script{}, fmt.Errorf("event %d (model_call_completed) does not hold the answer: the run was recorded by an older Keel", e.Seq)
		}
		if a.Answer.OmittedBytes > 0 {
			return scripted.Script{}, fmt.Errorf("event %d (model_call_completed): the answer (%d bytes) was too large to be kept in the event", e.Seq, a.Answer.OmittedBytes)
		}
		t := scripted.Turn{Text: a.Answer.Text}
		if a.Usage != (model.Usage{}) {
			u := a.Usage
			t.Usage = &u
		}
		for _, c := range a.Answer.Calls {
			args := c.Args
			if len(c.ReplayArgs) > 0 {
				// Values the run's own tools returned (an artifact key, an
				// id) are references, filled from the replay's results.
				args = c.ReplayArgs
			}
			t.ToolCalls = append(t.ToolCalls, scripted.ToolCall{Name: c.Name, Args: args})
		}
		s.Turns = append(s.Turns, t)
	}
	if len(s.Turns) == 0 {
		return scripted.Script{}, fmt.Errorf("run %s has no model_call_completed events", runID)
	}
	if last := s.Turns[len(s.Turns)-1]; len(last.ToolCalls) == 0 {
		s.Final = last.Text
	}
	return s, nil
}
