package doctor

import (
	"fmt"
	"strings"
)

// The sandboxes KEEL_SANDBOX names (config.SandboxBubblewrap, SandboxUnsafe);
// doctor reads facts, not the configuration, so it names them itself.
const (
	sandboxBubblewrap = "bubblewrap"
	sandboxUnsafe     = "unsafe"
)

// SandboxCommandRunner is Workspaces.Sandbox when commands run in the AWS
// command runner function (KEEL_COMMAND_RUNNER; docs/aws-sandbox.md).
const SandboxCommandRunner = "aws-command-runner"

// runnerFacts are what holds for commands in the AWS command runner; the
// CDK tests assert the deployment side (infra/cdk commands_test.go).
const (
	runnerTree  = "run in the AWS command runner function, invoked with the run id as its Lambda tenant (PER_TENANT: no execution environment serves two runs), in a fresh /tmp tree wiped before and after, restored from the run's version through presigned GETs and checked blob by blob"
	runnerCreds = "run in the AWS command runner with an empty environment (PATH, HOME, LANG); the runner's execution role holds no S3, DynamoDB or Secrets Manager permission (logs and VPC interfaces only) and its subnets route nowhere but the run bucket's S3 endpoint, so the credentials a command could read from the runner's /proc reach nothing"
)

// withCommands returns the names of the workspace agents whose tools run
// commands, and of those whose commands have the network.
func withCommands(w Workspaces) (cmds, network []string) {
	for _, a := range w.Agents {
		if a.Commands {
			cmds = append(cmds, a.Agent)
			if a.Network {
				network = append(network, a.Agent)
			}
		}
	}
	return cmds, network
}

// workspace answers question 3 from the per-run trees and the sandbox the
// composition built: the trees are separate by construction; whether a
// command can reach past its own tree is the sandbox's to say.
func workspace(f Facts) Answer {
	a := Answer{
		Answer: "not through Keel: artifacts and checkpoint states are keyed by run (runs/{run_id}/checkpoints/{checkpoint_id}/{name}), content-addressed and immutable; a tool's own file system or network access is not confined by Keel",
		Facts: []string{
			"artifact store " + backend(f.Artifacts) + ": a Put never overwrites (a second write of other bytes is refused)",
			"a tool call gets its run id and checkpoint id, and the artifacts it writes are keyed under them",
		},
	}
	tools(f, func(ag Agent, t Tool) {
		if t.Long {
			a.Facts = append(a.Facts, fmt.Sprintf("%s/%s runs in the long-running task (one task per run)", ag.Name, t.Name))
		}
	})
	if f.Executor == "local" {
		a.Gaps = append(a.Gaps, "keel dev runs every run's tools in one process and one file system: a tool that writes outside the artifact store can touch another run's files")
	}
	w := f.Workspaces
	if len(w.Agents) == 0 {
		a.Facts = append(a.Facts, "no agent has a workspace: there are no per-run trees for one run to corrupt")
		return a
	}
	a.Facts = append(a.Facts, fmt.Sprintf("each run of %s has its own tree %s/{run_id} (0700), restored from the run's own checkpoint and checked blob by blob; a fork starts from its parent's version and writes only under its own prefix",
		strings.Join(agentNames(w), ", "), w.Root))
	cmds, _ := withCommands(w)
	switch {
	case len(cmds) == 0:
		a.Answer = "no: each run has its own workspace tree, and no agent runs commands; " + a.Answer
		a.Facts = append(a.Facts, "no agent runs commands: tools reach the tree through the workspace API, which resolves every path inside the run's directory (os.Root)")
	case w.Sandbox == SandboxCommandRunner:
		a.Answer = "no: each run has its own workspace tree, and commands run in a Lambda execution environment of their run alone; " + a.Answer
		a.Facts = append(a.Facts, fmt.Sprintf("the commands of %s %s", strings.Join(cmds, ", "), runnerTree))
	case w.Sandbox == sandboxUnsafe:
		a.Answer = "YES, through commands: KEEL_SANDBOX=unsafe runs them with the worker's whole file system; " + a.Answer
		a.Gaps = append(a.Gaps, fmt.Sprintf("KEEL_SANDBOX=unsafe: the commands of %s run as plain child processes of the worker, with its whole file system: one run's command can read or overwrite another run's tree under %s, and the worker's data (use KEEL_SANDBOX=bubblewrap)",
			strings.Join(cmds, ", "), w.Root))
	default:
		a.Answer = "no: each run has its own workspace tree, and commands run under bubblewrap with only their run's tree mounted; " + a.Answer
		a.Facts = append(a.Facts, fmt.Sprintf("the commands of %s run under bubblewrap: their run's tree read-write at /workspace, /usr and a minimal /etc read-only, a private /tmp; no other run's tree and no Keel data directory is in their file system",
			strings.Join(cmds, ", ")))
	}
	return a
}

