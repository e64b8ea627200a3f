package doctor

import (
	"strings"
	"testing"
)

// TestCommandRunnerAnswers: with commands in the AWS command runner,
// questions 3 and 5 say so from the composition, and a network policy is
// a gap (the runner refuses it).
func TestCommandRunnerAnswers(t *testing.T) {
	f := Facts{Workspaces: Workspaces{Sandbox: SandboxCommandRunner, Root: "/tmp/ws",
		Agents: []AgentWorkspace{{Agent: "coder", Commands: true}, {Agent: "fetcher", Commands: true, Network: true}}}}
	q3 := workspace(f)
	if !strings.Contains(q3.Answer, "Lambda execution environment of their run alone") || !strings.Contains(strings.Join(q3.Facts, "\n"), "tenant") {
		t.Fatalf("question 3: %+v", q3)
	}
	var q5 Answer
	sandboxCredentials(f, &q5)
	if !strings.Contains(q5.Answer, "command runner") || !strings.Contains(strings.Join(q5.Facts, "\n"), "no S3, DynamoDB or Secrets Manager permission") {
		t.Fatalf("question 5: %+v", q5)
	}
	if len(q5.Gaps) != 1 || !strings.Contains(q5.Gaps[0], "fetcher") || !strings.Contains(q5.Gaps[0], "AllowHosts") {
		t.Fatalf("question 5 gaps: %v", q5.Gaps)
	}
}
