package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// newTemporal returns the Temporal runner: for each N a fresh
// `temporal server start-dev --headless` on loopback ports with its SQLite
// file in the run's directory, and the worker of bench/peers/temporal (a
// module of its own, built here). The row's RSS is the worker's peak plus
// the server's (VmHWM), its bytes written both processes', its store the
// server's database files.
func newTemporal(ctx context.Context, o Options, bins string) func(ctx context.Context, dir string, n int) Row {
	worker := filepath.Join(bins, "temporal-bench")
	var buildErr error
	built := false
	return func(ctx context.Context, dir string, n int) Row {
		if _, err := os.Stat(o.Temporal); err != nil {
			return Row{Skipped: fmt.Sprintf("no temporal CLI at %s (make bench-peers installs it with go install)", o.Temporal)}
		}
		if !built {
			built = true
			buildErr = goBuild(ctx, filepath.Join(o.Root, "bench", "peers", "temporal"), worker, ".")
		}
		if buildErr != nil {
			return Row{Skipped: "worker did not build: " + buildErr.Error()}
		}
		port, err := freePort()
		if err != nil {
			return Row{Skipped: err.Error()}
		}
		db := filepath.Join(dir, "temporal.db")
		srv := exec.CommandContext(ctx, o.Temporal, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
			"--port", fmt.Sprint(port), "--http-port", fmt.Sprint(mustPort()), "--metrics-port", fmt.Sprint(mustPort()),
			"--db-filename", db, "--log-level", "error")
		var logs strings.Builder
		srv.Stdout, srv.Stderr = &logs, &logs
		srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := srv.Start(); err != nil {
			return Row{Skipped: "dev server did not start: " + err.Error()}
		}
		defer func() {
			_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
			_ = srv.Wait()
		}()
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if err := waitListen(addr, 60*time.Second); err != nil {
			return Row{Skipped: fmt.Sprintf("dev server: %v: %s", err, tail(logs.String()))}
		}
		w0 := procWchar(srv.Process.Pid)
		res, rss, err := runChild(exec.CommandContext(ctx, worker, "-addr", addr, "-n", fmt.Sprint(n)))
		if err != nil {
			return Row{Skipped: "failed: " + err.Error()}
		}
		res.WriteBytes += procWchar(srv.Process.Pid) - w0
		r := row(res, rss+procStatus(srv.Process.Pid, "VmHWM"))
		for _, p := range []string{db, db + "-wal", db + "-shm"} {
			if fi, err := os.Stat(p); err == nil && !strings.HasSuffix(p, "-shm") {
				r.StoreBytes += fi.Size()
			}
		}
		return r
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func mustPort() int {
	p, _ := freePort()
	return p
}

func waitListen(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s", addr, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
