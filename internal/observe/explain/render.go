package explain

import (
	"fmt"
	"strings"
	"time"
)

// Render is the story as a few lines a person reads.
func Render(s Story) string {
	var b strings.Builder
	agent := s.Agent
	if s.AgentVersion != "" {
		agent += " " + short(s.AgentVersion)
	}
	fmt.Fprintf(&b, "Run %s (%s) %s after %d step(s) (%d worker invocation(s)) in %s", s.RunID, agent, s.Status, s.Steps, s.Invocations, round(s.Duration))
	if s.Error != "" {
		fmt.Fprintf(&b, ": %s", clip(s.Error, 200))
	}
	b.WriteString(".\n")
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", w)
	}
	if n := len(s.Undelivered); n > 0 {
		fmt.Fprintf(&b, "%d accepted input(s) never delivered: the run ended before reading them (%s).\n", n, strings.Join(s.Undelivered, ", "))
	}
	if s.FirstErr != nil {
		kind := s.FirstErr.Kind
		if s.FirstErr.Panic {
			kind += ", a panic: its stack is in the worker's log"
		}
		fmt.Fprintf(&b, "\nFirst error (seq %d, %s): %s", s.FirstErr.Seq, kind, clip(s.FirstErr.Message, 200))
		if s.FirstErr.Tool != "" {
			fmt.Fprintf(&b, " [%s]", s.FirstErr.Tool)
		}
		b.WriteString("\n")
		if len(s.FirstErr.Followed) > 0 {
			fmt.Fprintf(&b, "  then: %s\n", strings.Join(s.FirstErr.Followed, "; "))
		}
	}
	b.WriteString("\nPath:\n")
	for _, d := range s.Path {
		times := ""
		if d.Times > 1 {
			times = fmt.Sprintf(" (×%d)", d.Times)
		}
		fmt.Fprintf(&b, "  %4d  %s%s\n", d.Seq, d.What, times)
	}
	sp := s.Spend
	fmt.Fprintf(&b, "\nSpend: %d tokens, %s; model %s, tools %s, waiting for people %s.\n", sp.Tokens, usd(sp.SpendMicroUSD),
		round(sp.ModelTime), round(sp.ToolTime), round(sp.WaitTime))
	for _, r := range sp.Repeats {
		fmt.Fprintf(&b, "  %.0f %% of tokens went to %d repeated calls of %s (same input %s", r.TokenPercent, r.Calls, r.Tool, short(r.InputHash))
		if r.Failed > 0 {
			fmt.Fprintf(&b, ", %d failed", r.Failed)
		}
		b.WriteString(")")
		if r.After != "" {
			fmt.Fprintf(&b, " after %s", r.After)
		}
		b.WriteString(".\n")
	}
	for _, t := range sp.ByTool {
		fmt.Fprintf(&b, "  %-20s %3d call(s) %2d failed  %5.1f %% of tokens  %s\n", t.Tool, t.Calls, t.Failed, t.TokenPercent, round(t.Time))
	}
	if len(s.Open) > 0 {
		b.WriteString("\nOpen:\n")
		for _, o := range s.Open {
			fmt.Fprintf(&b, "  %s %s: %s\n", o.Kind, o.ID, o.Why)
		}
	}
	if len(s.Next) > 0 {
		b.WriteString("\nNext:\n")
		for _, a := range s.Next {
			fmt.Fprintf(&b, "  %s\n    %s\n", a.Why, a.Command)
		}
	}
	return b.String()
}

func round(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func usd(micro int64) string { return fmt.Sprintf("$%.4f", float64(micro)/1e6) }

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
