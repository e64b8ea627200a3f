package crash

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/store"
)

// Settle rows (issue 29): the research agent publishes to a destination
// that promises nothing (no lookup, no idempotency); keel dev is killed
// with the publication in flight, and the next keel dev hands it to a
// person (needs_human). The suite then plays that person: it reads the
// destination's own log, settles the operation through the API with what
// the log shows, and lets the run go on. Nothing in keel is told what the
// suite saw except through the settle.
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
const (
	SettleHappenedName    = "settle happened [none, after_dispatch:1]"
	SettleNotHappenedName = "settle not happened [none, after_intent:1]"
)

// SettleScenario is the settle row for outcome (store.SettleHappened or
// store.SettleNotHappened).
func SettleScenario(outcome store.SettleOutcome) *Scenario {
	name, fault := SettleHappenedName, harness.FaultAfterDispatch+":1"
	if outcome == store.SettleNotHappened {
		name, fault = SettleNotHappenedName, harness.FaultAfterIntent+":1"
	}
	return &Scenario{Name: name, Contract: "none",
		Incarnations: []Incarnation{{Fault: fault}},
		Expect:       Expect{Statuses: allowed(run.StatusCompleted), Approval: true, Kills: 1},
		play: func(ctx context.Context, n *node, st *driveState, res *Result) (Evidence, error) {
			return n.settleRow(ctx, st, res, outcome)
		}}
}

// settleRow drives the run to needs_human, settles its operation as the
// destination's log says, drives it to its end and checks what the
// destination received for that operation id.
func (n *node) settleRow(ctx context.Context, st *driveState, res *Result, outcome store.SettleOutcome) (Evidence, error) {
	if err := n.drive(ctx, st); err != nil {
		return Evidence{}, err
	}
	r, err := n.c.GetRun(ctx, st.runID)
	if err != nil {
		return Evidence{}, fmt.Errorf("get run: %w", err)
	}
	if r.Status != run.StatusNeedsHuman {
		res.fail("run %s after the kill, want needs_human: nothing to settle", r.Status)
		return n.finish(ctx, st)
	}
	op, err := n.uncertainOp(ctx, st.runID)
	if err != nil {
		return Evidence{}, err
	}
	before, err := n.publicationsOf(op.OperationID)
	if err != nil {
		return Evidence{}, err
	}
	req := api.SettleRequest{Outcome: string(outcome), Reason: "the destination's log shows no publication for " + op.IdempotencyKey}
	switch {
	case outcome == store.SettleHappened && len(before) == 1:
		req.ExternalID, req.Reason = before[0].ID, "the destination's log shows "+before[0].ID+" for "+op.IdempotencyKey
	case outcome == store.SettleHappened || len(before) != 0:
		res.fail("the destination holds %d publications for %s before the settle; the row kills where it holds %s", len(before), op.OperationID,
			map[store.SettleOutcome]string{store.SettleHappened: "one", store.SettleNotHappened: "none"}[outcome])
		return n.finish(ctx, st)
	}
	if err := n.settleRacing(ctx, st.runID, op.OperationID, req, res); err != nil {
		return Evidence{}, err
	}
	if err := n.drive(ctx, st); err != nil {
		return Evidence{}, err
	}
	ev, err := n.finish(ctx, st)
	if err != nil {
		return ev, err
	}
	checkSettledRow(ev, op.OperationID, outcome, res)
	return ev, nil
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
// op_settled in the log, one publication under its id at the end, and
// two attempts (the same id dispatched once more) where it did not happen.
func checkSettledRow(ev Evidence, opID string, outcome store.SettleOutcome, res *Result) {
	if n := countType(ev.Events, run.EventOpSettled); n != 1 {
		res.fail("%d op_settled events, want 1", n)
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
	attempts := map[store.SettleOutcome]int64{store.SettleHappened: 1, store.SettleNotHappened: 2}[outcome]
	for _, op := range ev.Ops {
		if op.ID == opID && (op.Status != run.OpSucceeded || op.Attempts != attempts || op.IdempotencyKey != opID) {
			res.fail("operation %s is %s with %d attempts under key %s, want succeeded, %d attempts, its own id",
				op.ID, op.Status, op.Attempts, op.IdempotencyKey, attempts)
		}
	}
}
