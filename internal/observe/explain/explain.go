package explain

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/observe/telemetry"
)

// Story is a run explained from its records: what a person reads first
// (Text) and the same facts as a structure (the JSON of GET
// /v1/runs/{id}/explain).
type Story struct {
	RunID string `json:"run_id"`
	Agent string `json:"agent"`
	// AgentVersion is the agent version the run was created under.
	AgentVersion string     `json:"agent_version,omitempty"`
	Status       run.Status `json:"status"`
	Error        string     `json:"error,omitempty"`
	// Steps is the run's step count (what max_steps bounds; show's
	// "steps"); Invocations the worker invocations (Step, task) that
	// took them, a lease each.
	Steps       int64         `json:"steps"`
	Invocations int           `json:"invocations"`
	Duration    time.Duration `json:"duration_ns"`
	Path        []Decision    `json:"path"`
	FirstErr    *FirstError   `json:"first_error,omitempty"`
	Spend       Spend         `json:"spend"`
	Open        []Open        `json:"open"`
	// Undelivered lists the inputs the run accepted and, finished, never
	// read (oldest first): they will never reach the agent.
	Undelivered []string  `json:"undelivered_inputs,omitempty"`
	Next        []Action  `json:"next"`
	Text        string    `json:"text"`
	Generated   time.Time `json:"as_of"`
}

// Decision is one turn of the path: what the model or the runtime chose.
// Identical consecutive decisions are folded into one with Times > 1.
type Decision struct {
	Seq   int64  `json:"seq"`
	What  string `json:"what"`
	Times int    `json:"times"`
}

// FirstError is the first thing that went wrong, and what the run did
// after it.
type FirstError struct {
	Seq     int64  `json:"seq"`
	Kind    string `json:"kind"` // tool_failed, model_call_failed, op_failed, budget_exceeded, ...
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
	// Panic: the error is a panic (run.TellsOfPanic), ranked first
	// whenever the run has one.
	Panic    bool     `json:"panic,omitempty"`
	Followed []string `json:"followed"`
}

// Spend is where tokens, time and money went.
type Spend struct {
	Tokens        int64         `json:"tokens"`
	SpendMicroUSD int64         `json:"spend_micro_usd"`
	ModelTime     time.Duration `json:"model_time_ns"`
	ToolTime      time.Duration `json:"tool_time_ns"`
	WaitTime      time.Duration `json:"wait_time_ns"`
	ByTool        []ToolShare   `json:"by_tool"`
	Repeats       []Repeat      `json:"repeats"`
}

// ToolShare is one tool's part. Tokens and spend of a model call are
// counted to the tool calls its answer asked for (shared evenly), so a
// tool's share is what deciding to call it cost; a final answer's are
// counted to "(answer)".
type ToolShare struct {
	Tool          string        `json:"tool"`
	Calls         int           `json:"calls"`
	Failed        int           `json:"failed"`
	Tokens        int64         `json:"tokens"`
	SpendMicroUSD int64         `json:"spend_micro_usd"`
	Time          time.Duration `json:"time_ns"`
	TokenPercent  float64       `json:"token_percent"`
}

// Repeat is the same tool called with the same input hash more than once.
type Repeat struct {
	Tool         string  `json:"tool"`
	InputHash    string  `json:"input_hash"`
	Calls        int     `json:"calls"`
	Failed       int     `json:"failed"`
	Tokens       int64   `json:"tokens"`
	TokenPercent float64 `json:"token_percent"`
	// After names what preceded the first repeat: the first error, when
	// it came before.
	After string `json:"after,omitempty"`
}

// Open is something still waiting: an operation pending or needing a
// person, an approval waiting for a decision, a durable wait.
type Open struct {
	Kind string `json:"kind"` // operation, approval, wait
	ID   string `json:"id"`
	Tool string `json:"tool,omitempty"`
	Why  string `json:"why"`
}

// Action is what a person can do next: a command of the keel CLI.
type Action struct {
	Why     string `json:"why"`
	Command string `json:"command"`
}

// Explain reads a run's records and tells its story.
func Explain(ctx context.Context, rec telemetry.Records, runID string) (Story, error) {
	b, err := telemetry.Collect(ctx, rec, runID)
	if err != nil {
		return Story{}, fmt.Errorf("explain: %w", err)
	}
	return Of(b), nil
}

// Of tells the story of collected records.
func Of(b telemetry.Bundle) Story {
	tl := telemetry.Rebuild(b)
	r := b.Run
	s := Story{RunID: r.ID, Agent: r.Agent, AgentVersion: r.AgentVersion, Status: r.Status, Error: r.Error, Steps: r.StepCount, Invocations: len(tl.Steps), Generated: b.WrittenAt,
		Path: []Decision{}, Open: []Open{}, Next: []Action{}}
	end := r.UpdatedAt
	if n := len(b.Events); n > 0 && b.Events[n-1].Time.After(end) {
		end = b.Events[n-1].Time
	}
	s.Duration = end.Sub(r.CreatedAt)
	s.Path = path(b)
	s.FirstErr = firstError(b)
	s.Spend = spend(b, tl, s.FirstErr)
	s.Open = open(b, tl)
	if r.Status.Terminal() {
		for _, in := range b.Inputs {
			if !in.Consumed {
				s.Undelivered = append(s.Undelivered, in.ID)
			}
		}
	}
	s.Next = next(b, s)
	s.Text = Render(s)
	return s
}

