package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Client calls one Keel API.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
	// retries is how many times a repeatable request is retried after a
	// transport failure.
	retries int
	backoff time.Duration
}

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:7777)
// authenticating with the bearer token (empty: none). hc nil means
// http.DefaultClient; it must not have a Timeout if Follow is used (streams
// are long), use contexts instead.
func New(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: base URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, token: token, hc: hc, retries: 3, backoff: 200 * time.Millisecond}, nil
}

// BaseURL is the API root the client calls.
func (c *Client) BaseURL() string { return c.base.String() }

// url joins the API root, an already escaped path and a query.
func (c *Client) url(path string, q url.Values) string {
	s := strings.TrimRight(c.base.String(), "/") + path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

func runPath(id string, rest ...string) string {
	p := "/v1/runs/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// call sends a request with a JSON body (nil: none) and decodes a 2xx
// answer into out. It returns the status.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, hdr http.Header, body, out any) (int, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("client: encoding the request: %w", err)
		}
	}
	repeatable := method == http.MethodGet || hdr.Get("Idempotency-Key") != ""
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), bytes.NewReader(payload))
		if err != nil {
			return 0, fmt.Errorf("client: %w", err)
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		c.auth(req)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err = c.hc.Do(req)
		if err == nil {
			break
		}
		if !repeatable || attempt >= c.retries || ctx.Err() != nil {
			return 0, fmt.Errorf("client: %s %s: %w", method, path, err)
		}
		if err := sleep(ctx, c.backoff<<attempt); err != nil {
			return 0, err
		}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, decodeError(resp)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("client: %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func (c *Client) auth(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// decodeError turns an error answer into *api.Error.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb api.ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		eb.Error.Status = resp.StatusCode
		return eb.Error
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &api.Error{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: msg}
}

// StatusOf returns the HTTP status of an API error, or 0.
func StatusOf(err error) int {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

func keyHeader(key string) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	return h
}

// Health calls GET /healthz.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.call(ctx, http.MethodGet, "/healthz", nil, nil, nil, nil)
	return err
}

// Instance returns the instance id GET /healthz answers (keel dev's id of
// its data directory; "" when the server gives none: another program, or
// a Keel API that is not a dev), asked without the token: it is how a
// client checks whom it talks to before it sends a token. An error is a
// transport failure.
func (c *Client) Instance(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url("/healthz", nil), nil)
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("client: GET /healthz: %w", err)
	}
	defer resp.Body.Close()
	var h struct {
		Instance string `json:"instance"`
	}
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&h) // not JSON: no instance
	}
	return h.Instance, nil
}

// CreateRun starts a run. With a key, a retry returns the same run
// (created=false), and transport failures are retried.
func (c *Client) CreateRun(ctx context.Context, req api.CreateRunRequest, key string) (r api.Run, created bool, err error) {
	st, err := c.call(ctx, http.MethodPost, "/v1/runs", nil, keyHeader(key), req, &r)
	return r, st == http.StatusCreated, err
}

// ListRunsOptions filter and page ListRuns.
type ListRunsOptions struct {
	Status    run.Status
	SessionID string
	// Parent lists the child runs that sub-agent calls of this run started.
	Parent    string
	Limit     int
	PageToken string
}

