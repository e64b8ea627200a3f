package provider_test

import (
	"context"
	"fmt"
	"os"

	"github.com/keelrun/keel/internal/backend/model/provider"
	"github.com/keelrun/keel/internal/kernel/model"
)

// A process parses its model settings once, where it reads the rest of
// its configuration, and builds the Model its KEEL_MODEL names from them.
func ExampleNew() {
	getenv := env(map[string]string{
		"KEEL_MODEL":            "echo:hello",
		"KEEL_MODEL_TPM":        "400000",
		"KEEL_MODEL_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:keel/model-key",
	}) // os.Getenv in production
	s, err := provider.ParseSettings(getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	m, err := provider.New(context.Background(), getenv("KEEL_MODEL"), s, provider.Deps{
		Factories: map[string]provider.Factory{
			"echo": func(_ context.Context, arg string) (model.Model, error) { return fixedModel{arg}, nil },
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	resp, _ := m.Generate(context.Background(), model.Request{})
	fmt.Println(resp.Text, s.TokensPerMinute, s.OpenAISecretARN)
	// Output: hello 400000 arn:aws:secretsmanager:us-east-1:123456789012:secret:keel/model-key
}
