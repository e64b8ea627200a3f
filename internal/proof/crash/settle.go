package crash

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/harness"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Settle rows (issue 29): the research agent publishes to a destination
// that promises nothing (no lookup, no idempotency); keel dev is killed
// with the publication in flight, and the next keel dev hands it to a
// person (needs_human). The suite then plays that person: it reads the
// destination's own log, settles the operation through the API with what
// the log shows (happened, with the publication's id, or did not happen),
// and lets the run go on — as often as the run asks. Nothing in keel is
// told what the suite saw except through the settle.
//
//   - SettleHappenedName: killed after the dispatch, so the destination
//     holds the publication. The person settles "happened" with its id —
//     twice at once, and exactly one of the two settles wins. The run
//     completes; the destination holds that one publication.
//   - SettleNotHappenedName: killed after the intent, before the
//     dispatch, so the destination holds nothing. The person settles "did
//     not happen"; the run dispatches the same operation once more with
//     the same id (its intent recorded again: two attempts), and the
//     destination holds exactly one publication, under that id.
//   - SettleAgainName: as SettleNotHappenedName, and the keel dev that
//     dispatches the new attempt is killed right after it: the new intent
//     makes it an ordinary pending operation, so the next keel dev hands
//     it to a person again (it never sends a third time), who settles
//     "happened" with the publication's id.
const (
	SettleHappenedName    = "settle happened [none, after_dispatch:1]"
	SettleNotHappenedName = "settle not happened [none, after_intent:1]"
	SettleAgainName       = "settle not happened, new attempt killed [none, after_intent:1, after_dispatch:1]"
)

// settlePlan is what a settle row expects: the first settle's outcome,
// how many settles the run asks for, and the operation's attempts.
type settlePlan struct {
	first    store.SettleOutcome
	settles  int
	attempts int64
}

// SettleScenarios are the settle rows.
func SettleScenarios() []*Scenario {
	row := func(name string, faults []string, p settlePlan) *Scenario {
		var inc []Incarnation
		for _, f := range faults {
			inc = append(inc, Incarnation{Fault: f})
		}
		return &Scenario{Name: name, Contract: "none", Incarnations: inc,
			Expect: Expect{Statuses: allowed(run.StatusCompleted), Approval: true, Kills: len(faults)},
			play: func(ctx context.Context, n *node, st *driveState, res *Result) (Evidence, error) {
				return n.settleRow(ctx, st, res, p)
			}}
	}
	dispatch, intent := harness.FaultAfterDispatch+":1", harness.FaultAfterIntent+":1"
	return []*Scenario{
		row(SettleHappenedName, []string{dispatch}, settlePlan{store.SettleHappened, 1, 1}),
		row(SettleNotHappenedName, []string{intent}, settlePlan{store.SettleNotHappened, 1, 2}),
		row(SettleAgainName, []string{intent, dispatch}, settlePlan{store.SettleNotHappened, 2, 2}),
	}
}

// settleRow drives the run; each time it waits for a person, settles its
// operation as the destination's log says; and once it ended, checks what
// the destination received under that operation id.
func (n *node) settleRow(ctx context.Context, st *driveState, res *Result, p settlePlan) (Evidence, error) {
	opID, settles := "", 0
	for {
		if err := n.drive(ctx, st); err != nil {
			return Evidence{}, err
		}
		r, err := n.c.GetRun(ctx, st.runID)
		if err != nil {
			return Evidence{}, fmt.Errorf("get run: %w", err)
		}
		if r.Status != run.StatusNeedsHuman {
			break
		}
		if settles == p.settles {
			res.fail("needs_human again after %d settles, want %d", settles, p.settles)
			break
		}
		op, err := n.uncertainOp(ctx, st.runID)
		if err != nil {
			return Evidence{}, err
		}
		req, err := n.whatTheLogShows(op)
		if err != nil {
			return Evidence{}, err
		}
		if settles == 0 && req.Outcome != string(p.first) {
			res.fail("the destination's log says %s before the first settle, the row kills where it says %s", req.Outcome, p.first)
		}
		if opID != "" && op.OperationID != opID {
			res.fail("a second settle asked for operation %s, not %s", op.OperationID, opID)
		}
		opID = op.OperationID
		if err := n.settleRacing(ctx, st.runID, opID, req, res); err != nil {
			return Evidence{}, err
		}
		settles++
	}
	ev, err := n.finish(ctx, st)
	if err != nil {
		return ev, err
	}
	if settles != p.settles {
		res.fail("%d settles, want %d", settles, p.settles)
	}
	checkSettledRow(ev, opID, settles, p.attempts, res)
	return ev, nil
}

