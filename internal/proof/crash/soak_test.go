package crash

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// TestSoakOptions: a fixed contract and a kill window hold for every
// drawn run; "mixed" draws as before.
func TestSoakOptions(t *testing.T) {
	for _, contract := range Contracts {
		opt := SoakOptions{Seed: 3, Contract: contract, KillMin: 15 * time.Millisecond, KillMax: 250 * time.Millisecond}
		seen := map[string]bool{}
		for i := range 100 {
			sc := SoakScenario(opt, i)
			seen[sc.Contract] = true
			for _, in := range sc.Incarnations {
				if in.Fault == "" && (in.KillAfter < opt.KillMin || in.KillAfter > opt.KillMax) {
					t.Fatalf("%s: kill after %s, outside [%s, %s]", sc.Name, in.KillAfter, opt.KillMin, opt.KillMax)
				}
			}
			if wantNH := sc.Contract == "none"; slices.Contains(sc.Expect.Statuses, run.StatusNeedsHuman) != wantNH {
				t.Fatalf("%s: statuses %v", sc.Name, sc.Expect.Statuses)
			}
		}
		switch {
		case contract == "mixed" && len(seen) != 4:
			t.Errorf("mixed: drew %v, want all four contracts", seen)
		case contract != "mixed" && (len(seen) != 1 || !seen[contract]):
			t.Errorf("%s: drew %v", contract, seen)
		}
	}
}

// TestLeaseSettings: "short" gives keel dev short leases on either
// store, "default" leaves keel dev's own, and "" keeps each store's
// former behaviour; the hang guards grow with a lease a restart cannot end.
func TestLeaseSettings(t *testing.T) {
	cases := []struct {
		store, lease string
		want         string // the resolved Lease
		short        bool   // KEEL_STEP_BUDGET and KEEL_LEASE_TTL set
		wait         time.Duration
		err          string
	}{
		{store: "sqlite", lease: "", want: "default"},
		{store: "sqlite", lease: "short", want: "short", short: true},
		{store: "dynamo", lease: "", want: "short", short: true, wait: 3 * time.Second},
		{store: "dynamo", lease: "default", want: "default", wait: 90 * time.Second},
		{store: "sqlite", lease: "long", err: "-lease"},
	}
	for _, tc := range cases {
		t.Run(tc.store+"/"+tc.lease, func(t *testing.T) {
			cfg := Config{Keel: os.Args[0], PubServer: os.Args[0], Script: []byte("{}"), Dir: t.TempDir(), Store: tc.store, Lease: tc.lease}
			if tc.store == "dynamo" {
				cfg.AWS = LocalAWS("http://127.0.0.1:1", func() {})
			}
			err := cfg.Validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Validate = %v, want an error naming %s", err, tc.err)
				}
				return
			}
			if err != nil || cfg.Lease != tc.want || cfg.leaseWait() != tc.wait {
				t.Fatalf("Validate = %v, lease %q (want %q), lease wait %s (want %s)", err, cfg.Lease, tc.want, cfg.leaseWait(), tc.wait)
			}
			if cfg.ScenarioTimeout < 8*time.Minute+4*tc.wait {
				t.Errorf("scenario timeout %s for a lease wait of %s", cfg.ScenarioTimeout, tc.wait)
			}
			env := strings.Join(newNode(cfg, &Scenario{}, t.TempDir()).keelEnv(), " ")
			if got := strings.Contains(env, "KEEL_STEP_BUDGET=2s") && strings.Contains(env, "KEEL_LEASE_TTL=1s"); got != tc.short {
				t.Errorf("keel dev env %q: short leases %v, want %v", env, got, tc.short)
			}
		})
	}
}
