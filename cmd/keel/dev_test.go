package main

import (
	"errors"
	"testing"
	"time"
)

func TestDevStoreFlags(t *testing.T) {
	env := map[string]string{"KEEL_STORE": "sqlite:/env.db", "KEEL_ARTIFACTS": "fs:/env", "KEEL_TABLE": "t-env"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name, store, arts   string
		wantStore, wantArts string
		wantUsage           bool
	}{
		{name: "no flags keep the environment", wantStore: "sqlite:/env.db", wantArts: "fs:/env"},
		{name: "dynamo takes KEEL_TABLE, s3 the default bucket", store: "dynamo", arts: "s3", wantStore: "dynamo:t-env", wantArts: "s3:keel-artifacts"},
		{name: "explicit table and bucket", store: "dynamo:runs", arts: "s3:blobs", wantStore: "dynamo:runs", wantArts: "s3:blobs"},
		{name: "sqlite alone means the default", store: "sqlite", arts: "fs", wantStore: "", wantArts: ""},
		{name: "sqlite with a path", store: "sqlite:/x.db", wantStore: "sqlite:/x.db", wantArts: "fs:/env"},
		{name: "unknown store", store: "postgres", wantUsage: true},
		{name: "unknown artifacts", arts: "gcs", wantUsage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			get, err := devStores(getenv, tc.store, tc.arts)
			var ue *usageError
			if tc.wantUsage {
				if !errors.As(err, &ue) {
					t.Fatalf("err %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if get("KEEL_STORE") != tc.wantStore || get("KEEL_ARTIFACTS") != tc.wantArts || get("KEEL_TABLE") != "t-env" {
				t.Fatalf("KEEL_STORE=%q KEEL_ARTIFACTS=%q", get("KEEL_STORE"), get("KEEL_ARTIFACTS"))
			}
		})
	}
}

func TestDevDurations(t *testing.T) {
	cases := []struct {
		name                string
		env                 map[string]string
		wantBudget, wantTTL time.Duration
		wantUsage           bool
	}{
		{name: "unset keeps the defaults"},
		{name: "both set", env: map[string]string{"KEEL_STEP_BUDGET": "2s", "KEEL_LEASE_TTL": "1500ms"}, wantBudget: 2 * time.Second, wantTTL: 1500 * time.Millisecond},
		{name: "budget alone", env: map[string]string{"KEEL_STEP_BUDGET": "5m"}, wantBudget: 5 * time.Minute},
		{name: "not a duration", env: map[string]string{"KEEL_LEASE_TTL": "soon"}, wantUsage: true},
		{name: "zero", env: map[string]string{"KEEL_STEP_BUDGET": "0s"}, wantUsage: true},
		{name: "negative", env: map[string]string{"KEEL_LEASE_TTL": "-1s"}, wantUsage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			budget, ttl, err := devDurations(func(k string) string { return tc.env[k] })
			var ue *usageError
			if tc.wantUsage {
				if !errors.As(err, &ue) {
					t.Fatalf("err %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if budget != tc.wantBudget || ttl != tc.wantTTL {
				t.Fatalf("budget %s, lease TTL %s; want %s, %s", budget, ttl, tc.wantBudget, tc.wantTTL)
			}
		})
	}
}
