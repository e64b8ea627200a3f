// Command budgetagent is the program of the budget-pause test: one agent
// whose scripted model calls a priced lookup 20 times in one answer, under
// a spend cap of 10 lookups and a policy that pauses to ask for 20 more.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelrun/keel"
)

// Price is what one lookup costs, in micro-USD.
const Price = 1_000

func main() {
	calls := make([]string, 20)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"name":"lookup","args":{"q":"item %d"}}`, i)
	}
	script := `{"turns":[{"tool_calls":[` + strings.Join(calls, ",") + `]},{"text":"done"}]}`
	type args struct {
		Q string `json:"q"`
	}
	keel.Main(keel.Agent{
		Name:         "budget",
		Instructions: "Look up every item.",
		Model:        keel.ScriptedModel([]byte(script)),
		Tools: []keel.Tool{keel.ReadOnly("lookup", "a paid lookup", func(_ context.Context, a args) (string, error) {
			return "found " + a.Q, nil
		}).Priced(Price)},
		Limits:  keel.Limits{MaxSpendMicroUSD: 10 * Price},
		OnLimit: keel.LimitPolicy{Pause: true, RaiseBy: keel.Limits{MaxSpendMicroUSD: 20 * Price}},
	})
}
