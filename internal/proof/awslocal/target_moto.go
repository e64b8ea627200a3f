package awslocal

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// MotoTarget is moto on loopback with one aws-lambda-rie sandbox per
// function running the host-built bootstrap: the functions' code runs on
// this host, so every server they call listens on loopback.
type MotoTarget struct {
	Moto      *Moto
	RIE       string // the aws-lambda-rie binary
	Bootstrap string // the host-built Keel program
	// Root is the module root, where a stack's own Program is built
	// (once per program, beside Bootstrap).
	Root string
	Dir  string // sandbox logs
	// BaseEnv is the environment every sandbox starts from (PATH, HOME,
	// no AWS profile of the caller's).
	BaseEnv []string

	mu    sync.Mutex
	built map[string]string // program → its bootstrap
}

var _ Target = (*MotoTarget)(nil)

// bootstrap is the host-built binary of program: Bootstrap for "", else
// program built once (as Bootstrap is: -tags lambda.norpc) into Dir.
func (m *MotoTarget) bootstrap(ctx context.Context, program string) (string, error) {
	if program == "" {
		return m.Bootstrap, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.built[program]; ok {
		return b, nil
	}
	out := filepath.Join(m.Dir, "bootstrap-"+strings.NewReplacer("/", "_", ".", "_").Replace(program))
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-o", out, "./"+strings.TrimPrefix(program, "./"))
	cmd.Dir = m.Root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("awslocal: go build %s: %w\n%s", program, err, b)
	}
	if m.built == nil {
		m.built = map[string]string{}
	}
	m.built[program] = out
	return out, nil
}

// Name implements Target.
func (m *MotoTarget) Name() string { return "moto" }

// Listen implements Target: loopback, where the sandboxes run.
func (m *MotoTarget) Listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// Package implements Target: moto stores the package and never runs it
// (the code runs from the host's bootstrap under the emulator), so the
// package only says so; the architecture is the template's.
func (m *MotoTarget) Package(_ context.Context, t *Template, logical string, _ map[string]any) (map[string]any, string, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("README")
	if err != nil {
		return nil, "", err
	}
	if _, err := io.WriteString(w, "Keel on aws-lambda-rie: the bootstrap is the host-built ./cmd/keel (internal/proof/awslocal).\n"); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return map[string]any{"ZipFile": base64.StdEncoding.EncodeToString(buf.Bytes())}, t.Architecture(logical), nil
}

// FunctionEnv implements Target: nothing is configured; the endpoints are
// given to the sandbox process in Started.
func (m *MotoTarget) FunctionEnv(string) map[string]string { return nil }

// Started implements Target: it starts the function's sandbox with what
// Lambda gives a sandbox, the network (every AWS API at moto, Step
// Functions at the stack's interpreter), then the function's
// configuration, and routes moto's invocations of the function to it.
func (m *MotoTarget) Started(ctx context.Context, fn *Function, spec FunctionSpec) error {
	penv := append([]string(nil), m.BaseEnv...)
	penv = append(penv,
		"AWS_REGION="+Region, "AWS_DEFAULT_REGION="+Region,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=",
		"AWS_LAMBDA_FUNCTION_NAME="+spec.Name, fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%v", spec.Timeout),
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%v", spec.Memory),
		"AWS_ENDPOINT_URL="+m.Moto.URL, "AWS_ENDPOINT_URL_SFN="+spec.SFNURL)
	if spec.Version != "" {
		penv = append(penv, "AWS_LAMBDA_FUNCTION_VERSION="+spec.Version)
	}
	keys := make([]string, 0, len(spec.Variables))
	for k := range spec.Variables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		penv = append(penv, fmt.Sprintf("%s=%v", k, spec.Variables[k]))
	}
	bootstrap, err := m.bootstrap(ctx, spec.Program)
	if err != nil {
		return err
	}
	sb, err := StartSandbox(ctx, m.RIE, bootstrap, strings.ReplaceAll(fn.route(), ":", "-v"), penv, m.Dir)
	if err != nil {
		return err
	}
	fn.Sandbox = sb
	return m.Moto.Route(fn.route(), sb.URL)
}

// Kill implements Target. A sandbox kill SIGKILLs the emulator's process
// group and starts a new sandbox (as Lambda does once one is lost); a
// runtime kill SIGKILLs only the emulator's children (the bootstrap),
// and the emulator starts a fresh runtime on the next Invoke.
func (m *MotoTarget) Kill(ctx context.Context, fn *Function, kind KillKind) (string, error) {
	pids := fn.Sandbox.Pids()
	if len(pids) < 2 {
		return "", fmt.Errorf("the sandbox had pids %v: want the emulator and its bootstrap", pids)
	}
	switch kind {
	case KillSandbox:
		if err := fn.Sandbox.Restart(ctx); err != nil {
			return "", fmt.Errorf("restart the %s sandbox: %w", fn.Role, err)
		}
		if err := m.Moto.Route(fn.route(), fn.Sandbox.URL); err != nil {
			return "", err
		}
	case KillRuntime:
		for _, pid := range pids[1:] {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	default:
		return "", fmt.Errorf("unknown kill %q", kind)
	}
	return fmt.Sprintf("sandbox pids %v", pids), nil
}

// KillErrors implements Target: the emulator answers a lost sandbox's
// Invoke as a Lambda service error, and a crashed runtime as the
// function's unhandled Runtime.ExitError (AWS documents such errors in
// Step Functions as Lambda.Unknown).
func (m *MotoTarget) KillErrors(kind KillKind) []string {
	if kind == KillSandbox {
		return []string{"Lambda.ServiceException"}
	}
	return []string{"Runtime.ExitError", "Lambda.Unknown"}
}

// Stop implements Target.
func (m *MotoTarget) Stop(fn *Function) {
	if fn.Sandbox != nil {
		fn.Sandbox.Kill()
		_ = m.Moto.Route(fn.route(), "")
	}
}

// Unsupported implements Target: every scenario plays on moto.
func (m *MotoTarget) Unsupported(string) string { return "" }

// Close implements Target.
func (m *MotoTarget) Close() { m.Moto.Close() }
