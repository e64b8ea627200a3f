package awslocal

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Docker runs the docker CLI (no SDK: the CLI is what a developer with a
// Docker engine has, and its output formats are stable).
type Docker struct {
	Bin string // "docker" when empty
}

func (d Docker) bin() string {
	if d.Bin == "" {
		return "docker"
	}
	return d.Bin
}

// run runs one docker command; the error carries its stderr.
func (d Docker) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, d.bin(), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// EngineArch is the engine's machine architecture (uname -m of its
// host: x86_64, aarch64); an error when no engine answers.
func (d Docker) EngineArch(ctx context.Context) (string, error) {
	out, err := d.run(ctx, "info", "--format", "{{.Architecture}}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Inspect is `docker inspect` of one container, as JSON.
func (d Docker) Inspect(ctx context.Context, container string) ([]byte, error) {
	return d.run(ctx, "inspect", "--type", "container", container)
}

// Container is one line of `docker ps`.
type Container struct {
	ID, Name, State string
}

// psFormat is the `docker ps --format` that parsePS reads.
const psFormat = "{{.ID}}\t{{.Names}}\t{{.State}}"

// Running lists the running containers whose name contains substr.
func (d Docker) Running(ctx context.Context, substr string) ([]Container, error) {
	out, err := d.run(ctx, "ps", "--no-trunc", "--filter", "name="+substr, "--format", psFormat)
	if err != nil {
		return nil, err
	}
	return parsePS(out)
}

// Kill SIGKILLs containers (docker kill's default signal).
func (d Docker) Kill(ctx context.Context, ids ...string) error {
	_, err := d.run(ctx, append([]string{"kill"}, ids...)...)
	return err
}

// Exec runs a command in a running container.
func (d Docker) Exec(ctx context.Context, id string, cmd ...string) ([]byte, error) {
	return d.run(ctx, append([]string{"exec", id}, cmd...)...)
}

func parsePS(out []byte) ([]Container, error) {
	var cs []Container
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("docker ps: unexpected line %q", line)
		}
		cs = append(cs, Container{ID: f[0], Name: f[1], State: f[2]})
	}
	return cs, nil
}

// lambdaContainerPrefix is the name LocalStack gives the containers of a
// function's execution environments, up to the environment's id:
// <main container>-lambda-<function name, lower case, _ as ->-
// (localstack docker_runtime_executor._generate_container_name).
func lambdaContainerPrefix(main, function string) string {
	return strings.ReplaceAll(strings.Join([]string{main, "lambda", strings.ToLower(function)}, "-"), "_", "-") + "-"
}

// lambdaContainers are the running containers of a function's execution
// environments among cs. (A function whose lower-cased name is a prefix
// of another's would match the other's too; the stacks' function names
// end in a random suffix, so none is.)
func lambdaContainers(cs []Container, main, function string) []Container {
	prefix := lambdaContainerPrefix(main, function)
	var out []Container
	for _, c := range cs {
		rest, ok := strings.CutPrefix(strings.TrimPrefix(c.Name, "/"), prefix)
		if ok && rest != "" && c.State == "running" {
			out = append(out, c)
		}
	}
	return out
}
