package main

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// One bootstrap per role, all from the one main package. BuildApp
// compiles keel:app once per role with that role's tag (keel_role_<role>,
// which narrows the binary to what the role links; see internal/aws/roles)
// into AppDir/<role>/bootstrap: each function's directory is its code
// asset; the task's, with the Dockerfile beside its bootstrap, is the
// Docker build context of the Fargate task image.
const (
	// Bootstrap is the binary's file name: what provided.al2023 runs.
	Bootstrap = "bootstrap"
	// TaskDockerfile is the task image's Dockerfile, relative to AppDir.
	TaskDockerfile = "Dockerfile"
	// DefaultApp is the stock app (cmd/keel, with Keel's research agent).
	DefaultApp = "./cmd/keel"
	// BaseBuildTags are the go build tags of every deployed binary:
	// lambda.norpc (aws-lambda-go without its net/rpc mode) and
	// keel_lambda, which leaves out what runs only on a developer's
	// machine: the SQLite store, `keel dev` and its local state machine,
	// and crashtest with its test servers, and swaps the official OTLP
	// exporters (gRPC, protobuf runtime) for Keel's own; and grpcnotrace,
	// which keeps grpc, should an app link it, from importing
	// golang.org/x/net/trace, whose HTTP handlers reach html/template and
	// so reflect's MethodByName: with that reachable the linker keeps every
	// exported method of every type (all of each AWS client's operations),
	// nearly half the binary.
	BaseBuildTags = "lambda.norpc,keel_lambda,grpcnotrace"
)

// EnvRole tells the binary which role it plays in this process: one of
// the function names (FunctionNames) or RoleTask.
const (
	EnvRole  = "KEEL_ROLE"
	RoleTask = "task" // the long-running Fargate task
)

// taskDockerfile is ./Dockerfile: it only copies the prebuilt bootstrap
// into a distroless image.
//
//go:embed Dockerfile
var taskDockerfile []byte

// App is a resolved keel:app: a main package and the module it belongs to.
type App struct {
	Package string // as configured: keel:app
	Dir     string // the package directory
	Module  string // the nearest directory at or above Dir holding go.mod
	// BuildTags are added to BaseBuildTags (keel:buildTags).
	BuildTags []string
}

// appPath is the package directory keel:app names.
func (p KeelStackProps) appPath() string {
	if filepath.IsAbs(p.App) {
		return filepath.Clean(p.App)
	}
	return filepath.Join(p.AssetRoot, p.App)
}

// AppDir is where BuildApp writes the bootstrap and the Dockerfile:
// BuildDir, or by default AssetRoot/dist/app/<name>-<hash>, one directory
// per keel:app (<hash> is of its path relative to AssetRoot), so that apps
// never overwrite each other's binary and a synth of unchanged sources
// finds the same bytes, hence the same asset hashes.
func (p KeelStackProps) AppDir() string {
	p = p.withDefaults()
	if p.BuildDir != "" {
		return p.BuildDir
	}
	dir := p.appPath()
	rel, err := filepath.Rel(p.AssetRoot, dir)
	if err != nil {
		rel = dir
	}
	sum := sha256.Sum256([]byte(filepath.ToSlash(rel)))
	name := filepath.Base(dir)
	if abs, err := filepath.Abs(dir); err == nil {
		name = filepath.Base(abs)
	}
	return filepath.Join(p.AssetRoot, "dist", "app", name+"-"+hex.EncodeToString(sum[:4]))
}

// ResolveApp checks that keel:app is a directory and finds its module.
// Every error names keel:app.
func (p KeelStackProps) ResolveApp() (App, error) {
	p = p.withDefaults()
	app := App{Package: p.App, Dir: p.appPath(), BuildTags: p.BuildTags}
	fi, err := os.Stat(app.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return app, fmt.Errorf("%s %q: %s does not exist (a Go main package directory, relative to keel:assetRoot %s)", CtxApp, p.App, app.Dir, p.AssetRoot)
	case err != nil:
		return app, fmt.Errorf("%s %q: %w", CtxApp, p.App, err)
	case !fi.IsDir():
		return app, fmt.Errorf("%s %q: %s is not a directory (want a Go main package directory)", CtxApp, p.App, app.Dir)
	}
	mod, err := moduleRoot(app.Dir)
	if err != nil {
		return app, fmt.Errorf("%s %q: %w", CtxApp, p.App, err)
	}
	app.Module = mod
	return app, nil
}

