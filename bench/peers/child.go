package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"text/tabwriter"
)

// childResult is what every contender prints as its last stdout line.
type childResult struct {
	Steps      int     `json:"steps"`
	MSPerStep  float64 `json:"ms_per_step"`
	StoreBytes int64   `json:"store_bytes"`
	WriteBytes int64   `json:"write_bytes"`
	Note       string  `json:"note"`
}

// runChild runs cmd, parses its result and takes its peak RSS from
// getrusage (ru_maxrss, KiB on Linux).
func runChild(cmd *exec.Cmd) (childResult, int64, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return childResult{}, 0, fmt.Errorf("%s: %w: %s", cmd.Path, err, tail(errb.String()))
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res childResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return res, rss, fmt.Errorf("%s printed no result: %v: %s", cmd.Path, err, tail(out.String()+errb.String()))
	}
	return res, rss, nil
}

func row(res childResult, rss int64) Row {
	r := Row{MSPerStep: res.MSPerStep, StoreBytes: res.StoreBytes, PeakRSSBytes: rss, Note: res.Note}
	if res.Steps > 0 {
		r.WriteBytesPerStep = float64(res.WriteBytes) / float64(res.Steps)
	}
	return r
}

func runKeelstep(ctx context.Context, bin, system, dir string, n int) Row {
	res, rss, err := runChild(exec.CommandContext(ctx, bin, "-system", system, "-n", fmt.Sprint(n), "-dir", dir))
	if err != nil {
		return Row{Skipped: "failed: " + err.Error()}
	}
	return row(res, rss)
}

func goBuild(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// Print writes the rows as one table.
func Print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tN\tms/step\t× floor\tstore\twritten/step\tpeak RSS\tnote")
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t-\tskipped: %s\n", r.System, r.N, r.Skipped)
			continue
		}
		ratio := "-"
		if r.RatioToFloor > 0 {
			ratio = fmt.Sprintf("%.2f×", r.RatioToFloor)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%s\t%s\t%s\t%s\t%s\n", r.System, r.N, r.MSPerStep, ratio,
			human(float64(r.StoreBytes)), human(r.WriteBytesPerStep), human(float64(r.PeakRSSBytes)), r.Note)
	}
	tw.Flush()
}

func human(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// procStatus reads a field of /proc/PID/status (VmHWM: "123 kB") in bytes.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

// procWchar reads /proc/PID/io's wchar.
func procWchar(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar:"); ok {
			var n int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &n)
			return n
		}
	}
	return 0
}
