package tickets

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
)

// StatusError is an error answer of the service.
type StatusError struct {
	// Code is the HTTP status.
	Code int
	// Message is the service's explanation.
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("tickets: %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Definite reports whether the error is a refusal that repeating the
// request will not change: a 4xx other than 408 (timeout) and 429 (rate
// limited). The request had no effect.
func (e *StatusError) Definite() bool {
	return e.Code >= 400 && e.Code < 500 && e.Code != http.StatusRequestTimeout && e.Code != http.StatusTooManyRequests
}

// Client calls a ticket service with its token. The token is sent in the
// Authorization header and appears in no error.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

// NewClient returns a client of the service at baseURL (http or https)
// that authenticates with token. hc nil means a client with a 30 s timeout.
func NewClient(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tickets: base URL %q: want http(s)://HOST[:PORT][/PATH]", baseURL)
	}
	if token == "" {
		return nil, errors.New("tickets: the client needs a token")
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return &Client{base: u, token: token, hc: hc}, nil
}

// Ticket reads a ticket.
func (c *Client) Ticket(ctx context.Context, id string) (Ticket, error) {
	var t Ticket
	err := c.do(ctx, http.MethodGet, "/tickets/"+url.PathEscape(id), nil, nil, &t)
	return t, err
}

// Similar lists up to limit open tickets that share a tag with ticket id.
func (c *Client) Similar(ctx context.Context, id string, limit int) ([]Ticket, error) {
	var out struct {
		Tickets []Ticket `json:"tickets"`
	}
	err := c.do(ctx, http.MethodGet, "/tickets/"+url.PathEscape(id)+"/similar?limit="+strconv.Itoa(limit), nil, nil, &out)
	return out.Tickets, err
}

// Customer reads a customer's private profile.
func (c *Client) Customer(ctx context.Context, id string) (Customer, error) {
	var cu Customer
	err := c.do(ctx, http.MethodGet, "/customers/"+url.PathEscape(id), nil, nil, &cu)
	return cu, err
}

// Update applies u to ticket id under the idempotency key key: however
// often it is called with the same key and update, the service applies it
// once and answers the same Applied. An error other than a definite
// *StatusError means the outcome is unknown.
func (c *Client) Update(ctx context.Context, id, key string, u Update) (Applied, error) {
	body, err := json.Marshal(u)
	if err != nil {
		return Applied{}, err
	}
	var a Applied
	err = c.do(ctx, http.MethodPost, "/tickets/"+url.PathEscape(id)+"/updates", http.Header{"Idempotency-Key": {key}}, body, &a)
	return a, err
}

// AppliedUnder returns the updates the service applied under key (GET
// /updates?key=): one when the key was applied, none when it was not. For
// crash tests: how many times an operation took effect.
func (c *Client) AppliedUnder(ctx context.Context, key string) ([]Applied, error) {
	var out struct {
		Applied []Applied `json:"applied"`
	}
	err := c.do(ctx, http.MethodGet, "/updates?key="+url.QueryEscape(key), nil, nil, &out)
	return out.Applied, err
}

func (c *Client) do(ctx context.Context, method, path string, h http.Header, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("tickets: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("tickets: %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e errorBody
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return &StatusError{Code: resp.StatusCode, Message: e.Error}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("tickets: %s %s: answer: %w", method, path, err)
	}
	return nil
}
