// Package awssecret reads a secret's value from AWS Secrets Manager, for
// the credentials a program hands to Keel itself, such as an MCP server's
// token:
//
//	keel.MCPServer{Name: "gh", URL: "https://…", BearerTokenFrom: awssecret.From("keel/mcp-gh")}
//
// It uses the process's AWS configuration: on AWS the role's credentials
// (the CDK context keel:appSecretNames lets every function and the task
// read the secrets it names), elsewhere the usual AWS_* variables and
// AWS_ENDPOINT_URL. It is a package of its own so that only programs that
// use it link the Secrets Manager client.
package awssecret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// From returns a function that reads the secret id (a name or an ARN)
// each time it is called. A secret whose value is a JSON object with a
// "token" field gives that field; any other value is taken whole.
func From(id string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return "", fmt.Errorf("awssecret %s: AWS configuration: %w", id, err)
		}
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		out, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			return "", fmt.Errorf("awssecret %s: %w", id, err)
		}
		v := aws.ToString(out.SecretString)
		if v == "" {
			return "", errors.New("awssecret " + id + ": the secret has no string value")
		}
		var obj struct {
			Token string `json:"token"`
		}
		if json.Unmarshal([]byte(v), &obj) == nil && obj.Token != "" {
			return obj.Token, nil
		}
		return v, nil
	}
}
