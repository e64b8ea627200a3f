package keel

import (
	"errors"
	"strings"
	"testing"
)

// TestProgName: hints name the program the way the user runs it again.
func TestProgName(t *testing.T) {
	cases := []struct{ argv0, want string }{
		{"/home/ada/shop/bin/shop", "shop"},
		{"./triage", "./triage"},
		{"bin/shop", "bin/shop"},
		{"../bin/shop", "../bin/shop"},
		{"my dir/bin/shop", "shop"}, // a path the shell would split: the name
		{"shop", "shop"},
		{"/tmp/go-build3141592/b001/exe/shop", "go run ."},
		{"", "keel"},
	}
	for _, tc := range cases {
		t.Run(tc.argv0, func(t *testing.T) {
			if got := progName(tc.argv0); got != tc.want {
				t.Errorf("progName(%q) = %q, want %q", tc.argv0, got, tc.want)
			}
		})
	}
}

// TestLazyApp: MainFunc's agents are built and checked only when the
// loader is called, and their error is returned as it is.
func TestLazyApp(t *testing.T) {
	model := ScriptedModel([]byte(`{"turns":[{"text":"done"}]}`))
	cases := []struct {
		name   string
		agents func() ([]Agent, error)
		want   string // "" means accepted
	}{
		{"configured", func() ([]Agent, error) { return []Agent{{Name: "a", Instructions: "x", Model: model}}, nil }, ""},
		{"configuration missing", func() ([]Agent, error) { return nil, errors.New("SHOP_DB_URL is not set") }, "SHOP_DB_URL is not set"},
		{"invalid agent", func() ([]Agent, error) { return []Agent{{Name: "a"}, {Name: "a"}}, nil }, `agent "a" is given twice`},
		{"bad script", func() ([]Agent, error) {
			return []Agent{{Name: "a", Model: ScriptedModel([]byte(`{`))}}, nil
		}, "scripted model"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app, err := lazyApp(tc.agents)()
			switch {
			case tc.want == "" && (err != nil || len(app.Agents) != 1):
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case err != nil && strings.Count(err.Error(), "scripted model:") > 1:
				t.Fatalf("error %q repeats its prefix", err)
			}
		})
	}
}
