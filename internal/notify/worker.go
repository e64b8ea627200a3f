package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/scrub"
)

// Store is what the worker reads and writes: the outbox, the run and
// approval a message shows, and the run's log for a final failure.
type Store interface {
	store.Outbox
	GetRun(ctx context.Context, id string) (run.Run, error)
	GetApproval(ctx context.Context, runID, approvalID string) (run.Approval, error)
	AppendEvents(ctx context.Context, runID string, events []run.Event) ([]int64, error)
}

// Defaults of [Options].
const (
	DefaultMaxAttempts = 8
	DefaultBackoff     = 5 * time.Second
	DefaultMaxBackoff  = 10 * time.Minute
	DefaultLinkTTL     = 72 * time.Hour
	DefaultInterval    = 2 * time.Second
	// attemptTimeout bounds one attempt; the claim keeps others off the
	// notification for that long.
	attemptTimeout = time.Minute
)

// Options configure a [Worker]. Zero values mean the defaults above.
type Options struct {
	Channels []Channel
	// LinkKey derives approval links; BaseURL is where keel's HTTP server
	// is reached (the link is BaseURL + LinkPath + token). Without either,
	// messages carry no link.
	LinkKey     []byte
	BaseURL     string
	LinkTTL     time.Duration
	MaxAttempts int64
	// Backoff is the wait after the first failed attempt, doubled after
	// each next one up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	Clock               func() time.Time
	Logger              *slog.Logger
	// Secrets are masked in every message before any channel sees it (the
	// run's input, the reason, the arguments): what the API and the link
	// page mask must not leave by webhook, Slack or e-mail either.
	Secrets scrub.Secrets
}

// Worker delivers due notifications. It holds no state between calls: any
// number of workers, in any number of processes, may share one store.
type Worker struct {
	st  Store
	opt Options
}

// NewWorker returns a worker over st.
func NewWorker(st Store, opt Options) *Worker {
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = DefaultMaxAttempts
	}
	if opt.Backoff <= 0 {
		opt.Backoff = DefaultBackoff
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = DefaultMaxBackoff
	}
	if opt.LinkTTL <= 0 {
		opt.LinkTTL = DefaultLinkTTL
	}
	if opt.Clock == nil {
		opt.Clock = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	opt.BaseURL = strings.TrimRight(opt.BaseURL, "/")
	return &Worker{st: st, opt: opt}
}

// Run delivers what is due every interval until ctx ends.
func (w *Worker) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := w.DeliverDue(ctx); err != nil && ctx.Err() == nil {
			w.opt.Logger.WarnContext(ctx, "notify: deliver", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeliverDue makes one attempt at every notification due now and returns
// how many it attempted. Another worker's claim is not an error.
func (w *Worker) DeliverDue(ctx context.Context) (int, error) {
	due, err := w.st.DueNotifications(ctx, w.opt.Clock(), 100)
	if err != nil {
		return 0, fmt.Errorf("notify: due notifications: %w", err)
	}
	n := 0
	for _, note := range due {
		ok, err := w.attempt(ctx, note)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// attempt claims one attempt at n, sends to every channel that has not
// taken it, and records the outcome. false: another worker claimed it.
func (w *Worker) attempt(ctx context.Context, n run.Notification) (bool, error) {
	now := w.opt.Clock()
	c := n
	c.Attempts++
	c.NextAttemptAt = now.Add(attemptTimeout)
	link := ""
	if c.Kind == run.NotifyApproval && len(w.opt.LinkKey) > 0 && w.opt.BaseURL != "" {
		token := LinkToken(w.opt.LinkKey, c)
		link = w.opt.BaseURL + LinkPath + token
		if c.LinkHash != LinkHash(token) { // first attempt, or a new link key
			c.LinkHash = LinkHash(token)
			c.LinkExpiresAt = c.CreatedAt.Add(w.opt.LinkTTL)
		}
	}
	if err := w.st.UpdateNotification(ctx, c, n.Attempts); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return false, nil
		}
		return false, fmt.Errorf("notify: claim %s: %w", n.ID, err)
	}
	m, skip, err := w.message(ctx, c, link)
	var failures []string
	switch {
	case err != nil:
		failures = append(failures, err.Error())
	case skip != "":
		c.LastError = skip
	default:
		failures = w.send(ctx, &c, m)
	}
	return true, w.finish(ctx, c, failures)
}

// send gives m to each channel that has not taken it yet.
func (w *Worker) send(ctx context.Context, c *run.Notification, m Message) []string {
	var failures []string
	for _, ch := range w.opt.Channels {
		if slices.Contains(c.Delivered, ch.Name()) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, attemptTimeout/2)
		err := ch.Send(sctx, m)
		cancel()
		if err != nil {
			failures = append(failures, ch.Name()+": "+err.Error())
			continue
		}
		c.Delivered = append(c.Delivered, ch.Name())
	}
	return failures
}

// finish records the attempt's outcome: delivered, due again after the
// backoff, or failed for good with a notification_failed event.
func (w *Worker) finish(ctx context.Context, c run.Notification, failures []string) error {
	claimed := c.Attempts
	now := w.opt.Clock()
	switch {
	case len(failures) == 0:
		c.Status = run.NotificationDelivered
		if !strings.HasPrefix(c.LastError, "skipped") {
			c.LastError = ""
		}
	case c.Attempts >= w.opt.MaxAttempts:
		c.Status, c.LastError = run.NotificationFailed, clip(strings.Join(failures, "; "))
	default:
		c.LastError = clip(strings.Join(failures, "; "))
		c.NextAttemptAt = now.Add(w.backoff(c.Attempts))
	}
	if err := w.st.UpdateNotification(ctx, c, claimed); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil // the claim ran out and another worker took over
		}
		return fmt.Errorf("notify: record attempt %d of %s: %w", claimed, c.ID, err)
	}
	if len(failures) > 0 {
		w.opt.Logger.WarnContext(ctx, "notify: delivery failed", "run_id", c.RunID, "notification_id", c.ID,
			"attempt", c.Attempts, "final", c.Status == run.NotificationFailed, "err", c.LastError)
	}
	if c.Status != run.NotificationFailed {
		return nil
	}
	data, err := json.Marshal(map[string]any{"notification_id": c.ID, "kind": c.Kind, "approval_id": c.ApprovalID,
		"attempts": c.Attempts, "error": c.LastError, "delivered": c.Delivered})
	if err != nil {
		return err
	}
	if _, err := w.st.AppendEvents(ctx, c.RunID, []run.Event{{Type: run.EventNotificationFailed, Data: data}}); err != nil {
		return fmt.Errorf("notify: record failure of %s: %w", c.ID, err)
	}
	return nil
}

