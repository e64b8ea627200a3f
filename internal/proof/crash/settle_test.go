package crash

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/proof/awslocal"
	"github.com/keelrun/keel/internal/testbin"
)

// TestSettleOnKeelDev plays the settle rows (settle.go) on real keel dev
// processes killed with SIGKILL, on SQLite and on the DynamoDB store (moto
// when python3 has moto[server], else the in-process endpoint): a person
// settles an operation only they can know about, "happened" with the
// destination's id or "did not happen", and the run completes with exactly
// one publication under the operation's id, also when the new attempt is
// killed after its dispatch; of two racing settles one wins.
func TestSettleOnKeelDev(t *testing.T) {
	testbin.SkipShort(t, "builds keel and kills keel dev processes")
	bin := t.TempDir()
	keel := build(t, bin, "keel", "github.com/keelrun/keel/cmd/keel")
	pub := build(t, bin, "pubserver", "github.com/keelrun/keel/internal/cmd/pubserver")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a hang guard
	t.Cleanup(cancel)
	rows := SettleScenarios()
	for _, be := range []string{"sqlite", "dynamo"} {
		t.Run(be, func(t *testing.T) {
			cfg := Config{Keel: keel, PubServer: pub, Script: researchScript(t), Dir: t.TempDir(), Store: be}
			if be == "dynamo" {
				cfg.AWS = settleAWS(t)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, sc := range rows {
				t.Run(sc.Name, func(t *testing.T) {
					r := Play(ctx, cfg, sc)
					var buf bytes.Buffer
					PrintMatrix(&buf, []Result{r})
					t.Logf("\n%s", buf.String())
					if !r.Pass() {
						t.Errorf("%s: %s (kept in %s)", r.Name, strings.Join(r.Violations, "; "), r.Dir)
					}
				})
			}
		})
	}
}

// settleAWS is moto where python3 has it, else the in-process endpoint.
func settleAWS(t *testing.T) *AWS {
	t.Helper()
	why := awslocal.MotoAvailable("python3")
	if why == "" {
		m, err := awslocal.StartMoto(t.Context(), "python3", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return LocalAWS(m.URL, m.Close)
	}
	t.Logf("DynamoDB in-process: %s", why)
	a, err := StartLocalAWS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}
