package sandbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIsolation runs each probe in the sandbox, where the canary must not
// show, and in Unsafe mode, where it must: a probe that cannot see the leak
// with isolation off proves nothing.
func TestIsolation(t *testing.T) {
	t.Setenv("KEEL_TEST_CANARY", "canary-env-5d1e")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "canary-net-b7c4")
	}))
	defer srv.Close()
	f := newFixture(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed by the network probe")
	}
	cases := []struct {
		name, canary, script string
		policy               Policy
	}{
		{"sibling workspace", "canary-sibling", "cat " + filepath.Join(f.sibling, "canary.txt") + " ../run-b/canary.txt", Policy{}},
		{"database file", "canary-db", "cat " + f.db + " ../../keel.db", Policy{}},
		{"worker environment", "canary-env", `env; tr '\0' '\n' </proc/1/environ; tr '\0' '\n' </proc/$PPID/environ`, Policy{}},
		{"loopback server, network off", "canary-net", "curl -s --max-time 3 " + srv.URL, Policy{}},
	}
	for _, mode := range []struct {
		name   string
		unsafe bool
	}{{"isolated", false}, {"unsafe", true}} {
		s := newSandbox(t, mode.unsafe)
		for _, tc := range cases {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				res, err := s.Run(ctx, f.ws, sh(tc.script), tc.policy)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				out := string(res.Stdout) + string(res.Stderr)
				if leaked := strings.Contains(out, tc.canary); leaked != mode.unsafe {
					t.Errorf("leaked=%v, want %v; output:\n%s", leaked, mode.unsafe, out)
				}
			})
		}
	}
	t.Run("isolated/loopback server, host allowed", func(t *testing.T) {
		needSocat(t)
		res, err := newSandbox(t, false).Run(ctx, f.ws, sh("curl -s --max-time 3 "+srv.URL), Policy{AllowHosts: []string{"127.0.0.1"}})
		if err != nil || !strings.Contains(string(res.Stdout), "canary-net") {
			t.Fatalf("network allowed: %v, out %q err %q", err, res.Stdout, res.Stderr)
		}
	})
}

func TestWorkspaceWritableSystemReadOnly(t *testing.T) {
	f := newFixture(t)
	s := newSandbox(t, false)
	res, err := s.Run(ctx, f.ws, sh(`pwd; cat input.txt; echo made > out.txt; touch /usr/x 2>/dev/null && echo USR-WRITABLE; ls /home /root /var 2>&1 | head -3; echo "$HOME $LANG"`), Policy{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v exit %d: %s", err, res.ExitCode, res.Stderr)
	}
	out := string(res.Stdout)
	for _, want := range []string{WorkspacePath + "\n", "hello from the workspace", "/tmp C.UTF-8"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "USR-WRITABLE") {
		t.Error("/usr is writable")
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "out.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("host sees %q %v, want the command's file", b, err)
	}
}

func TestIsolationFacts(t *testing.T) {
	if iso := newSandbox(t, true).Isolation(); iso.Isolated || len(iso.Gaps) == 0 || !strings.Contains(iso.Gaps[0], "UNSAFE") {
		t.Errorf("unsafe Isolation = %+v, want a loud gap", iso)
	}
	if iso := newSandbox(t, false).Isolation(); !iso.Isolated || iso.Backend != "bubblewrap" {
		t.Errorf("isolated Isolation = %+v", iso)
	}
}

func TestNewRefusesWithoutIsolation(t *testing.T) {
	_, err := New(ctx, Config{Bwrap: "/nonexistent/bwrap"})
	if err == nil || !strings.Contains(err.Error(), "bubblewrap") {
		t.Fatalf("New without bwrap = %v, want ErrNoIsolation naming bubblewrap", err)
	}
	// A bwrap that cannot make namespaces: /bin/false stands in for it.
	if _, err := New(ctx, Config{Bwrap: "/bin/false"}); err == nil || !strings.Contains(err.Error(), "probe") {
		t.Fatalf("New with a failing probe = %v, want ErrNoIsolation", err)
	}
}

// TestNoNetworkWhateverTheRoute: a command without network has its own
// network namespace holding only a loopback interface and no route, so
// what the worker's host can reach (a Fargate task's public IP and
// internet gateway, or a NAT gateway) does not matter to it. The host's
// view is the control: the same probe in unsafe mode sees the host's
// interfaces and default route where the host has one.
func TestNoNetworkWhateverTheRoute(t *testing.T) {
	f := newFixture(t)
	probe := sh("cat /proc/net/dev /proc/net/route")
	ifaces := func(out string) []string {
		var names []string
		for _, line := range strings.Split(out, "\n") {
			if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
				names = append(names, strings.TrimSpace(name))
			}
		}
		return names
	}
	defaultRoute := func(out string) bool {
		for _, line := range strings.Split(out, "\n") {
			if fields := strings.Fields(line); len(fields) > 2 && fields[1] == "00000000" {
				return true
			}
		}
		return false
	}
	res, err := newSandbox(t, false).Run(ctx, f.ws, probe, Policy{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v exit %d: %s", err, res.ExitCode, res.Stderr)
	}
	out := string(res.Stdout)
	if got := ifaces(out); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces without network = %v, want only lo:\n%s", got, out)
	}
	if defaultRoute(out) {
		t.Errorf("a default route without network:\n%s", out)
	}

	host, err := os.ReadFile("/proc/net/route")
	if err != nil || !defaultRoute(string(host)) {
		t.Logf("this host has no default route (%v): the control half proves nothing here", err)
		return
	}
	res, err = newSandbox(t, true).Run(ctx, f.ws, probe, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Stdout); !defaultRoute(out) || len(ifaces(out)) < 2 {
		t.Errorf("unsafe mode does not see the host's network; the probe is blind:\n%s", out)
	}
}