// percent is part of whole in percent, 0 for an empty whole.
func percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) * 100 / float64(whole)
}

func spend(b telemetry.Bundle, tl telemetry.Timeline, first *FirstError) Spend {
	sp := Spend{ByTool: []ToolShare{}, Repeats: []Repeat{}}
	byTool := map[string]*ToolShare{}
	get := func(name string) *ToolShare {
		if byTool[name] == nil {
			byTool[name] = &ToolShare{Tool: name}
		}
		return byTool[name]
	}
	// A model call's tokens and spend go to the calls its answer named,
	// shared evenly (whether or not each call then ran); an answer naming
	// none is the turn's answer.
	for _, m := range tl.Models {
		tokens := m.InputTokens + m.OutputTokens
		sp.Tokens += tokens
		sp.SpendMicroUSD += m.CostMicroUSD
		sp.ModelTime += m.End.Sub(m.Start)
		if len(m.Calls) == 0 {
			ts := get("(answer)")
			ts.Tokens += tokens
			ts.SpendMicroUSD += m.CostMicroUSD
			continue
		}
		n := int64(len(m.Calls))
		for _, name := range m.Calls {
			ts := get(name)
			ts.Tokens += tokens / n
			ts.SpendMicroUSD += m.CostMicroUSD / n
		}
	}
	// One call per plan item: an operation dispatched again after a
	// person settled it as not happened, or answered after one settled it
	// as happened, is the same call, and its last outcome is the call's.
	settled := map[string]bool{} // operations a person settled as happened
	for _, op := range b.Operations {
		settled[op.ID] = op.Status == run.OpSucceeded
	}
	final := map[string]string{}
	for _, c := range tl.Tools {
		if c.PlanItemID != "" {
			final[c.PlanItemID] = c.Status
		}
		if c.Status == "needs_human" && settled[c.OperationID] {
			final[c.PlanItemID] = "completed"
		}
	}
	counted := map[string]bool{}
	callTokens := make([]int64, len(tl.Tools))
	for i, c := range tl.Tools {
		ts := get(c.Tool)
		status := c.Status
		if c.PlanItemID != "" {
			status = final[c.PlanItemID]
		} else if status == "needs_human" && settled[c.OperationID] {
			status = "completed"
		}
		if c.PlanItemID == "" || !counted[c.PlanItemID] {
			counted[c.PlanItemID] = true
			ts.Calls++
			if status != "completed" {
				ts.Failed++
			}
		}
		ts.Time += c.Latency()
		sp.ToolTime += c.Latency()
		if c.AskedBy >= 0 {
			m := tl.Models[c.AskedBy]
			callTokens[i] = (m.InputTokens + m.OutputTokens) / int64(len(m.Calls))
		}
	}
	for _, ap := range tl.Approvals {
		if !ap.End.IsZero() {
			sp.WaitTime += ap.End.Sub(ap.Start)
		}
	}
	for _, ts := range byTool {
		ts.TokenPercent = percent(ts.Tokens, sp.Tokens)
		sp.ByTool = append(sp.ByTool, *ts)
	}
	slices.SortFunc(sp.ByTool, func(a, b ToolShare) int {
		if a.Tokens != b.Tokens {
			return int(b.Tokens - a.Tokens)
		}
		return int(b.Time - a.Time)
	})
	sp.Repeats = repeats(b, tl, first, callTokens, sp.Tokens)
	return sp
}

// repeats finds the repeated identical calls (the same tool with the same
// input hash), most tokens first, each with its share of total and the
// first error it came after; apart from spend to keep each one job.
func repeats(b telemetry.Bundle, tl telemetry.Timeline, first *FirstError, callTokens []int64, total int64) []Repeat {
	out := []Repeat{}
	type key struct{ tool, hash string }
	groups := map[key]*Repeat{}
	var order []key
	firstRepeatSeq := map[key]time.Time{}
	seen := map[key]int{}
	items := map[string]bool{}
	for i, c := range tl.Tools {
		if c.InputHash == "" || c.PlanItemID != "" && items[c.PlanItemID] {
			continue // one plan item's second dispatch is not a repeat the model asked for
		}
		items[c.PlanItemID] = true
		k := key{c.Tool, c.InputHash}
		seen[k]++
		if groups[k] == nil {
			groups[k] = &Repeat{Tool: c.Tool, InputHash: c.InputHash}
			order = append(order, k)
		}
		g := groups[k]
		g.Calls++
		g.Tokens += callTokens[i]
		if c.Status != "completed" {
			g.Failed++
		}
		if seen[k] == 2 {
			firstRepeatSeq[k] = c.Start
		}
	}
	for _, k := range order {
		g := groups[k]
		if g.Calls < 2 {
			continue
		}
		g.TokenPercent = percent(g.Tokens, total)
		if first != nil && !firstErrTime(b, first).After(firstRepeatSeq[k]) {
			g.After = first.Kind + " " + first.Tool
			if first.Tool == "" {
				g.After = first.Kind
			}
		}
		out = append(out, *g)
	}
	slices.SortStableFunc(out, func(a, b Repeat) int { return int(b.Tokens - a.Tokens) })
	return out
}

func firstErrTime(b telemetry.Bundle, f *FirstError) time.Time {
	for _, e := range b.Events {
		if e.Seq == f.Seq {
			return e.Time
		}
	}
	return time.Time{}
}
