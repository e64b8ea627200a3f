package research_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/keelrun/keel/examples/research"
	"github.com/keelrun/keel/internal/model/scripted"
)

// This file is a stand-in for each provider's API: an httptest server that
// reads the provider's real request body, decides the research agent's next
// turn from it, and streams that turn back in the provider's real wire
// format, so that the official SDK clients are what decode it.

// call is one tool call the server streams.
type call struct {
	ID, Name string
	Args     string // the JSON arguments, as streamed
}

// answer is one turn the server streams, and the usage it reports.
type answer struct {
	Text string
	Call *call // nil: a final answer
	// Input is the uncached input, Cached the cache-read input; every
	// provider reports them in its own way, the model.Usage that comes out
	// must hold them apart.
	Input, Cached, Output int64
}

// seenCall, seenResult, seenMsg and seenReq are a request body brought to
// one shape, so that the checks are the same for every provider.
type seenCall struct {
	ID, Name string
	Args     json.RawMessage
}

type seenResult struct{ CallID, Content string }

type seenMsg struct {
	Role    string // user, assistant, tool
	Text    string
	Calls   []seenCall
	Results []seenResult
}

type seenReq struct {
	System   string
	Msgs     []seenMsg
	Tools    []string
	Streamed bool // the request asked for a stream (and, for OpenAI, its usage)
}

// wire is what differs between providers.
type wire struct {
	// path is where the SDK posts a call.
	path string
	// authorized checks the credentials of a request (the key, or a SigV4
	// signature made with the access key id).
	authorized func(r *http.Request) bool
	// parse brings a request body to the common shape.
	parse func(r *http.Request, body []byte) (seenReq, error)
	// stream writes one answer. cut > 0 breaks the stream after that many
	// fragments of the tool call's arguments, the way the provider's
	// connection would fail there.
	stream func(w http.ResponseWriter, a answer, respID string, cut int)
	// callID names the tool call of turn i, attempt n, the provider's way.
	callID func(turn, attempt int) string
}

// served is one request the server answered.
type served struct {
	Turn, Attempt int
	Cut           bool
	Answer        answer
	Body          []byte // the request
}

// agentServer plays the research agent's turns over one wire.
type agentServer struct {
	t      *testing.T
	w      wire
	script scripted.Script
	cutAt  int // the turn whose first attempt is cut inside its arguments
	srv    *httptest.Server

	mu       sync.Mutex
	attempts map[int]int
	issued   map[int]call // the tool call of each turn's answer that completed
	log      []served
}

