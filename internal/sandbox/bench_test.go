package sandbox

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkStartToFirstOutput: sandbox start → first byte of output of
// `echo hi`, beside a plain exec of the same command; the ratio is the
// figure to watch.
func BenchmarkStartToFirstOutput(b *testing.B) {
	s := newSandbox(b, false)
	f := newFixture(b)
	argv := []string{"/bin/echo", "hi"}
	var sandboxed, plain time.Duration
	n := 0
	for b.Loop() {
		n++
		res, err := s.Run(ctx, f.ws, argv, Policy{})
		if err != nil || string(res.Stdout) != "hi\n" {
			b.Fatalf("sandboxed: %q %v", res.Stdout, err)
		}
		sandboxed += res.FirstOutput
		plain += plainFirstOutput(b, f.ws, argv)
	}
	b.ReportMetric(float64(sandboxed.Microseconds())/float64(n), "sandbox_us/first_output")
	b.ReportMetric(float64(plain.Microseconds())/float64(n), "plain_us/first_output")
	b.ReportMetric(float64(sandboxed)/float64(plain), "ratio")
}

// plainFirstOutput times a bare exec the way Run times a sandboxed one.
func plainFirstOutput(b *testing.B, dir string, argv []string) time.Duration {
	c := newCapture(1 << 20)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout = c.writer(&c.stdout)
	c.start = time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	return c.result().FirstOutput
}
