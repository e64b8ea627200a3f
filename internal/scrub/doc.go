// Package scrub masks configured secret values wherever Keel writes or
// serves text: the debug bundle, the HTTP API (GET /v1/deployment, the
// run data the viewer reads), the logs and the exported traces.
//
// Masking by field name (a configuration field ending in Key, Token,
// Secret, ...) misses a credential that sits inside a value: an OTLP
// header map, the password of a URL's userinfo. So internal/config
// collects every configured secret value once ([config.Config.Secrets]),
// compose and keel dev add what they make themselves (the dev token), and
// each output passes its text through one [Secrets] before it leaves the
// process. What is stored (events, checkpoints, artifacts) is never
// rewritten: only what is shown is.
//
// A value is matched as it is and in the encodings it takes on the way
// out (JSON string escaping, Go quoting as slog's text handler writes,
// URL query and path escaping). Values shorter than [MinLen] are not
// matched: a one-letter "secret" would garble every output, and cannot
// be a credential worth the name.
package scrub
