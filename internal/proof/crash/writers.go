package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/harness"
)

// Names of the two-writer rows.
const (
	TwoWritersName  = "two workers claim one run at once"
	StaleWriterName = "stale worker fenced after lease loss"
)

// TwoWritersBusy: worker A (`keel step`) holds the run and is inside the
// publication (the destination recorded it and holds the answer) when
// worker B (`keel step`, same SQLite file) claims the same run. B must be
// refused as busy and write nothing; A records the uncertain outcome; a
// fresh keel dev reconciles it: one publication.
func TwoWritersBusy() *Scenario { return writers(TwoWritersName, false) }

// StaleWriterFenced: as TwoWritersBusy, but A's lease ends while A is
// stuck. On SQLite the suite ends it with the store call keel dev makes at
// start for a dead predecessor, standing for the TTL running out; on
// DynamoDB, which has no such call, A's lease runs out its TTL for real
// (A steps with a one-second budget and keel step's default lease TTL,
// and its request outlasts both). B takes the run, reconciles A's
// publication by lookup and finishes it; when A's request finally times
// out, A's write is fenced and A stops. One publication.
func StaleWriterFenced() *Scenario { return writers(StaleWriterName, true) }

func writers(name string, stale bool) *Scenario {
	return &Scenario{Name: name, Contract: "lookup", Hang: true, PublishTimeout: 3 * time.Second,
		// keel dev dies right after it read the approval: the run is
		// approved, the publication is next, nobody is driving it.
		Incarnations: []Incarnation{{Fault: harness.FaultAfterDecision}},
		Expect:       Expect{Approval: true, Kills: 1},
		play: func(ctx context.Context, n *node, st *driveState, res *Result) (Evidence, error) {
			return playWriters(ctx, n, st, res, stale)
		}}
}

func playWriters(ctx context.Context, n *node, st *driveState, res *Result, stale bool) (Evidence, error) {
	st.stopAtKills = 1
	if err := n.drive(ctx, st); err != nil {
		return Evidence{}, err
	}
	st.stopAtKills = 0
	if st.kills != 1 {
		return Evidence{}, fmt.Errorf("keel dev did not die at %s", harness.FaultAfterDecision)
	}
	// The dead keel dev's lease ends.
	if err := n.leaseEnds(ctx, st.runID); err != nil {
		return Evidence{}, err
	}
	// A's owner has keel dev's prefix so that, in the stale case on
	// SQLite, its lease can be ended the same way.
	budgetA, envA := 30*time.Second, []string(nil)
	if stale && n.table != "" {
		budgetA, envA = time.Second, []string{"RESEARCH_PUBLISH_TIMEOUT=" + staleHold.String()}
	}
	a, err := n.startStep(ctx, "A", st.runID, "keel-dev/writer-A", budgetA, envA...)
	if err != nil {
		return Evidence{}, err
	}
	defer a.kill()
	if err := waitPublications(ctx, n.pubLog, 1, a); err != nil {
		return Evidence{}, fmt.Errorf("worker A never reached the destination: %w", err)
	}
	if stale {
		if err := n.leaseEnds(ctx, st.runID); err != nil {
			return Evidence{}, err
		}
		if a.done() {
			return Evidence{}, fmt.Errorf("worker A ended before its lease did (%s): the stale case needs it stuck", writerOutcome(a))
		}
	}
	b, err := n.startStep(ctx, "B", st.runID, "crash-writer-B", 30*time.Second)
	if err != nil {
		return Evidence{}, err
	}
	defer b.kill()
	for _, p := range []*proc{b, a} {
		select {
		case <-p.exited:
		case <-ctx.Done():
			return Evidence{}, fmt.Errorf("waiting for worker %s: %w", p.name, ctx.Err())
		}
	}
	outA, outB := writerOutcome(a), writerOutcome(b)
	res.Notes = append(res.Notes, "A: "+outA, "B: "+outB)
	wantA, wantB := "stepped", "busy"
	if stale {
		wantA, wantB = "fenced", "stepped"
	}
	if !strings.HasPrefix(outA, wantA) {
		res.fail("worker A: %s, want %s", outA, wantA)
	}
	if !strings.HasPrefix(outB, wantB) {
		res.fail("worker B: %s, want %s", outB, wantB)
	}
	// A fresh keel dev resumes the execution: it reconciles, or finds
	// the run finished.
	if err := n.drive(ctx, st); err != nil {
		return Evidence{}, err
	}
	return n.finish(ctx, st)
}

// staleHold is how long the stale worker's request hangs on DynamoDB:
// longer than its lease (a one-second budget plus keel step's 30s lease
// TTL) and the other worker's whole step.
const staleHold = 50 * time.Second

// startStep runs `keel step RUN_ID` on the scenario's store, as a worker
// of its own, with env added to the scenario's.
func (n *node) startStep(ctx context.Context, name, runID, owner string, budget time.Duration, env ...string) (*proc, error) {
	env = append(append(n.keelEnv(), "KEEL_OWNER="+owner), env...)
	return startProc("keel step "+name, n.cfg.Keel, []string{"step", runID, "--budget", budget.String(), "--data-dir", n.data},
		env, filepath.Join(n.dir, "step-"+name+".log"))
}

// writerOutcome reads what a `keel step` process said: busy or fenced
// (exit 4), or the decision it stepped to (exit 0).
func writerOutcome(p *proc) string {
	b, _ := os.ReadFile(p.log)
	var out struct {
		Busy   bool   `json:"busy"`
		Fenced bool   `json:"fenced"`
		Next   string `json:"next"`
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "{") {
			_ = json.Unmarshal([]byte(line), &out)
		}
	}
	code := p.exitCode()
	switch {
	case out.Busy:
		return fmt.Sprintf("busy (exit %d)", code)
	case out.Fenced:
		return fmt.Sprintf("fenced (exit %d)", code)
	case code == 0:
		return fmt.Sprintf("stepped to %q (exit 0)", out.Next)
	}
	return fmt.Sprintf("exit %d: %s", code, strings.TrimSpace(lastLine(string(b))))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// leaseEnds returns once the run's lease has ended. On SQLite the suite
// ends the leases of keel dev owners, exactly as a starting keel dev does
// for its dead predecessor; on DynamoDB, where keel dev does not, it waits
// for the lease to run out its TTL, as a worker elsewhere would.
func (n *node) leaseEnds(ctx context.Context, runID string) error {
	if n.table == "" {
		return expireLeases(ctx, n.data)
	}
	st, err := n.records(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		r, err := st.GetRun(ctx, runID)
		if err != nil {
			return err
		}
		left := time.Until(r.Lease.Expiry)
		if r.Lease.Owner == "" || left < 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the lease of %s to end: %w", r.Lease.Owner, ctx.Err())
		case <-time.After(left + 5*time.Millisecond):
		}
	}
}

// expireLeases ends the leases of keel dev owners, exactly as a starting
// keel dev does for its dead predecessor.
func expireLeases(ctx context.Context, dataDir string) error {
	st, err := sqlite.Open(ctx, filepath.Join(dataDir, "keel.db"), sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = st.ExpireLeases(ctx, "keel-dev/", "keel-dev/crash-suite")
	return err
}

// waitPublications waits until the destination's log holds want effects.
func waitPublications(ctx context.Context, path string, want int, p *proc) error {
	for {
		pubs, err := readPublications(path)
		if err == nil && len(pubs) >= want {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited (%v); log %s", p.name, p.err, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
