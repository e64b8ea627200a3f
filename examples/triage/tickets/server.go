package tickets

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Ticket statuses. A solved ticket may be reopened; a closed one is final.
const (
	StatusOpen    = "open"
	StatusPending = "pending"
	StatusSolved  = "solved"
	StatusClosed  = "closed"
)

// MaxReply is the longest reply an update may carry, in characters.
const MaxReply = 2000

// maxKey is the longest Idempotency-Key the service accepts.
const maxKey = 255

// Ticket is a support request.
type Ticket struct {
	ID         string   `json:"id"`
	CustomerID string   `json:"customer_id"`
	Subject    string   `json:"subject"`
	Body       string   `json:"body"`
	Status     string   `json:"status"`
	Tags       []string `json:"tags"`
	// Replies are the replies sent by updates, oldest first.
	Replies []string `json:"replies,omitempty"`
}

// Customer is a customer's private profile.
type Customer struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Plan  string `json:"plan"`
	// Notes are the support team's notes about the customer.
	Notes string `json:"notes,omitempty"`
}

// Update is the body of POST /tickets/{id}/updates: the ticket's new
// status and the reply sent to the customer.
type Update struct {
	Status string `json:"status"`
	Reply  string `json:"reply"`
}

// Applied is the service's answer to an update, the same for every
// request with the same Idempotency-Key.
type Applied struct {
	UpdateID string    `json:"update_id"`
	TicketID string    `json:"ticket_id"`
	Status   string    `json:"status"`
	Key      string    `json:"idempotency_key"`
	At       time.Time `json:"at"`
}

// Data is what a Server starts with.
type Data struct {
	Tickets   []Ticket
	Customers []Customer
}

// SampleData is a small helpdesk: T-1001 (a failing export, customer
// c-17) is the ticket the triage script works on; T-1003 is closed.
func SampleData() Data {
	return Data{
		Tickets: []Ticket{
			{ID: "T-1001", CustomerID: "c-17", Subject: "CSV export fails with a timeout", Status: StatusOpen,
				Body: "Exporting our 2024 invoices to CSV spins for a minute, then shows 'timeout'.", Tags: []string{"export", "timeout"}},
			{ID: "T-1002", CustomerID: "c-23", Subject: "Export stuck at 99%", Status: StatusOpen,
				Body: "The PDF export of last month never finishes.", Tags: []string{"export"}},
			{ID: "T-1003", CustomerID: "c-17", Subject: "Invoice address typo", Status: StatusClosed,
				Body: "Please fix the street name on invoice 2291.", Tags: []string{"billing"}},
			{ID: "T-1004", CustomerID: "c-42", Subject: "Dashboard timeout after login", Status: StatusOpen,
				Body: "The dashboard times out since this morning.", Tags: []string{"timeout", "dashboard"}},
			{ID: "T-1005", CustomerID: "c-23", Subject: "Large export emails never arrive", Status: StatusSolved,
				Body: "Exports over 10,000 rows are mailed, but the mail never comes.", Tags: []string{"export", "email"}},
		},
		Customers: []Customer{
			{ID: "c-17", Name: "Ada Ortiz", Email: "ada@example.com", Plan: "enterprise", Notes: "Prefers short answers."},
			{ID: "c-23", Name: "Bo Lindqvist", Email: "bo@example.com", Plan: "team"},
			{ID: "c-42", Name: "Chen Wei", Email: "chen@example.com", Plan: "free"},
		},
	}
}

// Server is the ticket service, an http.Handler. Its state is in memory,
// guarded by one mutex; it is safe for concurrent requests.
type Server struct {
	token string
	mux   *http.ServeMux

	mu        sync.Mutex
	tickets   map[string]*Ticket
	customers map[string]Customer
	byKey     map[string]keyed // Idempotency-Key → the update it applied
	requests  map[string]int   // Idempotency-Key → update requests received
	received  int              // update requests received, keyed or not
	applied   []Applied        // in order
	now       func() time.Time
	// broken: keys are ignored, every update request is applied (see
	// BreakIdempotency).
	broken bool
}

// BreakIdempotency makes the service ignore Idempotency-Key from now on:
// every update request is applied again, as a destination that does not
// keep its promise. For tests that must catch such a destination (keel
// crashtest reports the duplicate).
func (s *Server) BreakIdempotency() {
	s.mu.Lock()
	s.broken = true
	s.mu.Unlock()
}

// listApplied answers GET /updates?key=K: the updates applied under key,
// in order (more than one only when idempotency is broken). A sandbox's
// count of effects, for crash tests.
func (s *Server) listApplied(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if key == "" {
		writeError(w, http.StatusBadRequest, "key is required")
		return
	}
	s.mu.Lock()
	out := []Applied{}
	for _, a := range s.applied {
		if a.Key == key {
			out = append(out, a)
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"applied": out})
}

// keyed is what a key applied, and the body it applied, so that a key
// reused with another body is refused rather than silently answered.
type keyed struct {
	applied Applied
	body    [sha256.Size]byte
}

