package faults

import "testing"

func TestParseAndHit(t *testing.T) {
	cases := []struct {
		spec    string
		hits    []string
		wantDie int // index of the hit that kills, -1 for none
		wantErr bool
	}{
		{"", []string{"a", "b"}, -1, false},
		{"after_dispatch", []string{"before_intent", "after_dispatch", "after_dispatch"}, 1, false},
		{"after_dispatch:2", []string{"after_dispatch", "x", "after_dispatch"}, 2, false},
		{"x:0", nil, -1, true},
		{":3", nil, -1, true},
		{"x:abc", nil, -1, true},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			p, err := Parse(tc.spec)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			died := -1
			i := 0
			p.WithKill(func() { died = i })
			for i = range tc.hits {
				p.Hit(tc.hits[i])
				if died >= 0 {
					break
				}
			}
			if died != tc.wantDie {
				t.Fatalf("died at %d, want %d", died, tc.wantDie)
			}
		})
	}
	var nilPoints *Points
	nilPoints.Hit("anything") // must not panic
}

// TestCountAll: KEEL_FAULTPOINT=* kills nowhere.
func TestCountAll(t *testing.T) {
	p, err := Parse(CountAll)
	if err != nil {
		t.Fatal(err)
	}
	p.WithKill(func() { t.Fatal("killed under CountAll") })
	for range 3 {
		p.Hit("after_dispatch")
		p.Hit("in_step_commit")
	}
}
