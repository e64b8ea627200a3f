// Package otlphttp exports spans and metrics over OTLP/HTTP with binary
// protobuf payloads — what otlptracehttp and otlpmetrichttp send — written
// with protowire (the wire format's low-level encoder) instead of the
// generated OTLP types. Those types bring the protobuf runtime, and their
// collector packages gRPC with its HTTP/2 stack and grpc-gateway: 2.9 MB
// of each 15 MB Lambda bootstrap, and their package initialisers at every
// cold start. The deployed builds (-tags keel_lambda) export through this
// package; every other build through the official exporters.
//
// The payloads are held to the official exporters' by the tests: the same
// spans and metrics go through both, and what each sent is decoded with
// the generated OTLP types and compared field by field (proto.Equal).
//
// Contracts and limits:
//   - one POST per export, to the URL as given (…/v1/traces,
//     …/v1/metrics), Content-Type application/x-protobuf, with the
//     configured headers; no compression;
//   - 429, 502, 503 and 504 are retried with backoff (honouring
//     Retry-After) until the export's context ends, at most 5 attempts;
//     any other non-2xx status is an error naming the status, never
//     carrying the response body or a header value;
//   - each export is bounded by 10 s (the official default timeout) or
//     the caller's context, whichever ends first;
//   - metrics use the SDK's default temporality (cumulative) and
//     aggregations; the OTEL_EXPORTER_OTLP_* variables beyond the endpoint
//     and headers Keel passes (compression, certificates, timeout,
//     temporality preference) are not read;
//   - exponential histograms and summaries, which Keel's instruments never
//     produce, are encoded too.
package otlphttp
