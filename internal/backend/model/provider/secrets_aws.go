//go:build !keel_no_models

package provider

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsManager is the SecretGetter of a Secrets Manager client.
func SecretsManager(c *secretsmanager.Client) SecretGetter { return smSecrets{c} }

type smSecrets struct{ c *secretsmanager.Client }

func (s smSecrets) SecretString(ctx context.Context, id string) (string, error) {
	out, err := s.c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.SecretString), nil
}
