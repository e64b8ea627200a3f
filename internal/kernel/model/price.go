package model

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Price is what a model charges, in micro-USD per million tokens
// (3,000,000 is $3 per million tokens).
type Price struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// Cost of a call in micro-USD, rounded up so that a spend budget never
// under-counts.
func (p Price) Cost(u Usage) int64 {
	sum := u.InputTokens*p.Input + u.OutputTokens*p.Output +
		u.CacheReadTokens*p.CacheRead + u.CacheWriteTokens*p.CacheWrite
	return (sum + 999_999) / 1_000_000
}

// PriceTable maps a model name to its price.
type PriceTable map[string]Price

// Lookup finds the price of the first name that matches: an exact key
// first, then the longest key the name contains, so that
// "claude-sonnet-4-5" prices "claude-sonnet-4-5-20250929" and the Bedrock id
// "us.anthropic.claude-sonnet-4-5-20250929-v1:0".
func (t PriceTable) Lookup(names ...string) (Price, bool) {
	for _, name := range names {
		if name == "" {
			continue
		}
		if p, ok := t[name]; ok {
			return p, true
		}
		best := ""
		for k := range t {
			if k != "" && len(k) > len(best) && strings.Contains(name, k) {
				best = k
			}
		}
		if best != "" {
			return t[best], true
		}
	}
	return Price{}, false
}

// ParsePriceTable reads a table from JSON:
// {"model": {"input": 3000000, "output": 15000000, "cache_read": 300000, "cache_write": 3750000}}.
func ParsePriceTable(data []byte) (PriceTable, error) {
	var t PriceTable
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	return t, nil
}
