package cli

import (
	"errors"
	"testing"

	"github.com/keelrun/keel/internal/config"
)

func TestDevStoreFlags(t *testing.T) {
	env := map[string]string{"KEEL_STORE": "sqlite:/env.db", "KEEL_ARTIFACTS": "fs:/env", "KEEL_TABLE": "t-env", "KEEL_DATA_DIR": "d"}
	cases := []struct {
		name, store, arts   string
		wantStore, wantArts string
		wantUsage           bool
	}{
		{name: "no flags keep the environment", wantStore: "sqlite:/env.db", wantArts: "fs:/env"},
		{name: "dynamo takes KEEL_TABLE, s3 the default bucket", store: "dynamo", arts: "s3", wantStore: "dynamo:t-env", wantArts: "s3:keel-artifacts"},
		{name: "explicit table and bucket", store: "dynamo:runs", arts: "s3:blobs", wantStore: "dynamo:runs", wantArts: "s3:blobs"},
		{name: "sqlite alone means the default", store: "sqlite", arts: "fs", wantStore: "sqlite:d/keel.db", wantArts: "fs:d/artifacts"},
		{name: "sqlite with a path", store: "sqlite:/x.db", wantStore: "sqlite:/x.db", wantArts: "fs:/env"},
		{name: "unknown store", store: "postgres", wantUsage: true},
		{name: "unknown artifacts", arts: "gcs", wantUsage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.FromEnv(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			err = applyStoreFlags(&cfg, tc.store, tc.arts)
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
			if cfg.StoreURL() != tc.wantStore || cfg.ArtifactsURL() != tc.wantArts {
				t.Fatalf("store %q, artifacts %q", cfg.StoreURL(), cfg.ArtifactsURL())
			}
		})
	}
}
