package keel_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// manual is the README and every page of docs/.
func manual(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v %v", docs, err)
	}
	return append([]string{"README.md"}, docs...)
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeListing: the README's "Write your own agent" listing is
// examples/quickstart/main.go, which go build and go vet compile and whose
// test runs it with a crash, so the listing in the README compiles and
// works.
func TestReadmeListing(t *testing.T) {
	readme := readFile(t, "README.md")
	main := readFile(t, "examples/quickstart/main.go")
	_, after, ok := strings.Cut(readme, "## Write your own agent")
	if !ok {
		t.Fatal("README has no \"Write your own agent\" section")
	}
	_, block, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatal("no go listing in \"Write your own agent\"")
	}
	block, _, _ = strings.Cut(block, "```")
	if block != main {
		t.Fatal("the README's listing is not examples/quickstart/main.go: copy the file into the README")
	}
}

// TestReadmeIsADoor: the README leads with the two commands and stays
// short; the manual is in docs/.
func TestReadmeIsADoor(t *testing.T) {
	readme := readFile(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 300 {
		t.Errorf("README.md has %d lines: keep it under 300, move the rest to docs/", n)
	}
	if !strings.HasPrefix(readme, "# Keel\n\n```\nmake demo") || !strings.Contains(readme, "\nmake test ") {
		t.Error("README.md does not open with make demo and make test")
	}
	for _, doc := range manual(t)[1:] {
		if !strings.Contains(readme, "]("+doc+")") {
			t.Errorf("README.md does not link %s", doc)
		}
	}
}

// goBlock is one ```go block of a page.
type goBlock struct {
	page    string
	line    int    // of the opening fence
	excerpt string // the file named by a <!-- excerpt: PATH --> line above it
	code    string
}

var excerptRe = regexp.MustCompile(`^<!-- excerpt: (\S+) -->$`)

func goBlocks(t *testing.T, page string) []goBlock {
	t.Helper()
	var out []goBlock
	var cur *goBlock
	prev := ""
	sc := bufio.NewScanner(strings.NewReader(readFile(t, page)))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && l == "```go":
			cur = &goBlock{page: page, line: n}
			if m := excerptRe.FindStringSubmatch(prev); m != nil {
				cur.excerpt = m[1]
			}
		case cur != nil && l == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += l + "\n"
		}
		prev = l
	}
	if cur != nil {
		t.Fatalf("%s:%d: a go block is never closed", page, cur.line)
	}
	return out
}

// TestManualGoBlocks keeps every Go block of the README and docs/ true:
// a complete file (it starts with package) is compiled and vetted against
// this module; any other block must be marked as an excerpt of a Go file
// of the repository (which its package's build and tests keep working)
// and appear in it line for line, indentation aside.
func TestManualGoBlocks(t *testing.T) {
	var files []goBlock
	for _, page := range manual(t) {
		for _, b := range goBlocks(t, page) {
			switch {
			case b.excerpt != "":
				src := readFile(t, b.excerpt)
				if !strings.Contains(trimLines(src), trimLines(b.code)) {
					t.Errorf("%s:%d: the block is not in %s as it is: copy it again", b.page, b.line, b.excerpt)
				}
			case strings.HasPrefix(b.code, "package "):
				files = append(files, b)
			default:
				t.Errorf("%s:%d: a go block that is neither a complete file nor marked <!-- excerpt: PATH --> above it", b.page, b.line)
			}
		}
	}
	if len(files) == 0 {
		return
	}
	if testing.Short() {
		t.Skipf("-short: not compiling the %d complete Go files of the manual (make test-go does)", len(files))
	}
	// Inside the module, so the blocks build against this checkout; "_"
	// keeps the directory out of ./... patterns while it exists (so each
	// package is named).
	dir, err := os.MkdirTemp(".", "_manual")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	args := []string{"vet"}
	for i, b := range files {
		d := filepath.Join(dir, fmt.Sprintf("b%d", i))
		args = append(args, "./"+filepath.ToSlash(d))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "main.go"), []byte(b.code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.CommandContext(t.Context(), "go", args...).CombinedOutput()
	if err != nil {
		msg := string(out)
		for i, b := range files {
			msg = strings.ReplaceAll(msg, fmt.Sprintf("b%d/main.go", i), fmt.Sprintf("(%s:%d)", b.page, b.line))
		}
		t.Fatalf("go vet of the manual's Go files: %v\n%s", err, msg)
	}
}

// trimLines drops each line's indentation and the blank lines.
func trimLines(s string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

var linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestManualLinks: every relative link of the README and docs/ names a
// file that exists, and a heading of it when it has an #anchor.
func TestManualLinks(t *testing.T) {
	for _, page := range manual(t) {
		for _, m := range linkRe.FindAllStringSubmatch(readFile(t, page), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if anchor != "" && !hasAnchor(readFile(t, path), anchor) {
				t.Errorf("%s: link %s: %s has no heading with that anchor", page, target, path)
			}
		}
	}
}

var slugDrop = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)

// hasAnchor reports whether a heading of the markdown md has GitHub's
// anchor name.
func hasAnchor(md, anchor string) bool {
	inBlock := false
	for l := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
		}
		if inBlock || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if slug == anchor {
			return true
		}
	}
	return false
}

// TestBenchmarksMatchResults: the peers table of docs/benchmarks.md is
// the one `make bench-peers` wrote to bench/results/peers.json — each
// row's system, N, ms per step and ratio to the floor, as the bench prints
// them — so a new measurement cannot leave the page behind.
func TestBenchmarksMatchResults(t *testing.T) {
	var res struct {
		Rows []struct {
			System string  `json:"system"`
			N      int     `json:"n"`
			MS     float64 `json:"ms_per_step"`
			Ratio  float64 `json:"ratio_to_floor"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(readFile(t, "bench/results/peers.json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 {
		t.Fatal("bench/results/peers.json has no rows")
	}
	rows := map[string]bool{}
	for l := range strings.SplitSeq(readFile(t, "docs/benchmarks.md"), "\n") {
		if f := strings.Fields(l); len(f) >= 4 {
			rows[strings.Join(f[:4], " ")] = true
		}
	}
	for _, r := range res.Rows {
		if r.MS == 0 {
			continue // a peer that could not run: a row saying why
		}
		want := fmt.Sprintf("%s %d %.3f %.2f×", r.System, r.N, r.MS, r.Ratio)
		if !rows[want] {
			t.Errorf("docs/benchmarks.md has no row %q of bench/results/peers.json: paste the table make bench-peers printed", want)
		}
	}
}
