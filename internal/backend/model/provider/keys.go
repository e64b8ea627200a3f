//go:build (!keel_no_anthropic || !keel_no_openai) && !keel_no_models

package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// apiKey reads a key from the secret arn when it is set, else takes key.
// keyVar and arnVar name the variables in errors, which carry the ARN but
// never a key.
func apiKey(ctx context.Context, secrets SecretGetter, key, arn, keyVar, arnVar string) (string, error) {
	if arn != "" {
		if secrets == nil {
			return "", fmt.Errorf("%s is set but no Secrets Manager client was given", arnVar)
		}
		out, err := secrets.SecretString(ctx, arn)
		if err != nil {
			return "", fmt.Errorf("%s: reading secret %s: %w", arnVar, arn, err)
		}
		k := secretKey(out, keyVar)
		if k == "" {
			return "", fmt.Errorf("%s: secret %s holds no API key (a plain string, or JSON with \"api_key\" or %q)", arnVar, arn, keyVar)
		}
		return k, nil
	}
	if key != "" {
		return key, nil
	}
	return "", fmt.Errorf("no API key: set %s or %s", keyVar, arnVar)
}

// secretKey takes the key out of a secret: a JSON object's "api_key" (or
// envVar) field, or else the whole string.
func secretKey(s, envVar string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		var m map[string]string
		if json.Unmarshal([]byte(s), &m) != nil {
			return ""
		}
		if k := m["api_key"]; k != "" {
			return k
		}
		return m[envVar]
	}
	return s
}
