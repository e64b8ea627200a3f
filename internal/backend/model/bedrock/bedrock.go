package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/keelrun/keel/internal/kernel/model"
)

// Name is the provider's name in errors and KEEL_MODEL.
const Name = "bedrock"

// Config configures a Provider.
type Config struct {
	// ModelID is a Bedrock model id or inference profile, e.g.
	// "us.anthropic.claude-sonnet-4-5-20250929-v1:0".
	ModelID string
	// MaxTokens is sent when the request sets none; default
	// model.DefaultMaxTokens.
	MaxTokens int
}

// Provider streams calls through Bedrock's ConverseStream.
type Provider struct {
	client *bedrockruntime.Client
	creds  aws.CredentialsProvider
	cfg    Config
}

var _ model.Streamer = (*Provider)(nil)

// New builds a Provider from an aws.Config the caller loaded (region,
// credentials, and BaseEndpoint for a test server). The SDK's retryer is
// replaced by aws.NopRetryer: the transport retries whole calls.
func New(awsCfg aws.Config, cfg Config) (*Provider, error) {
	if cfg.ModelID == "" {
		return nil, errors.New("bedrock: no model id")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = model.DefaultMaxTokens
	}
	client := bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) {
		o.Retryer = aws.NopRetryer{}
		if o.HTTPClient != nil { // resolved to the SDK's default before optFns run
			o.HTTPClient = plainBodyClient{o.HTTPClient}
		}
	})
	return &Provider{client: client, creds: awsCfg.Credentials, cfg: cfg}, nil
}

// plainBodyClient hides the WriterTo of request bodies. The SDK closes a
// request body as soon as the response headers arrive, and a closed
// WriterTo body returns io.EOF; net/http reads the body once more after
// sending it (to check its length) and, when the response beat that read,
// takes the EOF for a failed write and closes the connection under the
// open event stream. With a plain Reader the late read is a clean EOF.
type plainBodyClient struct{ c bedrockruntime.HTTPClient }

func (p plainBodyClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = plainBody{r.Body}
	}
	return p.c.Do(r)
}

type plainBody struct{ io.ReadCloser }

// Stream starts one ConverseStream call. An HTTP failure is a
// *model.StatusError.
func (p *Provider) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	in, err := p.input(req)
	if err != nil {
		return nil, err
	}
	out, err := p.client.ConverseStream(ctx, in)
	if err != nil {
		return nil, p.convert(ctx, err)
	}
	reqID, _ := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	return &stream{ctx: ctx, p: p, es: out.GetStream(), requestID: model.Redact(reqID, p.secrets(ctx)...), tools: map[int32]bool{}}, nil
}

func (p *Provider) input(req model.Request) (*bedrockruntime.ConverseStreamInput, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	in := &bedrockruntime.ConverseStreamInput{
		ModelId:         aws.String(p.cfg.ModelID),
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(maxTokens))},
	}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	for _, m := range req.Messages {
		var blocks []types.ContentBlock
		if m.Text != "" {
			blocks = append(blocks, &types.ContentBlockMemberText{Value: m.Text})
		}
		for _, c := range m.ToolCalls {
			var args map[string]any
			if len(c.Args) > 0 {
				if err := json.Unmarshal(c.Args, &args); err != nil {
					return nil, fmt.Errorf("bedrock: tool call %q args: %w", c.ID, err)
				}
			}
			if args == nil {
				args = map[string]any{}
			}
			blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(c.ID), Name: aws.String(c.Name), Input: document.NewLazyDocument(args),
			}})
		}
		for _, r := range m.ToolResults {
			tr := types.ToolResultBlock{
				ToolUseId: aws.String(r.CallID),
				Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: r.Content}},
			}
			if r.IsError {
				tr.Status = types.ToolResultStatusError
			}
			blocks = append(blocks, &types.ContentBlockMemberToolResult{Value: tr})
		}
		if len(blocks) == 0 {
			continue
		}
		role := types.ConversationRoleUser
		switch m.Role {
		case model.RoleAssistant:
			role = types.ConversationRoleAssistant
		case model.RoleUser, model.RoleTool:
			// Tool results travel in a user turn in Converse.
		default:
			return nil, fmt.Errorf("bedrock: unknown role %q", m.Role)
		}
		in.Messages = append(in.Messages, types.Message{Role: role, Content: blocks})
	}
	if len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		for _, t := range req.Tools {
			var schema map[string]any
			if len(t.Schema) > 0 {
				if err := json.Unmarshal(t.Schema, &schema); err != nil {
					return nil, fmt.Errorf("bedrock: tool %q schema: %w", t.Name, err)
				}
			}
			if schema == nil {
				schema = map[string]any{"type": "object"}
			}
			spec := types.ToolSpecification{
				Name:        aws.String(t.Name),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
			}
			if t.Description != "" {
				spec.Description = aws.String(t.Description)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		in.ToolConfig = tc
	}
	return in, nil
}