// backoff is the wait after failed attempt n (1-based).
func (w *Worker) backoff(n int64) time.Duration {
	d := w.opt.Backoff
	for i := int64(1); i < n && d < w.opt.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, w.opt.MaxBackoff)
}

// message builds what the channels send; skip is set (and nothing is
// sent) for an approval no longer pending: there is nothing left to ask.
func (w *Worker) message(ctx context.Context, n run.Notification, link string) (m Message, skip string, err error) {
	r, err := w.st.GetRun(ctx, n.RunID)
	if err != nil {
		return m, "", fmt.Errorf("read run: %w", err)
	}
	m = Message{DeliveryID: n.ID, Kind: string(n.Kind), RunID: n.RunID, Agent: r.Agent, Request: r.Request,
		Status: string(r.Status), Reason: r.Error, CreatedAt: n.CreatedAt}
	if n.Kind != run.NotifyApproval {
		return w.mask(m), "", nil
	}
	a, err := w.st.GetApproval(ctx, n.RunID, n.ApprovalID)
	if err != nil {
		return m, "", fmt.Errorf("read approval: %w", err)
	}
	if a.Status != run.ApprovalPending {
		return m, "skipped: the approval is " + string(a.Status), nil
	}
	m.ApprovalID, m.Tool, m.Args, m.ArgsHash = a.ID, a.Tool, a.Args, n.ArgsHash
	if link != "" {
		m.Link, m.LinkExpiresAt = link, n.LinkExpiresAt
	}
	return w.mask(m), "", nil
}

// mask masks the configured secrets in what m carries from the run. Args
// that masking leaves invalid JSON (a secret that was a bare number) go
// as a JSON string of the masked text. The args hash is kept: it names
// the stored action, which the link page shows masked in the same way.
func (w *Worker) mask(m Message) Message {
	s := w.opt.Secrets
	if s.Len() == 0 {
		return m
	}
	m.Agent, m.Request, m.Reason, m.Tool = s.String(m.Agent), s.String(m.Request), s.String(m.Reason), s.String(m.Tool)
	if len(m.Args) > 0 {
		args := s.Bytes(m.Args)
		if !json.Valid(args) {
			args, _ = json.Marshal(string(args))
		}
		m.Args = args
	}
	return m
}

func clip(s string) string {
	if len(s) > store.MaxDeliveryError {
		return s[:store.MaxDeliveryError]
	}
	return s
}
