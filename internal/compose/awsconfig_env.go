//go:build keel_env_aws

package compose

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/keelrun/keel/internal/aws/awsbackend"
)

// loadAWSConfig is, with keel_env_aws (every role's build), the configuration a Lambda
// function's environment holds, or a Fargate task's (its container
// credentials endpoint): awsbackend.EnvConfig. A role build has no
// command line, so nothing reaches this but a role's own wiring; the point
// of the file is what it does not import: aws-sdk-go-v2/config, whose
// package initialisers alone keep the STS, SSO, sign-in and IMDS clients
// (their schema tables) in the binary — about a megabyte, and their init
// time — though a function never uses them.
func loadAWSConfig(context.Context) (aws.Config, error) {
	return awsbackend.EnvConfig(os.Getenv)
}