// secrets are the credentials to redact from messages the service returns.
func (p *Provider) secrets(ctx context.Context) []string {
	if p.creds == nil {
		return nil
	}
	// The request was just signed with these, so a caching provider answers
	// from memory.
	c, err := p.creds.Retrieve(ctx)
	if err != nil {
		return nil
	}
	return []string{c.SecretAccessKey, c.SessionToken}
}

// exceptionStatus is the HTTP status of a Bedrock exception, for the ones
// that arrive inside a stream (where the response status was 200).
func exceptionStatus(code string) int {
	switch code {
	case "ThrottlingException":
		return http.StatusTooManyRequests
	case "ServiceUnavailableException":
		return http.StatusServiceUnavailable
	case "ModelTimeoutException":
		return http.StatusGatewayTimeout
	case "InternalServerException", "ModelStreamErrorException":
		return http.StatusInternalServerError
	case "ValidationException", "ModelErrorException":
		return http.StatusBadRequest
	case "AccessDeniedException":
		return http.StatusForbidden
	case "ResourceNotFoundException":
		return http.StatusNotFound
	default:
		return http.StatusInternalServerError
	}
}

// convert turns an SDK error into a *model.StatusError (HTTP errors and
// in-stream exceptions), an ErrMalformed (an event that did not decode),
// or passes it on (connection and context errors). The SDK's own error
// text is not used for API errors; their message is redacted.
func (p *Provider) convert(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	var apiErr smithy.APIError
	var respErr *awshttp.ResponseError
	hasResp := errors.As(err, &respErr)
	if errors.As(err, &apiErr) || hasResp {
		se := &model.StatusError{Provider: Name}
		if apiErr != nil {
			se.Message = apiErr.ErrorCode()
			if msg := apiErr.ErrorMessage(); msg != "" {
				se.Message += ": " + msg
			}
			se.Status = exceptionStatus(apiErr.ErrorCode())
		}
		if hasResp {
			se.Status = respErr.HTTPStatusCode()
			se.RequestID = respErr.ServiceRequestID()
			if respErr.Response != nil {
				se.RetryAfter = model.RetryAfter(respErr.Response.Header, time.Now())
			}
		}
		if se.Message == "" {
			se.Message = http.StatusText(se.Status)
		}
		se.Message = model.Redact(se.Message, p.secrets(ctx)...)
		se.RequestID = model.Redact(se.RequestID, p.secrets(ctx)...) // the server chooses it: it may echo the key
		return se
	}
	return err
}

// streamError converts an error of the event reader. Besides exceptions
// and broken connections, the reader only fails on frames it cannot decode
// (a bad checksum, a payload that is not JSON), which it reports as plain
// errors: those are malformed events.
func (p *Provider) streamError(ctx context.Context, err error) error {
	var apiErr smithy.APIError
	if ctx.Err() != nil || errors.As(err, &apiErr) || model.IsConnectionError(err) {
		return p.convert(ctx, err)
	}
	return fmt.Errorf("%w: bedrock event: %s", model.ErrMalformed, model.Redact(err.Error(), p.secrets(ctx)...))
}

