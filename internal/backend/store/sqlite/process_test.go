package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/backend/store/sqlite"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

const (
	childEnv      = "KEEL_SQLITE_CHILD" // path of the database; set only in a child
	childIDEnv    = "KEEL_SQLITE_CHILD_ID"
	childAppends  = 300
	childLeaseRun = 25
)

// TestTwoProcesses runs two OS processes (this test binary, re-executed) on
// one database file at once: both append to one run's log and race for the
// leases of the same runs. The log must come out gapless with every append
// exactly once, and every lease must have exactly one winner.
func TestTwoProcesses(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child process")
	}
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "keel.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk := func(id string) {
		t.Helper()
		if _, _, err := s.CreateRun(ctx, run.Run{ID: id, SessionID: "s", Owner: "o", InputPolicy: run.InputQueue}); err != nil {
			t.Fatal(err)
		}
	}
	mk("run_log")
	for j := range childLeaseRun {
		mk(fmt.Sprintf("run_lease_%02d", j))
	}

	goFile := filepath.Join(dir, "go")
	var outs [2]bytes.Buffer
	var cmds [2]*exec.Cmd
	var exited [2]chan error
	for i := range 2 {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTwoProcessesChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"="+path, childIDEnv+"="+fmt.Sprint(i))
		cmd.Stdout = &outs[i]
		cmd.Stderr = &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
		exited[i] = make(chan error, 1)
		go func() { exited[i] <- cmd.Wait() }()
	}
	// Each child opens the store, reports ready and waits for the go file,
	// so their work overlaps instead of following process start-up.
	for i := range 2 {
		for {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ready-%d", i))); err == nil {
				break
			}
			select {
			case err := <-exited[i]:
				t.Fatalf("child %d exited before starting (%v):\n%s", i, err, outs[i].String())
			case <-time.After(time.Millisecond):
			}
		}
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range cmds {
		if err := <-exited[i]; err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i].String())
		}
	}

	// Leases: exactly one winner per run, and the store agrees on who.
	won := map[string][]string{}
	for i := range 2 {
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "LEASE" && f[2] == "won" {
				won[f[1]] = append(won[f[1]], fmt.Sprintf("proc-%d", i))
			}
		}
	}
	for j := range childLeaseRun {
		id := fmt.Sprintf("run_lease_%02d", j)
		if len(won[id]) != 1 {
			t.Fatalf("%s: winners %v, want exactly one", id, won[id])
		}
		r, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Lease.Owner != won[id][0] || r.Lease.Token != 1 {
			t.Fatalf("%s: stored lease %+v, winner %s", id, r.Lease, won[id][0])
		}
	}

	perProc := map[string]int{}
	for _, w := range won {
		perProc[w[0]]++
	}
	// Log: gapless, every append once.
	seen := map[string]bool{}
	switches, lastProc := 0, ""
	var after int64
	for {
		evs, err := s.ReadEvents(ctx, "run_log", after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Seq != after+1 {
				t.Fatalf("seq %d follows %d", e.Seq, after)
			}
			after = e.Seq
			if e.Type != run.EventToolProgress {
				continue
			}
			k := string(e.Data)
			var d struct{ P string }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if lastProc != "" && d.P != lastProc {
				switches++
			}
			lastProc = d.P
			if seen[k] {
				t.Fatalf("append %s stored twice", k)
			}
			seen[k] = true
		}
	}
	// How much the two processes overlapped; informative, not asserted (it
	// depends on scheduling).
	t.Logf("leases won per process %v; the log switched process %d times", perProc, switches)
	if want := 2*childAppends + 1; after != int64(want) || len(seen) != 2*childAppends {
		t.Fatalf("log ends at seq %d with %d appends, want %d and %d", after, len(seen), want, 2*childAppends)
	}
}

// TestTwoProcessesChild is the child half of TestTwoProcesses.
func TestTwoProcessesChild(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("only run as a child of TestTwoProcesses")
	}
	id := os.Getenv(childIDEnv)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := filepath.Dir(path)
	if err := os.WriteFile(filepath.Join(dir, "ready-"+id), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	goFile := filepath.Join(dir, "go")
	for {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	owner := "proc-" + id
	for k := range childAppends {
		// SQLite's busy handler is not fair: a process that just committed
		// usually takes the lock again before the waiting one wakes. A pause
		// between writes lets the two interleave, which is what is tested.
		time.Sleep(100 * time.Microsecond)
		data, _ := json.Marshal(map[string]string{"p": id, "k": fmt.Sprint(k)})
		if _, err := s.AppendEvents(ctx, "run_log", []run.Event{{Type: run.EventToolProgress, Data: data}}); err != nil {
			t.Fatal(err)
		}
		if k%12 == 0 && k/12 < childLeaseRun {
			rid := fmt.Sprintf("run_lease_%02d", k/12)
			_, err := s.AcquireLease(ctx, rid, owner, time.Hour)
			switch {
			case err == nil:
				fmt.Printf("LEASE %s won\n", rid)
			case errors.Is(err, store.ErrLeaseHeld):
				fmt.Printf("LEASE %s held\n", rid)
			default:
				t.Fatal(err)
			}
		}
	}
}
