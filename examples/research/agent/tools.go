package agent

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/keelrun/keel"
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

// CollectArgs are collect_documents' arguments.
type CollectArgs struct {
	Query string `json:"query,omitempty" jsonschema:"maxLength=200,description=Only documents mentioning this text (case-insensitive)"`
}

// Collection is what collect_documents finds.
type Collection struct {
	Count     int        `json:"count"`
	Documents []document `json:"documents"`
}

// Collect is collect_documents: it lists the documents of corpus that
// match a query.
func Collect(corpus fs.FS) func(context.Context, CollectArgs) (Collection, error) {
	return func(ctx context.Context, args CollectArgs) (Collection, error) {
		docs, names, err := readDocs(corpus)
		if err != nil {
			return Collection{}, fmt.Errorf("read corpus: %w", err)
		}
		out := Collection{Documents: []document{}}
		for _, n := range names {
			if args.Query != "" && !strings.Contains(strings.ToLower(docs[n]), strings.ToLower(args.Query)) {
				continue
			}
			out.Documents = append(out.Documents, document{Name: n, Title: title(docs[n], n), Words: len(strings.Fields(docs[n]))})
		}
		out.Count = len(out.Documents)
		return out, nil
	}
}

// AnalyzeArgs are analyze_documents' arguments.
type AnalyzeArgs struct {
	Documents []string `json:"documents" jsonschema:"minItems=1,maxItems=1000,description=Names of the documents to analyze"`
}

// Keyword is one frequent word.
type Keyword struct {
	Word  string `json:"word"`
	Count int    `json:"count"`
}

// Analysis is what analyze_documents finds.
type Analysis struct {
	Documents int       `json:"documents"`
	Words     int       `json:"words"`
	Keywords  []Keyword `json:"keywords"`
}

var stopWords = map[string]bool{"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"is": true, "it": true, "its": true, "that": true, "on": true, "for": true, "with": true, "as": true, "be": true, "by": true,
	"not": true, "no": true, "from": true, "what": true, "so": true, "are": true, "can": true, "only": true, "when": true,
	"their": true, "every": true, "after": true, "before": true, "never": true, "instead": true, "while": true, "this": true, "may": true}

// Analyze is analyze_documents: word counts and keywords, reporting
// progress per document.
func Analyze(corpus fs.FS) func(context.Context, AnalyzeArgs) (Analysis, error) {
	return func(ctx context.Context, args AnalyzeArgs) (Analysis, error) {
		docs, _, err := readDocs(corpus)
		if err != nil {
			return Analysis{}, fmt.Errorf("read corpus: %w", err)
		}
		freq := map[string]int{}
		words := 0
		total := int64(len(args.Documents))
		for i, n := range args.Documents {
			if err := ctx.Err(); err != nil {
				return Analysis{}, err
			}
			text, ok := docs[n]
			if !ok {
				return Analysis{}, fmt.Errorf("no document %q in the corpus", n)
			}
			for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) {
				words++
				if len(w) > 3 && !stopWords[w] {
					freq[w]++
				}
			}
			keel.ReportProgress(ctx, int64(i+1), total, n)
		}
		kws := []Keyword{}
		for w, c := range freq {
			kws = append(kws, Keyword{w, c})
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
		return Analysis{Documents: len(args.Documents), Words: words, Keywords: kws}, nil
	}
}

// DraftArgs are draft_report's arguments.
type DraftArgs struct {
	Title     string   `json:"title" jsonschema:"minLength=1,maxLength=200"`
	Documents []string `json:"documents,omitempty" jsonschema:"description=Documents to cover (default: all)"`
}

// Draft is what draft_report saved.
type Draft struct {
	ArtifactKey string `json:"artifact_key"`
	SHA256      string `json:"sha256"`
	Bytes       int64  `json:"bytes"`
}

