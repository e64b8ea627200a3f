package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/examples/coder/agent"
	"github.com/keelrun/keel/keeltest"
)

// TestCoderSurvivesKillInSandbox runs the program as a user would — its
// own binary, `dev`, commands in bubblewrap — and SIGKILLs it at a fault
// point of the workspace: while the test command runs, or after a snapshot
// of the tree the command built was stored but before the checkpoint
// naming it. The restarted program is another worker: its workspace root
// is new and empty. The run must complete on the tree restored from the
// last checkpoint, the command must have run again (once, on that tree),
// and the release must be shipped once, with the approved hash.
func TestCoderSurvivesKillInSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the example's program (make test-go runs it)")
	}
	bin := keeltest.Build(t, ".")
	for _, fault := range []string{"in_command:1", "in_workspace_snapshot:3", "after_intent:1"} {
		t.Run(fault, func(t *testing.T) { killAndFinish(t, bin, fault) })
	}
}

// killAndFinish plays one kill at fault. Past the approval (after_intent),
// the release is shipped by the restarted worker's reconciliation, whose
// Dispatch reads the file from the tree it restored.
func killAndFinish(t *testing.T, bin, fault string) {
	afterApproval := strings.HasPrefix(fault, "after_")
	shipDir := filepath.Join(t.TempDir(), "shipped")
	root1, root2 := wsRoot(t), wsRoot(t)
	ship := "CODER_SHIP=" + shipDir
	p := keeltest.StartProgram(t, bin, ship, "KEEL_WORKSPACE_ROOT="+root1, "KEEL_FAULTPOINT="+fault)
	id := p.StartRun(t, agent.Name, "Write the greeter, test it and ship a release.")
	var ap keeltest.Approval
	if afterApproval {
		ap = p.WaitApproval(t, id)
		p.Approve(t, id, ap)
	}
	p.WaitExit(t) // the fault point's SIGKILL
	if !strings.Contains(p.Output(), "fault point reached") {
		t.Fatalf("the first worker exited before %s:\n%s", fault, p.Output())
	}
	if entries, err := os.ReadDir(root1); err != nil || len(entries) == 0 {
		t.Fatalf("the first worker left no workspace in %s (%v): the fault point hit before any tool ran", root1, err)
	}
	p.Restart(t, ship, "KEEL_WORKSPACE_ROOT="+root2)

	if !afterApproval {
		ap = p.WaitApproval(t, id)
		p.Approve(t, id, ap)
	}
	if r := p.WaitFor(t, id, "completed"); r.Output != "The release is tested and shipped." {
		t.Fatalf("run %+v", r)
	}
	var args agent.ShipArgs
	if err := json.Unmarshal(ap.Args, &args); err != nil || ap.Tool != "ship_release" {
		t.Fatalf("approval %+v: %v", ap, err)
	}
	tree := filepath.Join(root2, id)
	want := map[string]string{
		"src/greet.sh": "#!/bin/sh\necho \"hello, ${1:-world}\"\n",
		"test.sh":      "#!/bin/sh\nset -e\n[ \"$(sh src/greet.sh keel)\" = \"hello, keel\" ]\n[ \"$(sh src/greet.sh)\" = \"hello, world\" ]\necho tests passed >> build.log\n",
		// One line: a killed command's changes are gone with the worker,
		// and the command ran once on the restored tree.
		"build.log":        "tests passed\n",
		"dist/release.tar": "",
	}
	for name, content := range want {
		wantSum := hashOf([]byte(content))
		if name == "dist/release.tar" {
			wantSum = args.SHA256 // what the approval binds
		}
		if got := fileHash(t, filepath.Join(tree, name)); got != wantSum {
			t.Errorf("%s on the new worker: sha256 %s, want %s", name, got, wantSum)
		}
	}
	// The destination's own count: one release, the approved bytes.
	rels, err := agent.Destination{Dir: shipDir}.Releases()
	if err != nil || len(rels) != 1 {
		t.Fatalf("%d releases %v, %v: want exactly one", len(rels), rels, err)
	}
	if got := fileHash(t, rels[0]); got != args.SHA256 {
		t.Fatalf("shipped %s, approved %s", got, args.SHA256)
	}
	if evs := p.Events(t, id); keeltest.Count(evs, "op_intent") != 1 {
		t.Fatalf("%d op_intent events, want 1", keeltest.Count(evs, "op_intent"))
	}
}

// wsRoot is a workspace root the sandbox's unprivileged uid can traverse
// (t.TempDir's parent is private to the test's user).
func wsRoot(t *testing.T) string {
	d, err := os.MkdirTemp("", "keel-coder-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return hashOf(b)
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
