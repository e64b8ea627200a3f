package cmdrunner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// TestRefusedBeforeAnything: requests the runner must not serve are
// answered with an error kind and touch no directory.
func TestRefusedBeforeAnything(t *testing.T) {
	up := Upload{URL: "http://127.0.0.1:1/", KeyPrefix: "workspace-staging/r/g/"}
	cases := []struct {
		name, kind, says string
		req              Request
	}{
		{"network", KindSetup, "AllowHosts", Request{RunID: "r", Argv: []string{"true"}, Upload: up, Policy: sandbox.Policy{AllowHosts: []string{"example.com"}}}},
		{"empty argv", KindRequest, "argv", Request{RunID: "r", Upload: up}},
		{"bad run id", KindRequest, "run_id", Request{RunID: "../x", Argv: []string{"true"}, Upload: up}},
		{"no upload grant", KindRequest, "upload", Request{RunID: "r", Argv: []string{"true"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir() + "/never"
			r := &Runner{Root: root}
			resp, err := r.Handle(context.Background(), c.req)
			if err != nil || resp.ErrorKind != c.kind || !strings.Contains(resp.Error, c.says) {
				t.Fatalf("resp %+v, err %v; want kind %s naming %s", resp, err, c.kind, c.says)
			}
		})
	}
}

// TestResponseErr: each kind is the worker's sentinel.
func TestResponseErr(t *testing.T) {
	for kind, want := range map[string]error{KindBlob: workspace.ErrBlob, KindManifest: workspace.ErrBadManifest,
		KindTree: workspace.ErrTooLarge, KindSetup: sandbox.ErrSetup, KindRequest: ErrRunner} {
		if err := (Response{Error: "x", ErrorKind: kind}).Err(); !errors.Is(err, want) {
			t.Errorf("%s: %v is not %v", kind, err, want)
		}
	}
	if err := (Response{}).Err(); err != nil {
		t.Errorf("no error: %v", err)
	}
}
