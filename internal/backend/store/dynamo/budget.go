package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

func budgetOf(it item) run.Budget { return itemToRun(it).Budget }

// resources lists the budget attributes and a function picking each
// resource's amount and limit.
var resources = []struct {
	used, res, total string
	amount           func(store.Amounts) int64
	limit            func(run.Limits) int64
}{
	{"tok_used", "tok_res", "tok_total", func(a store.Amounts) int64 { return a.Tokens }, func(l run.Limits) int64 { return l.MaxTokens }},
	{"spend_used", "spend_res", "spend_total", func(a store.Amounts) int64 { return a.SpendMicroUSD }, func(l run.Limits) int64 { return l.MaxSpendMicroUSD }},
	{"calls_used", "calls_res", "calls_total", func(a store.Amounts) int64 { return a.ToolCalls }, func(l run.Limits) int64 { return l.MaxToolCalls }},
}

// Reserve implements store.Budgets with one conditional UpdateItem. For
// each resource with a limit (0 = no limit) the condition is
// total <= limit − amount, where total = used + reserved is kept on the
// row, because DynamoDB conditions cannot add. The limits come from the
// run's cached state; they change only when a person raises them (a
// commit's RaiseLimits), so a refusal under limits that the row, read
// again, no longer has is tried once more under the row's.
func (s *Store) Reserve(ctx context.Context, runID string, a store.Amounts) (run.Budget, error) {
	if err := store.ValidateReserve(runID, a); err != nil {
		return run.Budget{}, err
	}
	st, _, err := s.state(ctx, runID, false)
	if err != nil {
		return run.Budget{}, err
	}
	b, err := s.reserve(ctx, runID, a, st)
	var stale *staleLimits
	if errors.As(err, &stale) {
		return s.reserve(ctx, runID, a, stateOf(stale.row))
	}
	return b, err
}

// staleLimits: a reservation was refused under cached limits that the
// run row no longer has.
type staleLimits struct {
	row item
	err error
}

func (e *staleLimits) Error() string { return e.err.Error() }
func (e *staleLimits) Unwrap() error { return e.err }

// reserve is one conditional reservation under st's limits.
func (s *Store) reserve(ctx context.Context, runID string, a store.Amounts, st runState) (run.Budget, error) {
	e := newExpr()
	u := &update{set: []string{e.name("updated_at") + " = " + e.value(tv(s.now()))}}
	conds := []string{"attribute_exists(" + e.name("pk") + ")"}
	for _, r := range resources {
		amt, lim := r.amount(a), r.limit(st.limits)
		if lim > 0 {
			if amt > lim {
				return run.Budget{}, fmt.Errorf("dynamo: reserve %+v on %q: %w (limits %+v)", a, runID, store.ErrBudgetExceeded, st.limits)
			}
			conds = append(conds, e.name(r.total)+" <= "+e.value(nv(lim-amt)))
		}
		if amt != 0 {
			v := e.value(nv(amt))
			u.set = append(u.set, e.name(r.res)+" = "+e.name(r.res)+" + "+v, e.name(r.total)+" = "+e.name(r.total)+" + "+v)
		}
	}
	it, applied, err := s.updateRun(ctx, "reserve", runID, e, u.String(), and(conds))
	if err != nil {
		return run.Budget{}, err
	}
	if applied {
		return budgetOf(it), nil
	}
	err = fmt.Errorf("dynamo: reserve %+v on %q: %w (limits %+v, budget %+v)", a, runID,
		store.ErrBudgetExceeded, st.limits, budgetOf(it))
	if itemToRun(it).Limits != st.limits {
		return run.Budget{}, &staleLimits{row: it, err: err}
	}
	return run.Budget{}, err
}
