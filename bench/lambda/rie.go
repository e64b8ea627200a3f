package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// rieStart is one cold start under the emulator.
type rieStart struct {
	listening time.Duration // RIE exec → its invoke port accepts: RIE's own start
	answered  time.Duration // invocation sent → answered: RIE execs the bootstrap on it
}

// coldStart starts a fresh RIE on loopback ports with bootstrap as role
// and invokes it once.
func coldStart(ctx context.Context, rie, bootstrap, role string, env []string) (rieStart, error) {
	var out rieStart
	rieAddr, apiAddr := freeAddr(), freeAddr()
	cmd := exec.CommandContext(ctx, rie, "--runtime-interface-emulator-address", rieAddr, "--runtime-api-address", apiAddr, bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = env
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return out, err
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // RIE and the bootstrap it started
		_ = cmd.Wait()
	}()
	if err := waitListen(rieAddr, 10*time.Second); err != nil {
		return out, fmt.Errorf("%w\n%s", err, logs.String())
	}
	out.listening = time.Since(start)
	hc := &http.Client{Timeout: 30 * time.Second}
	sent := time.Now()
	resp, err := hc.Post("http://"+rieAddr+"/2015-03-31/functions/function/invocations", "application/json", strings.NewReader(events[role]))
	if err != nil {
		return out, fmt.Errorf("invoke: %w\n%s", err, logs.String())
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	out.answered = time.Since(sent)
	if err != nil {
		return out, err
	}
	// RIE answers a function error with 200 and the error document; it
	// names the type under errorType.
	if err := checkAnswer(role, strings.Contains(string(body), `"errorType"`), body); err != nil {
		return out, fmt.Errorf("%w\n%s", err, logs.String())
	}
	return out, nil
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}

func waitListen(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("RIE did not listen on %s: %w", addr, err)
		}
		time.Sleep(time.Millisecond)
	}
}
