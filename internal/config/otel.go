package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// OTel is the OpenTelemetry configuration, read from the standard OTEL_*
// variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/)
// so that a collector's usual settings work unchanged. Keel exports over
// OTLP/HTTP with protobuf payloads only. With no endpoint variable set,
// or OTEL_SDK_DISABLED=true, nothing is exported and no SDK is built.
type OTel struct {
	// Disabled is OTEL_SDK_DISABLED=true.
	Disabled bool
	// TracesURL and MetricsURL are the full export URLs:
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is), else
	// OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces"; likewise for metrics
	// with OTEL_EXPORTER_OTLP_METRICS_ENDPOINT and "/v1/metrics".
	TracesURL, MetricsURL string
	// Headers are OTEL_EXPORTER_OTLP_HEADERS (key=value,...), with the
	// signal-specific variables added on top. They may hold a collector's
	// credential: never log them.
	TraceHeaders, MetricHeaders map[string]string
	// ServiceName is OTEL_SERVICE_NAME (default "keel").
	ServiceName string
	// ResourceAttributes are OTEL_RESOURCE_ATTRIBUTES (key=value,...).
	ResourceAttributes map[string]string
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER (default
	// parentbased_always_on) and OTEL_TRACES_SAMPLER_ARG (the ratio of
	// the traceidratio samplers, default 1).
	Sampler    string
	SamplerArg float64
	// MetricInterval is OTEL_METRIC_EXPORT_INTERVAL in milliseconds
	// (default 60000). A Lambda role also flushes at the end of every
	// invocation.
	MetricInterval time.Duration
	// BatchDelay is OTEL_BSP_SCHEDULE_DELAY in milliseconds (default
	// 5000): how long ended spans wait to be exported together.
	BatchDelay time.Duration
	// CaptureContent is OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true:
	// prompts, answers, tool arguments and results go on the spans (after
	// the harness's secret redaction). Off by default.
	CaptureContent bool
}

// Enabled reports whether anything is exported.
func (o OTel) Enabled() bool {
	return !o.Disabled && (o.TracesURL != "" || o.MetricsURL != "")
}

// Samplers OTEL_TRACES_SAMPLER may name.
var samplers = map[string]bool{"always_on": true, "always_off": true, "traceidratio": true,
	"parentbased_always_on": true, "parentbased_always_off": true, "parentbased_traceidratio": true}

func parseOTel(get func(string) string) (OTel, error) {
	o := OTel{ServiceName: get("OTEL_SERVICE_NAME"), Sampler: strings.ToLower(get("OTEL_TRACES_SAMPLER")), SamplerArg: 1}
	var err error
	if o.Disabled, err = boolVar("OTEL_SDK_DISABLED", get("OTEL_SDK_DISABLED")); err != nil {
		return o, err
	}
	if o.CaptureContent, err = boolVar("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")); err != nil {
		return o, err
	}
	for _, p := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if v := get(p); v != "" && v != "http/protobuf" {
			return o, fmt.Errorf("%s %q: Keel exports OTLP over HTTP with protobuf only (http/protobuf)", p, v)
		}
	}
	base := get("OTEL_EXPORTER_OTLP_ENDPOINT")
	if o.TracesURL, err = signalURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), base, "v1/traces"); err != nil {
		return o, err
	}
	if o.MetricsURL, err = signalURL("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), base, "v1/metrics"); err != nil {
		return o, err
	}
	common, err := kvList("OTEL_EXPORTER_OTLP_HEADERS", get("OTEL_EXPORTER_OTLP_HEADERS"), true)
	if err != nil {
		return o, err
	}
	for _, sig := range []struct {
		name string
		to   *map[string]string
	}{{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", &o.TraceHeaders}, {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", &o.MetricHeaders}} {
		own, err := kvList(sig.name, get(sig.name), true)
		if err != nil {
			return o, err
		}
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range own {
			m[k] = v
		}
		*sig.to = m
	}
	if o.ResourceAttributes, err = kvList("OTEL_RESOURCE_ATTRIBUTES", get("OTEL_RESOURCE_ATTRIBUTES"), false); err != nil {
		return o, err
	}
	if o.Sampler != "" && !samplers[o.Sampler] {
		return o, fmt.Errorf("OTEL_TRACES_SAMPLER %q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", o.Sampler)
	}
	if s := get("OTEL_TRACES_SAMPLER_ARG"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || f > 1 {
			return o, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q: want a ratio between 0 and 1", s)
		}
		o.SamplerArg = f
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"OTEL_METRIC_EXPORT_INTERVAL", &o.MetricInterval}, {"OTEL_BSP_SCHEDULE_DELAY", &o.BatchDelay}} {
		if s := get(d.name); s != "" {
			ms, err := strconv.ParseInt(s, 10, 64)
			if err != nil || ms <= 0 {
				return o, fmt.Errorf("%s %q: want a positive number of milliseconds", d.name, s)
			}
			*d.to = time.Duration(ms) * time.Millisecond
		}
	}
	return o, nil
}

// signalURL is a signal's export URL: its own variable as is, else the
// base endpoint with the signal's path appended (the OTLP/HTTP rule).
func signalURL(name, own, base, path string) (string, error) {
	v, from := own, name
	if v == "" {
		if base == "" {
			return "", nil
		}
		v, from = strings.TrimRight(base, "/")+"/"+path, "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: want an http(s) URL such as http://127.0.0.1:4318", from)
	}
	return v, nil
}

// kvList reads key=value,... with URL-encoded values (the OTEL_* list
// format). secret: the values are not echoed in errors.
func kvList(name, s string, secret bool) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		k = strings.TrimSpace(k)
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		dv, err := url.QueryUnescape(strings.TrimSpace(v))
		if !ok || k == "" || err != nil {
			if secret {
				return nil, fmt.Errorf("%s: want key=value[,key=value] (value not shown: it may be a credential)", name)
			}
			return nil, fmt.Errorf("%s %q: want key=value[,key=value]", name, s)
		}
		out[k] = dv
	}
	return out, nil
}

func boolVar(name, s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%s %q: want true or false", name, s)
}