// stopReason maps a Converse stop reason to the model vocabulary.
func stopReason(r types.StopReason) string {
	switch r {
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return model.StopContentFilter
	default:
		// end_turn, tool_use, max_tokens and stop_sequence are the model
		// vocabulary already.
		return string(r)
	}
}

// stream maps ConverseStream events to model chunks. A stream is complete
// when it ends cleanly after messageStop and the metadata event (usage),
// which Bedrock sends last.
type stream struct {
	ctx       context.Context
	p         *Provider
	es        *bedrockruntime.ConverseStreamEventStream
	requestID string
	started   bool
	tools     map[int32]bool
	stop      string
	stopped   bool
	usage     bool
	done      bool
	pending   []model.Chunk
}

func (s *stream) Next() (model.Chunk, error) {
	for len(s.pending) == 0 {
		if s.done {
			return model.Chunk{}, io.EOF
		}
		var ev types.ConverseStreamOutput
		var ok bool
		select {
		case ev, ok = <-s.es.Events():
		case <-s.ctx.Done():
			return model.Chunk{}, s.ctx.Err()
		}
		if !ok {
			if err := s.es.Err(); err != nil {
				return model.Chunk{}, s.p.streamError(s.ctx, err)
			}
			s.done = true
			if s.stopped && s.usage {
				return model.Chunk{Kind: model.ChunkStop, StopReason: s.stop}, nil
			}
			return model.Chunk{}, io.EOF
		}
		s.event(ev)
	}
	c := s.pending[0]
	s.pending = s.pending[1:]
	return c, nil
}

func (s *stream) emit(c model.Chunk) { s.pending = append(s.pending, c) }

func (s *stream) event(ev types.ConverseStreamOutput) {
	if !s.started {
		s.started = true
		// Converse has no response id; the request id names the call.
		s.emit(model.Chunk{Kind: model.ChunkStart, ResponseID: s.requestID, Model: s.p.cfg.ModelID})
	}
	switch e := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if tu, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			i := aws.ToInt32(e.Value.ContentBlockIndex)
			s.tools[i] = true
			s.emit(model.Chunk{Kind: model.ChunkToolCallStart, Index: int(i), ID: aws.ToString(tu.Value.ToolUseId), Name: aws.ToString(tu.Value.Name)})
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		i := aws.ToInt32(e.Value.ContentBlockIndex)
		switch d := e.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			s.emit(model.Chunk{Kind: model.ChunkText, Text: d.Value})
		case *types.ContentBlockDeltaMemberToolUse:
			if s.tools[i] {
				s.emit(model.Chunk{Kind: model.ChunkToolArgsDelta, Index: int(i), Text: aws.ToString(d.Value.Input)})
			}
		}
	case *types.ConverseStreamOutputMemberContentBlockStop:
		if i := aws.ToInt32(e.Value.ContentBlockIndex); s.tools[i] {
			s.emit(model.Chunk{Kind: model.ChunkToolCallEnd, Index: int(i)})
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		s.stopped = true
		s.stop = stopReason(e.Value.StopReason)
	case *types.ConverseStreamOutputMemberMetadata:
		if u := e.Value.Usage; u != nil {
			s.usage = true
			s.emit(model.Chunk{Kind: model.ChunkUsage, Usage: model.Usage{
				InputTokens:      int64(aws.ToInt32(u.InputTokens)),
				OutputTokens:     int64(aws.ToInt32(u.OutputTokens)),
				CacheReadTokens:  int64(aws.ToInt32(u.CacheReadInputTokens)),
				CacheWriteTokens: int64(aws.ToInt32(u.CacheWriteInputTokens)),
			}})
		}
	}
}

func (s *stream) Close() error { return s.es.Close() }
