package awslocal

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// engine answers selection's questions as a Docker engine would; its
// values come from the cases below.
type engine struct {
	arch    string
	archErr error
	inspect string
	inspErr error
}

func (e engine) EngineArch(context.Context) (string, error) { return e.arch, e.archErr }
func (e engine) Inspect(context.Context, string) ([]byte, error) {
	return []byte(e.inspect), e.inspErr
}

func TestSelectLocalStack(t *testing.T) {
	const inspect = `[{"Name":"/localstack-main","NetworkSettings":{"Networks":{"localstack_default":{"Gateway":"172.18.0.1"}}}}]`
	const healthy = `{"services":{"dynamodb":"running","iam":"available","lambda":"running","s3":"running","stepfunctions":"available","sqs":"disabled"}}`
	noEngine := engine{archErr: errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")}
	ok := engine{arch: "x86_64", inspect: inspect}
	up := func(context.Context, string) ([]byte, error) { return []byte(healthy), nil }
	for _, tc := range []struct {
		name    string
		env     map[string]string
		docker  engine
		health  healthFunc
		want    LocalStackSetup
		skipHas []string
	}{
		{name: "not asked for", env: map[string]string{}, docker: ok, health: up, skipHas: []string{"set KEEL_E2E_LOCALSTACK=1"}},
		{name: "nothing here: no engine, no token", env: map[string]string{EnvE2ELocalStack: "1"}, docker: noEngine, health: up,
			skipHas: []string{"no Docker engine (Cannot connect", "LOCALSTACK_AUTH_TOKEN is not set"}},
		{name: "engine, no token", env: map[string]string{EnvE2ELocalStack: "1"}, docker: ok, health: up,
			skipHas: []string{"LOCALSTACK_AUTH_TOKEN is not set"}},
		{name: "LocalStack down", env: map[string]string{EnvE2ELocalStack: "1", EnvLocalStackToken: "t"}, docker: ok,
			health:  func(context.Context, string) ([]byte, error) { return nil, errors.New("connection refused") },
			skipHas: []string{"LocalStack does not answer at http://localhost:4566 (make localstack-up)"}},
		{name: "Lambda service off", env: map[string]string{EnvE2ELocalStack: "1", EnvLocalStackToken: "t"}, docker: ok,
			health: func(context.Context, string) ([]byte, error) {
				return []byte(`{"services":{"dynamodb":"running","s3":"running"}}`), nil
			},
			skipHas: []string{"lacks services [iam lambda stepfunctions]"}},
		{name: "no LocalStack container", env: map[string]string{EnvE2ELocalStack: "1", EnvLocalStackToken: "t"}, health: up,
			docker:  engine{arch: "x86_64", inspErr: errors.New("No such container: localstack-main")},
			skipHas: []string{`no LocalStack container "localstack-main" (KEEL_LOCALSTACK_CONTAINER names another)`}},
		{name: "unknown engine machine", env: map[string]string{EnvE2ELocalStack: "1", EnvLocalStackToken: "t"}, health: up,
			docker: engine{arch: "riscv64", inspect: inspect}, skipHas: []string{`no Lambda architecture for machine "riscv64"`}},
		{name: "everything", env: map[string]string{EnvE2ELocalStack: "1", EnvLocalStackToken: "t"}, docker: ok, health: up,
			want: LocalStackSetup{Endpoint: "http://localhost:4566", Container: "localstack-main", Arch: "x86_64", HostAddr: "172.18.0.1"}},
		{name: "everything, named", env: map[string]string{EnvE2ELocalStack: "1", EnvLocalStackToken: "t", EnvLocalStackEndpoint: "http://127.0.0.1:4577",
			EnvLocalStackContainer: "ls", EnvHostAddr: "10.0.0.5"}, docker: engine{arch: "aarch64", inspect: inspect}, health: up,
			want: LocalStackSetup{Endpoint: "http://127.0.0.1:4577", Container: "ls", Arch: "arm64", HostAddr: "10.0.0.5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skip := SelectLocalStack(context.Background(), func(k string) string { return tc.env[k] }, tc.docker, tc.health)
			if len(tc.skipHas) == 0 {
				if skip != "" || got != tc.want {
					t.Fatalf("got %+v, skip %q; want %+v", got, skip, tc.want)
				}
				return
			}
			if !strings.HasPrefix(skip, "localstack-e2e: SKIPPED: ") {
				t.Fatalf("skip %q, want a localstack-e2e: SKIPPED: message", skip)
			}
			for _, s := range tc.skipHas {
				if !strings.Contains(skip, s) {
					t.Errorf("skip %q does not say %q", skip, s)
				}
			}
		})
	}
}
