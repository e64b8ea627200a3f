//go:build !keel_env_aws

package compose

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// LoadAWSConfig loads the default AWS configuration (credentials, region,
// AWS_ENDPOINT_URL); the region defaults to us-east-1 so a local endpoint
// needs no more. Only a process's entry calls it; constructors take an
// aws.Config.
func LoadAWSConfig(ctx context.Context) (aws.Config, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return c, fmt.Errorf("AWS configuration: %w", err)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	return c, nil
}
