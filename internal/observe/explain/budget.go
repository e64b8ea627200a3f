package explain

import (
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
)

// raiseLimitTool is the approval a budget pause asks for (package
// harness's RaiseLimitTool; explain reads records and imports no harness).
const raiseLimitTool = "keel.raise_limit"

// budgetData is what a budget_paused or budget_raised event records.
type budgetData struct {
	Limit      string `json:"limit"`
	Now        int64  `json:"limit_now"`
	RaiseBy    int64  `json:"raise_by"`
	After      int64  `json:"limit_after"`
	By         int64  `json:"by"`
	From       int64  `json:"from"`
	To         int64  `json:"to"`
	ApprovedBy string `json:"approved_by"`
}

// budgetDecision tells a budget pause or raise.
func budgetDecision(e run.Event) string {
	var d budgetData
	_ = json.Unmarshal(e.Data, &d) // another shape reads as zeros
	if e.Type == run.EventBudgetPaused {
		return fmt.Sprintf("paused at its %s limit (%d) and asked a person to raise it by %d", d.Limit, d.Now, d.RaiseBy)
	}
	who := d.ApprovedBy
	if who == "" {
		who = "a person"
	}
	return fmt.Sprintf("%s raised from %d to %d by %s", d.Limit, d.From, d.To, who)
}

// raiseText names the raise a pending budget approval asks for.
func raiseText(args json.RawMessage) string {
	var d budgetData
	if json.Unmarshal(args, &d) != nil || d.Limit == "" {
		return "its arguments are unreadable"
	}
	return fmt.Sprintf("%s: %d → %d", d.Limit, d.Now, d.After)
}
