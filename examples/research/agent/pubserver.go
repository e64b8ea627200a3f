package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Publication is one effect the server received.
type Publication struct {
	ID          string    `json:"id"`
	OperationID string    `json:"operation_id"`
	SHA256      string    `json:"sha256"`
	Bytes       int       `json:"bytes"`
	At          time.Time `json:"at"`
}

// ServerOptions configure a PublicationServer.
type ServerOptions struct {
	// Log, when set, is an append-only JSON-lines file of every effect,
	// fsync'd before the response: the ground truth the crash suite reads.
	Log string
	// NoIdempotency: every POST is a new publication, keys are ignored.
	NoIdempotency bool
	// NoLookup: GET of a publication is 404 for everything.
	NoLookup bool
	// DropResponses: the first N accepted POSTs are recorded, then the
	// connection is closed without a response (a lost answer).
	DropResponses int
	// Hang: after recording, accepted POSTs never answer until the client
	// gives up (a timeout that cannot confirm).
	Hang bool
}

// PublicationServer is the reference external destination: it records
// every effect, honours Idempotency-Key and answers lookups by operation id.
type PublicationServer struct {
	opt     ServerOptions
	mu      sync.Mutex
	byKey   map[string]Publication
	all     []Publication
	dropped int
}

// NewPublicationServer loads the log, if any, and returns the server.
func NewPublicationServer(opt ServerOptions) (*PublicationServer, error) {
	s := &PublicationServer{opt: opt, byKey: map[string]Publication{}}
	if opt.Log != "" {
		f, err := os.Open(opt.Log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var p Publication
				if json.Unmarshal(sc.Bytes(), &p) == nil {
					s.add(p)
				}
			}
			f.Close()
		}
	}
	return s, nil
}

func (s *PublicationServer) add(p Publication) {
	s.all = append(s.all, p)
	if _, ok := s.byKey[p.OperationID]; !ok {
		s.byKey[p.OperationID] = p
	}
}

// Publications returns every effect received, in order.
func (s *PublicationServer) Publications() []Publication {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Publication(nil), s.all...)
}

// ServeHTTP implements http.Handler.
func (s *PublicationServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/publications":
		s.post(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/publications/"):
		s.get(w, strings.TrimPrefix(r.URL.Path, "/publications/"))
	case r.Method == http.MethodGet && r.URL.Path == "/publications":
		w.Header().Set("Content-Type", "application/json")
		ps := s.Publications()
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].At.Before(ps[j].At) })
		_ = json.NewEncoder(w).Encode(map[string]any{"publications": ps})
	default:
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
	}
}

func (s *PublicationServer) post(w http.ResponseWriter, r *http.Request) {
	var in struct {
		OperationID string `json:"operation_id"`
		SHA256      string `json:"sha256"`
		Content     string `json:"content"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&in); err != nil || in.OperationID == "" {
		http.Error(w, `{"error":"body must be {operation_id, sha256, content}"}`, http.StatusBadRequest)
		return
	}
	if sha256Hex([]byte(in.Content)) != in.SHA256 {
		http.Error(w, `{"error":"sha256 does not match content"}`, http.StatusUnprocessableEntity)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	if !s.opt.NoIdempotency && key != "" {
		if p, ok := s.byKey[key]; ok {
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	p := Publication{ID: newID("pub"), OperationID: in.OperationID, SHA256: in.SHA256, Bytes: len(in.Content), At: time.Now().UTC()}
	if err := s.appendLog(p); err != nil {
		s.mu.Unlock()
		http.Error(w, `{"error":"log write failed"}`, http.StatusInternalServerError)
		return
	}
	s.add(p)
	drop := s.dropped < s.opt.DropResponses
	if drop {
		s.dropped++
	}
	s.mu.Unlock()
	if drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if s.opt.Hang {
		<-r.Context().Done()
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

func (s *PublicationServer) get(w http.ResponseWriter, opID string) {
	if s.opt.NoLookup {
		http.Error(w, `{"error":"lookup not supported"}`, http.StatusNotFound)
		return
	}
	s.mu.Lock()
	p, ok := s.byKey[opID]
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *PublicationServer) appendLog(p Publication) error {
	if s.opt.Log == "" {
		return nil
	}
	f, err := os.OpenFile(s.opt.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(p)
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