func newAgentServer(t *testing.T, w wire, cutTurn int) *agentServer {
	t.Helper()
	var sc scripted.Script
	if err := json.Unmarshal(research.Script, &sc); err != nil {
		t.Fatal(err)
	}
	for i, tn := range sc.Turns {
		if tn.Repeat > 1 || len(tn.ToolCalls) > 1 || len(tn.Faults) > 0 {
			t.Fatalf("script turn %d: this server plays one call per turn, no repeats or faults", i)
		}
	}
	s := &agentServer{t: t, w: w, script: sc, cutAt: cutTurn, attempts: map[int]int{}, issued: map[int]call{}}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *agentServer) served() []served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *agentServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != s.w.path {
		s.t.Errorf("%s %s: want POST %s", r.Method, r.URL.Path, s.w.path)
		http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
		return
	}
	if !s.w.authorized(r) {
		s.t.Errorf("request without the expected credentials: %v", r.Header)
		http.Error(w, `{"message":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	req, err := s.w.parse(r, body)
	if err == nil {
		err = s.check(req)
	}
	if err != nil {
		s.t.Errorf("ill-formed request: %v\n%s", err, body)
		http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
		return
	}

	turn := 0
	for _, m := range req.Msgs {
		if m.Role == "assistant" {
			turn++
		}
	}
	s.mu.Lock()
	attempt := s.attempts[turn]
	s.attempts[turn]++
	s.mu.Unlock()

	a, err := s.answer(turn, attempt, body)
	if err != nil {
		s.t.Errorf("turn %d: %v", turn, err)
		http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
		return
	}
	cut := 0
	if turn == s.cutAt && attempt == 0 {
		cut = 5
	}
	s.mu.Lock()
	s.log = append(s.log, served{Turn: turn, Attempt: attempt, Cut: cut > 0, Answer: a, Body: body})
	if cut == 0 && a.Call != nil {
		s.issued[turn] = *a.Call
	}
	s.mu.Unlock()
	s.w.stream(w, a, fmt.Sprintf("t%da%d", turn, attempt), cut)
}

// check holds a request to what the research agent must send: its system
// prompt, its four tools, the run's request first, and, from the second
// turn on, the complete tool call of the previous answer and its result.
func (s *agentServer) check(req seenReq) error {
	if !req.Streamed {
		return fmt.Errorf("not a streamed request")
	}
	if req.System != research.Instructions {
		return fmt.Errorf("system prompt %q", req.System)
	}
	tools := slices.Sorted(slices.Values(req.Tools))
	if want := []string{"analyze_documents", "collect_documents", "draft_report", "publish_report"}; !slices.Equal(tools, want) {
		return fmt.Errorf("tools declared: %v, want %v", tools, want)
	}
	if len(req.Msgs) == 0 || req.Msgs[0].Role != "user" || req.Msgs[0].Text != runRequest {
		return fmt.Errorf("first message is not the run's request: %+v", req.Msgs)
	}
	var prev *seenMsg
	turn := 0
	for i := range req.Msgs {
		m := &req.Msgs[i]
		if m.Role != "assistant" {
			continue
		}
		s.mu.Lock()
		want, ok := s.issued[turn]
		s.mu.Unlock()
		if !ok {
			return fmt.Errorf("assistant message %d answers no turn the server completed", turn)
		}
		if len(m.Calls) != 1 || m.Calls[0].ID != want.ID || m.Calls[0].Name != want.Name || !jsonEqual(m.Calls[0].Args, []byte(want.Args)) {
			return fmt.Errorf("assistant message %d carries %+v, the server streamed %+v", turn, m.Calls, want)
		}
		if m.Text != s.script.Turns[turn].Text {
			return fmt.Errorf("assistant message %d text %q", turn, m.Text)
		}
		if i+1 >= len(req.Msgs) || len(req.Msgs[i+1].Results) != 1 || req.Msgs[i+1].Results[0].CallID != want.ID {
			return fmt.Errorf("the result of call %s does not follow it", want.ID)
		}
		prev = &req.Msgs[i+1]
		turn++
	}
	if prev != nil && prev != &req.Msgs[len(req.Msgs)-1] {
		return fmt.Errorf("the transcript does not end with the last call's result")
	}
	return nil
}

// answer computes the research agent's turn from the script; the publish
// call's arguments are filled from the draft_report result found in the
// request body, as a model reads them from its context.
func (s *agentServer) answer(turn, attempt int, body []byte) (answer, error) {
	input := int64(len(body)/4 + 1)
	var cached int64
	if turn > 0 {
		// From the second call on a provider reads part of the prompt
		// (system prompt, tools, early turns) from its cache.
		cached = input / 2
		input -= cached
	}
	if turn >= len(s.script.Turns) {
		final := s.script.Final
		return answer{Text: final, Input: input, Cached: cached, Output: int64(len(final)/4 + 1)}, nil
	}
	tn := s.script.Turns[turn]
	a := answer{Text: tn.Text, Input: input, Cached: cached}
	if len(tn.ToolCalls) == 1 {
		tc := tn.ToolCalls[0]
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			return a, err
		}
		args, err := fillArgs(tc.Args, findDraft(doc))
		if err != nil {
			return a, err
		}
		a.Call = &call{ID: s.w.callID(turn, attempt), Name: tc.Name, Args: string(args)}
	}
	a.Output = int64(len(a.Text)/4 + 1)
	if a.Call != nil {
		a.Output += int64(len(a.Call.Args) / 4)
	}
	return a, nil
}

// findDraft walks a decoded request body for the draft_report result: a
// string that parses as a JSON object with an "artifact_key" (or such an
// object itself). The last one wins.
func findDraft(v any) map[string]any {
	var found map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if _, ok := t["artifact_key"].(string); ok {
				found = t
			}
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k])
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		case string:
			var obj map[string]any
			if strings.HasPrefix(t, "{") && json.Unmarshal([]byte(t), &obj) == nil {
				if _, ok := obj["artifact_key"].(string); ok {
					found = obj
				}
			}
		}
	}
	walk(v)
	return found
}

// fillArgs replaces "{{draft_report.field}}" strings in args with the
// draft result's field, as the scripted model does from its transcript.
func fillArgs(args json.RawMessage, draft map[string]any) (json.RawMessage, error) {
	if !bytes.Contains(args, []byte("{{")) {
		return compact(args)
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, err
	}
	for k, v := range obj {
		ref, ok := v.(string)
		if !ok || !strings.HasPrefix(ref, "{{") {
			continue
		}
		field, ok := strings.CutPrefix(strings.TrimSuffix(strings.TrimPrefix(ref, "{{"), "}}"), "draft_report.")
		if !ok {
			return nil, fmt.Errorf("reference %s: this server only reads draft_report results", ref)
		}
		if draft == nil {
			return nil, fmt.Errorf("reference %s: no draft_report result in the request", ref)
		}
		val, ok := draft[field]
		if !ok {
			return nil, fmt.Errorf("reference %s: the draft result has no %q", ref, field)
		}
		obj[k] = val
	}
	return json.Marshal(obj)
}

func compact(b []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// pieces splits s into fragments of n bytes, the way providers stream
// text and tool-call arguments.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// flush writes what is buffered to the client now.
func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// abort breaks the connection without ending the response: the client
// reads an unexpected EOF, as when a connection is reset mid-stream.
func abort() { panic(http.ErrAbortHandler) }

// sse writes one server-sent event; name is empty for OpenAI, which sends
// data lines only.
func sse(w http.ResponseWriter, name string, data any) {
	var b []byte
	switch d := data.(type) {
	case string:
		b = []byte(d)
	default:
		var err error
		if b, err = json.Marshal(d); err != nil {
			panic(err) // the test's own maps always marshal
		}
	}
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	flush(w)
}

type obj = map[string]any

// --- Anthropic Messages API -------------------------------------------------

const anthropicKey = "sk-ant-api03-keel-provider-test-0123456789"

var anthropicWire = wire{
	path: "/v1/messages",
	// The SDK sends the key as x-api-key or, from v2.15, as a bearer token.
	authorized: func(r *http.Request) bool {
		return r.Header.Get("X-Api-Key") == anthropicKey || r.Header.Get("Authorization") == "Bearer "+anthropicKey
	},
	callID: func(turn, attempt int) string { return fmt.Sprintf("toolu_01Rsch%02dA%dKeelTest", turn, attempt) },
	parse: func(_ *http.Request, body []byte) (seenReq, error) {
		var in struct {
			Stream   bool            `json:"stream"`
			System   json.RawMessage `json:"system"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return seenReq{}, err
		}
		out := seenReq{Streamed: in.Stream && in.MaxTokens > 0}
		sys, err := anthropicText(in.System)
		if err != nil {
			return out, fmt.Errorf("system: %w", err)
		}
		out.System = sys
		for _, t := range in.Tools {
			if len(t.InputSchema) == 0 {
				return out, fmt.Errorf("tool %s without input_schema", t.Name)
			}
			out.Tools = append(out.Tools, t.Name)
		}
		for _, m := range in.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
			}
			if len(m.Content) > 0 && m.Content[0] == '"' {
				var s string
				_ = json.Unmarshal(m.Content, &s)
				out.Msgs = append(out.Msgs, seenMsg{Role: m.Role, Text: s})
				continue
			}
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				return out, err
			}
			sm := seenMsg{Role: m.Role}
			for _, b := range blocks {
				switch b.Type {
				case "text":
					sm.Text += b.Text
				case "tool_use":
					sm.Calls = append(sm.Calls, seenCall{ID: b.ID, Name: b.Name, Args: b.Input})
				case "tool_result":
					c, err := anthropicText(b.Content)
					if err != nil {
						return out, fmt.Errorf("tool_result: %w", err)
					}
					sm.Results = append(sm.Results, seenResult{CallID: b.ToolUseID, Content: c})
					sm.Role = "tool" // a user turn that only answers tool calls
				default:
					return out, fmt.Errorf("unexpected content block %q", b.Type)
				}
			}
			out.Msgs = append(out.Msgs, sm)
		}
		return out, nil
	},
	stream: func(w http.ResponseWriter, a answer, respID string, cut int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req_011"+respID)
		w.WriteHeader(http.StatusOK)
		sse(w, "message_start", obj{"type": "message_start", "message": obj{
			"id": "msg_01Keel" + respID, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": obj{"input_tokens": a.Input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": a.Cached, "output_tokens": 1, "service_tier": "standard"},
		}})
		sse(w, "content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
		sse(w, "ping", `{"type": "ping"}`)
		for _, p := range pieces(a.Text, 6) {
			sse(w, "content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": p}})
		}
		sse(w, "content_block_stop", obj{"type": "content_block_stop", "index": 0})
		stop := "end_turn"
		if a.Call != nil {
			stop = "tool_use"
			sse(w, "content_block_start", obj{"type": "content_block_start", "index": 1,
				"content_block": obj{"type": "tool_use", "id": a.Call.ID, "name": a.Call.Name, "input": obj{}}})
			sse(w, "content_block_delta", obj{"type": "content_block_delta", "index": 1, "delta": obj{"type": "input_json_delta", "partial_json": ""}})
			for i, p := range pieces(a.Call.Args, 5) {
				if cut > 0 && i == cut {
					abort()
				}
				sse(w, "content_block_delta", obj{"type": "content_block_delta", "index": 1, "delta": obj{"type": "input_json_delta", "partial_json": p}})
			}
			sse(w, "content_block_stop", obj{"type": "content_block_stop", "index": 1})
		}
		sse(w, "message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil},
			"usage": obj{"output_tokens": a.Output}})
		sse(w, "message_stop", obj{"type": "message_stop"})
	},
}

