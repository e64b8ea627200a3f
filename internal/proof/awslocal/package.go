package awslocal

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// CDKBuildTags are the go build tags of every binary the CDK app deploys
// (infra/cdk BaseBuildTags; a test reads infra/cdk/app.go so the two stay
// the same): aws-lambda-go without net/rpc, keel_lambda, and grpc without
// x/net/trace. Each function's bootstrap adds its role's tag (RoleBuildTags).
const CDKBuildTags = "lambda.norpc,keel_lambda,grpcnotrace"

// RoleBuildTags are the tags of role's bootstrap, as infra/cdk builds it
// (BaseBuildTags, then RoleTags(role)); role "" is the every-role build.
func RoleBuildTags(role string) string {
	if role == "" {
		return CDKBuildTags
	}
	return CDKBuildTags + "," + roleTags(role)
}

// roleTags is infra/cdk's RoleTags, body for body (TestCDKBuildTags).
func roleTags(role string) string {
	switch role {
	case "step", "task":
		return "keel_role_" + role + ",keel_env_aws"
	}
	return "keel_role_" + role + ",keel_env_aws,keel_no_models"
}

// zipEpoch is the modification time of every file of a package, so the
// same files give the same bytes.
var zipEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// FunctionZip packs the files of dir (the function's code asset, or a
// directory holding a built bootstrap) as a Lambda deployment package:
// paths relative to dir with forward slashes, each file's permission bits
// kept (Lambda runs provided.al2023's /var/task/bootstrap, which must be
// executable: a bootstrap that is not 0755 in the zip fails as
// Runtime.InvalidEntrypoint). A directory without an executable bootstrap
// at its root is an error.
func FunctionZip(dir string) ([]byte, error) {
	st, err := os.Stat(filepath.Join(dir, "bootstrap"))
	if err != nil {
		return nil, fmt.Errorf("awslocal: package %s: %w", dir, err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("awslocal: package %s: bootstrap is %v, want an executable file", dir, st.Mode())
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range files {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil, err
		}
		h := &zip.FileHeader{Name: filepath.ToSlash(rel), Method: zip.Deflate, Modified: zipEpoch}
		// Unix permission bits travel in the external attributes
		// (creator "Unix"), which is where Lambda's unzip reads them.
		h.SetMode(info.Mode().Perm())
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CodeAsset is the directory of cdk.out holding a function's code: the
// template's Code.S3Key is the asset's hash with ".zip" (CDK zips the
// directory asset.<hash> at publish time).
func (t *Template) CodeAsset(logical string) (string, error) {
	code, _ := t.Resources[logical].Properties["Code"].(map[string]any)
	key, _ := code["S3Key"].(string)
	hash, ok := strings.CutSuffix(key, ".zip")
	if !ok || hash == "" {
		return "", fmt.Errorf("awslocal: %s: Code.S3Key %q is not a zip asset", logical, key)
	}
	dir := filepath.Join(t.Dir, "asset."+hash)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("awslocal: %s: no code asset directory %s (run make synth)", logical, dir)
	}
	return dir, nil
}

// GoArch is the GOARCH of a Lambda architecture.
func GoArch(lambdaArch string) (string, error) {
	switch lambdaArch {
	case "arm64":
		return "arm64", nil
	case "x86_64":
		return "amd64", nil
	}
	return "", fmt.Errorf("awslocal: unknown Lambda architecture %q", lambdaArch)
}

// LambdaArch is the Lambda architecture of a machine architecture as
// Docker (`docker info` Architecture: uname -m) or Go names it.
func LambdaArch(machine string) (string, error) {
	switch machine {
	case "x86_64", "amd64":
		return "x86_64", nil
	case "aarch64", "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("awslocal: no Lambda architecture for machine %q", machine)
}

// BootstrapBuild is the go build of ./cmd/keel as the CDK app builds it
// for a Lambda architecture: GOOS=linux, CGO off, the CDK build tags,
// -trimpath -s -w. It returns the command to run in the module root.
func BootstrapBuild(ctx context.Context, root, lambdaArch, role, out string) (*exec.Cmd, error) {
	goarch, err := GoArch(lambdaArch)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", RoleBuildTags(role),
		"-ldflags", "-s -w", "-o", out, "./cmd/keel")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	return cmd, nil
}

// BuildBootstrap runs BootstrapBuild into dir/bootstrap.
func BuildBootstrap(ctx context.Context, root, lambdaArch, role, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd, err := BootstrapBuild(ctx, root, lambdaArch, role, filepath.Join(dir, "bootstrap"))
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("awslocal: %s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}
