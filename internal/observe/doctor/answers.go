package doctor

import (
	"fmt"
	"strings"
)

// Answer is one of the ten questions answered: what holds, the facts of
// the deployment it rests on, and the gaps — where the honest answer
// would be "the prompt says so" or "nothing stops it".
type Answer struct {
	N        int      `json:"n"`
	Question string   `json:"question"`
	Answer   string   `json:"answer"`
	Facts    []string `json:"facts"`
	Gaps     []string `json:"gaps"`
}

// Questions are the article's ten production questions, in its order.
var Questions = []string{
	"Which store owns run events and checkpoints?",
	"What happens if the worker dies in the middle of a tool call?",
	"Can one run damage another run's workspace?",
	"Which actions need approval?",
	"Can the model or the sandbox read raw credentials?",
	"Which calls are safe to retry?",
	"Where is the cost limit enforced?",
	"What deterministic evidence decides \"done\"?",
	"Where do results live after the sandbox is gone?",
	"Can a failed run be explained tomorrow without running it again?",
}

// Answers answers the ten questions from a deployment's facts.
func Answers(f Facts) []Answer {
	fns := []func(Facts) Answer{store, workerDies, workspace, approvals, credentials, retries, cost, done, results, explained}
	out := make([]Answer, len(fns))
	for i, fn := range fns {
		a := fn(f)
		a.N, a.Question = i+1, Questions[i]
		if a.Facts == nil {
			a.Facts = []string{}
		}
		if a.Gaps == nil {
			a.Gaps = []string{}
		}
		out[i] = a
	}
	return out
}

// Gaps counts the gaps of all answers.
func Gaps(as []Answer) int {
	n := 0
	for _, a := range as {
		n += len(a.Gaps)
	}
	return n
}

func backend(b Backend) string { return b.Kind + ":" + b.Location }

func tools(f Facts, each func(a Agent, t Tool)) {
	for _, a := range f.Agents {
		for _, t := range a.Tools {
			each(a, t)
		}
	}
}

func store(f Facts) Answer {
	return Answer{
		Answer: fmt.Sprintf("%s: run rows, plan items, the event log, operations, approvals and checkpoints, written together in one transaction per step", backend(f.Store)),
		Facts: []string{
			"KEEL_STORE resolves to " + backend(f.Store),
			fmt.Sprintf("checkpoint states above %d bytes go to the artifact store %s, referenced by hash from the checkpoint row", f.MaxInlineState, backend(f.Artifacts)),
			"every write of a step is conditional on the run's lease token (fencing): a stale worker's commit fails",
		},
	}
}

func workerDies(f Facts) Answer {
	a := Answer{Answer: "its lease expires and the next worker resumes from the last committed checkpoint; what a tool call does on recovery depends on the tool:"}
	effects := false
	a.Facts = append(a.Facts, fmt.Sprintf("lease TTL %s; sweeper: %s", f.LeaseTTL, f.Sweeper))
	tools(f, func(ag Agent, t Tool) {
		name := ag.Name + "/" + t.Name
		switch {
		case !t.Effect:
			a.Facts = append(a.Facts, fmt.Sprintf("%s (%s, read-only): its result was not committed, so it runs again", name, t.Mode))
		case t.Idempotent && t.Lookup:
			a.Facts = append(a.Facts, fmt.Sprintf("%s → %s: the pending operation is looked up by its id, and retried with the same idempotency key if absent", name, t.Destination))
		case t.Lookup:
			a.Facts = append(a.Facts, fmt.Sprintf("%s → %s: the pending operation is looked up by its id; found → recorded, absent → retried", name, t.Destination))
		case t.Idempotent:
			a.Facts = append(a.Facts, fmt.Sprintf("%s → %s: retried with the same idempotency key (the destination applies it once)", name, t.Destination))
		default:
			a.Facts = append(a.Facts, fmt.Sprintf("%s → %s: no lookup and no idempotency: the run stops as needs_human", name, t.Destination))
			a.Gaps = append(a.Gaps, fmt.Sprintf("%s: its destination %s promises neither idempotency nor lookup, so a crash mid-dispatch leaves the outcome unknown and a person must check it (give it an idempotency key or a lookup)", name, t.Destination))
		}
		effects = effects || t.Effect
	})
	if effects {
		// Any effect can leave a run needs_human: one in flight when the
		// run fails, one whose tool a later worker no longer knows.
		a.Facts = append(a.Facts, SettleHint)
	}
	return a
}

// SettleHint is how a person answers for a needs_human run, as doctor
// names it: the command, the endpoint and the viewer, and what each
// outcome does.
const SettleHint = "a needs_human run waits, holding no process, until a person settles the operation: " +
	"keel operations RUN_ID, then keel settle RUN_ID OPERATION_ID --happened [--external-id ID] | --not-happened | --give-up --reason TEXT " +
	"(or POST /v1/runs/{id}/operations/{op}/settle, or the viewer's settle form); happened → recorded and the run goes on, " +
	"did not happen → dispatched once more with the same operation id, give up → the run fails with the reason"

func approvals(f Facts) Answer {
	a := Answer{Answer: "the tools whose permission mode asks, for the exact arguments (bound by their hash):"}
	tools(f, func(ag Agent, t Tool) {
		name := ag.Name + "/" + t.Name
		switch t.Mode {
		case "mutating":
			a.Facts = append(a.Facts, name+": mutating, approved every time for its exact args_hash")
		case "confirm_once":
			a.Facts = append(a.Facts, name+": confirm_once, approved once per session")
		default:
			a.Facts = append(a.Facts, name+": safe_readonly, runs without asking")
		}
	})
	wait := "until decided or until the state machine's approval timeout"
	if f.ApprovalTimeout > 0 {
		wait = "up to " + f.ApprovalTimeout.String()
	}
	a.Facts = append(a.Facts, "the runtime refuses to start with an effect tool declared safe_readonly: every external effect asks")
	a.Facts = append(a.Facts, "an approval waits durably (no process stays up) "+wait+"; a changed action needs a new approval")
	return a
}

