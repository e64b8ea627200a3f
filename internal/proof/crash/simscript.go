package crash

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// writeScript writes steps as JSON lines.
func writeScript(path string, steps []SimStep) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, st := range steps {
		if err := enc.Encode(st); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// ReadScript reads a script written by a failing simulation.
func ReadScript(r io.Reader) ([]SimStep, error) {
	var steps []SimStep
	dec := json.NewDecoder(r)
	for dec.More() {
		var st SimStep
		if err := dec.Decode(&st); err != nil {
			return nil, fmt.Errorf("script step %d: %w", len(steps)+1, err)
		}
		steps = append(steps, st)
	}
	if len(steps) == 0 || steps[0].Kind != stepWorld {
		return nil, fmt.Errorf("a script begins with a %q step", stepWorld)
	}
	return steps, nil
}

// PrintSim writes a simulation's table and its violations.
func PrintSim(w io.Writer, s SimSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tlease\tsteps\tkills\tworlds\truns\tpublications\tsafety\tliveness\twall time\tseed\t")
	fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t\n", s.Store, s.Lease, s.Steps, s.Kills, s.Worlds, s.Runs, s.Publications,
		len(s.Safety), len(s.Liveness), s.Wall.Round(time.Second), s.Seed)
	tw.Flush()
	fmt.Fprintf(w, "runs: %d, %d of them children of sub-agent calls; keel dev started on another build %d times\n", s.Runs, s.Children, s.Deploys)
	for _, m := range []struct {
		name string
		c    map[string]int
	}{{"accepted", s.Moves}, {"refused", s.Refused}, {"answer lost", s.Lost}} {
		keys := make([]string, 0, len(m.c))
		for k := range m.c {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, m.c[k]))
		}
		fmt.Fprintf(w, "%s: %s\n", m.name, strings.Join(parts, ", "))
	}
	for _, v := range s.Safety {
		fmt.Fprintf(w, "  SAFETY %s\n", v)
	}
	for _, v := range s.Liveness {
		fmt.Fprintf(w, "  LIVENESS %s\n", v)
	}
	if s.Err != nil {
		fmt.Fprintf(w, "  STOPPED %v\n", s.Err)
	}
	if s.Script != "" {
		store := "-store " + s.Store
		if s.Store == "dynamo" {
			store += " -moto python3"
		}
		fmt.Fprintf(w, "script: %s (replay: crash %s -lease %s -replay %s sim)\n", s.Script, store, s.Lease, s.Script)
	}
}