var _ http.Handler = (*Server)(nil)

// NewServer returns a service holding d that accepts requests carrying
// "Authorization: Bearer token". The token must not be empty.
func NewServer(token string, d Data) (*Server, error) {
	if token == "" {
		return nil, errors.New("tickets: the server needs a token")
	}
	s := &Server{token: token, tickets: map[string]*Ticket{}, customers: map[string]Customer{},
		byKey: map[string]keyed{}, requests: map[string]int{}, now: time.Now}
	for _, t := range d.Tickets {
		t.Tags = slices.Clone(t.Tags)
		t.Replies = slices.Clone(t.Replies)
		s.tickets[t.ID] = &t
	}
	for _, c := range d.Customers {
		s.customers[c.ID] = c
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tickets/{id}", s.getTicket)
	mux.HandleFunc("GET /tickets/{id}/similar", s.similar)
	mux.HandleFunc("GET /customers/{id}", s.getCustomer)
	mux.HandleFunc("POST /tickets/{id}/updates", s.update)
	mux.HandleFunc("GET /updates", s.listApplied)
	s.mux = mux
	return s, nil
}

// ServeHTTP checks the token, then serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got, ok := bearer(r)
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tickets"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func bearer(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || h[:len(prefix)] != prefix {
		return "", false
	}
	return h[len(prefix):], true
}

// Ticket returns the ticket id as it is now.
func (s *Server) Ticket(id string) (Ticket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tickets[id]
	if !ok {
		return Ticket{}, false
	}
	return cloneTicket(t), true
}

// Applied returns every update applied, in order: one per Idempotency-Key.
func (s *Server) Applied() []Applied {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.applied)
}

// Requests returns how many update requests with Idempotency-Key key the
// service received (authenticated, whatever their outcome).
func (s *Server) Requests(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[key]
}

// UpdateRequests returns how many update requests the service received
// (authenticated, whatever their key or outcome).
func (s *Server) UpdateRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received
}

func (s *Server) getTicket(w http.ResponseWriter, r *http.Request) {
	t, ok := s.Ticket(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no ticket %q", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// similar answers the open tickets, other than id, that share a tag with
// it, by id.
func (s *Server) similar(w http.ResponseWriter, r *http.Request) {
	limit := 5
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 50 {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to 50")
			return
		}
		limit = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tickets[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no ticket %q", r.PathValue("id")))
		return
	}
	out := []Ticket{}
	for _, o := range s.tickets {
		if o.ID == t.ID || o.Status != StatusOpen || !slices.ContainsFunc(o.Tags, func(tag string) bool { return slices.Contains(t.Tags, tag) }) {
			continue
		}
		out = append(out, cloneTicket(o))
	}
	slices.SortFunc(out, func(a, b Ticket) int { return cmp.Compare(a.ID, b.ID) })
	if len(out) > limit {
		out = out[:limit]
	}
	writeJSON(w, http.StatusOK, map[string]any{"tickets": out})
}

func (s *Server) getCustomer(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c, ok := s.customers[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no customer %q", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// update applies an update once per Idempotency-Key.
func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.received++
	s.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > maxKey {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("an Idempotency-Key header of 1 to %d bytes is required", maxKey))
		return
	}
	var u Update
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		s.count(key)
		writeError(w, http.StatusBadRequest, "the body must be {\"status\": ..., \"reply\": ...}")
		return
	}
	id := r.PathValue("id")
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s", id, u.Status, u.Reply))

	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[key]++
	if k, ok := s.byKey[key]; ok && !s.broken {
		if k.body != sum {
			writeError(w, http.StatusUnprocessableEntity, "this Idempotency-Key was used for another update")
			return
		}
		writeJSON(w, http.StatusOK, k.applied)
		return
	}
	t, ok := s.tickets[id]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no ticket %q", id))
		return
	case t.Status == StatusClosed:
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("ticket %s is closed", id))
		return
	case !slices.Contains([]string{StatusOpen, StatusPending, StatusSolved}, u.Status):
		writeError(w, http.StatusUnprocessableEntity, "status must be open, pending or solved")
		return
	case u.Reply == "" || utf8.RuneCountInString(u.Reply) > MaxReply:
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("reply must be 1 to %d characters", MaxReply))
		return
	}
	t.Status = u.Status
	t.Replies = append(t.Replies, u.Reply)
	a := Applied{UpdateID: fmt.Sprintf("upd-%d", len(s.applied)+1), TicketID: id, Status: u.Status, Key: key, At: s.now().UTC()}
	s.applied = append(s.applied, a)
	s.byKey[key] = keyed{applied: a, body: sum}
	writeJSON(w, http.StatusCreated, a)
}

func (s *Server) count(key string) {
	s.mu.Lock()
	s.requests[key]++
	s.mu.Unlock()
}

func cloneTicket(t *Ticket) Ticket {
	c := *t
	c.Tags = slices.Clone(t.Tags)
	c.Replies = slices.Clone(t.Replies)
	return c
}

// errorBody is every error's body.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
