// Package agentdef turns Go functions into the harness's tools: the typed
// adapters behind the public keel.ReadOnly, keel.ConfirmOnce and
// keel.Effect (argument decoding, the JSON Schema reflected from the
// arguments struct, results to the model) and the call context a tool's
// function reads ([CallFrom]: the run, the checkpoint, progress, the
// artifact store).
//
// It lives under internal/ so that the public package stays small and so
// that Keel's own tests can build tools from the same functions without
// going through keel.Main.
package agentdef