// anthropicText reads a system prompt or tool result content: a string or
// a list of text blocks.
func anthropicText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type != "text" {
			return "", fmt.Errorf("block of type %q", b.Type)
		}
		sb.WriteString(b.Text)
	}
	return sb.String(), nil
}

// --- OpenAI Chat Completions ------------------------------------------------

const openaiKey = "sk-proj-keel-provider-test-0123456789"

var openaiWire = wire{
	path:       "/v1/chat/completions",
	authorized: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+openaiKey },
	callID:     func(turn, attempt int) string { return fmt.Sprintf("call_Rsch%02dA%dKeelTest", turn, attempt) },
	parse: func(_ *http.Request, body []byte) (seenReq, error) {
		var in struct {
			Stream        bool `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
			Messages []struct {
				Role       string  `json:"role"`
				Content    *string `json:"content"`
				ToolCallID string  `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools []struct {
				Type     string `json:"type"`
				Function struct {
					Name       string          `json:"name"`
					Parameters json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return seenReq{}, err
		}
		out := seenReq{Streamed: in.Stream && in.StreamOptions.IncludeUsage}
		for _, t := range in.Tools {
			if t.Type != "function" || len(t.Function.Parameters) == 0 {
				return out, fmt.Errorf("tool %+v is not a function with parameters", t)
			}
			out.Tools = append(out.Tools, t.Function.Name)
		}
		for i, m := range in.Messages {
			text := ""
			if m.Content != nil {
				text = *m.Content
			}
			switch m.Role {
			case "system":
				if i != 0 {
					return out, fmt.Errorf("system message at %d", i)
				}
				out.System = text
			case "user":
				out.Msgs = append(out.Msgs, seenMsg{Role: "user", Text: text})
			case "assistant":
				sm := seenMsg{Role: "assistant", Text: text}
				for _, tc := range m.ToolCalls {
					if tc.Type != "function" {
						return out, fmt.Errorf("tool call of type %q", tc.Type)
					}
					sm.Calls = append(sm.Calls, seenCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
				}
				out.Msgs = append(out.Msgs, sm)
			case "tool":
				// Consecutive tool messages answer one assistant message.
				r := seenResult{CallID: m.ToolCallID, Content: text}
				if n := len(out.Msgs); n > 0 && out.Msgs[n-1].Role == "tool" {
					out.Msgs[n-1].Results = append(out.Msgs[n-1].Results, r)
				} else {
					out.Msgs = append(out.Msgs, seenMsg{Role: "tool", Results: []seenResult{r}})
				}
			default:
				return out, fmt.Errorf("message role %q", m.Role)
			}
		}
		return out, nil
	},
	stream: func(w http.ResponseWriter, a answer, respID string, cut int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req_"+respID)
		w.WriteHeader(http.StatusOK)
		id := "chatcmpl-Keel" + respID
		chunk := func(delta obj, finish any) obj {
			return obj{"id": id, "object": "chat.completion.chunk", "created": 1735689600, "model": "gpt-4.1-2025-04-14",
				"service_tier": "default", "system_fingerprint": "fp_b3f1157249",
				"choices": []any{obj{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}, "usage": nil}
		}
		sse(w, "", chunk(obj{"role": "assistant", "content": "", "refusal": nil}, nil))
		for _, p := range pieces(a.Text, 6) {
			sse(w, "", chunk(obj{"content": p}, nil))
		}
		finish := "stop"
		if a.Call != nil {
			finish = "tool_calls"
			sse(w, "", chunk(obj{"tool_calls": []any{obj{"index": 0, "id": a.Call.ID, "type": "function",
				"function": obj{"name": a.Call.Name, "arguments": ""}}}}, nil))
			for i, p := range pieces(a.Call.Args, 5) {
				if cut > 0 && i == cut {
					// The stream ends cleanly, without finish_reason, usage
					// or [DONE]: only the provider can tell it is cut.
					return
				}
				sse(w, "", chunk(obj{"tool_calls": []any{obj{"index": 0, "function": obj{"arguments": p}}}}, nil))
			}
		}
		sse(w, "", chunk(obj{}, finish))
		sse(w, "", obj{"id": id, "object": "chat.completion.chunk", "created": 1735689600, "model": "gpt-4.1-2025-04-14",
			"service_tier": "default", "system_fingerprint": "fp_b3f1157249", "choices": []any{},
			"usage": obj{"prompt_tokens": a.Input + a.Cached, "completion_tokens": a.Output, "total_tokens": a.Input + a.Cached + a.Output,
				"prompt_tokens_details":     obj{"cached_tokens": a.Cached, "audio_tokens": 0},
				"completion_tokens_details": obj{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}})
		sse(w, "", "[DONE]")
	},
}

// --- Amazon Bedrock ConverseStream ------------------------------------------

const (
	bedrockModel     = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	bedrockAccessKey = "AKIDKEELPROVIDERTEST"
	bedrockSecret    = "keel-provider-test-aws-secret-0123456789"
)

var bedrockWire = wire{
	path: "/model/" + bedrockModel + "/converse-stream",
	// SigV4 never sends the secret: a signature by the access key id is
	// what a request can show.
	authorized: func(r *http.Request) bool {
		return strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+bedrockAccessKey+"/") &&
			strings.Contains(r.Header.Get("Authorization"), "/bedrock/aws4_request")
	},
	callID: func(turn, attempt int) string { return fmt.Sprintf("tooluse_Rsch%02dA%dKeelTestQ", turn, attempt) },
	parse: func(r *http.Request, body []byte) (seenReq, error) {
		var in struct {
			System []struct {
				Text string `json:"text"`
			} `json:"system"`
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Text    *string `json:"text"`
					ToolUse *struct {
						ToolUseID string          `json:"toolUseId"`
						Name      string          `json:"name"`
						Input     json.RawMessage `json:"input"`
					} `json:"toolUse"`
					ToolResult *struct {
						ToolUseID string `json:"toolUseId"`
						Content   []struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"toolResult"`
				} `json:"content"`
			} `json:"messages"`
			ToolConfig struct {
				Tools []struct {
					ToolSpec struct {
						Name        string `json:"name"`
						InputSchema struct {
							JSON json.RawMessage `json:"json"`
						} `json:"inputSchema"`
					} `json:"toolSpec"`
				} `json:"tools"`
			} `json:"toolConfig"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return seenReq{}, err
		}
		// ConverseStream is streamed by its path; there is no flag.
		out := seenReq{Streamed: strings.HasSuffix(r.URL.Path, "/converse-stream")}
		for _, s := range in.System {
			out.System += s.Text
		}
		for _, t := range in.ToolConfig.Tools {
			if len(t.ToolSpec.InputSchema.JSON) == 0 {
				return out, fmt.Errorf("tool %s without inputSchema.json", t.ToolSpec.Name)
			}
			out.Tools = append(out.Tools, t.ToolSpec.Name)
		}
		for _, m := range in.Messages {
			sm := seenMsg{Role: m.Role}
			for _, c := range m.Content {
				switch {
				case c.Text != nil:
					sm.Text += *c.Text
				case c.ToolUse != nil:
					sm.Calls = append(sm.Calls, seenCall{ID: c.ToolUse.ToolUseID, Name: c.ToolUse.Name, Args: c.ToolUse.Input})
				case c.ToolResult != nil:
					var sb strings.Builder
					for _, rc := range c.ToolResult.Content {
						sb.WriteString(rc.Text)
					}
					sm.Results = append(sm.Results, seenResult{CallID: c.ToolResult.ToolUseID, Content: sb.String()})
					sm.Role = "tool"
				default:
					return out, fmt.Errorf("unexpected content block in a %s message", m.Role)
				}
			}
			out.Msgs = append(out.Msgs, sm)
		}
		return out, nil
	},
	stream: func(w http.ResponseWriter, a answer, respID string, cut int) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.Header().Set("X-Amzn-Requestid", "b7c1e2d0-"+respID)
		w.WriteHeader(http.StatusOK)
		enc := eventstream.NewEncoder()
		n := 0
		frame := func(event string, payload obj) []byte {
			// Bedrock pads every event with a "p" field of varying length
			// so that sizes do not reveal the content.
			n++
			payload["p"] = "abcdefghijklmnopqrstuvwxyz"[:n%26]
			b, err := json.Marshal(payload)
			if err != nil {
				panic(err)
			}
			var buf bytes.Buffer
			if err := enc.Encode(&buf, eventstream.Message{
				Headers: eventstream.Headers{
					{Name: ":event-type", Value: eventstream.StringValue(event)},
					{Name: ":content-type", Value: eventstream.StringValue("application/json")},
					{Name: ":message-type", Value: eventstream.StringValue("event")},
				},
				Payload: b,
			}); err != nil {
				panic(err)
			}
			return buf.Bytes()
		}
		send := func(event string, payload obj) {
			_, _ = w.Write(frame(event, payload))
			flush(w)
		}
		send("messageStart", obj{"role": "assistant"})
		for _, p := range pieces(a.Text, 6) {
			send("contentBlockDelta", obj{"contentBlockIndex": 0, "delta": obj{"text": p}})
		}
		send("contentBlockStop", obj{"contentBlockIndex": 0})
		stop := "end_turn"
		if a.Call != nil {
			stop = "tool_use"
			send("contentBlockStart", obj{"contentBlockIndex": 1, "start": obj{"toolUse": obj{"toolUseId": a.Call.ID, "name": a.Call.Name}}})
			for i, p := range pieces(a.Call.Args, 5) {
				f := frame("contentBlockDelta", obj{"contentBlockIndex": 1, "delta": obj{"toolUse": obj{"input": p}}})
				if cut > 0 && i == cut {
					// Half a frame, then the connection drops.
					_, _ = w.Write(f[:len(f)/2])
					flush(w)
					abort()
				}
				_, _ = w.Write(f)
				flush(w)
			}
			send("contentBlockStop", obj{"contentBlockIndex": 1})
		}
		send("messageStop", obj{"stopReason": stop})
		send("metadata", obj{"usage": obj{"inputTokens": a.Input, "outputTokens": a.Output, "totalTokens": a.Input + a.Cached + a.Output,
			"cacheReadInputTokens": a.Cached, "cacheWriteInputTokens": 0}, "metrics": obj{"latencyMs": 412}})
	},
}
