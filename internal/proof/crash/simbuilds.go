package crash

// Restarts on another build (issue 40): keel dev is stopped and started
// on another build of the agent program, as a deploy is to Keel's
// versions in flight (docs/deploying.md#runs-in-flight). The builds are
// the research fixture's variants (RESEARCH_VARIANT): one whose
// instructions differ is compatible (a run goes on, agent_upgraded);
// one whose publish_report takes another argument schema stops a run
// bound to the old one — an approval asked or given, an intent recorded —
// for a person (agent_upgrade_blocked, needs_human), whose next move is
// `keel resolve --old-version` (asked of the old build, started again) or
// `--deny` (the run goes on under the running build).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
)

// simBuild is a build of the agent program: which of the fixture's
// variants it has.
type simBuild struct{ instructions, note bool }

// simBuilds are every build, in the order the simulator tries them.
var simBuilds = []simBuild{{}, {instructions: true}, {note: true}, {instructions: true, note: true}}

// variant is the build's RESEARCH_VARIANT.
func (b simBuild) variant() string {
	var v []string
	if b.instructions {
		v = append(v, "instructions")
	}
	if b.note {
		v = append(v, "publish_note")
	}
	return strings.Join(v, ",")
}

func (b simBuild) String() string {
	if v := b.variant(); v != "" {
		return v
	}
	return "stock"
}

// deploy starts keel dev (stopped) on build b.
func (w *simWorld) deploy(ctx context.Context, b simBuild) error {
	if b != w.build {
		w.deploys++
	}
	w.build = b
	w.n.build = nil
	if v := b.variant(); v != "" {
		w.n.build = []string{"RESEARCH_VARIANT=" + v}
	}
	return w.start(ctx, "")
}

// upgrade stops keel dev (SIGKILL or SIGTERM) and starts it on another
// build: a compatible one (the instructions changed) or not (the
// publish_report schema changed).
func (s *sim) upgrade(ctx context.Context, st SimStep) (string, error) {
	w := s.w
	to := w.build
	if st.Arg == "incompatible" {
		to.note = !to.note
	} else {
		to.instructions = !to.instructions
	}
	how := "stopped"
	if st.Arg2 == "kill" {
		w.kill()
		how = "killed"
	} else {
		w.n.keel.stop()
	}
	s.count("upgrade/"+st.Arg, answer{ok: true})
	note := fmt.Sprintf("%s keel dev of build %s; the next runs build %s (%s)", how, w.build, to, st.Arg)
	return note, w.deploy(ctx, to)
}

// learn records that build b runs version of agent (a run created there).
func (w *simWorld) learn(agent, version string) {
	if version != "" {
		w.versions[agent+" "+version] = w.build
	}
}

// candidates are the builds that may run version of agent: the one it
// was seen under first, then the one serving, then the others.
func (w *simWorld) candidates(agent, version string) []simBuild {
	var out []simBuild
	if b, ok := w.versions[agent+" "+version]; ok {
		out = append(out, b)
	}
	out = append(out, w.build)
	out = append(out, simBuilds...)
	seen := map[simBuild]bool{}
	uniq := out[:0]
	for _, b := range out {
		if !seen[b] {
			seen[b] = true
			uniq = append(uniq, b)
		}
	}
	return uniq
}

// resolveDenyReason begins the reason of every resolve --deny the
// simulator sends: the approvals it denies carry it.
const resolveDenyReason = "sim: resolve deny"

// resolveMove plays the next move of a run the version check stopped:
// keel resolve --deny and --old-version in turn; a deny refused as
// still_blocked (it would not let this build go on) is played the other
// way, as the refusal says.
func (s *sim) resolveMove(ctx context.Context, r *simRun) (answer, string) {
	w := s.w
	w.resolves++
	if w.resolves%2 == 0 {
		reason := fmt.Sprintf("%s at step %d", resolveDenyReason, s.step.N)
		_, err := w.n.c.Resolve(ctx, r.id, api.ResolveRequest{Decision: "deny", Reason: reason})
		ans := w.apiAnswer(err)
		s.count("next/resolve-deny", ans)
		if ans.ok {
			r.resolves++
		}
		if ans.refusal != api.CodeStillBlocked {
			return ans, "POST /v1/runs/" + r.id + "/resolve deny"
		}
	}
	return s.resolveOld(ctx, r)
}

// resolveOld finishes r on the build that wrote its records: it starts
// that build (as a person redeploys it) and asks it. A build that answers
// wrong_agent_version is not it: the next one is tried.
func (s *sim) resolveOld(ctx context.Context, r *simRun) (answer, string) {
	w := s.w
	what := "POST /v1/runs/" + r.id + "/resolve old_version"
	v, err := w.n.c.RunVersion(ctx, r.id)
	if err != nil {
		return w.apiAnswer(err), what
	}
	for _, b := range w.candidates(r.req.Agent, v.RecordsVersion) {
		if b != w.build {
			w.n.keel.stop()
			if err := w.deploy(ctx, b); err != nil {
				return answer{lost: true, refusal: err.Error()}, what
			}
		}
		_, err := w.n.c.Resolve(ctx, r.id, api.ResolveRequest{Decision: "old_version", Reason: "sim: finish it on its build"})
		ans := w.apiAnswer(err)
		if !ans.ok && !ans.lost && ans.refusal == api.CodeWrongVersion {
			continue
		}
		s.count("next/resolve-old", ans)
		what += " on build " + b.String()
		if ans.ok {
			r.resolves++
			w.versions[r.req.Agent+" "+v.RecordsVersion] = b
			// The build's Step takes the run before any other build
			// is deployed (which would stop it again).
			s.awaitLeave(ctx, r)
		}
		return ans, what
	}
	ans := answer{status: 409, refusal: "no build runs version " + agentver.Short(v.RecordsVersion)}
	s.count("next/resolve-old", ans)
	return ans, what
}

// awaitLeave waits, at most the quiet guard, until r is no longer
// running: a Step took it to a person's wait or to its end.
func (s *sim) awaitLeave(ctx context.Context, r *simRun) {
	deadline := time.Now().Add(s.quietGuard())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if s.w.refresh(ctx, r) && r.status != run.StatusRunning && r.status != run.StatusCreated {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resolvedDenied: a's decision was changed to denied by a resolve --deny
// the simulator sent (its answer accepted or lost), which denies every
// approval of a call not yet made, approved or not.
func resolvedDenied(a api.Approval) bool {
	return a.Status == run.ApprovalDenied && strings.HasPrefix(a.Reason, resolveDenyReason)
}

// checkBlocks: the version check stops a run only over what it depends
// on that changed. The builds differ in their instructions, which no run
// depends on, and in publish_report's argument schema: every problem of
// an agent_upgrade_blocked must be one of publish_report's (an approval,
// an operation, a call of it).
func (s *sim) checkBlocks(r *simRun) {
	for _, e := range r.events[r.blocksSeen:] {
		if e.Type != harness.EventAgentUpgradeBlocked {
			continue
		}
		problems, _ := eventData(e.Data)["problems"].([]any)
		for _, p := range problems {
			if text, _ := p.(string); !strings.Contains(text, "publish_report") {
				s.safetyFail(r, "STOPPED WITHOUT CAUSE: seq %d agent_upgrade_blocked names %q, which no build changed", e.Seq, text)
			}
		}
	}
	r.blocksSeen = len(r.events)
}
