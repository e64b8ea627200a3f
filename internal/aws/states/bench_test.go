package states

import (
	"fmt"
	"testing"
)

// BenchmarkRunStepLoop drives run.asl.json through 400 continue decisions
// per execution (under the rollover bound) on SQLite with synchronous=FULL
// and reports the executor's cost per Step loop (Step task, Count, Route:
// four durable transitions) and history events per loop.
func BenchmarkRunStepLoop(b *testing.B) {
	const loops = 400
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		script := make([]stepReply, 0, loops+1)
		for range loops {
			script = append(script, reply("continue"))
		}
		script = append(script, reply("done"))
		keel := newFakeKeel(b, script...)
		env := newEnv(b, envOpts{lambdas: keel.lambdas(), tasks: keel})
		arn := env.register("keel-run", string(runASL(b)), runSubs)
		b.StartTimer()
		ex := env.start(arn, fmt.Sprintf("bench-%d", i), `{"run_id": "bench", "generation": 0}`)
		d := env.waitDone(ex)
		b.StopTimer()
		if d.Status != StatusSucceeded {
			b.Fatalf("status %s", d.Status)
		}
		evs := env.history(ex)
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64((i+1)*loops), "ms/loop")
		b.ReportMetric(float64(len(evs))/loops, "events/loop")
	}
}
