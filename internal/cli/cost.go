package cli

import (
	"context"
	"fmt"
	"net"
	"net/url"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/observe/cost"
)

// costCommand prints what a run cost on AWS and on which part: the API
// measures the usage from the run's records; the price table is the dated
// default, or the JSON file KEEL_PRICES (or --prices) names. A run on
// `dev` is priced as if it had run on AWS, and the output says so: only
// its model spend was real. With --template instead of a run, it prices
// what the synthesized stack bills while nothing runs (no API needed).
func costCommand() command {
	cmd := command{usage: "[--json] [--prices FILE] (RUN_ID | --template FILE)",
		summary: "what a run costs on AWS, part by part (state transitions, Lambda, DynamoDB, S3, Fargate, model); a local run as if deployed; --template: the stack's idle monthly cost"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("cost")
		asJSON := fs.Bool("json", false, "print JSON")
		pricesFile := fs.String("prices", "", "JSON price table over the default (default $KEEL_PRICES)")
		template := fs.String("template", "", "synthesized CloudFormation template (infra/cdk/cdk.out/STACK.template.json): its idle monthly cost instead of a run's")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if *template != "" {
			if len(pos) != 0 {
				return usagef("--template prices the stack, not a run: give no RUN_ID")
			}
			idle, err := c.idleReport(*template, *pricesFile)
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(c, idle)
			}
			return idle.Print(c.stdout)
		}
		if err := wantArgs(pos, "RUN_ID"); err != nil {
			return err
		}
		cl, err := c.client()
		if err != nil {
			return err
		}
		rep, err := c.runCost(ctx, cl, pos[0], *pricesFile)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(c, rep)
		}
		if err := rep.Print(c.stdout); err != nil {
			return err
		}
		if isLocal(cl.BaseURL()) {
			fmt.Fprintf(c.stdout, "note: this run ran on this machine (%s), not on AWS: the AWS lines are what it would cost deployed; only the model's spend was real\n", cl.BaseURL())
		}
		return nil
	}
	return cmd
}

// isLocal reports whether an API URL is on this machine (a loopback
// host): `dev`, not a deployment.
func isLocal(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// costClient is what costing a run needs of the API client.
type costClient interface {
	Cost(ctx context.Context, id string) (cost.Report, error)
}

// runCost fetches a run's cost and, when the user has a price table of
// their own (--prices, else KEEL_PRICES), prices its usage again with it.
func (c *cli) runCost(ctx context.Context, cl costClient, id, pricesFile string) (cost.Report, error) {
	rep, err := cl.Cost(ctx, id)
	if err != nil {
		return rep, err
	}
	if pricesFile == "" {
		cfg, err := config.FromEnv(c.getenv)
		if err != nil {
			return rep, &configError{err}
		}
		pricesFile = cfg.Prices
	}
	if pricesFile == "" {
		return rep, nil
	}
	p, err := cost.Load(pricesFile)
	if err != nil {
		return rep, usagef("--prices: %v", err)
	}
	return cost.Price(rep.RunID, rep.Usage, rep.Resources, p), nil
}
