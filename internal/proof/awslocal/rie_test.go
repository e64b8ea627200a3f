package awslocal

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// emulatorScript stands in for aws-lambda-rie where the test needs an
// emulator that loses its port race: it exits at once for its first
// $FAILS starts (as the real one panics on "bind: address already in
// use"), then serves HTTP on the invoke address it was given.
const emulatorScript = `#!/bin/sh
n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT"
if [ "$n" -le "$FAILS" ]; then echo "bind: address already in use"; exit 2; fi
exec python3 -m http.server "${2##*:}" --bind 127.0.0.1
`

func TestSandboxStartsAgainWhenTheEmulatorExits(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 serves the stand-in emulator's port")
	}
	for _, tc := range []struct {
		name   string
		fails  int
		starts string // how often the emulator was started
		err    string // "" when the sandbox comes up
	}{
		{"lost one race", 1, "2", ""},
		{"lost every race", startAttempts, "5", "exited before it listened"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rie := filepath.Join(dir, "rie")
			if err := os.WriteFile(rie, []byte(emulatorScript), 0o755); err != nil {
				t.Fatal(err)
			}
			count := filepath.Join(dir, "count")
			env := []string{"PATH=" + os.Getenv("PATH"), "COUNT=" + count, "FAILS=" + strconv.Itoa(tc.fails)}
			sb, err := StartSandbox(context.Background(), rie, filepath.Join(dir, "bootstrap"), "fn", env, dir)
			if got, _ := os.ReadFile(count); strings.TrimSpace(string(got)) != tc.starts {
				t.Errorf("the emulator was started %q times, want %s", got, tc.starts)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("StartSandbox: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Kill()
			resp, err := http.Get(sb.URL + "/")
			if err != nil {
				t.Fatalf("the sandbox's URL does not answer: %v", err)
			}
			resp.Body.Close()
			if !strings.Contains(sb.LogTail(5), "address already in use") {
				t.Errorf("the log does not keep the lost start:\n%s", sb.LogTail(5))
			}
		})
	}
}
