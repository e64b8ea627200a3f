// Command prog is one agent program built in several versions for the
// upgrade tests: `go build -ldflags "-X main.variant=NAME"` picks the
// definition. The destination is a log file under $UPGRADE_DEST (every
// dispatch appends a line, fsynced), so a test counts dispatches per
// operation id across processes killed with SIGKILL.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel"
)

// variant is set by -ldflags -X: v1, v1-none, v2-rename, v2-removed,
// v2-instructions, v2-idempotent, v2-pinned.
var variant = "v1"

// script calls publish once, then answers.
const script = `{"turns":[{"tool_calls":[{"name":"publish","args":{"title":"Q3","body":"All good."}}]}],"final":"Published."}`

// Publish is v1's arguments.
type Publish struct {
	Title string `json:"title" jsonschema:"required"`
	Body  string `json:"body" jsonschema:"required"`
}

// PublishRenamed is v2-rename's: title became headline.
type PublishRenamed struct {
	Headline string `json:"headline" jsonschema:"required"`
	Body     string `json:"body" jsonschema:"required"`
}

// Note is a read-only tool v2-removed has instead of publish.
type Note struct {
	Text string `json:"text"`
}

type dest struct{ log string }

func (d dest) dispatch(ctx context.Context, opID string) (keel.Outcome, error) {
	f, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return keel.Outcome{}, err
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, opID); err != nil {
		return keel.Outcome{}, err
	}
	return keel.Outcome{ExternalID: "pub-" + opID}, f.Sync()
}

func (d dest) count(_ context.Context, opID string) (int, error) {
	b, err := os.ReadFile(d.log)
	if os.IsNotExist(err) {
		return 0, nil
	}
	n := 0
	for sc := bufio.NewScanner(strings.NewReader(string(b))); sc.Scan(); {
		if sc.Text() == opID {
			n++
		}
	}
	return n, err
}

func (d dest) lookup(ctx context.Context, opID string) (keel.Outcome, bool, error) {
	n, err := d.count(ctx, opID)
	return keel.Outcome{ExternalID: "pub-" + opID}, n > 0, err
}

func publish[A any](d dest, p keel.Promise) keel.Tool {
	spec := keel.EffectSpec[A]{
		Dispatch: func(ctx context.Context, opID string, _ A) (keel.Outcome, error) { return d.dispatch(ctx, opID) },
		Promises: p, Count: d.count, Destination: "pubdest",
	}
	if p&keel.LookupByKey != 0 {
		spec.Lookup = d.lookup
	}
	return keel.Effect("publish", "Publish a note", spec)
}

func agent(d dest) keel.Agent {
	a := keel.Agent{Name: "publisher", Instructions: "Publish the note.", Model: keel.ScriptedModel([]byte(script))}
	switch variant {
	case "v1":
		a.Tools = []keel.Tool{publish[Publish](d, keel.LookupByKey)}
	case "v1-none":
		a.Tools = []keel.Tool{publish[Publish](d, keel.PromisesNothing)}
	case "v2-rename":
		a.Tools = []keel.Tool{publish[PublishRenamed](d, keel.LookupByKey)}
	case "v2-removed":
		a.Tools = []keel.Tool{keel.ReadOnly("note", "Take a note", func(context.Context, Note) (string, error) { return "noted", nil })}
	case "v2-instructions":
		a.Instructions = "Publish the note, then say so."
		a.Tools = []keel.Tool{publish[Publish](d, keel.LookupByKey)}
	case "v2-pinned":
		// v2-instructions whose runs are pinned to their version.
		a.Instructions = "Publish the note, then say so."
		a.Tools = []keel.Tool{publish[Publish](d, keel.LookupByKey)}
		a.Versions = keel.VersionPin
	case "v2-idempotent":
		a.Tools = []keel.Tool{publish[Publish](d, keel.IdempotentByKey)}
	default:
		fmt.Fprintf(os.Stderr, "unknown variant %q\n", variant)
		os.Exit(2)
	}
	return a
}

func main() {
	dir := os.Getenv("UPGRADE_DEST")
	if dir == "" {
		dir = "."
	}
	keel.Main(agent(dest{log: filepath.Join(dir, "published.log")}))
}
