package research

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/keelrun/keel/internal/artifact"
	"github.com/keelrun/keel/internal/ops"
	"github.com/keelrun/keel/internal/run"
	"github.com/keelrun/keel/internal/tool"
)

//go:embed corpus/*.md
var sampleCorpus embed.FS

// SampleCorpus is the shipped set of documents.
func SampleCorpus() fs.FS {
	sub, err := fs.Sub(sampleCorpus, "corpus")
	if err != nil {
		// The embed pattern above guarantees the directory exists.
		return sampleCorpus
	}
	return sub
}

type document struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Words int    `json:"words"`
}

func readDocs(fsys fs.FS) (map[string]string, []string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil, err
	}
	docs := map[string]string{}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") && !strings.HasSuffix(e.Name(), ".txt") {
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, nil, err
		}
		docs[e.Name()] = string(b)
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return docs, names, nil
}

func title(text, fallback string) string {
	for _, line := range strings.Split(text, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return t
		}
	}
	return fallback
}

// Collect is collect_documents: it lists the documents of its corpus that
// match a query. Read-only.
type Collect struct{ Corpus fs.FS }

// Info implements tool.Tool.
func (c Collect) Info() tool.Info {
	return tool.Info{Name: "collect_documents", Mode: run.ModeSafeReadonly,
		Description: "List the documents of the research corpus, optionally only those mentioning a query.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":200}},"additionalProperties":false}`)}
}

// Run implements tool.Tool.
func (c Collect) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var args struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return tool.Result{}, err
	}
	docs, names, err := readDocs(c.Corpus)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read corpus: %w", err)
	}
	var found []document
	for _, n := range names {
		if args.Query != "" && !strings.Contains(strings.ToLower(docs[n]), strings.ToLower(args.Query)) {
			continue
		}
		found = append(found, document{Name: n, Title: title(docs[n], n), Words: len(strings.Fields(docs[n]))})
	}
	b, _ := json.Marshal(map[string]any{"count": len(found), "documents": found})
	return tool.Result{Content: string(b), Data: b}, nil
}

// Analyze is analyze_documents: word counts and keywords, with progress.
type Analyze struct{ Corpus fs.FS }

// Info implements tool.Tool.
func (a Analyze) Info() tool.Info {
	return tool.Info{Name: "analyze_documents", Mode: run.ModeSafeReadonly,
		Description: "Analyze named documents: words and the most frequent keywords. Reports progress.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"documents":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":1000}},"required":["documents"],"additionalProperties":false}`)}
}

var stopWords = map[string]bool{"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"is": true, "it": true, "its": true, "that": true, "on": true, "for": true, "with": true, "as": true, "be": true, "by": true,
	"not": true, "no": true, "from": true, "what": true, "so": true, "are": true, "can": true, "only": true, "when": true,
	"their": true, "every": true, "after": true, "before": true, "never": true, "instead": true, "while": true, "this": true, "may": true}

// Run implements tool.Tool.
func (a Analyze) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var args struct {
		Documents []string `json:"documents"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return tool.Result{}, err
	}
	docs, _, err := readDocs(a.Corpus)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read corpus: %w", err)
	}
	freq := map[string]int{}
	words := 0
	total := int64(len(args.Documents))
	for i, n := range args.Documents {
		if err := ctx.Err(); err != nil {
			return tool.Result{}, err
		}
		text, ok := docs[n]
		if !ok {
			return tool.Result{}, fmt.Errorf("no document %q in the corpus", n)
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) {
			words++
			if len(w) > 3 && !stopWords[w] {
				freq[w]++
			}
		}
		if call.Progress != nil {
			call.Progress(int64(i+1), total, n)
		}
	}
	type kw struct {
		Word  string `json:"word"`
		Count int    `json:"count"`
	}
	var kws []kw
	for w, c := range freq {
		kws = append(kws, kw{w, c})
	}
	sort.Slice(kws, func(i, j int) bool {
		if kws[i].Count != kws[j].Count {
			return kws[i].Count > kws[j].Count
		}
		return kws[i].Word < kws[j].Word
	})
	if len(kws) > 8 {
		kws = kws[:8]
	}
	b, _ := json.Marshal(map[string]any{"documents": len(args.Documents), "words": words, "keywords": kws})
	return tool.Result{Content: string(b), Data: b}, nil
}

// Draft is draft_report: it writes the report as an artifact and returns
// its key and hash. Writing a content-addressed artifact twice is harmless,
// so it needs no approval.
type Draft struct {
	Corpus    fs.FS
	Artifacts artifact.Store
}

// Info implements tool.Tool.
func (d Draft) Info() tool.Info {
	return tool.Info{Name: "draft_report", Mode: run.ModeSafeReadonly,
		Description: "Draft the research report from the corpus as a markdown artifact; returns its key and sha256.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","minLength":1,"maxLength":200},"documents":{"type":"array","items":{"type":"string"}}},"required":["title"],"additionalProperties":false}`)}
}

