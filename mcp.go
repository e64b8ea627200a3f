package keel

import (
	"context"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/compose"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/tool"
	"github.com/keelrun/keel/internal/mcptool"
)

// MCPServer is an MCP server (Model Context Protocol) whose tools an agent
// may call next to its Go tools: remote over streamable HTTP (URL) or
// local over stdio (Command, a child process of each worker). Keel lists
// the server's tools when a worker builds its agents (keel dev, a step, a
// task), keeps the connection for the calls, and connects again after it
// breaks; a server that cannot be reached then stops that worker with an
// error naming it.
//
// Each tool gets a mode by this rule. Annotations are hints from a server
// the operator may not trust: unless Trusted, they can only make a tool
// safer. Tools overrides both.
//
//	annotations                   untrusted (default)                 Trusted
//	readOnlyHint                  Effect allowed once per session      ReadOnly
//	idempotentHint, not read-only Effect, PromisesNothing             Effect, IdempotentByKey
//	anything else, or none        Effect, PromisesNothing             Effect, PromisesNothing
//
// An untrusted readOnlyHint is not believed: a server that lies about it
// (a "read" that writes) would otherwise act without any person having
// allowed it, and again after a crash. Such a tool is an effect a person
// allows once per session (MCPEffectConfirmOnce): asked once, then run
// under the operation protocol like every effect. An effect runs under
// the operation protocol, as [Effect] does: the intent is recorded before
// the call, and an unknown outcome (a crash, a timeout, a disconnect
// mid-call) ends the run needs_human, never sent again — unless the
// server is declared to deduplicate (Promises or MCPTool.Promises
// IdempotentByKey), in which case Keel sends the call again. Only the
// operator's trust makes a call a read that may repeat after a crash:
// Trusted, or a tool's Mode MCPReadOnly or MCPConfirmOnce. Keel sends the
// operation id in the request's _meta as "keel/operation_id" on every
// call and re-send of an effect (and "keel/run_id", "keel/call_id" on
// every call).
//
// The rule is applied to the terms each run holds, not once at start: at
// a run's first call of the server, its tool list (each tool's schema and
// annotations, hashed, and the mode made of them) is recorded with the
// run, and the run's calls run under that mode, so a server that changes
// its annotations while a worker is up is judged again for the next run.
// A tool whose schema or annotations change later in the run refuses its
// calls with a tool_failed event naming both hashes.
//
// BearerToken and Headers are credentials: held by Keel's client, sent on
// each request, masked in whatever Keel records, logs or shows the model;
// give them from your own configuration (read inside [MainFunc], from the
// environment or a secret store), never in Instructions or arguments.
type MCPServer struct {
	// Name identifies the server in errors, records and tool names (the
	// model sees NAME_TOOL unless Prefix says otherwise): 1 to 64 of
	// A-Z a-z 0-9 _ -. Required, unique within the agent.
	Name string
	// URL is a streamable HTTP endpoint (http:// or https://, no
	// credential in it). Set exactly one of URL and Command.
	URL string
	// Command runs a stdio server: the program and its arguments.
	Command []string
	// Env is added to a stdio server's environment (NAME=value): where a
	// local server gets its credentials. Dir is its working directory.
	Env []string
	Dir string
	// Unsandboxed runs a stdio server as a plain child of the worker even
	// when the agent runs commands in a sandbox: it then sees the worker's
	// files and environment, credentials included, and serves all the
	// worker's runs. Without it, a stdio server of such an agent runs in
	// the sandbox, one server per run: the run's workspace at /workspace,
	// a read-only system, its own /tmp, no file of the worker's but its
	// program's directory, no environment but Env (and PATH, HOME, LANG),
	// and no network unless Network. An agent without a sandbox runs its
	// stdio servers as plain children, with the worker's environment and
	// Env added.
	Unsandboxed bool
	// Network gives a stdio server in the agent's sandbox the worker's
	// network (not filtered by CommandPolicy.AllowHosts: that proxy holds
	// per command). Its files and environment stay out of reach.
	Network bool
	// BearerToken is sent as "Authorization: Bearer ..." to a URL server.
	BearerToken string
	// BearerTokenFrom, instead of BearerToken, gives the token each time
	// Keel's client connects (when a worker builds the agent, and again
	// after a connection broke), so a rotated secret is picked up without
	// a deploy: for example awssecret.From("keel/mcp-gh") on AWS, with
	// the CDK context keel:appSecretNames letting every role read it. Its
	// value is masked as BearerToken's is.
	BearerTokenFrom func(ctx context.Context) (string, error)
	// Headers are sent with every request to a URL server.
	Headers map[string]string
	// OAuth authenticates to a URL server as a pre-registered OAuth
	// client (the client credentials grant), instead of BearerToken: the
	// authorization server is found from the server's metadata (RFC 9728,
	// RFC 8414), and the access token it grants is fetched, sent and
	// renewed by Keel's client. The client secret and every access token
	// sent are masked as BearerToken is (a token renewed in the middle of
	// a Step is masked from the next Step on).
	OAuth *MCPOAuth
	// Trusted takes the server's annotations at their word (see the rule).
	Trusted bool
	// Promises declares how the server deduplicates, for all its
	// effects: IdempotentByKey when it applies a call once per
	// "keel/operation_id". LookupByKey is refused: a server cannot be asked.
	Promises Promise
	// Tools sets the mode or promises of tools by the server's own names;
	// it wins over annotations and Trusted.
	Tools map[string]MCPTool
	// Only, when not empty, exposes only these tools (the server's names).
	Only []string
	// Prefix goes before each tool's name for the model; "" means Name+"_".
	Prefix string
	// Timeout bounds each call (default 2 minutes): a call that hangs
	// ends with an error, an unknown outcome for an effect.
	Timeout time.Duration
	// MaxTools refuses a server that lists more tools (default 256).
	MaxTools int
	// MaxResultBytes bounds a result kept (default 1 MiB): a read over it
	// fails; an effect over it succeeded, and its result is dropped.
	MaxResultBytes int
	// Count, optional and for `keel crashtest` only, says how many times
	// the server applied operationID with the tool (the server's name).
	// A run never calls it.
	Count func(ctx context.Context, tool, operationID string) (int, error)
}

