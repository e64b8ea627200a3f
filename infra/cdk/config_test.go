package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func TestConfigFromContext(t *testing.T) {
	cases := []struct {
		name    string
		ctx     map[string]any
		want    Config
		wantErr string
	}{
		{
			name: "defaults",
			ctx:  nil,
			want: Config{StackName: "Keel", Props: KeelStackProps{AssetRoot: "/repo"}},
		},
		{
			name: "strings as given with -c",
			ctx: map[string]any{
				CtxStackName: "KeelStaging", CtxAssetRoot: "/elsewhere", CtxApp: "./examples/triage", CtxTaskImage: "img:1",
				CtxTaskCPU: "2048", CtxTaskMemoryMiB: "4096", CtxNATGateways: "2",
				CtxAvailabilityZones: "eu-west-1a, eu-west-1b", CtxJWTIssuer: "https://i.example/",
				CtxJWTAudience: "a,b", CtxModelSecretName: "keel/model", CtxEnvironment: "KEEL_MODEL=anthropic, KEEL_LOG=debug",
				CtxAppSecretNames:     "keel/mcp-gh, keel/mcp-jira",
				CtxScheduleExpression: "rate(1 hour)", CtxScheduleEnabled: "true", CtxScheduleAgent: "digest", CtxScheduleInput: "hi",
			},
			want: Config{StackName: "KeelStaging", Props: KeelStackProps{
				AssetRoot: "/elsewhere", App: "./examples/triage", TaskImage: "img:1", TaskCPU: 2048, TaskMemoryMiB: 4096, NATGateways: 2,
				AvailabilityZones: []string{"eu-west-1a", "eu-west-1b"}, JWTIssuer: "https://i.example/",
				JWTAudience: []string{"a", "b"}, ModelSecretName: "keel/model", AppSecretNames: []string{"keel/mcp-gh", "keel/mcp-jira"},
				Environment: map[string]string{"KEEL_MODEL": "anthropic", "KEEL_LOG": "debug"},
				Schedule:    ExampleSchedule{Expression: "rate(1 hour)", Enabled: true, Agent: "digest", Input: "hi"},
			}},
		},
		{
			name: "JSON values as written in cdk.json",
			ctx: map[string]any{
				CtxAssetRoot: "../elsewhere", CtxTaskCPU: float64(512), CtxNATGateways: float64(1),
				CtxAvailabilityZones: []any{"us-east-1a", "us-east-1b"}, CtxJWTAudience: []any{"x"},
				CtxEnvironment: map[string]any{"KEEL_MODEL": "openai"}, CtxScheduleEnabled: false,
			},
			want: Config{StackName: "Keel", Props: KeelStackProps{
				AssetRoot: "/repo/infra/elsewhere", TaskCPU: 512, NATGateways: 1,
				AvailabilityZones: []string{"us-east-1a", "us-east-1b"}, JWTAudience: []string{"x"},
				Environment: map[string]string{"KEEL_MODEL": "openai"},
			}},
		},
		{name: "build tags", ctx: map[string]any{CtxBuildTags: "keel_no_openai, keel_no_anthropic"},
			want: Config{StackName: "Keel", Props: KeelStackProps{AssetRoot: "/repo", BuildTags: []string{"keel_no_openai", "keel_no_anthropic"}}}},
		{name: "environment as a JSON string", ctx: map[string]any{CtxEnvironment: `{"A":"1"}`},
			want: Config{StackName: "Keel", Props: KeelStackProps{AssetRoot: "/repo", Environment: map[string]string{"A": "1"}}}},
		{name: "bad number", ctx: map[string]any{CtxTaskCPU: "lots"}, wantErr: CtxTaskCPU},
		{name: "fractional number", ctx: map[string]any{CtxNATGateways: 1.5}, wantErr: CtxNATGateways},
		{name: "bad boolean", ctx: map[string]any{CtxScheduleEnabled: "perhaps"}, wantErr: CtxScheduleEnabled},
		{name: "wrong type", ctx: map[string]any{CtxTaskImage: float64(3)}, wantErr: CtxTaskImage},
		{name: "environment entry without =", ctx: map[string]any{CtxEnvironment: "KEEL_MODEL"}, wantErr: "NAME=VALUE"},
		{name: "every error reported", ctx: map[string]any{CtxTaskCPU: "x", CtxTaskMemoryMiB: "y"}, wantErr: CtxTaskMemoryMiB},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := configFromContext(func(k string) any { return tc.ctx[k] }, "/repo/infra/cdk")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(t *testing.T, root string, p *KeelStackProps)
		wantErr string // empty: valid
	}{
		{name: "complete root", edit: func(*testing.T, string, *KeelStackProps) {}},
		{name: "keel:app does not exist", wantErr: `keel:app "./cmd/nope"`,
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.App = "./cmd/nope" }},
		{name: "keel:app is a file", wantErr: "is not a directory",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.App = "./go.mod" }},
		{name: "stock app missing", wantErr: `keel:app "./cmd/keel"`,
			edit: func(t *testing.T, root string, _ *KeelStackProps) {
				if err := os.RemoveAll(filepath.Join(root, "cmd")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "keel:app outside any module", wantErr: "no go.mod",
			edit: func(t *testing.T, root string, p *KeelStackProps) { remove(t, root, "go.mod") }},
		{name: "keel:app in a module of its own",
			edit: func(t *testing.T, root string, p *KeelStackProps) {
				writeFile(t, filepath.Join(root, "examples", "triage", "go.mod"), "module example.com/triage\n")
				p.App = "./examples/triage"
			}},
		{name: "absolute keel:app",
			edit: func(t *testing.T, root string, p *KeelStackProps) { p.App = filepath.Join(root, "cmd", "keel") }},
		{name: "missing definition", wantErr: "run.asl.json",
			edit: func(t *testing.T, root string, _ *KeelStackProps) { remove(t, root, "stepfunctions/run.asl.json") }},
		{name: "definition with an unknown placeholder", wantErr: "${QueueUrl}",
			edit: func(t *testing.T, root string, _ *KeelStackProps) {
				write(t, root, "stepfunctions/run.asl.json", `{"StartAt":"A","States":{"A":{"Type":"Pass","Result":"${QueueUrl}","End":true}}}`)
			}},
		{name: "definition that is not JSON", wantErr: "not valid JSON",
			edit: func(t *testing.T, root string, _ *KeelStackProps) { write(t, root, "stepfunctions/run.asl.json", "{") }},
		{name: "not a Fargate size", wantErr: "not a Fargate size",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.TaskCPU, p.TaskMemoryMiB = 1024, 1024 }},
		{name: "a Fargate size", edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.TaskCPU, p.TaskMemoryMiB = 4096, 16384 }},
		{name: "three NAT gateways", wantErr: "natGateways",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.NATGateways = 3 }},
		{name: "a negative number of NAT gateways", wantErr: "natGateways",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.NATGateways = -1 }},
		{name: "one NAT gateway", edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.NATGateways = 1 }},
		{name: "one zone", wantErr: "availabilityZones",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.AvailabilityZones = []string{"eu-west-1a"} }},
		{name: "environment-specific without zones", wantErr: "needs availabilityZones",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) {
				p.Env = &awscdk.Environment{Account: jsii.String(fakeAccount), Region: jsii.String(fakeRegion)}
			}},
		{name: "issuer without audience", wantErr: "go together",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.JWTIssuer = "https://i.example/" }},
		{name: "plain-http issuer", wantErr: "https URL",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) {
				p.JWTIssuer, p.JWTAudience = "http://i.example/", []string{"a"}
			}},
		{name: "reserved variable", wantErr: "KEEL_TABLE is set by the stack",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.Environment = map[string]string{EnvTable: "x"} }},
		{name: "the role is the stack's", wantErr: "KEEL_ROLE is set by the stack",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.Environment = map[string]string{EnvRole: "task"} }},
		{name: "bad variable name", wantErr: "not a variable name",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.Environment = map[string]string{"1X": "x"} }},
		{name: "bad schedule", wantErr: "scheduleExpression",
			edit: func(_ *testing.T, _ string, p *KeelStackProps) { p.Schedule.Expression = "every day" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeAssetRoot(t)
			p := KeelStackProps{AssetRoot: root}
			tc.edit(t, root, &p)
			err := p.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate = %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestDefinitionPlaceholders(t *testing.T) {
	got := DefinitionPlaceholders([]byte(`{"a":"${B}","b":"States.StringSplit('${A}', ',')","c":"${B}","d":"$$.Task.Token","e":"$.x"}`))
	if want := []string{"A", "B"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func remove(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, rel)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, root, rel, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
