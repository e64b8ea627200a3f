package keel_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListing: the README's "Write your own agent" listing is
// examples/quickstart/main.go, which go build and go vet compile and whose
// test runs it with a crash, so the listing in the README compiles and
// works.
func TestReadmeListing(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile("examples/quickstart/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Write your own agent")
	if !ok {
		t.Fatal("README has no \"Write your own agent\" section")
	}
	_, block, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatal("no go listing in \"Write your own agent\"")
	}
	block, _, _ = strings.Cut(block, "```")
	if block != string(main) {
		t.Fatal("the README's listing is not examples/quickstart/main.go: copy the file into the README")
	}
}
