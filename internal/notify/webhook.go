package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Headers of a signed webhook delivery.
const (
	HeaderDelivery  = "Keel-Delivery"  // the delivery id: dedup by it
	HeaderTimestamp = "Keel-Timestamp" // Unix seconds when signed
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, under the
	// shared secret, of the timestamp, ".", and the body.
	HeaderSignature = "Keel-Signature"
)

// Sign returns the HeaderSignature value for body sent at ts.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a delivery's signature and that its timestamp is within
// maxAge of now (a receiver's side, here for receivers written in Go and
// for tests).
func Verify(secret []byte, h http.Header, body []byte, now time.Time, maxAge time.Duration) error {
	ts := h.Get(HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("notify: bad or missing timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxAge || d < -maxAge {
		return errors.New("notify: timestamp out of range")
	}
	if !hmac.Equal([]byte(h.Get(HeaderSignature)), []byte(Sign(secret, ts, body))) {
		return errors.New("notify: bad signature")
	}
	return nil
}

// Webhook posts each message as JSON, signed, to one URL. Any 2xx is
// taken; anything else is an error to retry. A redirect is not followed
// (see post): the signed body, link included, goes to the configured URL
// only.
type Webhook struct {
	URL    string
	Secret []byte
	Client *http.Client // nil: http.DefaultClient
	Clock  func() time.Time
}

var _ Channel = (*Webhook)(nil)

// Name implements Channel.
func (w *Webhook) Name() string { return "webhook" }

// Send implements Channel.
func (w *Webhook) Send(ctx context.Context, m Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	now := time.Now
	if w.Clock != nil {
		now = w.Clock
	}
	ts := strconv.FormatInt(now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("bad webhook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderDelivery, m.DeliveryID)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(w.Secret, ts, body))
	return post(w.Client, req)
}

// post sends req and takes a 2xx answer. Its errors never name the URL
// (a Slack URL is a secret): a *url.Error is unwrapped to its cause.
//
// Redirects are never followed, whatever c says: a 307 or 308 would
// re-send the body (an approval link, the signed message) to wherever the
// receiver points, loopback and internal addresses included. A 3xx is an
// answer like any other non-2xx: the attempt failed and is retried, and
// the operator sees the status in the notification's last error.
func post(c *http.Client, req *http.Request) error {
	nc := http.Client{}
	if c != nil {
		nc = *c
	}
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := nc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 3 {
		return fmt.Errorf("post: answered %s: redirects are not followed; configure the final URL", resp.Status)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post: answered %s", resp.Status)
	}
	return nil
}
