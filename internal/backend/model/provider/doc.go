// Package provider builds a model provider from a spec, the way a process
// starts: anthropic:<model> | openai:<model> | bedrock:<model-id> |
// <registered>:<arg> (the value of KEEL_MODEL, which the caller reads).
//
// Contracts:
//   - ParseSettings is the only reader of the environment: it turns the
//     KEEL_MODEL_* and provider variables into Settings, and its errors
//     name the variable. New reads no environment; it takes its
//     configuration from Settings and every client it uses from Deps (the
//     HTTP client, the aws.Config, the Secrets Manager client), and does
//     no I/O except reading a key from Secrets Manager when a secret ARN
//     is set;
//   - built-in providers come back wrapped in model.NewTransport; a
//     registered Factory's Model comes back as it is (the harness
//     registers "scripted" this way, so this package does not import it);
//   - a key named by a secret ARN (KEEL_ANTHROPIC_SECRET_ARN /
//     KEEL_OPENAI_SECRET_ARN, or else KEEL_MODEL_SECRET_ARN) wins over
//     ANTHROPIC_API_KEY / OPENAI_API_KEY; the secret is a plain string or
//     JSON with an "api_key" field. No error, from here or from a call,
//     carries a key, and a Settings prints and logs its keys redacted;
//   - Settings.TokensPerMinute (KEEL_MODEL_TPM) builds a token-rate limiter
//     for the returned Model when Deps.Limiter is nil: build one Model per
//     process (it is safe for concurrent use) or share one Limiter across
//     Models.
package provider