func agentNames(w Workspaces) []string {
	out := make([]string, 0, len(w.Agents))
	for _, a := range w.Agents {
		out = append(out, a.Agent)
	}
	return out
}

// sandboxCredentials adds to question 5 what agents' commands can read.
func sandboxCredentials(f Facts, a *Answer) {
	cmds, network := withCommands(f.Workspaces)
	if len(cmds) == 0 {
		a.Facts = append(a.Facts, "no agent runs commands: no sandbox is started, and the model sees only tool results")
		return
	}
	list := strings.Join(cmds, ", ")
	if f.Workspaces.Sandbox == sandboxUnsafe {
		a.Answer += "; but KEEL_SANDBOX=unsafe gives agents' commands the worker's environment and files"
		a.Gaps = append(a.Gaps, fmt.Sprintf("KEEL_SANDBOX=unsafe: the commands of %s inherit the worker's environment and file system, so a command (and the model that wrote it) can read the model's API key, cloud credentials and every secret the worker holds (use KEEL_SANDBOX=bubblewrap)", list))
		return
	}
	if f.Workspaces.Sandbox == SandboxCommandRunner {
		a.Answer += "; agents' commands run in the AWS command runner with an empty environment"
		a.Facts = append(a.Facts, fmt.Sprintf("the commands of %s %s", list, runnerCreds))
		if len(network) > 0 {
			a.Gaps = append(a.Gaps, fmt.Sprintf("the commands of %s ask for network (AllowHosts), which the command runner refuses: they fail on AWS", strings.Join(network, ", ")))
		}
		return
	}
	a.Answer += "; agents' commands run under bubblewrap with an empty environment"
	a.Facts = append(a.Facts, fmt.Sprintf("the commands of %s run under bubblewrap with an empty environment (PATH, HOME and LANG only; bwrap itself gets none of the worker's): no API key, no cloud credentials, no credential file or Keel data directory mounted", list))
	if len(network) > 0 {
		a.Gaps = append(a.Gaps, fmt.Sprintf("the commands of %s share the worker's network (their allowed hosts are recorded, not enforced): they can reach whatever the worker reaches, an instance metadata endpoint that hands out the host's role credentials included", strings.Join(network, ", ")))
	}
}

// workspaceResults adds to question 9 where workspaces outlive the sandbox.
func workspaceResults(f Facts, a *Answer) {
	w := f.Workspaces
	if len(w.Agents) == 0 {
		a.Facts = append(a.Facts, "no agent has a workspace: nothing of a run's files outlives it but the artifacts its tools write")
		return
	}
	a.Answer += "; a workspace's files as a manifest per checkpoint and content-addressed blobs under the run's prefix in the same artifact store"
	a.Facts = append(a.Facts,
		fmt.Sprintf("the workspaces of %s are versioned with every checkpoint: manifest %s, blobs %s (a fork's manifests name its parent's blobs for unchanged files)",
			strings.Join(agentNames(w), ", "), w.ManifestKey, w.BlobKey),
		"a worker's tree under "+w.Root+" is only a cache: any worker restores it from the manifest, verifying every blob, after the sandbox and the worker are gone",
		"GET /v1/runs/{id}/workspace lists each checkpoint's version; GET /v1/runs/{id}/workspace/files?checkpoint=ID&path=P reads a directory or a file; keel show prints the versions")
}
