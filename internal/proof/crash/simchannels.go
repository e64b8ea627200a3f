package crash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// The channels a person decides through, each from outside keel dev as
// a person's tool would: the API, the one-time link of a notification,
// and the MCP decision tools at /v1/mcp. Each answers accepted (2xx), a
// refusal (4xx, with what keel said) or a lost answer (keel dev died, or
// any failure of the transport or the server).

// answer is what a channel said.
type answer struct {
	ok      bool
	lost    bool
	status  int    // HTTP status when one came
	refusal string // what the refusal said (code or text)
}

func (a answer) String() string {
	switch {
	case a.ok:
		return "accepted"
	case a.lost:
		return "answer lost: " + a.refusal
	}
	return fmt.Sprintf("refused %d %s", a.status, a.refusal)
}

// apiAnswer classifies an API client's error.
func (w *simWorld) apiAnswer(err error) answer {
	if err == nil {
		return answer{ok: true, status: http.StatusOK}
	}
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && w.alive() {
		return answer{status: ae.Status, refusal: ae.Code}
	}
	return answer{lost: true, refusal: err.Error()}
}

// decideAPI decides through POST /v1/runs/{id}/approvals/{aid}.
func (w *simWorld) decideAPI(ctx context.Context, a api.Approval, decision string) answer {
	_, err := w.n.c.Decide(ctx, a.RunID, a.ApprovalID, api.DecisionRequest{Decision: decision, ArgsHash: a.ArgsHash, Reason: "sim"})
	return w.apiAnswer(err)
}

// decideLink posts the decision to the approval's one-time link, as the
// person's browser does, at the keel dev serving now (a link names the
// address of the keel dev that sent it; the token is what matters).
func (w *simWorld) decideLink(ctx context.Context, link, decision string) answer {
	u, err := url.Parse(link)
	if err != nil {
		return answer{refusal: "bad link " + link}
	}
	form := url.Values{"decision": {decision}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.base()+u.Path, strings.NewReader(form.Encode()))
	if err != nil {
		return answer{refusal: err.Error()}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return answer{lost: true, refusal: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode/100 == 2:
		return answer{ok: true, status: resp.StatusCode}
	case resp.StatusCode >= 500 || !w.alive():
		return answer{lost: true, status: resp.StatusCode, refusal: linkMessage(body)}
	}
	return answer{status: resp.StatusCode, refusal: linkMessage(body)}
}

// linkMessage is the message of a link page (its <p id="message">), or
// its start.
func linkMessage(body []byte) string {
	s := string(body)
	if i := strings.Index(s, `<p id="message">`); i >= 0 {
		s = s[i+len(`<p id="message">`):]
		if j := strings.Index(s, "</p>"); j >= 0 {
			s = s[:j]
		}
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return strings.TrimSpace(s)
}

// bearerRT adds the API's bearer token to every request.
type bearerRT struct {
	token string
	rt    http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// callMCP calls one tool of keel's MCP endpoint with the Go SDK's client,
// a session of its own (the endpoint is stateless).
func (w *simWorld) callMCP(ctx context.Context, tool string, args map[string]any) answer {
	c := mcp.NewClient(&mcp.Implementation{Name: "keel-sim", Version: "1"}, nil)
	hc := &http.Client{Transport: bearerRT{token: w.token(), rt: &http.Transport{}}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.base() + "/v1/mcp", HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return answer{lost: true, refusal: "connect: " + err.Error()}
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return answer{lost: true, refusal: err.Error()}
	}
	if res.IsError {
		var text string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text += t.Text
			}
		}
		// The tool's error is the API's answer, relayed: a server error
		// is no refusal.
		if strings.Contains(text, "500") || strings.Contains(text, "503") || !w.alive() {
			return answer{lost: true, refusal: text}
		}
		return answer{status: http.StatusConflict, refusal: text}
	}
	return answer{ok: true, status: http.StatusOK}
}

func (w *simWorld) decideMCP(ctx context.Context, a api.Approval, decision string) answer {
	return w.callMCP(ctx, "decide_approval", map[string]any{"run_id": a.RunID, "approval_id": a.ApprovalID,
		"decision": decision, "args_hash": a.ArgsHash, "reason": "sim"})
}

// settleReq is the settle a person who reads the destination's log
// sends for op (truth), or give_up.
func (w *simWorld) settleReq(op api.Operation, how string) (api.SettleRequest, error) {
	if how == "give_up" {
		return api.SettleRequest{Outcome: "give_up", Reason: "sim: nobody can tell"}, nil
	}
	return w.n.whatTheLogShows(op)
}

func (w *simWorld) settle(ctx context.Context, channel string, op api.Operation, req api.SettleRequest) answer {
	if channel == "mcp" {
		return w.callMCP(ctx, "settle_operation", map[string]any{"run_id": op.RunID, "operation_id": op.OperationID,
			"outcome": req.Outcome, "reason": req.Reason, "external_id": req.ExternalID})
	}
	_, err := w.n.c.Settle(ctx, op.RunID, op.OperationID, req)
	return w.apiAnswer(err)
}

// decisionStatus is the approval status a decision leaves.
func decisionStatus(decision string) run.ApprovalStatus {
	if decision == api.DecisionDeny || decision == "stop" {
		return run.ApprovalDenied
	}
	return run.ApprovalApproved
}