// MCPOAuth is an OAuth client registered with an MCP server's
// authorization server.
type MCPOAuth struct {
	ClientID, ClientSecret string
}

// MCPTool is the operator's word on one tool of an [MCPServer].
type MCPTool struct {
	// Mode is how the tool runs; the zero value follows the rule.
	Mode MCPMode
	// Promises adds to the server's for this tool (IdempotentByKey: it
	// applies a call once per "keel/operation_id").
	Promises Promise
}

// MCPMode is how an MCP tool runs, set by the operator.
type MCPMode uint8

// The modes an operator can give an MCP tool.
const (
	// MCPByRule follows the rule on [MCPServer].
	MCPByRule MCPMode = iota
	// MCPReadOnly runs as [ReadOnly]: no person, may repeat after a crash.
	MCPReadOnly
	// MCPConfirmOnce runs as [ConfirmOnce]: a read a person allows once
	// per session, which, being the operator's word that it is a read,
	// may repeat after a crash (an untrusted readOnlyHint alone gives
	// MCPEffectConfirmOnce instead).
	MCPConfirmOnce
	// MCPEffect runs as an [Effect]: approved per call, under the
	// operation protocol.
	MCPEffect
	// MCPEffectConfirmOnce is an effect a person allows once per session.
	MCPEffectConfirmOnce
)

func (s MCPServer) internal(sandboxed bool) (mcptool.Server, error) {
	if s.Promises&^(IdempotentByKey|LookupByKey) != 0 {
		return mcptool.Server{}, fmt.Errorf("MCP server %q: unknown Promises bits %#x", s.Name, uint8(s.Promises))
	}
	out := mcptool.Server{Name: s.Name, URL: s.URL, Command: s.Command, Env: s.Env, Dir: s.Dir,
		BearerToken: s.BearerToken, BearerTokenFrom: s.BearerTokenFrom, Headers: s.Headers, Trusted: s.Trusted, Contract: s.Promises.contract(),
		Only: s.Only, Prefix: s.Prefix, Timeout: s.Timeout, MaxTools: s.MaxTools, MaxResultBytes: s.MaxResultBytes,
		Count: s.Count, Tools: map[string]mcptool.Override{},
		OAuthClientID: s.OAuth.clientID(), OAuthClientSecret: s.OAuth.clientSecret(),
		Sandboxed: sandboxed && len(s.Command) > 0 && !s.Unsandboxed, Network: s.Network}
	for name, t := range s.Tools {
		o := mcptool.Override{Contract: t.Promises.contract()}
		switch t.Mode {
		case MCPByRule:
		case MCPReadOnly:
			o.Mode = run.ModeSafeReadonly
		case MCPConfirmOnce:
			o.Mode = run.ModeConfirmOnce
		case MCPEffect:
			o.Mode = run.ModeMutating
		case MCPEffectConfirmOnce:
			o.Mode, o.ConfirmOnce = run.ModeMutating, true
		default:
			return mcptool.Server{}, fmt.Errorf("MCP server %q: Tools[%q].Mode %d is not an MCPMode", s.Name, name, t.Mode)
		}
		out.Tools[name] = o
	}
	return out, out.Check()
}

func (o *MCPOAuth) clientID() string {
	if o == nil {
		return ""
	}
	return o.ClientID
}

func (o *MCPOAuth) clientSecret() string {
	if o == nil {
		return ""
	}
	return o.ClientSecret
}

// mcpConnectTimeout bounds listing a server's tools while a worker builds
// its agents.
const mcpConnectTimeout = time.Minute

// mcpTools checks an agent's servers now and returns what lists their
// tools when a worker builds the agent.
func mcpTools(servers []MCPServer, sandboxed bool) (func(compose.ToolEnv) ([]tool.Tool, error), error) {
	var ss []mcptool.Server
	seen := map[string]bool{}
	for _, s := range servers {
		in, err := s.internal(sandboxed)
		if err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("MCP server %q is given twice", s.Name)
		}
		seen[s.Name] = true
		ss = append(ss, in)
	}
	return func(env compose.ToolEnv) ([]tool.Tool, error) {
		var out []tool.Tool
		for _, s := range ss {
			s.Isolate = env.ServerSandbox
			ctx, cancel := context.WithTimeout(context.Background(), mcpConnectTimeout)
			ts, err := mcptool.Open(ctx, s, env.Artifacts)
			cancel()
			if err != nil {
				return nil, err
			}
			out = append(out, ts...)
		}
		return out, nil
	}, nil
}
