package cli

import (
	"context"
	"fmt"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/observe/cost"
	"github.com/keelrun/keel/internal/observe/doctor"
)

// doctorCommand is `keel doctor`: the ten production questions answered
// from the facts the deployment reports (GET /v1/deployment). With
// --template, first the deployment's idle cost from the CloudFormation
// template `make synth` wrote (a deployment on AWS cannot read its own
// template); then the ten answers when an API is configured, else only
// the idle cost.
func doctorCommand() command {
	cmd := command{usage: "[--json] [--strict] [--template FILE [--prices FILE]]", summary: "answer the ten production questions from the deployment's own configuration; gaps are answers that rest on the prompt; --template: what the synthesized stack costs while nothing runs"}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("doctor")
		asJSON := fs.Bool("json", false, "print the facts and answers as JSON")
		strict := fs.Bool("strict", false, "exit 1 when any answer has a gap")
		template := fs.String("template", "", "synthesized CloudFormation template (infra/cdk/cdk.out/STACK.template.json): report its idle monthly cost")
		pricesFile := fs.String("prices", "", "JSON price table over the default (default $KEEL_PRICES), with --template")
		if _, err := parseArgs(fs, args); err != nil {
			return err
		}
		var idle *cost.IdleReport
		if *template != "" {
			r, err := c.idleReport(*template, *pricesFile)
			if err != nil {
				return err
			}
			idle = &r
		} else if *pricesFile != "" {
			return usagef("--prices prices the idle cost: it needs --template")
		}
		var rep *api.DeploymentReport
		cl, err := c.client()
		switch {
		case err != nil && idle != nil && noAPI(err):
			// The template alone: a stack synthesized, not yet deployed.
		case err != nil:
			return err
		default:
			r, err := cl.Deployment(ctx)
			if err != nil {
				return err
			}
			rep = &r
		}
		if err := printDoctor(c, *asJSON, *template, idle, rep); err != nil {
			return err
		}
		if rep != nil && *strict && rep.Gaps > 0 {
			return fmt.Errorf("doctor: %d gap(s) (--strict)", rep.Gaps)
		}
		return nil
	}
	return cmd
}

// printDoctor prints the idle cost and the answers, either of which may
// be absent. As JSON: the deployment report as before when there is no
// template; with one, {"idle": ..., "deployment": ...}.
func printDoctor(c *cli, asJSON bool, template string, idle *cost.IdleReport, rep *api.DeploymentReport) error {
	if asJSON {
		if idle == nil {
			return printJSON(c, rep)
		}
		return printJSON(c, struct {
			Template   string                `json:"template"`
			Idle       *cost.IdleReport      `json:"idle"`
			Deployment *api.DeploymentReport `json:"deployment,omitempty"`
		}{template, idle, rep})
	}
	if idle != nil {
		if _, err := fmt.Fprint(c.stdout, doctor.RenderIdle(template, *idle)); err != nil {
			return err
		}
		if rep == nil {
			_, err := fmt.Fprintln(c.stdout, "(no Keel API configured: the ten answers need a running deployment; set KEEL_URL or pass --url)")
			return err
		}
		if _, err := fmt.Fprintln(c.stdout); err != nil {
			return err
		}
	}
	_, err := fmt.Fprint(c.stdout, rep.Text)
	return err
}
