//go:build !keel_env_aws

package compose

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// loadAWSConfig loads the default AWS configuration (credentials, region,
// AWS_ENDPOINT_URL); the region defaults to us-east-1 so a local endpoint
// needs no more. Only the process-level constructors call it
// ([LoadBackends], [TaskDeps]); the others take an aws.Config.
func loadAWSConfig(ctx context.Context) (aws.Config, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return c, fmt.Errorf("AWS configuration: %w", err)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	return c, nil
}
