// Package mcptool makes the tools of an MCP server (Model Context
// Protocol, github.com/modelcontextprotocol/go-sdk) into Keel tools: a
// remote server over streamable HTTP, or a local one run as a child
// process over stdio. The public API is keel.MCPServer; this package is
// its machinery.
//
// # Modes
//
// A server's tool annotations are hints from a server the operator may
// not trust, so on an untrusted server (the default) they can only make a
// tool safer; on a server the operator declares trusted they are taken at
// their word. The operator can set any tool's mode and promises
// explicitly, which wins over both. [ModeFor] is the rule:
//
//	annotations                          untrusted server                   trusted server
//	readOnlyHint: true                   effect, confirm_once, none         safe_readonly
//	idempotentHint: true (not read-only) mutating effect, none              mutating effect, idempotency_key
//	destructiveHint: false (additive)    mutating effect, none              mutating effect, none
//	no annotations, or destructive       mutating effect, none              mutating effect, none
//	operator's MCPTool.Mode / Promises   as the operator says               as the operator says
//
// Why an untrusted readOnlyHint gives an effect allowed once per session
// (confirm_once) and not safe_readonly: the hint is the one claim that
// would let a call run with no person and run again after a crash, and a
// server that lies about it (a "read" that writes) would then act with
// nobody having allowed it, or act twice. Asking a person once is about
// permission and says nothing about what a crash mid-call means, so the
// call is still an effect: its intent is recorded before it is sent, the
// operation id goes in _meta, and an outcome a crash lost is handed to a
// person, never sent again — unless the operator declared the server or
// the tool idempotent. Only the operator's own trust (Trusted, or a
// tool's Mode safe_readonly or confirm_once) makes an MCP call a read
// that may repeat.
//
// An effect's promises say what Keel does when its outcome is unknown (a
// crash between sending and recording, a timeout, a disconnect): with
// none, the run ends needs_human for a person to settle; with
// idempotency_key it sends the same call again with the same operation
// id. Keel sends the operation id in the request's _meta under
// "keel/operation_id" on every call and every re-send, so a server that
// deduplicates by it can be declared so (keel.MCPServer.Promises or
// MCPTool.Promises = IdempotentByKey). An MCP server cannot be looked up,
// so LookupByKey is refused.
//
// # Terms recorded per run
//
// A tool's mode is a function of the operator's policy and the terms as
// listed for the run, not of the listing the worker saw at start: each
// tool is a tool.Judged, which the harness asks for the tool under the
// run's terms before it plans, permits or runs a call. At a run's first
// use of a server, the server's tool list (each tool's name, the sha256 of
// its input schema and annotations, the annotations, and the mode, effect
// and promises judged from them) is recorded as an artifact of the run,
// first writer wins, and the run's calls are judged from that record. So
// a new run after the server changed its annotations runs under the new
// terms' mode, in the same worker. Every later call, in any process, lists
// the server again and compares: a tool whose schema or annotations
// changed refuses (an error naming the tool and both hashes, recorded as
// tool_failed) rather than run under terms the run did not start with.
//
// # Credentials and limits
//
// A bearer token and header values are held by the client (added to each
// HTTP request by its transport) and declared as the tools' secrets, so
// the harness masks them in whatever it records or shows the model.
// Every call has a timeout; a context that ends (the run cancelled, the
// step's budget over) cancels the request at the server. A tool list over
// MaxTools, a result over MaxResultBytes, and a server that does not
// speak JSON-RPC each give an error naming the server.
package mcptool
