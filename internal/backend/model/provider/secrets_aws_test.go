//go:build !keel_no_models

package provider_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/backend/model/provider"
)

// SecretsManager reads a secret's string through the SDK client, and
// passes a missing secret's error on.
func TestSecretsManager(t *testing.T) {
	const arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:keel/k-AbCdEf"
	sm := provider.SecretsManager(secretsClient(t, map[string]string{arn: "sk-value-0123456789"}))
	got, err := sm.SecretString(context.Background(), arn)
	if err != nil || got != "sk-value-0123456789" {
		t.Fatalf("SecretString = %q, %v", got, err)
	}
	if _, err := sm.SecretString(context.Background(), arn+"-missing"); err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Fatalf("a missing secret: err = %v, want ResourceNotFoundException", err)
	}
}
