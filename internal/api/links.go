package api

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"unicode"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/notify"
)

// A one-time approval link (internal/notify) opens a page at
// notify.LinkPath + token that needs no bearer token: the token is the
// credential. It shows the exact action and its args hash; its form
// approves or denies through the same decision path as
// POST /v1/runs/{id}/approvals/{approval_id}, so whichever answer (link,
// CLI, API, viewer) lands first wins and the others are refused. The link
// is spent by the decision's own write: a link is never spent without a
// decision, and opening it again after its decision shows that decision
// and wakes the run once more.

var linkPage = template.Must(template.New("link").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>Keel approval</title>
<style>body{font:15px system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}
pre{background:#f4f4f4;padding:.75rem;white-space:pre-wrap;word-break:break-all}
button{font-size:1rem;padding:.5rem 1.25rem;margin-right:1rem}</style></head><body>
<h1>{{.Title}}</h1>
{{if .Message}}<p id="message">{{.Message}}</p>{{end}}
{{if .Tool}}<dl><dt>Run</dt><dd><code id="run">{{.RunID}}</code></dd>
<dt>Tool</dt><dd><code id="tool">{{.Tool}}</code></dd>
<dt>Arguments</dt><dd><pre id="args">{{.Args}}</pre></dd>
<dt>Args hash</dt><dd><code id="hash">{{.ArgsHash}}</code></dd>
<dt>Link expires</dt><dd>{{.Expires}}</dd></dl>{{end}}
{{if .Ask}}<form method="post">
<button id="approve" name="decision" value="approve" type="submit">Approve</button>
<button id="deny" name="decision" value="deny" type="submit">Deny</button></form>{{end}}
</body></html>`))

type linkView struct {
	Title, Message, RunID, Tool, Args, ArgsHash, Expires string
	Ask                                                  bool
}

// linkTarget resolves a link to its notification and approval, or writes
// the page that refuses it (or, for a link that already decided, the
// page of that decision) and returns false.
// decision is the one a POST asks ("" for GET): a retry of the link's own
// decision is answered with it, another decision is refused.
func (s *server) linkTarget(w http.ResponseWriter, r *http.Request, decision string) (run.Notification, run.Approval, string, bool) {
	token := r.PathValue("token")
	runID, id, hash, ok := notify.ParseLink(token)
	var n run.Notification
	if ok {
		n, ok = s.linkNotification(r, runID, id)
	}
	if !ok || n.LinkHash == "" || subtle.ConstantTimeCompare([]byte(n.LinkHash), []byte(hash)) != 1 {
		linkRefuse(w, http.StatusNotFound, "This link is not valid.")
		return n, run.Approval{}, "", false
	}
	a, err := s.store.GetApproval(r.Context(), n.RunID, n.ApprovalID)
	if err != nil {
		linkRefuse(w, http.StatusNotFound, "This link is not valid.")
		return n, run.Approval{}, "", false
	}
	switch {
	case s.links != nil && !s.links.LinkCurrent(n, token):
		// A genuine link (its hash is stored) under a link key since
		// rotated: rotating the key revokes what was sent under it.
		linkRefuse(w, http.StatusGone, "This link was revoked: the deployment's link key changed after it was sent. Decide with keel approve, the API or the viewer.")
		return n, run.Approval{}, "", false
	case !n.LinkUsedAt.IsZero() && decidedByLink(a, n) && (decision == "" || sameDecision(a, decision)):
		s.linkDecided(w, r, n, a)
		return n, run.Approval{}, "", false
	case !n.LinkUsedAt.IsZero() && decidedByLink(a, n):
		linkRefuse(w, http.StatusGone, fmt.Sprintf("This link was used already: the action is %s. It works once.", a.Status))
		return n, run.Approval{}, "", false
	case !n.LinkUsedAt.IsZero():
		linkRefuse(w, http.StatusGone, "This link was used already: it works once.")
		return n, run.Approval{}, "", false
	case !s.now().Before(n.LinkExpiresAt):
		linkRefuse(w, http.StatusGone, "This link expired.")
		return n, run.Approval{}, "", false
	case a.ArgsHash != n.ArgsHash:
		linkRefuse(w, http.StatusConflict, "The action changed since this link was sent: it is no longer valid.")
		return n, run.Approval{}, "", false
	case a.Status != run.ApprovalPending:
		linkRefuse(w, http.StatusConflict, fmt.Sprintf("This approval is already %s.", a.Status))
		return n, run.Approval{}, "", false
	}
	return n, a, hash, true
}

// decidedByLink reports whether a was decided through n's link.
func decidedByLink(a run.Approval, n run.Notification) bool {
	return a.Status != run.ApprovalPending && a.DecidedBy == linkDecider(n)
}

func linkDecider(n run.Notification) string { return "link:" + n.ID }

// sameDecision reports whether a's recorded status is what decision asks.
func sameDecision(a run.Approval, decision string) bool {
	return (decision == DecisionApprove && a.Status == run.ApprovalApproved) ||
		(decision == DecisionDeny && a.Status == run.ApprovalDenied)
}

func (s *server) linkNotification(r *http.Request, runID, id string) (run.Notification, bool) {
	if !validID(runID) || !validID(id) {
		return run.Notification{}, false
	}
	ns, err := s.store.ListNotifications(r.Context(), runID)
	if err != nil {
		return run.Notification{}, false
	}
	for _, n := range ns {
		if n.ID == id && n.Kind == run.NotifyApproval {
			return n, true
		}
	}
	return run.Notification{}, false
}

// linkShow serves GET notify.LinkPath{token}: the action and the form.
func (s *server) linkShow(w http.ResponseWriter, r *http.Request) {
	n, a, _, ok := s.linkTarget(w, r, "")
	if !ok {
		return
	}
	v := actionView(n, a)
	v.Title, v.Ask = "Approve this action?", true
	writeLinkPage(w, http.StatusOK, v)
}

// linkDecide serves POST notify.LinkPath{token}: the link spent and the
// decision recorded in one write (store.Decision.Link), then the run
// woken. A retry after a crash or a lost answer finds the link spent by
// its own decision, wakes the run again and shows the decision.
func (s *server) linkDecide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	decision := r.PostFormValue("decision")
	if decision != DecisionApprove && decision != DecisionDeny {
		linkRefuse(w, http.StatusBadRequest, `Choose "approve" or "deny".`)
		return
	}
	n, a, hash, ok := s.linkTarget(w, r, decision)
	if !ok {
		return
	}
	ctx := r.Context()
	decided, err := s.store.DecideApproval(ctx, store.Decision{RunID: n.RunID, ApprovalID: a.ID,
		Approve: decision == DecisionApprove, ArgsHash: n.ArgsHash, DecidedBy: linkDecider(n),
		Link: &store.LinkUse{NotificationID: n.ID, Hash: hash, At: s.now()}})
	switch {
	case errors.Is(err, store.ErrLinkUsed):
		// Another request with this link won the race.
		if cur, gerr := s.store.GetApproval(ctx, n.RunID, a.ID); gerr == nil && decidedByLink(cur, n) && sameDecision(cur, decision) {
			s.linkDecided(w, r, n, cur)
			return
		}
		linkRefuse(w, http.StatusGone, "This link was used already: it works once.")
		return
	case errors.Is(err, store.ErrConflict):
		linkRefuse(w, http.StatusConflict, "This approval was decided already through another channel.")
		return
	case errors.Is(err, store.ErrHashMismatch):
		linkRefuse(w, http.StatusConflict, "The action changed since this link was sent: it is no longer valid.")
		return
	case errors.Is(err, store.ErrNotFound):
		linkRefuse(w, http.StatusNotFound, "This link is not valid.")
		return
	case err != nil:
		s.log.ErrorContext(ctx, "link decision", "run_id", n.RunID, "approval_id", a.ID, "err", err)
		linkRefuse(w, http.StatusInternalServerError, "The decision could not be recorded; try again.")
		return
	}
	s.linkDecided(w, r, n, decided)
}

// linkDecided wakes the run the link's decision answered (again, for a
// retry: waking is idempotent) and shows the decision.
func (s *server) linkDecided(w http.ResponseWriter, r *http.Request, n run.Notification, a run.Approval) {
	v := actionView(n, a)
	v.Title = "Recorded: " + string(a.Status)
	v.Message = "The run is moving."
	if err := s.resumer.Resume(r.Context(), a); err != nil {
		s.log.ErrorContext(r.Context(), "resume after link decision", "run_id", n.RunID, "approval_id", a.ID, "err", err)
		v.Message = "The decision is recorded; the run will be woken by the sweeper's next pass, or open this link again."
	}
	writeLinkPage(w, http.StatusOK, v)
}

func actionView(n run.Notification, a run.Approval) linkView {
	return linkView{RunID: visible(n.RunID), Tool: visible(a.Tool), Args: visible(string(a.Args)), ArgsHash: a.ArgsHash,
		Expires: n.LinkExpiresAt.UTC().Format("2006-01-02 15:04 MST")}
}

func linkRefuse(w http.ResponseWriter, code int, msg string) {
	writeLinkPage(w, code, linkView{Title: "Link refused", Message: msg})
}

func writeLinkPage(w http.ResponseWriter, code int, v linkView) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(code)
	_ = linkPage.Execute(w, v)
}

// visible shows control characters and bidi/invisible format characters
// as \uXXXX escapes, so the page shows what the arguments hold, not what
// they make a browser draw. (html/template escapes the markup.)
func visible(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c != '\n' && c != '\t' && (unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || c == '\u2028' || c == '\u2029') {
			fmt.Fprintf(&b, `\u%04x`, c)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// listNotifications serves GET /v1/runs/{id}/notifications: the run's
// outbox, delivery state and last error included (never a link token).
func (s *server) listNotifications(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	ns, err := s.store.ListNotifications(r.Context(), rr.ID)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	if ns == nil {
		ns = []run.Notification{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"notifications": ns})
}
