package setup

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/examples/research"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		vars    map[string]string
		wantErr string // the variable the error must name
		check   func(t *testing.T, c Config)
	}{
		{"defaults under the data dir", nil, "", func(t *testing.T, c Config) {
			if c.Store != "sqlite:d/keel.db" || c.Artifacts != "fs:d/artifacts" || c.Model != "scripted" || c.Publish != "dir:d/published" {
				t.Fatalf("%+v", c)
			}
		}},
		{"cloud kinds", map[string]string{"KEEL_STORE": "dynamo:keel", "KEEL_ARTIFACTS": "s3:bucket"}, "", nil},
		{"bad store", map[string]string{"KEEL_STORE": "postgres:x"}, "KEEL_STORE", nil},
		{"bad artifacts", map[string]string{"KEEL_ARTIFACTS": "gcs:x"}, "KEEL_ARTIFACTS", nil},
		{"bad publish", map[string]string{"KEEL_PUBLISH": "ftp://x"}, "KEEL_PUBLISH", nil},
		{"bad contract", map[string]string{"KEEL_PUBLISH": "http://x", "KEEL_PUBLISH_CONTRACT": "maybe"}, "KEEL_PUBLISH_CONTRACT", nil},
		{"bad timeout", map[string]string{"KEEL_PUBLISH_TIMEOUT": "soon"}, "KEEL_PUBLISH_TIMEOUT", nil},
		{"bad delay", map[string]string{"KEEL_TOOL_DELAY": "analyze_documents"}, "KEEL_TOOL_DELAY", nil},
		{"delays and spills", map[string]string{"KEEL_TOOL_DELAY": "analyze_documents=2s", "KEEL_SPILL_TOOLS": "analyze_documents, draft_report"}, "", func(t *testing.T, c Config) {
			if c.ToolDelay["analyze_documents"] != 2*time.Second || len(c.SpillTools) != 2 {
				t.Fatalf("%+v", c)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(env(tc.vars), "d")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v does not name %s", err, tc.wantErr)
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

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Run("embedded default with spilled and delayed tools", func(t *testing.T) {
		c, err := FromEnv(env(map[string]string{"KEEL_SPILL_TOOLS": "analyze_documents", "KEEL_TOOL_DELAY": "collect_documents=1ms"}), dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Open(ctx, Backends{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		a := p.Agents[research.AgentName]
		an, _ := a.Tools.Get("analyze_documents")
		co, _ := a.Tools.Get("collect_documents")
		if !an.Info().Long || co.Info().Long {
			t.Fatal("spill marks are wrong")
		}
	})
	for name, vars := range map[string]map[string]string{
		"dynamo without the AWS hook":                    {"KEEL_STORE": "dynamo:t"},
		"s3 without the AWS hook":                        {"KEEL_ARTIFACTS": "s3:b"},
		"a provider model in a binary without providers": {"KEEL_MODEL": "anthropic:claude"},
		"a missing script":                               {"KEEL_MODEL": "scripted:" + filepath.Join(dir, "nope.json")},
		"an unknown tool to spill":                       {"KEEL_SPILL_TOOLS": "nope"},
		"delaying a tool with an effect":                 {"KEEL_TOOL_DELAY": "publish_report=1s"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := FromEnv(env(vars), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if p, err := c.Open(ctx, Backends{}); err == nil {
				p.Close()
				t.Fatal("opened")
			}
		})
	}
}
