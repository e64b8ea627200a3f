package entry

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/setup"
)

// Env is the configuration the AWS entrypoints read from their
// environment. Besides setup's KEEL_* variables (see internal/setup):
//
//	KEEL_TABLE              DynamoDB table; KEEL_STORE defaults to dynamo:KEEL_TABLE
//	KEEL_BUCKET             S3 bucket; KEEL_ARTIFACTS defaults to s3:KEEL_BUCKET
//	KEEL_STATE_MACHINE_ARN  the run state machine (api, schedule)
//	KEEL_STEP_MARGIN        time a step keeps back from the Lambda deadline
//	                        for its commit and answer (default 30s)
//	KEEL_SSE_MAX_DURATION   how long one buffered SSE answer collects events
//	                        (default 5s; API Gateway allows at most 30s)
//	KEEL_SCHEDULE_OWNER     owner of scheduled runs whose input names none
//	                        (default "scheduler")
//	KEEL_RUN_ID, KEEL_TASK_TOKEN  the Fargate task's run and task token
//	AWS_ENDPOINT_URL[_S3]   when set, S3 is addressed path-style (LocalStack)
//	KEEL_LOG_LEVEL          debug | info (default) | warn | error
//	KEEL_MODEL_SECRET_ARN   the model API key's secret (the CDK stack's name);
//	                        read as KEEL_ANTHROPIC_SECRET_ARN or
//	                        KEEL_OPENAI_SECRET_ARN when those are unset
//
// The model providers read their own variables (internal/model/provider)
// through Getenv.
type Env struct {
	Setup           setup.Config
	StateMachineARN string
	StepMargin      time.Duration
	StreamMax       time.Duration
	ScheduleOwner   string
	RunID           string
	TaskToken       string
	S3PathStyle     bool
	// Getenv is the environment FromEnv read, for the model providers.
	Getenv func(string) string
}

// FromEnv reads Env through getenv. role prefixes the default lease owner
// ("lambda/step", "fargate"), which gets a random suffix per process so
// that two sandboxes never share one. The store must be DynamoDB and the
// artifacts S3: every function and task of a stack must see the same data.
func FromEnv(getenv func(string) string, role string) (Env, error) {
	defaults := map[string]string{}
	if t := strings.TrimSpace(getenv("KEEL_TABLE")); t != "" {
		defaults["KEEL_STORE"] = "dynamo:" + t
	}
	if b := strings.TrimSpace(getenv("KEEL_BUCKET")); b != "" {
		defaults["KEEL_ARTIFACTS"] = "s3:" + b
	}
	if getenv("KEEL_OWNER") == "" {
		defaults["KEEL_OWNER"] = role + "/" + randHex(6)
	}
	get := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return defaults[k]
	}
	// Defaults that name files (the research agent's dir: publisher) land
	// in the one writable directory a Lambda has.
	cfg, err := setup.FromEnv(get, filepath.Join(os.TempDir(), "keel"))
	if err != nil {
		return Env{}, err
	}
	if !strings.HasPrefix(cfg.Store, "dynamo:") || cfg.Store == "dynamo:" {
		return Env{}, fmt.Errorf("KEEL_TABLE (or KEEL_STORE=dynamo:TABLE) is required: every function must share one store, got %q", cfg.Store)
	}
	if !strings.HasPrefix(cfg.Artifacts, "s3:") || cfg.Artifacts == "s3:" {
		return Env{}, fmt.Errorf("KEEL_BUCKET (or KEEL_ARTIFACTS=s3:BUCKET) is required: every function must share one artifact store, got %q", cfg.Artifacts)
	}
	e := Env{
		Getenv:          modelEnv(getenv),
		Setup:           cfg,
		StateMachineARN: getenv("KEEL_STATE_MACHINE_ARN"),
		ScheduleOwner:   getenv("KEEL_SCHEDULE_OWNER"),
		RunID:           getenv("KEEL_RUN_ID"),
		TaskToken:       getenv("KEEL_TASK_TOKEN"),
		S3PathStyle:     getenv("AWS_ENDPOINT_URL") != "" || getenv("AWS_ENDPOINT_URL_S3") != "",
	}
	if e.ScheduleOwner == "" {
		e.ScheduleOwner = "scheduler"
	}
	if e.StepMargin, err = duration(getenv, "KEEL_STEP_MARGIN", 30*time.Second); err != nil {
		return Env{}, err
	}
	if e.StreamMax, err = duration(getenv, "KEEL_SSE_MAX_DURATION", 5*time.Second); err != nil {
		return Env{}, err
	}
	return e, nil
}

// modelEnv lets the stack's one KEEL_MODEL_SECRET_ARN stand for the
// provider-specific secret variables.
func modelEnv(getenv func(string) string) func(string) string {
	return func(k string) string {
		v := getenv(k)
		if v == "" && (k == "KEEL_ANTHROPIC_SECRET_ARN" || k == "KEEL_OPENAI_SECRET_ARN") {
			return getenv("KEEL_MODEL_SECRET_ARN")
		}
		return v
	}
}

func duration(getenv func(string) string, k string, def time.Duration) (time.Duration, error) {
	s := getenv(k)
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive duration such as 30s", k, s)
	}
	return d, nil
}

// Logger returns the JSON logger the entrypoints write to stderr (Lambda's
// JSON log format and CloudWatch parse it), at KEEL_LOG_LEVEL.
func Logger(getenv func(string) string) *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(getenv("KEEL_LOG_LEVEL")) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
