package harness

import (
	"log/slog"

	"github.com/keelrun/keel/internal/kernel/run"
)

// env is what every part of a Step reads and none changes (the tools'
// judgements, made once per Step, aside): the harness's options, the
// agent, the run as the lease gave it, and the Step's logger, redaction,
// tools and telemetry. The run's identity, limits and policies are read
// from run; its steps, budget and log head as the last commit left them
// are the cursor's (run has them as the Step began).
type env struct {
	opt   *Options
	agent Agent
	run   run.Run
	log   *slog.Logger
	red   redactor
	tools toolbox
	tel   tracer
}

// newEnv is the env of a Step of run r by agent under opt.
func newEnv(opt *Options, agent Agent, r run.Run) env {
	red := redactor(secretsOf(agent.Tools))
	return env{opt: opt, agent: agent, run: r, log: opt.Logger.With("run_id", r.ID), red: red,
		tools: toolbox{reg: agent.Tools, runID: r.ID},
		tel:   tracer{tel: opt.Telemetry, runID: r.ID, session: r.SessionID, provider: agent.Provider, model: agent.ModelName, red: red}}
}
