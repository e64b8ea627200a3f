// Package otelkeel is Keel's OpenTelemetry instrumentation: the trace and
// meter providers every entrypoint builds from the standard OTEL_*
// variables ([Setup], called by internal/compose), and [Telemetry], the
// spans and metrics the harness records through it (its interface
// harness.Telemetry, in the types of package span).
//
// # Conventions followed
//
// Span and metric names and attributes follow the OpenTelemetry GenAI
// semantic conventions at revision v1.38.0 (status Development; the Go
// constants of go.opentelemetry.io/otel/semconv/v1.38.0):
//
//   - invoke_agent {agent}: one Step of a run (gen_ai.operation.name
//     invoke_agent, gen_ai.agent.name, gen_ai.conversation.id = the
//     run's session, gen_ai.provider.name, gen_ai.request.model).
//   - chat {model}: one model call, a client span (gen_ai.request.model,
//     gen_ai.response.model, gen_ai.response.id,
//     gen_ai.response.finish_reasons, gen_ai.usage.input_tokens and
//     output_tokens, error.type on failure).
//   - execute_tool {tool}: one tool call (gen_ai.tool.name,
//     gen_ai.tool.call.id, gen_ai.tool.type).
//
// Keel's own spans, in the keel.* namespace: keel.operation.dispatch and
// keel.operation.reconcile (the operation protocol), keel.approval.wait
// (from the approval's request to the Step that reads its decision,
// however many days and processes lie between), keel.lease.acquire and
// keel.lease.takeover, and keel.run {agent}, the run's root, written when
// the run ends with the span id its trace context named at creation.
// Every span carries keel.run.id; keel.operation.id and
// keel.checkpoint.id where they apply.
//
// # One trace per run
//
// A run's W3C trace context is made when the run is created
// (run.NewTraceParent) and stored with it. Each Step's invoke_agent span
// is a child of that remote context, so the Steps of one run — in keel
// dev, in each Lambda invocation, in the Fargate task, before and after a
// restart — share one trace id and one parent.
//
// # Content and secrets
//
// Prompts, answers, tool arguments and results are recorded only when
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and then only
// after the harness's redaction of every secret its tools declare; error
// messages on spans are redacted the same way, capture on or off.
//
// # Cost when off
//
// With no OTLP endpoint set, [Setup] builds no SDK and the harness gets a
// nil *Telemetry: every method of a nil *Telemetry, and of the nil
// [*Span] it starts, returns at once without allocating. (The harness
// holds its telemetry as an interface of its own, harness.Telemetry,
// that *Telemetry implements; internal/compose leaves it nil then, so
// the harness does not even call in.)
package otelkeel
