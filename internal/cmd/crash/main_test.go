package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseKillMS(t *testing.T) {
	cases := []struct {
		in       string
		min, max time.Duration
		bad      bool
	}{
		{in: "15:250", min: 15 * time.Millisecond, max: 250 * time.Millisecond},
		{in: "0:200", max: 200 * time.Millisecond},
		{in: "100:100", min: 100 * time.Millisecond, max: 100 * time.Millisecond},
		{in: "250:15", bad: true},
		{in: "0:0", bad: true},
		{in: "-5:10", bad: true},
		{in: "15", bad: true},
		{in: "15ms:250ms", bad: true},
		{in: "", bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			lo, hi, err := parseKillMS(tc.in)
			if tc.bad {
				if err == nil || !strings.Contains(err.Error(), "-kill-ms") {
					t.Fatalf("parseKillMS(%q) = %v, want an error naming -kill-ms", tc.in, err)
				}
				return
			}
			if err != nil || lo != tc.min || hi != tc.max {
				t.Fatalf("parseKillMS(%q) = %s, %s, %v; want %s, %s", tc.in, lo, hi, err, tc.min, tc.max)
			}
		})
	}
}
