// Package explain tells the story of a run from its records alone — the
// run row, events, plan items, operations, approvals and checkpoints — so
// that a failed run can be understood the next day without running it
// again: the path of decisions, the first error and what followed, where
// tokens, time and spend went by tool and by repeated identical call (the
// same tool with the same input hash), what is still open and why, and
// which keel commands a person can run next.
//
// It reads what package telemetry rebuilds ([telemetry.Rebuild]), so the
// story, the bundle's trace.json and its tool_calls.csv agree. A model
// call's tokens are counted to the tool calls its answer asked for
// (shared evenly): what deciding on a call cost. Nothing here calls a
// model or a tool.
package explain
