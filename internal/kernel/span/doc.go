// Package span names what the harness reports to telemetry: the
// descriptors of a Step, a model call, a tool call, an operation, an
// approval and a run's end, and the handles of the spans in flight.
//
// It exists so that the harness and the exporter meet on neutral ground:
// the harness declares the telemetry it calls (harness.Telemetry) in
// these types, internal/observe/otelkeel implements it with OpenTelemetry, and
// neither the harness nor this package links an exporter, a cloud SDK or
// configuration. It holds plain data and interfaces only.
package span
