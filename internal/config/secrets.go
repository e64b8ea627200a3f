package config

import (
	"net/url"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/scrub"
)

// Secrets are the secret values of the configuration, collected once so
// that every output can mask them by value (internal/scrub): the model
// API keys, the Step Functions task token and local endpoint token, AWS
// secret keys from the environment, every OTLP header value (a
// collector's credential hides there), and the userinfo credential of
// every configured URL (the OTLP endpoints, the provider base URLs, the
// AWS and local Step Functions endpoints, an HTTP store or artifacts
// location): its password, or the user name when it stands alone (a
// token in https://TOKEN@host); and every query value of the webhook URL
// (https://hooks.example/x?token=…: receivers that cannot check a
// signature take their credential there).
func (c Config) Secrets() scrub.Secrets {
	vals := []string{c.Models.AnthropicAPIKey, c.Models.OpenAIAPIKey, c.SFNToken, c.TaskToken,
		c.Notify.WebhookSecret, c.Notify.SlackSecret, c.Notify.SMTPPassword, c.Notify.LinkKey}
	vals = append(vals, c.awsSecrets...)
	for _, h := range []map[string]string{c.OTel.TraceHeaders, c.OTel.MetricHeaders} {
		for _, v := range h {
			vals = append(vals, v)
		}
	}
	for _, u := range []string{c.OTel.TracesURL, c.OTel.MetricsURL, c.Models.AnthropicBaseURL, c.Models.OpenAIBaseURL,
		c.AWSEndpoint, c.SFNEndpoint, c.Store, c.Artifacts, c.Notify.WebhookURL} {
		vals = append(vals, userinfoSecrets(u)...)
	}
	vals = append(vals, querySecrets(c.Notify.WebhookURL)...)
	return scrub.New(slices.DeleteFunc(vals, func(s string) bool { return s == "" })...)
}

// userinfoSecrets is the credential in raw's userinfo, as written and
// unescaped: the password, or the user name when no password is given;
// none when there is no userinfo. It reads the authority by hand, so a
// URL that url.Parse refuses still gives up its credential.
func userinfoSecrets(raw string) []string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return nil
	}
	user, pass, hasPass := strings.Cut(rest[:at], ":")
	cred := user
	if hasPass {
		cred = pass
	}
	out := []string{cred}
	if dec, err := url.PathUnescape(cred); err == nil && dec != cred {
		out = append(out, dec)
	}
	return out
}

// querySecrets are the values of raw's query, as written and unescaped.
// It cuts the query by hand, so a URL that url.Parse refuses still gives
// up its credential.
func querySecrets(raw string) []string {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return nil
	}
	q, _, _ = strings.Cut(q, "#")
	var out []string
	for _, kv := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' }) {
		_, v, _ := strings.Cut(kv, "=")
		out = append(out, v)
		if dec, err := url.QueryUnescape(v); err == nil && dec != v {
			out = append(out, dec)
		}
	}
	return out
}