// moduleRoot returns the nearest directory at or above dir that holds a
// go.mod: the module the package belongs to, where go build must run.
func moduleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && fi.Mode().IsRegular() {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("no go.mod in %s or any directory above it", abs)
		}
		d = up
	}
}

// RoleTags are the go build tags that narrow the binary to role: the
// role's own tag (which command it serves), then one tag per capability
// the role's build leaves out or narrows: keel_env_aws (its AWS
// configuration is its environment, no default loader), keel_no_models
// (no model provider, no Secrets Manager, no tool-call validator: every
// role but step and task). internal/proof/awslocal's RoleBuildTags has the same
// body; a test there holds them equal.
func RoleTags(role string) string {
	switch role {
	case "step", "task":
		return "keel_role_" + role + ",keel_env_aws"
	}
	return "keel_role_" + role + ",keel_env_aws,keel_no_models"
}

// RoleDir is the directory of role's bootstrap under appDir (AppDir): a
// function's code asset, or (RoleTask) the task image's build context.
func RoleDir(appDir, role string) string { return filepath.Join(appDir, role) }

// buildArgs is the go build command line for role's bootstrap of app, run
// in app.Module with GOOS=linux GOARCH=arm64 CGO_ENABLED=0. -trimpath and
// -buildvcs=false keep the binary a function of the sources alone (no
// checkout paths, no commit stamp), so rebuilding unchanged sources gives
// the same bytes.
func buildArgs(app App, role, out string) ([]string, error) {
	dir, err := filepath.Abs(app.Dir)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(app.Module, dir)
	if err != nil {
		return nil, err
	}
	pkg := "./" + filepath.ToSlash(rel)
	if rel == "." {
		pkg = "."
	}
	tags := strings.Join(append([]string{BaseBuildTags, RoleTags(role)}, app.BuildTags...), ",")
	return []string{"build", "-trimpath", "-buildvcs=false", "-tags", tags, "-ldflags", "-s -w", "-o", out, pkg}, nil
}

// BuildApp compiles keel:app for linux/arm64, once per role, into
// RoleDir(AppDir, role)/bootstrap, and writes the task's Dockerfile beside
// the task's bootstrap. It runs go from PATH
// in the app's module root, with the caller's environment otherwise
// (GOFLAGS, GOPROXY, GOCACHE...): the Go build cache compiles each package
// once for all roles, so each further role costs a link. On failure the
// error names keel:app and the role, and carries go's output.
func BuildApp(ctx context.Context, p KeelStackProps) error {
	app, err := p.ResolveApp()
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(p.AppDir())
	if err != nil {
		return err
	}
	// The role builds differ only in their tags; a link is mostly one
	// core's work, so they run side by side, as many as there are cores.
	roles := append(FunctionNames(), RoleTask)
	errs := make([]error, len(roles))
	sem := make(chan struct{}, max(runtime.NumCPU(), 1))
	var wg sync.WaitGroup
	for i, role := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = buildRole(ctx, app, dir, role)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(RoleDir(dir, RoleTask), TaskDockerfile), taskDockerfile, 0o644); err != nil {
		return fmt.Errorf("%s %q: %w", CtxApp, app.Package, err)
	}
	return nil
}

// buildRole builds role's bootstrap of app under dir.
func buildRole(ctx context.Context, app App, dir, role string) error {
	if err := os.MkdirAll(RoleDir(dir, role), 0o755); err != nil {
		return fmt.Errorf("%s %q: %w", CtxApp, app.Package, err)
	}
	args, err := buildArgs(app, role, filepath.Join(RoleDir(dir, role), Bootstrap))
	if err != nil {
		return fmt.Errorf("%s %q: %w", CtxApp, app.Package, err)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = app.Module
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %q, role %s: go %s (in %s) failed: %w\n%s", CtxApp, app.Package, role, strings.Join(args, " "), app.Module, err, strings.TrimSpace(string(out)))
	}
	return nil
}