// whatTheLogShows is the settle a person reading the destination's log
// sends: happened with the publication's id, or did not happen.
func (n *node) whatTheLogShows(op api.Operation) (api.SettleRequest, error) {
	pubs, err := n.publicationsOf(op.OperationID)
	if err != nil {
		return api.SettleRequest{}, err
	}
	switch len(pubs) {
	case 0:
		return api.SettleRequest{Outcome: string(store.SettleNotHappened), Reason: "the destination's log shows nothing for " + op.IdempotencyKey}, nil
	case 1:
		return api.SettleRequest{Outcome: string(store.SettleHappened), ExternalID: pubs[0].ID,
			Reason: "the destination's log shows " + pubs[0].ID + " for " + op.IdempotencyKey}, nil
	}
	return api.SettleRequest{}, fmt.Errorf("DUPLICATE: the destination holds %d publications for %s", len(pubs), op.OperationID)
}

// uncertainOp is the run's one needs_human operation, as the API lists it.
func (n *node) uncertainOp(ctx context.Context, runID string) (api.Operation, error) {
	list, err := n.c.Operations(ctx, runID)
	if err != nil {
		return api.Operation{}, fmt.Errorf("operations: %w", err)
	}
	for _, op := range list.Operations {
		if op.Status == run.OpNeedsHuman {
			return op, nil
		}
	}
	return api.Operation{}, fmt.Errorf("needs_human run %s lists no needs_human operation: %+v", runID, list.Operations)
}

// publicationsOf reads the destination's log for one operation id.
func (n *node) publicationsOf(opID string) ([]Publication, error) {
	pubs, err := readPublications(n.pubLog)
	if err != nil {
		return nil, err
	}
	var out []Publication
	for _, p := range pubs {
		if p.OperationID == opID {
			out = append(out, p)
		}
	}
	return out, nil
}

// settleRacing sends req twice at once (a person on two channels, or two
// people): exactly one must be accepted, the other refused as
// not_settleable.
func (n *node) settleRacing(ctx context.Context, runID, opID string, req api.SettleRequest, res *Result) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = n.c.Settle(ctx, runID, opID, req)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		var ae *api.Error
		switch {
		case err == nil:
			won++
		case errors.As(err, &ae) && ae.Code == api.CodeNotSettleable:
		default:
			return fmt.Errorf("settle: %w", err)
		}
	}
	if won != 1 {
		res.fail("%d of two racing settles accepted, want exactly 1", won)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("settled %s as %s: one of two racing settles accepted", opID, req.Outcome))
	return nil
}

// checkSettledRow holds the operation a person settled to the row: one
// op_settled per settle in the log, one publication under its id at the
// end, and the attempts the row expects (the same id dispatched once more
// where it did not happen).
func checkSettledRow(ev Evidence, opID string, settles int, attempts int64, res *Result) {
	if n := countType(ev.Events, run.EventOpSettled); n != settles {
		res.fail("%d op_settled events, want %d", n, settles)
	}
	at := 0
	for _, p := range ev.Pubs {
		if p.OperationID == opID {
			at++
		}
	}
	if at != 1 {
		res.fail("the destination holds %d publications for %s at the end, want 1", at, opID)
	}
	for _, op := range ev.Ops {
		if op.ID == opID && (op.Status != run.OpSucceeded || op.Attempts != attempts || op.IdempotencyKey != opID) {
			res.fail("operation %s is %s with %d attempts under key %s, want succeeded, %d attempts, its own id",
				op.ID, op.Status, op.Attempts, op.IdempotencyKey, attempts)
		}
	}
}
