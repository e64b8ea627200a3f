package model_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/keelrun/keel/internal/kernel/model"
)

// replay is a Streamer that answers each call with the next list of
// chunks; the first ends before its final chunk.
type replay struct{ calls [][]model.Chunk }

func (r *replay) Stream(context.Context, model.Request) (model.Stream, error) {
	c := r.calls[0]
	r.calls = r.calls[1:]
	return &chunks{c: c}, nil
}

type chunks struct{ c []model.Chunk }

func (s *chunks) Next() (model.Chunk, error) {
	if len(s.c) == 0 {
		return model.Chunk{}, io.EOF
	}
	c := s.c[0]
	s.c = s.c[1:]
	return c, nil
}

func (s *chunks) Close() error { return nil }

func ExampleNewTransport() {
	call := []model.Chunk{
		{Kind: model.ChunkStart, ResponseID: "msg_1", Model: "claude-sonnet-4-5"},
		{Kind: model.ChunkToolCallStart, Index: 0, ID: "toolu_1", Name: "web_search"},
		{Kind: model.ChunkToolArgsDelta, Index: 0, Text: `{"query":`},
		{Kind: model.ChunkToolArgsDelta, Index: 0, Text: `"durable agents"}`},
		{Kind: model.ChunkToolCallEnd, Index: 0},
		{Kind: model.ChunkUsage, Usage: model.Usage{InputTokens: 1200, OutputTokens: 80}},
		{Kind: model.ChunkStop, StopReason: model.StopToolUse},
	}
	cut := call[:3] // the connection broke inside the arguments
	m := model.NewTransport(&replay{calls: [][]model.Chunk{cut, call}}, model.TransportOptions{
		Provider: "anthropic",
		Model:    "claude-sonnet-4-5",
		Prices:   model.PriceTable{"claude-sonnet-4-5": {Input: 3_000_000, Output: 15_000_000}},
		Sleep:    func(context.Context, time.Duration) error { return nil },
	})
	resp, err := m.Generate(context.Background(), model.Request{RunID: "run_1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range resp.Attempts {
		fmt.Println("retried after:", a.Kind)
	}
	tc := resp.ToolCalls[0]
	fmt.Println(tc.Name, string(tc.Args))
	fmt.Println("cost (micro-USD):", resp.CostMicroUSD)
	// Output:
	// retried after: stream_cut
	// web_search {"query":"durable agents"}
	// cost (micro-USD): 4800
}
