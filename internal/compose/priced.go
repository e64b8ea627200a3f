package compose

import "github.com/keelrun/keel/internal/kernel/tool"

// MarkPriced gives each call of t a cost (micro-USD) against the run's
// spend limit: the harness reserves it with the call.
func MarkPriced(t tool.Tool, microUSD int64) tool.Tool {
	if e, ok := t.(tool.Effectful); ok {
		return pricedEffect{e, microUSD}
	}
	return priced{t, microUSD}
}

type priced struct {
	tool.Tool
	price int64
}

func (p priced) Info() tool.Info { i := p.Tool.Info(); i.CostMicroUSD = p.price; return i }

type pricedEffect struct {
	tool.Effectful
	price int64
}

func (p pricedEffect) Info() tool.Info { i := p.Effectful.Info(); i.CostMicroUSD = p.price; return i }
