package cli

import (
	"errors"
	"os"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/observe/cost"
)

// idleReport reads a synthesized CloudFormation template (`make synth`
// writes infra/cdk/cdk.out/STACK.template.json) and prices what the
// deployment bills while nothing runs, with the price table of
// pricesFile, else KEEL_PRICES, else the dated default.
func (c *cli) idleReport(template, pricesFile string) (cost.IdleReport, error) {
	raw, err := os.ReadFile(template)
	if err != nil {
		return cost.IdleReport{}, usagef("--template: %v", err)
	}
	if pricesFile == "" {
		cfg, err := config.FromEnv(c.getenv)
		if err != nil {
			return cost.IdleReport{}, &configError{err}
		}
		pricesFile = cfg.Prices
	}
	p, err := cost.Load(pricesFile)
	if err != nil {
		return cost.IdleReport{}, usagef("--prices: %v", err)
	}
	r, err := cost.IdleCost(raw, p)
	if err != nil {
		return r, usagef("--template %s: %v", template, err)
	}
	return r, nil
}

// errNoAPI is client's error when no API is configured.
var errNoAPI = errors.New("no Keel API")

// noAPI reports whether err is client's "no Keel API configured": no
// --url, no KEEL_URL and no .keel/url to find.
func noAPI(err error) bool {
	var ce *configError
	return errors.As(err, &ce) && errors.Is(ce.err, errNoAPI)
}
