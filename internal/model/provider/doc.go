// Package provider chooses a model provider from configuration, the way a
// process starts: KEEL_MODEL=anthropic:<model> | openai:<model> |
// bedrock:<model-id> | <registered>:<arg>.
//
// Contracts:
//   - New and FromEnv read configuration only through Deps.Getenv and take
//     every client they use from Deps (the HTTP client, the aws.Config, the
//     Secrets Manager client); they do no I/O except reading a key from
//     Secrets Manager when a KEEL_*_SECRET_ARN is set;
//   - built-in providers come back wrapped in model.NewTransport; a
//     registered Factory's Model comes back as it is (the harness
//     registers "scripted" this way, so this package does not import it);
//   - a key named by KEEL_ANTHROPIC_SECRET_ARN / KEEL_OPENAI_SECRET_ARN wins
//     over ANTHROPIC_API_KEY / OPENAI_API_KEY; the secret is a plain string
//     or JSON with an "api_key" field. No error, from here or from a call,
//     carries a key;
//   - KEEL_MODEL_TPM builds a token-rate limiter for the returned Model
//     when Deps.Limiter is nil: build one Model per process (it is safe for
//     concurrent use) or share one Limiter across Models.
package provider
