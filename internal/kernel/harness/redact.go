package harness

import (
	"encoding/json"
	"strings"

	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/tool"
)

// redacted replaces a tool's secret wherever the harness would record it.
const redacted = "[redacted]"

// minSecret is the shortest secret redacted: shorter strings would match
// ordinary text.
const minSecret = 8

// secretsOf collects the secrets the agent's tools declare
// (tool.SecretHolder), in raw and JSON-escaped form.
func secretsOf(reg *tool.Registry) []string {
	if reg == nil {
		return nil
	}
	var out []string
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		sh, ok := t.(tool.SecretHolder)
		if !ok {
			continue
		}
		for _, sec := range sh.Secrets() {
			if len(sec) < minSecret {
				continue
			}
			out = append(out, sec)
			if b, err := json.Marshal(sec); err == nil {
				if esc := string(b[1 : len(b)-1]); esc != sec {
					out = append(out, esc)
				}
			}
		}
	}
	return out
}

// redact removes every declared secret from s. A tool's error or result
// that carries its credential (an url.Error with a token in the query, a
// provider's echo of a key) is recorded and shown to the model without it.
func (s *step) redact(str string) string {
	for _, sec := range s.secrets {
		str = strings.ReplaceAll(str, sec, redacted)
	}
	return str
}

func (s *step) redactBytes(b []byte) []byte {
	if len(s.secrets) == 0 || len(b) == 0 {
		return b
	}
	return []byte(s.redact(string(b)))
}

func (s *step) redactResult(res tool.Result) tool.Result {
	res.Content = s.redact(res.Content)
	res.Data = s.redactBytes(res.Data)
	return res
}

// redactCommit removes secrets from what a commit records beyond events and
// plan items (which addEvent and putItem already cleaned).
func (s *step) redactCommit(c *store.Commit) {
	if len(s.secrets) == 0 {
		return
	}
	for i := range c.OperationUpdates {
		c.OperationUpdates[i].Error = s.redact(c.OperationUpdates[i].Error)
		c.OperationUpdates[i].Result = s.redactBytes(c.OperationUpdates[i].Result)
	}
	if c.Run != nil {
		for _, p := range []*string{c.Run.Error, c.Run.Output} {
			if p != nil {
				*p = s.redact(*p)
			}
		}
	}
}
