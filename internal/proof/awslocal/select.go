package awslocal

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Environment variables of a LocalStack run (make localstack-e2e sets the
// first two).
const (
	EnvE2ELocalStack      = "KEEL_E2E_LOCALSTACK" // "1": play the scenarios on LocalStack
	EnvLocalStackEndpoint = "AWS_ENDPOINT_URL"    // LocalStack's edge, from this host
	EnvLocalStackToken    = "LOCALSTACK_AUTH_TOKEN"
	// EnvLambdaDockerNetwork is LocalStack's own setting, read here only
	// to find the network its Lambda containers join.
	EnvLambdaDockerNetwork = "LAMBDA_DOCKER_NETWORK"
)

// LocalStackServices are the LocalStack services the scenarios use.
var LocalStackServices = []string{"dynamodb", "iam", "lambda", "s3", "stepfunctions"}

// LocalStackSetup is what SelectLocalStack found.
type LocalStackSetup struct {
	Endpoint  string // LocalStack's edge endpoint
	Container string // LocalStack's container
	Arch      string // the Docker engine's machine as a Lambda architecture
	HostAddr  string // where the Lambda containers reach this host
}

// dockerProbe is what selection asks the Docker engine.
type dockerProbe interface {
	EngineArch(ctx context.Context) (string, error)
	Inspect(ctx context.Context, container string) ([]byte, error)
}

// healthFunc reads LocalStack's /_localstack/health at an endpoint.
type healthFunc func(ctx context.Context, endpoint string) ([]byte, error)

// SelectLocalStack decides whether the scenarios can play on LocalStack
// here: a Docker engine, LOCALSTACK_AUTH_TOKEN, LocalStack answering with
// the services the scenarios use, its container, and an address of this
// host its Lambda containers reach. It returns the setup, or a skip
// message naming everything that is missing (all of it at once, so one
// run tells a developer what to fix).
func SelectLocalStack(ctx context.Context, getenv func(string) string, docker dockerProbe, health healthFunc) (LocalStackSetup, string) {
	if getenv(EnvE2ELocalStack) == "" {
		return LocalStackSetup{}, fmt.Sprintf("localstack-e2e: SKIPPED: set %s=1 (make localstack-e2e sets it where a Docker engine and %s exist)", EnvE2ELocalStack, EnvLocalStackToken)
	}
	setup := LocalStackSetup{
		Endpoint:  envDefault(getenv, EnvLocalStackEndpoint, "http://localhost:4566"),
		Container: envDefault(getenv, EnvLocalStackContainer, "localstack-main"),
	}
	var missing []string
	machine, err := docker.EngineArch(ctx)
	engine := err == nil
	if !engine {
		missing = append(missing, fmt.Sprintf("no Docker engine (%v)", err))
	} else if setup.Arch, err = LambdaArch(machine); err != nil {
		missing = append(missing, err.Error())
	}
	if getenv(EnvLocalStackToken) == "" {
		missing = append(missing, EnvLocalStackToken+" is not set (the LocalStack image needs one since 2026-03-23)")
	}
	if engine {
		if b, err := health(ctx, setup.Endpoint); err != nil {
			missing = append(missing, fmt.Sprintf("LocalStack does not answer at %s (make localstack-up): %v", setup.Endpoint, err))
		} else if gone := missingServices(b, LocalStackServices); len(gone) > 0 {
			missing = append(missing, fmt.Sprintf("LocalStack at %s lacks services %v (localstack/docker-compose.yml SERVICES)", setup.Endpoint, gone))
		}
		if inspect, err := docker.Inspect(ctx, setup.Container); err != nil {
			missing = append(missing, fmt.Sprintf("no LocalStack container %q (%s names another): %v", setup.Container, EnvLocalStackContainer, err))
		} else if setup.HostAddr, err = HostAddress(inspect, getenv(EnvLambdaDockerNetwork), getenv(EnvHostAddr)); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) > 0 {
		return LocalStackSetup{}, "localstack-e2e: SKIPPED: " + strings.Join(missing, "; ")
	}
	return setup, ""
}

// missingServices are the services of want that LocalStack's health
// answer does not list as available or running.
func missingServices(health []byte, want []string) []string {
	var h struct {
		Services map[string]string `json:"services"`
	}
	if err := json.Unmarshal(health, &h); err != nil {
		return append([]string(nil), want...)
	}
	var gone []string
	for _, s := range want {
		if st := h.Services[s]; st != "available" && st != "running" {
			gone = append(gone, s)
		}
	}
	sort.Strings(gone)
	return gone
}

// LocalStackHealth GETs /_localstack/health.
func LocalStackHealth(ctx context.Context, endpoint string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/_localstack/health", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return b, nil
}
