package fs_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/keelrun/keel/internal/backend/artifact/fs"
	"github.com/keelrun/keel/internal/kernel/artifact"
)

const crashChildEnv = "KEEL_ARTIFACT_FS_CRASH_CHILD"

// crashKey and crashContent are what put number i of the child writes:
// runs share checkpoints and every fifth put repeats an earlier content,
// so the child takes every path (new and existing runs, checkpoints,
// shards and objects).
func crashKey(i int) artifact.Key {
	return artifact.Key{RunID: fmt.Sprintf("run_%d", i%7), CheckpointID: fmt.Sprintf("cp_%d", i/5), Name: fmt.Sprintf("n_%d", i)}
}

func crashContent(i int) []byte {
	if i%5 == 4 {
		i -= 3
	}
	seed := sha256.Sum256([]byte(strconv.Itoa(i)))
	n := 1 + int(seed[0])*int(seed[1])%70_000 // up to ~70 KB: many pages
	return []byte(strings.Repeat(fmt.Sprintf("%x", seed), n/64+1)[:n])
}

// TestCrashChild is the child of TestKilledMidPut: four goroutines putting
// forever, each printing "ok I" only after Put I returned nil.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("the child of TestKilledMidPut")
	}
	first, _ := strconv.Atoi(os.Getenv(crashChildEnv + "_FIRST"))
	s, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	next := first
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if _, err := s.Put(context.Background(), crashKey(i), crashContent(i)); err != nil {
					fmt.Printf("err %d %v\n", i, err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Printf("ok %d\n", i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestKilledMidPut SIGKILLs a child process at a random point of its
// concurrent Puts, again and again on one directory, then reopens the
// store: every Put the child acknowledged reads back whole, and no pointer
// anywhere names missing or partial content. (A kill loses no page cache,
// so this checks the order of the visible steps; the power-loss half of
// the contract — what is fsync'd — is pinned by TestPutSyncsWhatItChanged.)
func TestKilledMidPut(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("in the child")
	}
	ctx := context.Background()
	dir := t.TempDir()
	acked := map[int]bool{}
	first := 0
	for round := range 12 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashChildEnv+"_FIRST="+strconv.Itoa(first))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + rand.IntN(60)
		sc := bufio.NewScanner(out)
		seen, killed := 0, false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			if f[0] == "err" {
				t.Fatalf("round %d: child: %s", round, sc.Text())
			}
			if f[0] != "ok" {
				continue
			}
			i, _ := strconv.Atoi(f[1])
			acked[i] = true
			first = max(first, i+1)
			if seen++; seen == killAfter && !killed {
				killed = true
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		_ = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: the child ended by itself after %d puts", round, seen)
		}
		first += 8 // the puts in flight when killed: their keys are never reused

		s, err := fs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range acked {
			got, _, err := s.Get(ctx, crashKey(i))
			if err != nil || string(got) != string(crashContent(i)) {
				t.Fatalf("round %d: acknowledged put %d: Get = %d bytes, %v", round, i, len(got), err)
			}
		}
		for r := range 7 {
			infos, err := s.List(ctx, fmt.Sprintf("run_%d", r))
			if err != nil {
				t.Fatalf("round %d: List: %v", round, err)
			}
			for _, info := range infos {
				if _, _, err := s.Get(ctx, info.Key); err != nil {
					t.Fatalf("round %d: a pointer the kill left: %v", round, err)
				}
			}
		}
	}
	// A kill leaves at most the temp files of the puts in flight.
	if n := countTemps(t, dir); n > 12*4*2 {
		t.Fatalf("%d temp files left by 12 kills", n)
	}
	t.Logf("%d puts acknowledged over 12 kills", len(acked))
}

// countTemps counts the temp files under root, wherever they are.
func countTemps(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".put-") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
