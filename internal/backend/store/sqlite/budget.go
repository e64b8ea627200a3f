package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

const budgetColumns = `tokens_used, tokens_reserved, spend_used, spend_reserved, tool_calls_used, tool_calls_reserved`

func scanBudget(sc scanner) (run.Budget, error) {
	var b run.Budget
	err := sc.Scan(&b.TokensUsed, &b.TokensReserved, &b.SpendUsedMicroUSD, &b.SpendReservedMicroUSD,
		&b.ToolCallsUsed, &b.ToolCallsReserved)
	return b, err
}

// Reserve implements store.Budgets with one conditional UPDATE, so the check
// and the hold are a single atomic step. A limit of 0 means no limit.
func (s *Store) Reserve(ctx context.Context, runID string, a store.Amounts) (run.Budget, error) {
	if err := store.ValidateReserve(runID, a); err != nil {
		return run.Budget{}, err
	}
	var out run.Budget
	err := s.write(ctx, func(tx *sql.Tx) error {
		b, err := scanBudget(s.queryRow(ctx, tx, `UPDATE runs SET
			tokens_reserved = tokens_reserved + ?1, spend_reserved = spend_reserved + ?2,
			tool_calls_reserved = tool_calls_reserved + ?3, updated_at = ?4
			WHERE id = ?5
			AND (max_tokens = 0 OR tokens_used + tokens_reserved + ?1 <= max_tokens)
			AND (max_spend = 0 OR spend_used + spend_reserved + ?2 <= max_spend)
			AND (max_tool_calls = 0 OR tool_calls_used + tool_calls_reserved + ?3 <= max_tool_calls)
			RETURNING `+budgetColumns, a.Tokens, a.SpendMicroUSD, a.ToolCalls, s.now(), runID))
		if errors.Is(err, sql.ErrNoRows) {
			r, gerr := getRun(ctx, txQuerier{s, tx}, runID)
			if gerr != nil {
				return gerr
			}
			return fmt.Errorf("sqlite: reserve %+v on %q: %w (limits %+v, budget %+v)", a, runID, store.ErrBudgetExceeded, r.Limits, r.Budget)
		}
		if err != nil {
			return fmt.Errorf("sqlite: reserve on %q: %w", runID, err)
		}
		out = b
		return nil
	})
	if err != nil {
		return run.Budget{}, err
	}
	return out, nil
}
