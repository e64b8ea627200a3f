package config

import (
	"strings"
	"testing"
	"time"
)

func TestOTelFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, o OTel)
		wantErr string // a substring naming the variable
	}{
		{name: "unset: off", env: nil, check: func(t *testing.T, o OTel) {
			if o.Enabled() {
				t.Fatalf("enabled with no endpoint: %+v", o)
			}
		}},
		{name: "base endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"}, check: func(t *testing.T, o OTel) {
			if !o.Enabled() || o.TracesURL != "http://127.0.0.1:4318/v1/traces" || o.MetricsURL != "http://127.0.0.1:4318/v1/metrics" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "signal endpoint as is", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector:4318/custom"}, check: func(t *testing.T, o OTel) {
			if o.TracesURL != "https://collector:4318/custom" || o.MetricsURL != "" {
				t.Fatalf("%+v", o)
			}
		}},
		{name: "disabled wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, check: func(t *testing.T, o OTel) {
			if o.Enabled() {
				t.Fatal("enabled with OTEL_SDK_DISABLED=true")
			}
		}},
		{name: "headers and resource", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1",
			"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc,x=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x=2",
			"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=dev", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
			"OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_METRIC_EXPORT_INTERVAL": "500", "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
			check: func(t *testing.T, o OTel) {
				if o.TraceHeaders["authorization"] != "Bearer abc" || o.TraceHeaders["x"] != "2" || o.MetricHeaders["x"] != "1" ||
					o.ResourceAttributes["deployment.environment"] != "dev" || o.SamplerArg != 0.25 ||
					o.MetricInterval != 500*time.Millisecond || o.BatchDelay != 200*time.Millisecond || !o.CaptureContent {
					t.Fatalf("%+v", o)
				}
			}},
		{name: "grpc refused", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{name: "bad endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"}, wantErr: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "bad batch delay", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "soon"}, wantErr: "OTEL_BSP_SCHEDULE_DELAY"},
		{name: "bad sampler", env: map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}, wantErr: "OTEL_TRACES_SAMPLER"},
		{name: "bad ratio", env: map[string]string{"OTEL_TRACES_SAMPLER_ARG": "2"}, wantErr: "OTEL_TRACES_SAMPLER_ARG"},
		{name: "bad capture", env: map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "yes"}, wantErr: "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"},
		{name: "bad headers hide the value", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "secret-token-no-equals"}, wantErr: "OTEL_EXPORTER_OTLP_HEADERS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret-token") {
					t.Fatalf("error echoes a header value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c.OTel)
		})
	}
}
