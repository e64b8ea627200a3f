package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// TestSpillTaskSandboxFacts holds what the per-run Fargate task grants a
// command, which decides where Keel's sandbox can run on AWS (see
// docs/aws-sandbox.md):
//   - the container is not privileged and adds no kernel capability
//     (Fargate accepts only SYS_PTRACE; bubblewrap needs to create
//     namespaces, so on Fargate sandbox.New refuses, as it must, and
//     nothing here may hide that by asking for more);
//   - the container's environment holds no AWS credential: the task
//     role's come from the ECS credentials endpoint (169.254.170.2, named
//     by AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, which ECS adds at run
//     time), which a sandboxed command cannot reach (its own network
//     namespace; bubblewrap's --clearenv drops the variable);
//   - the task role's data permissions name the run bucket and table,
//     never "*". They are not yet scoped to one run's prefix: one task
//     role serves every run.
func TestSpillTaskSandboxFacts(t *testing.T) {
	s := synthConstruct(t, func(stack awscdk.Stack, appDir string) {
		storage := NewStorage(stack, "Storage")
		NewSpillTask(stack, "Spill", SpillTaskProps{ImageDir: RoleDir(appDir, RoleTask), CPU: 1024, MemoryMiB: 2048,
			Table: storage.Table, Bucket: storage.Bucket})
	})
	defs, _ := s.only(t, "AWS::ECS::TaskDefinition").Props()["ContainerDefinitions"].([]any)
	for _, d := range defs {
		c, _ := d.(map[string]any)
		if c["Privileged"] == true {
			t.Errorf("container %v is privileged", c["Name"])
		}
		if lp, ok := c["LinuxParameters"]; ok && strings.Contains(jsonOf(lp), "Capabilities") {
			t.Errorf("container %v changes kernel capabilities: %s", c["Name"], jsonOf(lp))
		}
	}
	for name := range s.containerEnv(t) {
		if strings.HasPrefix(name, "AWS_ACCESS_KEY") || strings.HasPrefix(name, "AWS_SECRET") ||
			name == "AWS_SESSION_TOKEN" || strings.HasPrefix(name, "AWS_CONTAINER_CREDENTIALS") {
			t.Errorf("the task's environment names a credential: %s", name)
		}
	}
	taskRoles := map[string]bool{}
	for id, r := range s.resources("AWS::IAM::Role") {
		if strings.Contains(jsonOf(r.Props()["AssumeRolePolicyDocument"]), "ecs-tasks.amazonaws.com") && strings.Contains(id, "TaskRole") {
			taskRoles[id] = true
		}
	}
	if len(taskRoles) != 1 {
		t.Fatalf("task roles = %v, want one", taskRoles)
	}
	n := 0
	for _, st := range s.policyStatements() {
		attached := false
		for _, r := range s.rolesOf(st.Owner) {
			attached = attached || taskRoles[r]
		}
		if !attached {
			continue
		}
		n++
		for _, res := range stringList(st.Raw["Resource"]) {
			if res == "*" {
				t.Errorf("task role statement %v reaches every resource", st.Actions())
			}
		}
		if st.Raw["Resource"] == nil {
			t.Errorf("task role statement %v has no Resource of its own: %s", st.Actions(), jsonOf(st.Raw))
		}
	}
	if n == 0 {
		t.Fatal("no statement attached to the task role: the check above saw nothing")
	}
}
