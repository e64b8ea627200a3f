// Command crash runs Keel's crash suite (package internal/crash):
//
//	crash [flags] matrix     every fault point and scenario, one row each
//	crash [flags] soak       N randomized runs killed at random moments
//
// `make crash` and `make soak N=…` build bin/keel and bin/pubserver and run
// it. The exit status is 1 when any invariant broke.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/keelrun/keel/internal/crash"
	"github.com/keelrun/keel/internal/crash/localaws"
)

func main() {
	os.Exit(run())
}

func run() int {
	keel := flag.String("keel", "bin/keel", "keel binary under test")
	pub := flag.String("pubserver", "bin/pubserver", "publication server binary")
	scriptPath := flag.String("script", "examples/research/script.json", "the research agent's model script (the stream-cut row adds a fault to it)")
	store := flag.String("store", "sqlite", "store backend: sqlite, or dynamo (DynamoDB and S3: at AWS_ENDPOINT_URL when set, e.g. LocalStack, else served in-process by minidyn and gofakes3)")
	parallel := flag.Int("parallel", 3, "scenarios played at once")
	n := flag.Int("n", 100, "soak: number of runs")
	seed := flag.Uint64("seed", 0, "soak: random seed (0: from the clock)")
	only := flag.String("only", "", "matrix: only rows whose name matches this regexp")
	task := flag.Bool("task", true, "matrix: include the rows that kill the long-running task child (over two minutes each, run in parallel)")
	keep := flag.Bool("keep", false, "keep the directories of passing scenarios too")
	dir := flag.String("dir", "", "scratch directory (default: a new temporary one)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: crash [flags] matrix|soak\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || (flag.Arg(0) != "matrix" && flag.Arg(0) != "soak") {
		flag.Usage()
		return 2
	}
	var onlyRE *regexp.Regexp
	if *only != "" {
		var err error
		if onlyRE, err = regexp.Compile(*only); err != nil {
			fmt.Fprintf(os.Stderr, "crash: -only: %v\n", err)
			return 2
		}
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "keel-crash-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash:", err)
			return 1
		}
		*dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	script, err := os.ReadFile(*scriptPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash: -script:", err)
		os.Exit(2)
	}
	cfg := crash.Config{Keel: *keel, PubServer: *pub, Script: script, Dir: *dir, Keep: *keep, Store: *store, Parallel: *parallel, Progress: os.Stderr}
	where := cfg.Store
	if cfg.Store == "dynamo" {
		a, err := awsEndpoint(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash:", err)
			return 1
		}
		defer a.Close()
		cfg.AWS = a
		where = "dynamo (DynamoDB and S3 at " + a.URL + ")"
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "crash:", err)
		return 2
	}
	start := time.Now()
	switch flag.Arg(0) {
	case "matrix":
		fmt.Fprintf(os.Stderr, "crash matrix: %s on %s, %d at once (scratch %s)\n", *keel, where, cfg.Parallel, *dir)
		rows := crash.Matrix(ctx, cfg, crash.MatrixOptions{Only: onlyRE, Task: *task})
		crash.PrintMatrix(os.Stdout, rows)
		failed := crash.Failed(rows)
		fmt.Printf("%d rows, %d failed, %s\n", len(rows), failed, time.Since(start).Round(time.Second))
		if ctx.Err() == nil && (failed > 0 || len(rows) == 0) {
			return 1
		}
	case "soak":
		s := *seed
		if s == 0 {
			s = uint64(time.Now().UnixNano())
		}
		fmt.Fprintf(os.Stderr, "crash soak: %d runs on %s, %d at once, seed %d (scratch %s)\n", *n, where, cfg.Parallel, s, *dir)
		sum := crash.Soak(ctx, cfg, crash.SoakOptions{N: *n, Seed: s})
		crash.PrintSoak(os.Stdout, sum)
		if ctx.Err() == nil && (sum.Violations > 0 || sum.Runs < *n) {
			return 1
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "crash: interrupted; the runs cut short are reported as failed")
		return 130
	}
	if !*keep {
		_ = os.Remove(*dir) // empty when everything passed
	}
	return 0
}

// awsEndpoint is the DynamoDB and S3 endpoint of -store dynamo: the one at
// AWS_ENDPOINT_URL (LocalStack) with the usual AWS configuration, or one
// served by this process, which outlives every keel process it kills.
func awsEndpoint(ctx context.Context) (*crash.AWS, error) {
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	if endpoint == "" {
		s, err := localaws.Start()
		if err != nil {
			return nil, err
		}
		return crash.LocalAWS(s.URL, s.Close), nil
	}
	var opts []func(*config.LoadOptions) error
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		// LocalStack takes any credentials; the keel processes get the
		// same ones.
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for %s: %w", endpoint, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	cfg.BaseEndpoint = aws.String(endpoint)
	return crash.ExternalAWS(cfg, endpoint), nil
}