// Run implements tool.Tool.
func (d Draft) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var args struct {
		Title     string   `json:"title"`
		Documents []string `json:"documents"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return tool.Result{}, err
	}
	docs, names, err := readDocs(d.Corpus)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read corpus: %w", err)
	}
	if len(args.Documents) > 0 {
		names = args.Documents
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s\n\n", args.Title)
	for _, n := range names {
		text, ok := docs[n]
		if !ok {
			return tool.Result{}, fmt.Errorf("no document %q in the corpus", n)
		}
		fmt.Fprintf(&sb, "## %s\n\n", title(text, n))
		body := strings.TrimSpace(text)
		if i := strings.Index(body, "\n"); i >= 0 {
			body = strings.TrimSpace(body[i:])
		}
		first, _, _ := strings.Cut(strings.Join(strings.Fields(body), " "), ". ")
		fmt.Fprintf(&sb, "%s.\n\n_Source: %s_\n\n", strings.TrimSuffix(first, "."), n)
	}
	content := []byte(sb.String())
	cp := call.CheckpointID
	if cp == "" {
		cp = "start"
	}
	key := artifact.Key{RunID: call.RunID, CheckpointID: cp, Name: "report-" + run.HashBytes(content)[:12] + ".md"}
	info, err := d.Artifacts.Put(ctx, key, content)
	if err != nil {
		return tool.Result{}, fmt.Errorf("store report: %w", err)
	}
	b, _ := json.Marshal(map[string]any{"artifact_key": info.Key.Path(), "sha256": info.SHA256, "bytes": info.Size})
	return tool.Result{Content: string(b), Data: b}, nil
}

// Publisher is a destination for reports.
type Publisher interface {
	Name() string
	Contract() ops.Contract
	// Publish makes the report public under operationID; a repeat with the
	// same id is a no-op where the contract says Idempotent.
	Publish(ctx context.Context, operationID, sha256 string, content []byte) (ops.Outcome, error)
	// Find reports whether a publication for operationID exists.
	Find(ctx context.Context, operationID string) (ops.Outcome, bool, error)
}

// Publish is publish_report: mutating, an external effect. It publishes the
// approved artifact by hash and re-validates the hash before dispatch.
type Publish struct {
	Artifacts artifact.Store
	To        Publisher
}

var _ tool.Effectful = Publish{}

type publishArgs struct {
	ArtifactKey string `json:"artifact_key"`
	SHA256      string `json:"sha256"`
}

// Info implements tool.Tool.
func (p Publish) Info() tool.Info {
	return tool.Info{Name: "publish_report", Mode: run.ModeMutating,
		Description: "Publish a drafted report, identified by its artifact key and sha256. Needs approval of the exact hash.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"artifact_key":{"type":"string","minLength":1},"sha256":{"type":"string","pattern":"^[0-9a-f]{64}$"}},"required":["artifact_key","sha256"],"additionalProperties":false}`)}
}

// Run is never called for an effectful tool.
func (p Publish) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, fmt.Errorf("publish_report runs through the operation protocol")
}

func (p Publish) content(ctx context.Context, args json.RawMessage) (publishArgs, []byte, error) {
	var a publishArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return a, nil, err
	}
	k, err := artifact.ParsePath(a.ArtifactKey)
	if err != nil {
		return a, nil, err
	}
	b, info, err := p.Artifacts.Get(ctx, k)
	if err != nil {
		return a, nil, fmt.Errorf("read report: %w", err)
	}
	if info.SHA256 != a.SHA256 {
		return a, nil, fmt.Errorf("report %s has sha256 %s, not the approved %s", a.ArtifactKey, info.SHA256, a.SHA256)
	}
	return a, b, nil
}

// Intent implements tool.Effectful: the report must exist with the hash
// the call names.
func (p Publish) Intent(ctx context.Context, call tool.Call) (tool.Intent, error) {
	a, _, err := p.content(ctx, call.Args)
	if err != nil {
		return tool.Intent{}, err
	}
	return tool.Intent{ArtifactHash: a.SHA256}, nil
}

// Name implements ops.Destination.
func (p Publish) Name() string { return p.To.Name() }

// Contract implements ops.Destination.
func (p Publish) Contract() ops.Contract { return p.To.Contract() }

// Dispatch implements ops.Destination. The hash is checked again against
// the operation's recorded artifact hash: what is published is exactly what
// was approved.
func (p Publish) Dispatch(ctx context.Context, op run.Operation) (ops.Outcome, error) {
	a, content, err := p.content(ctx, op.Args)
	if err != nil {
		return ops.Outcome{}, &ops.Rejected{Reason: err.Error()}
	}
	if a.SHA256 != op.ArtifactHash {
		return ops.Outcome{}, &ops.Rejected{Reason: "artifact hash changed since the intent was recorded"}
	}
	return p.To.Publish(ctx, op.IdempotencyKey, op.ArtifactHash, content)
}

// Lookup implements ops.Destination.
func (p Publish) Lookup(ctx context.Context, op run.Operation) (ops.Outcome, bool, error) {
	return p.To.Find(ctx, op.IdempotencyKey)
}

// Describe implements tool.Effectful.
func (p Publish) Describe(op run.Operation) tool.Result {
	b, _ := json.Marshal(map[string]any{"published": true, "publication_id": op.ExternalID, "operation_id": op.ID, "sha256": op.ArtifactHash})
	return tool.Result{Content: string(b), Data: b}
}

// Tools returns the four tools of the research agent.
func Tools(corpus fs.FS, arts artifact.Store, to Publisher) []tool.Tool {
	return []tool.Tool{Collect{Corpus: corpus}, Analyze{Corpus: corpus}, Draft{Corpus: corpus, Artifacts: arts}, Publish{Artifacts: arts, To: to}}
}

// cleanName keeps a publication file name inside its directory.
func cleanName(id string) (string, error) {
	if id == "" || id != path.Base(id) || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return "", fmt.Errorf("bad operation id %q", id)
	}
	return id, nil
}
