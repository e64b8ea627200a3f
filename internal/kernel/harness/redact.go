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

// redactor replaces the secrets the agent's tools declare (secretsOf)
// wherever the harness would record or show them.
type redactor []string

// redact removes every declared secret from str. A tool's error or result
// that carries its credential (an url.Error with a token in the query, a
// provider's echo of a key) is recorded and shown to the model without it.
func (r redactor) redact(str string) string {
	for _, sec := range r {
		str = strings.ReplaceAll(str, sec, redacted)
	}
	return str
}

func (r redactor) bytes(b []byte) []byte {
	if len(r) == 0 || len(b) == 0 {
		return b
	}
	return []byte(r.redact(string(b)))
}

func (r redactor) result(res tool.Result) tool.Result {
	res.Content = r.redact(res.Content)
	res.Data = r.bytes(res.Data)
	return res
}

// commit removes secrets from what a commit records beyond events and
// plan items (which the pending commit cleaned as they came).
func (r redactor) commit(c *store.Commit) {
	if len(r) == 0 {
		return
	}
	for i := range c.OperationUpdates {
		c.OperationUpdates[i].Error = r.redact(c.OperationUpdates[i].Error)
		c.OperationUpdates[i].Result = r.bytes(c.OperationUpdates[i].Result)
	}
	if c.Run != nil {
		for _, p := range []*string{c.Run.Error, c.Run.Output} {
			if p != nil {
				*p = r.redact(*p)
			}
		}
	}
}