// DraftReport is draft_report: it writes the report as an artifact and
// returns its key and hash. Saving a content-addressed artifact twice is
// harmless, so it is read-only for Keel's purposes: no approval.
func DraftReport(corpus fs.FS) func(context.Context, DraftArgs) (Draft, error) {
	return func(ctx context.Context, args DraftArgs) (Draft, error) {
		docs, names, err := readDocs(corpus)
		if err != nil {
			return Draft{}, fmt.Errorf("read corpus: %w", err)
		}
		if len(args.Documents) > 0 {
			names = args.Documents
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "# %s\n\n", args.Title)
		for _, n := range names {
			text, ok := docs[n]
			if !ok {
				return Draft{}, fmt.Errorf("no document %q in the corpus", n)
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
		a, err := keel.SaveArtifact(ctx, "report-"+sha256Hex(content)[:12]+".md", content)
		if err != nil {
			return Draft{}, fmt.Errorf("store report: %w", err)
		}
		return Draft{ArtifactKey: a.Path, SHA256: a.SHA256, Bytes: a.Size}, nil
	}
}

// Publisher is a destination for reports.
type Publisher interface {
	Name() string
	Promises() keel.Promise
	// Publish makes the report public under operationID; a repeat with the
	// same id is a no-op where Promises has IdempotentByKey.
	Publish(ctx context.Context, operationID, sha256 string, content []byte) (keel.Outcome, error)
	// Find reports whether a publication for operationID exists.
	Find(ctx context.Context, operationID string) (keel.Outcome, bool, error)
}

// PublishArgs are publish_report's arguments: the approved report.
type PublishArgs struct {
	ArtifactKey string `json:"artifact_key" jsonschema:"minLength=1"`
	SHA256      string `json:"sha256" jsonschema:"pattern=^[0-9a-f]{64}$"`
}

// report reads the artifact the arguments name and checks it has their
// hash: what is published is exactly what was approved.
func report(ctx context.Context, a PublishArgs) ([]byte, error) {
	b, info, err := keel.LoadArtifact(ctx, a.ArtifactKey)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if info.SHA256 != a.SHA256 {
		return nil, fmt.Errorf("report %s has sha256 %s, not the approved %s", a.ArtifactKey, info.SHA256, a.SHA256)
	}
	return b, nil
}

// Publish is publish_report's effect on to: the report is re-read and its
// hash checked before it is recorded (Prepare) and again at dispatch.
func Publish(to Publisher) keel.EffectSpec[PublishArgs] {
	spec := keel.EffectSpec[PublishArgs]{
		Destination: to.Name(),
		Promises:    to.Promises(),
		Prepare: func(ctx context.Context, a PublishArgs) (string, error) {
			if _, err := report(ctx, a); err != nil {
				return "", err
			}
			return a.SHA256, nil
		},
		Dispatch: func(ctx context.Context, opID string, a PublishArgs) (keel.Outcome, error) {
			content, err := report(ctx, a)
			if err != nil {
				return keel.Outcome{}, keel.Reject("%v", err)
			}
			return to.Publish(ctx, opID, a.SHA256, content)
		},
	}
	if to.Promises()&keel.LookupByKey != 0 {
		spec.Lookup = to.Find
	}
	if c, ok := to.(Counter); ok {
		spec.Count = c.Count
	}
	return spec
}

// Counter is a Publisher that can say how many publications an operation
// id made: the count hook of `keel crashtest` (keel.EffectSpec.Count).
type Counter interface {
	Count(ctx context.Context, operationID string) (int, error)
}

// Tools returns the four tools of the research agent.
func Tools(corpus fs.FS, to Publisher) []keel.Tool {
	return []keel.Tool{
		keel.ReadOnly("collect_documents", "List the documents of the research corpus, optionally only those mentioning a query.", Collect(corpus)),
		keel.ReadOnly("analyze_documents", "Analyze named documents: words and the most frequent keywords. Reports progress.", Analyze(corpus)),
		keel.ReadOnly("draft_report", "Draft the research report from the corpus as a markdown artifact; returns its key and sha256.", DraftReport(corpus)),
		keel.Effect("publish_report", "Publish a drafted report, identified by its artifact key and sha256. Needs approval of the exact hash.", Publish(to)),
	}
}

// cleanName keeps a publication file name inside its directory.
func cleanName(id string) (string, error) {
	if id == "" || id != path.Base(id) || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return "", fmt.Errorf("bad operation id %q", id)
	}
	return id, nil
}