// ListRuns lists the caller's runs, newest first.
func (c *Client) ListRuns(ctx context.Context, o ListRunsOptions) (api.RunList, error) {
	q := url.Values{}
	if o.Status != "" {
		q.Set("status", string(o.Status))
	}
	if o.SessionID != "" {
		q.Set("session_id", o.SessionID)
	}
	if o.Parent != "" {
		q.Set("parent", o.Parent)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.PageToken != "" {
		q.Set("page_token", o.PageToken)
	}
	var out api.RunList
	_, err := c.call(ctx, http.MethodGet, "/v1/runs", q, nil, nil, &out)
	return out, err
}

// GetRun reads one run.
func (c *Client) GetRun(ctx context.Context, id string) (api.Run, error) {
	var out api.Run
	_, err := c.call(ctx, http.MethodGet, runPath(id), nil, nil, nil, &out)
	return out, err
}

// Events reads one page of a run's events after seq after (limit 0: the
// server's default).
func (c *Client) Events(ctx context.Context, id string, after int64, limit int) (api.EventPage, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.EventPage
	_, err := c.call(ctx, http.MethodGet, runPath(id, "events"), q, nil, nil, &out)
	return out, err
}

// Audit reads a run's whole event log with its chain head
// (GET /v1/runs/{id}/audit). Check it with AuditExport.Recheck rather than
// trusting its Verified field.
func (c *Client) Audit(ctx context.Context, id string) (api.AuditExport, error) {
	var out api.AuditExport
	_, err := c.call(ctx, http.MethodGet, runPath(id)+"/audit", nil, nil, nil, &out)
	return out, err
}

// ListApprovals lists a run's approvals.
func (c *Client) ListApprovals(ctx context.Context, id string) ([]api.Approval, error) {
	var out api.ApprovalList
	_, err := c.call(ctx, http.MethodGet, runPath(id, "approvals"), nil, nil, nil, &out)
	return out.Approvals, err
}

// GetApproval reads one approval.
func (c *Client) GetApproval(ctx context.Context, runID, approvalID string) (api.Approval, error) {
	var out api.Approval
	_, err := c.call(ctx, http.MethodGet, runPath(runID, "approvals", approvalID), nil, nil, nil, &out)
	return out, err
}

// Decide approves or denies an approval; argsHash must be the hash of the
// action the person was shown.
func (c *Client) Decide(ctx context.Context, runID, approvalID string, d api.DecisionRequest) (api.Approval, error) {
	var out api.Approval
	_, err := c.call(ctx, http.MethodPost, runPath(runID, "approvals", approvalID), nil, nil, d, &out)
	return out, err
}

// Cancel asks the run to stop.
func (c *Client) Cancel(ctx context.Context, id string) (api.CancelResponse, error) {
	var out api.CancelResponse
	_, err := c.call(ctx, http.MethodPost, runPath(id, "cancel"), nil, nil, struct{}{}, &out)
	return out, err
}

// Operations lists the run's operations, oldest first.
func (c *Client) Operations(ctx context.Context, id string) (api.OperationList, error) {
	var out api.OperationList
	_, err := c.call(ctx, http.MethodGet, runPath(id, "operations"), nil, nil, nil, &out)
	return out, err
}

// Notifications lists the run's notifications and their delivery state.
func (c *Client) Notifications(ctx context.Context, id string) ([]run.Notification, error) {
	var out struct {
		Notifications []run.Notification `json:"notifications"`
	}
	_, err := c.call(ctx, http.MethodGet, runPath(id, "notifications"), nil, nil, nil, &out)
	return out.Notifications, err
}

// Settle records what a person established about a needs_human operation.
func (c *Client) Settle(ctx context.Context, runID, opID string, req api.SettleRequest) (api.Run, error) {
	var out api.Run
	_, err := c.call(ctx, http.MethodPost, runPath(runID, "operations", opID, "settle"), nil, nil, req, &out)
	return out, err
}

// DecideLimit answers a run paused at a limit: raise it by the amount the
// pause asked for, or stop the run (POST /v1/runs/{id}/limits).
func (c *Client) DecideLimit(ctx context.Context, runID string, req api.LimitDecisionRequest) (api.Approval, error) {
	var out api.Approval
	_, err := c.call(ctx, http.MethodPost, runPath(runID, "limits"), nil, nil, req, &out)
	return out, err
}

// Input sends text to a run, under its input policy.
func (c *Client) Input(ctx context.Context, id, text string) (api.InputResponse, error) {
	var out api.InputResponse
	_, err := c.call(ctx, http.MethodPost, runPath(id, "input"), nil, nil, api.InputRequest{Text: text}, &out)
	return out, err
}

// Fork starts a new run from one of the run's checkpoints.
func (c *Client) Fork(ctx context.Context, id, checkpointID, key string) (r api.Run, created bool, err error) {
	st, err := c.call(ctx, http.MethodPost, runPath(id, "fork"), nil, keyHeader(key), api.ForkRequest{CheckpointID: checkpointID}, &r)
	return r, st == http.StatusCreated, err
}

// ListCheckpoints reads one page of a run's checkpoints after seq after.
func (c *Client) ListCheckpoints(ctx context.Context, id string, after int64, limit int) (api.CheckpointPage, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.CheckpointPage
	_, err := c.call(ctx, http.MethodGet, runPath(id, "checkpoints"), q, nil, nil, &out)
	return out, err
}

// ListArtifacts lists a run's artifacts.
func (c *Client) ListArtifacts(ctx context.Context, id string) ([]api.Artifact, error) {
	var out api.ArtifactList
	_, err := c.call(ctx, http.MethodGet, runPath(id, "artifacts"), nil, nil, nil, &out)
	return out.Artifacts, err
}

// ErrHashMismatch: a downloaded artifact does not match the hash the
// server announced.
var ErrHashMismatch = errors.New("client: artifact content does not match its sha256")

// Download fetches an artifact and checks it against its sha256.
func (c *Client) Download(ctx context.Context, runID, checkpointID, name string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(runPath(runID, "artifacts", checkpointID, name), nil), nil)
	if err != nil {
		return nil, "", fmt.Errorf("client: %w", err)
	}
	c.auth(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("client: download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", decodeError(resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("client: download: %w", err)
	}
	want := resp.Header.Get("X-Content-SHA256")
	if got := run.HashBytes(b); want == "" || got != want {
		return nil, "", fmt.Errorf("%w: got %s, announced %q", ErrHashMismatch, got, want)
	}
	return b, want, nil
}