func credentials(f Facts) Answer {
	a := Answer{Answer: "the model's key is read by the runtime and sent only in the provider request; tools get credentials from their constructors, never their arguments, and the secrets they declare are redacted from events, results, checkpoints and model input"}
	for _, ag := range f.Agents {
		a.Facts = append(a.Facts, fmt.Sprintf("%s: model %s, credential from %s", ag.Name, ag.Model, ag.ModelCredential))
	}
	var undeclared []string
	tools(f, func(ag Agent, t Tool) {
		if t.DeclaresSecrets {
			a.Facts = append(a.Facts, fmt.Sprintf("%s/%s declares its secrets: redacted wherever the harness records or shows them", ag.Name, t.Name))
		} else if t.Effect {
			undeclared = append(undeclared, ag.Name+"/"+t.Name)
		}
	})
	if len(undeclared) > 0 {
		a.Facts = append(a.Facts, "effects that declare no secret (nothing to redact if they hold none): "+strings.Join(undeclared, ", "))
	}
	a.Facts = append(a.Facts, "every configured secret value (API keys, OTLP headers, URL passwords, the dev token) is masked in the bundle, the API answers, the logs and the exported spans")
	sandboxCredentials(f, &a)
	return a
}

func retries(f Facts) Answer {
	a := Answer{Answer: "model calls (retried whole below the agent loop, a cut stream is dropped), read-only tools, and effects whose destination promises idempotency with the same operation id and unchanged args; never an effect whose outcome is unknown without a lookup"}
	tools(f, func(ag Agent, t Tool) {
		name := ag.Name + "/" + t.Name
		switch {
		case !t.Effect:
			a.Facts = append(a.Facts, name+": read-only, safe to run again")
		case t.Idempotent:
			a.Facts = append(a.Facts, name+": retried only with the same idempotency key and args hash")
		case t.Lookup:
			a.Facts = append(a.Facts, name+": not retried blind: looked up first")
		default:
			a.Facts = append(a.Facts, name+": never retried")
		}
	})
	return a
}

func cost(f Facts) Answer {
	a := Answer{Answer: "in the harness, outside the model: before every model call (steps, tokens, spend, deadline) and before every tool dispatch (tool calls), against budget reserved atomically in the store, so concurrent calls cannot overshoot together"}
	for _, ag := range f.Agents {
		l := ag.Limits
		a.Facts = append(a.Facts, fmt.Sprintf("%s: max_steps %d, max_tool_calls %d, max_tokens %d, max_spend %.2f USD, timeout %s",
			ag.Name, l.MaxSteps, l.MaxToolCalls, l.MaxTokens, float64(l.MaxSpendMicroUSD)/1e6, orNone(ag.Timeout.String(), ag.Timeout == 0)))
		if !ag.Priced {
			a.Gaps = append(a.Gaps, fmt.Sprintf("%s: model %s has no price in the table, so spend stays 0 and the spend limit never stops a run (tokens and steps still do; set KEEL_MODEL_PRICES)", ag.Name, ag.Model))
		}
	}
	return a
}

func orNone(s string, none bool) string {
	if none {
		return "none"
	}
	return s
}

func done(f Facts) Answer {
	a := Answer{Answer: "a run completes when the model answers without asking for a tool; what is deterministic is the record of each effect: an operation succeeded with the id the destination returned"}
	effects := 0
	tools(f, func(ag Agent, t Tool) {
		if t.Effect {
			effects++
			a.Facts = append(a.Facts, fmt.Sprintf("%s/%s: op_succeeded records the external id %s returned (or found by lookup)", ag.Name, t.Name, t.Destination))
		}
	})
	a.Gaps = append(a.Gaps, "no deterministic check of the goal runs before a run is marked completed: that the work is done rests on the model's final answer (the prompt says so)")
	if effects == 0 {
		a.Gaps = append(a.Gaps, "no agent has an effect tool, so no external record confirms anything")
	}
	return a
}

func results(f Facts) Answer {
	a := Answer{
		Answer: "in the artifact store " + backend(f.Artifacts) + " (reports, large checkpoint states, debug bundles), and the records in " + backend(f.Store),
		Facts: []string{
			"artifact keys are runs/{run_id}/checkpoints/{checkpoint_id}/{name}, sha256-verified on every read",
			"operations keep each effect's external id and result",
			"GET /v1/runs/{id}/artifacts lists them; keel download fetches one",
		},
	}
	workspaceResults(f, &a)
	return a
}

func explained(f Facts) Answer {
	b := f.Bundle
	a := Answer{
		Answer: "yes, from its records: keel explain tells the story, keel bundle downloads the debug bundle",
		Facts: []string{
			"Finalize writes the debug bundle debug-bundle-{status}.tar.gz when a run ends " + strings.Join(b.BundleOn, " or ") + ": " + strings.Join(b.BundleFiles, ", "),
			"served at " + strings.Join(b.Endpoints, ", "),
		},
	}
	if b.EventChain {
		a.Facts = append(a.Facts, "the event log is hash-chained per run (keel verify checks it)")
	}
	if b.OTLP != "" {
		a.Facts = append(a.Facts, "live spans are exported to "+b.OTLP)
	} else {
		a.Facts = append(a.Facts, "no OTLP exporter configured (OTEL_EXPORTER_OTLP_ENDPOINT unset): traces are only the bundle's trace.json, rebuilt from the records")
	}
	return a
}
