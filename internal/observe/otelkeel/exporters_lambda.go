//go:build keel_lambda

package otelkeel

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keelrun/keel/internal/observe/otelkeel/otlphttp"
)

// A deployed build (-tags keel_lambda) exports through otlphttp: the same
// OTLP/HTTP protobuf payloads as the official exporters (its tests compare
// them), without the protobuf runtime, gRPC and grpc-gateway those link —
// 2.9 MB of every bootstrap, and their initialisers at every cold start.

func newSpanExporter(_ context.Context, url string, headers map[string]string) (sdktrace.SpanExporter, error) {
	return otlphttp.NewSpanExporter(url, headers, nil)
}

func newMetricExporter(_ context.Context, url string, headers map[string]string) (sdkmetric.Exporter, error) {
	return otlphttp.NewMetricExporter(url, headers, nil)
}
