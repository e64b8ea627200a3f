package config

import (
	"strings"
	"testing"
	"time"
)

func mapenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	aws := map[string]string{"KEEL_TABLE": "tbl", "KEEL_BUCKET": "bkt"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string // the variable the error must name
		check   func(t *testing.T, c Config)
	}{
		{name: "embedded defaults under the data dir", env: map[string]string{"KEEL_DATA_DIR": "d"}, check: func(t *testing.T, c Config) {
			c = c.Defaults()
			if c.Store != "sqlite:d/keel.db" || c.Artifacts != "fs:d/artifacts" || c.Model != "" || c.Addr != "127.0.0.1:8080" ||
				c.StepBudget != 60*time.Second || c.NeedsAWS() {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "the stack's table and bucket", env: aws, check: func(t *testing.T, c Config) {
			c = c.Defaults()
			if c.Store != "dynamo:tbl" || c.Artifacts != "s3:bkt" || c.StepMargin != 30*time.Second ||
				c.StreamMax != 5*time.Second || c.ScheduleOwner != "scheduler" || c.S3PathStyle || !c.NeedsAWS() {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "explicit values", env: with(aws, "KEEL_ROLE", "step", "KEEL_STORE", "dynamo:other", "KEEL_OWNER", "me", "KEEL_STEP_MARGIN", "45s",
			"AWS_ENDPOINT_URL", "http://localhost:4566", "KEEL_MODEL", "anthropic:claude-sonnet-4-5",
			"KEEL_TOOL_DELAY", "analyze_documents=2s", "KEEL_SPILL_TOOLS", "analyze_documents, draft_report", "KEEL_LOG_LEVEL", "debug"),
			check: func(t *testing.T, c Config) {
				if c.Role != RoleStep || c.StoreURL() != "dynamo:other" || c.Owner != "me" || c.StepMargin != 45*time.Second || !c.S3PathStyle ||
					c.Model != "anthropic:claude-sonnet-4-5" || c.ToolDelay["analyze_documents"] != 2*time.Second || len(c.SpillTools) != 2 ||
					c.LogLevel.String() != "DEBUG" {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "the task role", env: with(aws, "KEEL_ROLE", "task", "KEEL_RUN_ID", "run_1", "KEEL_TASK_TOKEN", "tok"), check: func(t *testing.T, c Config) {
			if c.RunID != "run_1" || c.TaskToken != "tok" {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "keel dev's task child on SQLite", env: map[string]string{"KEEL_ROLE": "task", "KEEL_RUN_ID": "r", "KEEL_TASK_TOKEN": "t", "KEEL_SFN_ENDPOINT": "http://127.0.0.1:1"}},
		{name: "bad store", env: map[string]string{"KEEL_STORE": "postgres:x"}, wantErr: "KEEL_STORE"},
		{name: "bad MCP setting", env: map[string]string{"KEEL_MCP": "yes"}, wantErr: "KEEL_MCP"},
		{name: "bad sandbox", env: map[string]string{"KEEL_SANDBOX": "docker"}, wantErr: "KEEL_SANDBOX"},
		{name: "the MCP endpoint on by default", env: map[string]string{}, check: func(t *testing.T, c Config) {
			if c.MCP != MCPOn {
				t.Fatalf("MCP %q, want %q", c.MCP, MCPOn)
			}
		}},
		{name: "empty table", env: map[string]string{"KEEL_STORE": "dynamo:"}, wantErr: "KEEL_STORE"},
		{name: "bad artifacts", env: map[string]string{"KEEL_ARTIFACTS": "gcs:x"}, wantErr: "KEEL_ARTIFACTS"},
		{name: "bad delay", env: map[string]string{"KEEL_TOOL_DELAY": "analyze_documents"}, wantErr: "KEEL_TOOL_DELAY"},
		{name: "bad log level", env: map[string]string{"KEEL_LOG_LEVEL": "loud"}, wantErr: "KEEL_LOG_LEVEL"},
		{name: "bad fault point", env: map[string]string{"KEEL_FAULTPOINT": "after_dispatch:zero"}, wantErr: "KEEL_FAULTPOINT"},
		{name: "bad budget", env: map[string]string{"KEEL_STEP_BUDGET": "soon"}, wantErr: "KEEL_STEP_BUDGET"},
		{name: "zero lease TTL", env: map[string]string{"KEEL_LEASE_TTL": "0s"}, wantErr: "KEEL_LEASE_TTL"},
		{name: "bad margin", env: with(aws, "KEEL_STEP_MARGIN", "soon"), wantErr: "KEEL_STEP_MARGIN"},
		{name: "negative SSE duration", env: with(aws, "KEEL_SSE_MAX_DURATION", "-1s"), wantErr: "KEEL_SSE_MAX_DURATION"},
		{name: "SSE longer than API Gateway allows", env: with(aws, "KEEL_SSE_MAX_DURATION", "31s"), wantErr: "KEEL_SSE_MAX_DURATION"},
		{name: "unknown role", env: with(aws, "KEEL_ROLE", "worker"), wantErr: "KEEL_ROLE"},
		{name: "a Lambda role without a table", env: map[string]string{"KEEL_ROLE": "step", "KEEL_BUCKET": "b"}, wantErr: "KEEL_TABLE"},
		{name: "a Lambda role without a bucket", env: map[string]string{"KEEL_ROLE": "step", "KEEL_TABLE": "t"}, wantErr: "KEEL_BUCKET"},
		{name: "a SQLite store cannot be shared by functions", env: with(aws, "KEEL_ROLE", "finalize", "KEEL_STORE", "sqlite:/tmp/x.db"), wantErr: "KEEL_TABLE"},
		{name: "the api role needs the state machine", env: with(aws, "KEEL_ROLE", "api"), wantErr: "KEEL_STATE_MACHINE_ARN"},
		{name: "the task role needs its run", env: with(aws, "KEEL_ROLE", "task"), wantErr: "KEEL_RUN_ID"},
		{name: "provider settings are read here too", env: map[string]string{"KEEL_MODEL_TPM": "many"}, wantErr: "KEEL_MODEL_TPM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(mapenv(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}
