package awsbackend

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/keelrun/keel/internal/aws/sweeper"
)

// StepVersions is sweeper.Versions on the Lambda API: the published
// versions of the step function whose live alias is AliasARN
// (KEEL_STEP_FUNCTION, arn:…:function:NAME:ALIAS).
type StepVersions struct {
	Client   *lambda.Client
	AliasARN string
}

var _ sweeper.Versions = StepVersions{}

// NewStepVersions builds StepVersions, refusing an ARN without an alias.
func NewStepVersions(cfg aws.Config, aliasARN string) (StepVersions, error) {
	if _, _, err := splitAlias(aliasARN); err != nil {
		return StepVersions{}, err
	}
	return StepVersions{Client: lambda.NewFromConfig(cfg), AliasARN: aliasARN}, nil
}

// splitAlias splits arn:…:function:NAME:ALIAS into the function's name
// (which every Lambda API takes, as it takes the ARN) and the alias.
func splitAlias(arn string) (name, alias string, err error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 8 || parts[0] != "arn" || parts[5] != "function" || parts[6] == "" || parts[7] == "" {
		return "", "", fmt.Errorf("KEEL_STEP_FUNCTION %q: want the step function's alias ARN (arn:…:function:NAME:ALIAS)", arn)
	}
	return parts[6], parts[7], nil
}

// Published implements sweeper.Versions. Versions are named NAME:N, as
// the step function names itself (AWS_LAMBDA_FUNCTION_NAME:VERSION).
func (v StepVersions) Published(ctx context.Context) ([]string, string, error) {
	fn, alias, err := splitAlias(v.AliasARN)
	if err != nil {
		return nil, "", err
	}
	a, err := v.Client.GetAlias(ctx, &lambda.GetAliasInput{FunctionName: aws.String(fn), Name: aws.String(alias)})
	if err != nil {
		return nil, "", fmt.Errorf("get alias %s: %w", alias, err)
	}
	name := fn
	var out []string
	p := lambda.NewListVersionsByFunctionPaginator(v.Client, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String(fn)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("list versions: %w", err)
		}
		for _, c := range page.Versions {
			if ver := aws.ToString(c.Version); ver != "$LATEST" {
				out = append(out, name+":"+ver)
			}
		}
	}
	return out, name + ":" + aws.ToString(a.FunctionVersion), nil
}

// Delete implements sweeper.Versions.
func (v StepVersions) Delete(ctx context.Context, version string) error {
	fn, _, err := splitAlias(v.AliasARN)
	if err != nil {
		return err
	}
	q := version[strings.LastIndexByte(version, ':')+1:]
	_, err = v.Client.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String(fn), Qualifier: aws.String(q)})
	return err
}
