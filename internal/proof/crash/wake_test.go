package crash

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDecisionSurvivesKillBeforeWake (issue #40, item 1): a decision sent
// through the API, a one-time link or a raise, to a keel dev SIGKILLed
// after the decision is durable and before the run's wait is woken. The
// next keel dev delivers it by itself (the sweeper), and the same
// decision sent again through its channel is answered, not refused
// (410 used already, 409 not_paused before the fix). Every row ends
// completed with one publication, on SQLite and on DynamoDB.
// KEEL_CRASH_KEEP=DIR keeps every row's directory under DIR.
func TestDecisionSurvivesKillBeforeWake(t *testing.T) {
	bin := t.TempDir()
	keel := build(t, bin, "keel", "github.com/keelrun/keel/cmd/keel")
	pub := build(t, bin, "pubserver", "github.com/keelrun/keel/internal/cmd/pubserver")
	for _, store := range []string{"sqlite", "dynamo"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // a hang guard
			t.Cleanup(cancel)
			cfg := Config{Keel: keel, PubServer: pub, Script: researchScript(t), Dir: t.TempDir(), Store: store}
			if keep := os.Getenv("KEEL_CRASH_KEEP"); keep != "" {
				cfg.Dir, cfg.Keep = keep, true
			}
			if store == "dynamo" {
				a, err := StartLocalAWS()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(a.Close)
				cfg.AWS = a
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, ch := range WakeChannels {
				for _, retry := range []bool{false, true} {
					sc := WakeScenario(ch, retry)
					t.Run(strings.ReplaceAll(sc.Name, " ", "_"), func(t *testing.T) {
						t.Parallel()
						r := Play(ctx, cfg, sc)
						var buf bytes.Buffer
						PrintMatrix(&buf, []Result{r})
						t.Logf("\n%s", buf.String())
						if !r.Pass() {
							t.Errorf("%s", strings.Join(r.Violations, "; "))
						}
					})
				}
			}
		})
	}
}
