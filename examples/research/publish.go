package research

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/keelrun/keel"
)

// DirPublisher publishes a report as {dir}/{operation_id}.md. Creation is
// exclusive (a hard link of a fully written temp file), so a repeat with
// the same operation id never makes a second copy, and Find is a stat.
type DirPublisher struct{ Dir string }

// Name implements Publisher.
func (d DirPublisher) Name() string { return "dir:" + d.Dir }

// Promises implements Publisher: creation is exclusive by operation id,
// and a publication can be looked up by it.
func (d DirPublisher) Promises() keel.Promise { return keel.IdempotentByKey | keel.LookupByKey }

// Publish implements Publisher.
func (d DirPublisher) Publish(ctx context.Context, opID, sha string, content []byte) (keel.Outcome, error) {
	name, err := cleanName(opID)
	if err != nil {
		return keel.Outcome{}, keel.Reject("%s", err.Error())
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return keel.Outcome{}, err
	}
	final := filepath.Join(d.Dir, name+".md")
	tmp, err := os.CreateTemp(d.Dir, ".tmp-*")
	if err != nil {
		return keel.Outcome{}, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return keel.Outcome{}, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return keel.Outcome{}, err
	}
	if err := tmp.Close(); err != nil {
		return keel.Outcome{}, err
	}
	if err := os.Link(tmp.Name(), final); err != nil && !errors.Is(err, os.ErrExist) {
		return keel.Outcome{}, err
	}
	if err := syncDir(d.Dir); err != nil {
		return keel.Outcome{}, err
	}
	out, found, err := d.Find(ctx, opID)
	if err == nil && !found {
		err = fmt.Errorf("publication %s vanished after publishing", opID)
	}
	return out, err
}

// Find implements Publisher.
func (d DirPublisher) Find(_ context.Context, opID string) (keel.Outcome, bool, error) {
	name, err := cleanName(opID)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	b, err := os.ReadFile(filepath.Join(d.Dir, name+".md"))
	if errors.Is(err, os.ErrNotExist) {
		return keel.Outcome{}, false, nil
	}
	if err != nil {
		return keel.Outcome{}, false, err
	}
	res, _ := json.Marshal(map[string]any{"path": filepath.Join(d.Dir, name+".md"), "sha256": sha256Hex(b)})
	return keel.Outcome{ExternalID: name, Result: res}, true, nil
}

// Count returns how many publications the directory holds.
func (d DirPublisher) Count() (int, error) {
	m, err := filepath.Glob(filepath.Join(d.Dir, "*.md"))
	return len(m), err
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// HTTPPublisher publishes to a PublicationServer (or any endpoint with the
// same contract): POST {base}/publications with an Idempotency-Key header,
// and GET {base}/publications/{operation_id} to look one up.
type HTTPPublisher struct {
	Base   string
	Client *http.Client
	// NoLookup and NotIdempotent declare a weaker destination (the crash
	// suite's "none" mode): then an unknown outcome needs a person.
	NoLookup, NotIdempotent bool
}

// Name implements Publisher.
func (h HTTPPublisher) Name() string { return "http:" + h.Base }

// Promises implements Publisher.
func (h HTTPPublisher) Promises() keel.Promise {
	var p keel.Promise
	if !h.NotIdempotent {
		p |= keel.IdempotentByKey
	}
	if !h.NoLookup {
		p |= keel.LookupByKey
	}
	return p
}

func (h HTTPPublisher) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Publish implements Publisher.
func (h HTTPPublisher) Publish(ctx context.Context, opID, sha string, content []byte) (keel.Outcome, error) {
	body, _ := json.Marshal(map[string]string{"operation_id": opID, "sha256": sha, "content": string(content)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.Base, "/")+"/publications", bytes.NewReader(body))
	if err != nil {
		return keel.Outcome{}, keel.Reject("%s", err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	if !h.NotIdempotent {
		req.Header.Set("Idempotency-Key", opID)
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return keel.Outcome{}, fmt.Errorf("publish %s: %w", opID, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return keel.Outcome{}, fmt.Errorf("publish %s: reading response: %w", opID, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		var p Publication
		if err := json.Unmarshal(b, &p); err != nil {
			return keel.Outcome{}, fmt.Errorf("publish %s: response: %w", opID, err)
		}
		return keel.Outcome{ExternalID: p.ID, Result: b}, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return keel.Outcome{}, keel.Reject("status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	default:
		return keel.Outcome{}, fmt.Errorf("publish %s: status %d", opID, resp.StatusCode)
	}
}

// Find implements Publisher.
func (h HTTPPublisher) Find(ctx context.Context, opID string) (keel.Outcome, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(h.Base, "/")+"/publications/"+url.PathEscape(opID), nil)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		var p Publication
		if err := json.Unmarshal(b, &p); err != nil {
			return keel.Outcome{}, false, err
		}
		return keel.Outcome{ExternalID: p.ID, Result: b}, true, nil
	case http.StatusNotFound:
		return keel.Outcome{}, false, nil
	default:
		return keel.Outcome{}, false, fmt.Errorf("lookup %s: status %d", opID, resp.StatusCode)
	}
}

var _ Counter = HTTPPublisher{}

// Count implements Counter: the publications the server lists for
// operationID (GET {base}/publications, which answers whatever the
// contract; a test's sandbox, not a production lookup).
func (h HTTPPublisher) Count(ctx context.Context, opID string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(h.Base, "/")+"/publications", nil)
	if err != nil {
		return 0, err
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("list publications: status %d", resp.StatusCode)
	}
	var list struct {
		Publications []Publication `json:"publications"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&list); err != nil {
		return 0, fmt.Errorf("list publications: %w", err)
	}
	n := 0
	for _, p := range list.Publications {
		if p.OperationID == opID {
			n++
		}
	}
	return n, nil
}

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
