// Package awswire builds the AWS-facing parts of Keel from an aws.Config:
// the Step Functions task-token client used by the long-running task and
// the approval flow. Clients are injected with their endpoints, so the same
// code talks to AWS, to LocalStack, or to `keel dev`'s local Step Functions
// endpoint.
package awswire

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// Tokens sends task-token outcomes with the Step Functions API.
type Tokens struct{ Client *sfn.Client }

// SendTaskSuccess implements longtask.Tokens and handlers.TaskTokens.
func (t Tokens) SendTaskSuccess(ctx context.Context, token, output string) error {
	_, err := t.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(output)})
	if err != nil {
		return fmt.Errorf("SendTaskSuccess: %w", err)
	}
	return nil
}

// SendTaskFailure implements longtask.Tokens and handlers.TaskTokens.
func (t Tokens) SendTaskFailure(ctx context.Context, token, errName, cause string) error {
	if len(cause) > 32768 {
		cause = cause[:32768]
	}
	_, err := t.Client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(token), Error: aws.String(errName), Cause: aws.String(cause)})
	if err != nil {
		return fmt.Errorf("SendTaskFailure: %w", err)
	}
	return nil
}

// SendTaskHeartbeat implements longtask.Tokens.
func (t Tokens) SendTaskHeartbeat(ctx context.Context, token string) error {
	_, err := t.Client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	if err != nil {
		return fmt.Errorf("SendTaskHeartbeat: %w", err)
	}
	return nil
}

// LocalSFN returns a Step Functions client for `keel dev`'s endpoint: the
// access key is "keel-dev" and the secret the dev token.
func LocalSFN(endpoint, token string) *sfn.Client {
	return sfn.New(sfn.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("keel-dev", token, ""),
	})
}
