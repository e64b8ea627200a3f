package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Slack posts each message to a Slack incoming webhook: a text fallback
// and blocks (a header, the action, a button to the approval link). The
// URL is a secret: it never appears in an error.
type Slack struct {
	URL    string
	Client *http.Client
}

var _ Channel = (*Slack)(nil)

// Name implements Channel.
func (s *Slack) Name() string { return "slack" }

// Send implements Channel.
func (s *Slack) Send(ctx context.Context, m Message) error {
	body, err := json.Marshal(slackPayload(m))
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("bad Slack webhook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	return post(s.Client, req)
}

// slackEscape escapes what Slack's mrkdwn treats as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func slackPayload(m Message) map[string]any {
	section := func(text string) map[string]any {
		return map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}}
	}
	blocks := []any{map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": clipRunes(m.Subject(), 150)}}}
	if m.Kind == "approval_requested" {
		// Args go in a code block, made unable to close it (inCode): what a
		// tool's caller put in them stays text. A clipped block keeps its
		// closing fence.
		args := clipRunes(slackEscape(inCode(string(m.Args))), 2500)
		blocks = append(blocks, section("*Tool:* `"+slackEscape(inCode(m.Tool))+"`\n*Args:* ```"+args+"```\n*Args hash:* `"+inCode(m.ArgsHash)+"`"))
		if m.Link != "" {
			blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{
				"type": "button", "text": map[string]any{"type": "plain_text", "text": "Review and decide"}, "url": m.Link}}})
		}
	} else {
		// The reason is free text (a tool's or model's words): plain text,
		// never read as markup.
		blocks = append(blocks, map[string]any{"type": "section", "text": map[string]any{"type": "plain_text",
			"text": clipRunes("Why: "+visible(m.Reason), 3000)}})
	}
	return map[string]any{"text": slackEscape(visible(m.Subject())), "blocks": blocks}
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
