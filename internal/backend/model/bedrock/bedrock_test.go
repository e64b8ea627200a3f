package bedrock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/keelrun/keel/internal/backend/model/bedrock"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/model/modeltest"
)

const accessKeyID = "AKIDKEELTEST"

// fixtureLine is one line of a testdata/*.jsonl fixture: an event or an
// exception, framed with the SDK's own event-stream encoder.
type fixtureLine struct {
	Event      string          `json:"event"`
	Exception  string          `json:"exception"`
	Payload    json.RawMessage `json:"payload"`
	RawPayload *string         `json:"raw_payload"` // a payload that is not JSON
	Cut        int             `json:"cut"`         // keep only this many bytes of the next frame
}

// eventStreamFrames loads a fixture as AWS event-stream binary frames.
func eventStreamFrames(name string) ([][]byte, error) {
	f, err := os.Open(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	enc := eventstream.NewEncoder()
	var frames [][]byte
	cut := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l fixtureLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if l.Cut > 0 {
			cut = l.Cut
			continue
		}
		msg := eventstream.Message{Payload: l.Payload}
		if l.RawPayload != nil {
			msg.Payload = []byte(*l.RawPayload)
		}
		if l.Exception != "" {
			msg.Headers = eventstream.Headers{
				{Name: ":message-type", Value: eventstream.StringValue("exception")},
				{Name: ":exception-type", Value: eventstream.StringValue(l.Exception)},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			}
		} else {
			msg.Headers = eventstream.Headers{
				{Name: ":message-type", Value: eventstream.StringValue("event")},
				{Name: ":event-type", Value: eventstream.StringValue(l.Event)},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			}
		}
		var buf bytes.Buffer
		if err := enc.Encode(&buf, msg); err != nil {
			return nil, err
		}
		frame := buf.Bytes()
		if cut > 0 {
			frame = frame[:cut]
			frames = append(frames, frame)
			break
		}
		frames = append(frames, frame)
	}
	return frames, sc.Err()
}

var wire = modeltest.Wire{
	ContentType:     "application/vnd.amazon.eventstream",
	RequestIDHeader: "x-amzn-RequestId",
	Frames:          eventStreamFrames,
}

func newProvider(t *testing.T, url, secret string) model.Streamer {
	t.Helper()
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(accessKeyID, secret, "")),
		BaseEndpoint: aws.String(url),
	}
	p, err := bedrock.New(cfg, bedrock.Config{ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Provider{
		Name:       bedrock.Name,
		Wire:       wire,
		New:        newProvider,
		ToolCallID: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
		ErrorBody: func(status int, msg string) (string, map[string]string) {
			typ := map[int]string{400: "ValidationException", 401: "UnrecognizedClientException", 429: "ThrottlingException", 500: "InternalServerException"}[status]
			b, _ := json.Marshal(map[string]string{"message": msg})
			return string(b), map[string]string{"X-Amzn-ErrorType": typ + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}
		},
		// SigV4 never sends the secret; a signed request proves it was used.
		SecretSent: func(r modeltest.Request, _ string) bool {
			return strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+accessKeyID+"/")
		},
		RequestPath: "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream",
		// Request1 in the wire form: system prompt, the tool call and its
		// result, the tool's schema.
		RequestBody: `{
			"inferenceConfig": {"maxTokens": 1024},
			"system": [{"text": "You are a research agent."}],
			"messages": [
				{"role": "user", "content": [{"text": "Find recent work on durable agents."}]},
				{"role": "assistant", "content": [
					{"text": "Searching."},
					{"toolUse": {"toolUseId": "call_0", "name": "web_search", "input": {"query": "agents"}}}
				]},
				{"role": "user", "content": [
					{"toolResult": {"toolUseId": "call_0", "content": [{"text": "3 results"}]}}
				]}
			],
			"toolConfig": {"tools": [{"toolSpec": {
				"name": "web_search",
				"description": "Search the web.",
				"inputSchema": {"json": {"type": "object", "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}}, "required": ["query"]}}
			}}]}
		}`,
	})
}

// A throttlingException inside the stream is a 429: retried.
func TestInStreamThrottlingIsRetried(t *testing.T) {
	srv := modeltest.NewServer(t, wire, modeltest.Reply{Fixture: "throttled"}, modeltest.Reply{Fixture: "text"})
	m := model.NewTransport(newProvider(t, srv.URL, "secret-key-0123456789"), model.TransportOptions{
		Provider: bedrock.Name,
		Sleep:    func(context.Context, time.Duration) error { return nil },
	})
	resp, err := m.Generate(context.Background(), modeltest.Request1())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Attempts) != 1 || resp.Attempts[0].Kind != model.AttemptRateLimited || resp.Attempts[0].Status != 429 {
		t.Fatalf("attempts = %+v, want one rate_limited 429", resp.Attempts)
	}
	if resp.ResponseID != "req_002" {
		t.Fatalf("response id = %q, want the request id req_002", resp.ResponseID)
	}
}

// A stream that ends cleanly after messageStop but before the metadata
// event is incomplete: Bedrock sends the usage last.
func TestEndBeforeMetadataIsIncomplete(t *testing.T) {
	srv := modeltest.NewServer(t, wire, modeltest.Reply{Fixture: "text", Frames: 5})
	m := model.NewTransport(newProvider(t, srv.URL, "secret-key-0123456789"), model.TransportOptions{Provider: bedrock.Name, MaxAttempts: 1})
	resp, err := m.Generate(context.Background(), modeltest.Request1())
	var ce *model.CallError
	if !errors.As(err, &ce) || len(ce.Attempts) != 1 || ce.Attempts[0].Kind != model.AttemptStreamCut {
		t.Fatalf("Generate = %+v, %v; want one stream_cut", resp, err)
	}
}
