package awslocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// LocalStackTarget is LocalStack (localstack/docker-compose.yml) running
// the functions in its own Lambda containers: each function is created
// from the template with its code asset as a linux zip on provided.al2023
// uploaded where the template's Code points (the CDK assets bucket), and
// LocalStack starts a container per execution environment on the Docker
// engine it shares with this host. The servers a scenario runs for the
// functions listen on the Docker bridge gateway the containers route to
// (HostAddress); a mid-step kill is `docker kill` of the function's
// containers (found by LocalStack's container name), or a SIGKILL of the
// runtime inside them.
type LocalStackTarget struct {
	Endpoint  string // LocalStack's edge endpoint, from this host
	Container string // LocalStack's own container (its Lambda containers are named after it)
	HostAddr  string // where the Lambda containers reach this host
	Arch      string // the Lambda architecture of the Docker engine's machine
	Root      string // the module root, for a rebuild of the bootstrap
	Dir       string // packages built here
	Docker    Docker
	AWS       aws.Config
	Lambda    *LambdaAPI
	// Logf reports what a run should know (a rebuild for another
	// architecture); nil: silent.
	Logf func(format string, args ...any)

	mu       sync.Mutex
	uploaded map[string]bool // bucket/key already put
	built    map[string]string
}

var _ Target = (*LocalStackTarget)(nil)

// Name implements Target.
func (l *LocalStackTarget) Name() string { return "localstack" }

// Listen implements Target: on the bridge gateway, where LocalStack's
// Lambda containers route to this host.
func (l *LocalStackTarget) Listen() (net.Listener, error) { return listenOn(l.HostAddr) }

// Package implements Target. The package is the template's code asset
// (cdk.out/asset.<hash>, the linux bootstrap the CDK app built with its
// build tags), zipped as CDK zips it, put in the bucket and key the
// template's Code names, which CreateFunction then reads — unless the
// Docker engine's machine is of another architecture than the template's
// (arm64): LocalStack would then need an emulator to run it, so the same
// ./cmd/keel is built with the same tags for the engine's architecture
// and put beside it, and the function is created for that architecture.
func (l *LocalStackTarget) Package(ctx context.Context, t *Template, logical string, code map[string]any) (map[string]any, string, error) {
	bucket, _ := code["S3Bucket"].(string)
	key, _ := code["S3Key"].(string)
	if bucket == "" || key == "" {
		return nil, "", fmt.Errorf("awslocal: %s: Code has no S3Bucket/S3Key: %v", logical, code)
	}
	dir, err := t.CodeAsset(logical)
	if err != nil {
		return nil, "", err
	}
	arch := t.Architecture(logical)
	if arch != l.Arch {
		if dir, err = l.rebuilt(ctx, l.Arch, t.Role(logical)); err != nil {
			return nil, "", err
		}
		key = strings.TrimSuffix(key, ".zip") + "-" + l.Arch + ".zip"
		arch = l.Arch
	}
	if err := l.upload(ctx, bucket, key, dir); err != nil {
		return nil, "", err
	}
	return map[string]any{"S3Bucket": bucket, "S3Key": key}, arch, nil
}

// rebuilt builds role's bootstrap once per architecture, as the CDK app
// builds it (one bootstrap per role).
func (l *LocalStackTarget) rebuilt(ctx context.Context, arch, role string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := arch + "/" + role
	if dir, ok := l.built[key]; ok {
		return dir, nil
	}
	dir := filepath.Join(l.Dir, "bootstrap-"+arch+"-"+role)
	if l.Logf != nil {
		l.Logf("localstack: the template's functions are arm64, the Docker engine is %s: building ./cmd/keel for it with -tags %s", arch, RoleBuildTags(role))
	}
	if err := BuildBootstrap(ctx, l.Root, arch, role, dir); err != nil {
		return "", err
	}
	if l.built == nil {
		l.built = map[string]string{}
	}
	l.built[key] = dir
	return dir, nil
}

// upload zips dir and puts it at bucket/key once (creating the bucket:
// it is CDK's bootstrap bucket, which `cdk bootstrap` makes on AWS).
func (l *LocalStackTarget) upload(ctx context.Context, bucket, key, dir string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.uploaded[bucket+"/"+key] {
		return nil
	}
	zip, err := FunctionZip(dir)
	if err != nil {
		return err
	}
	c := awss3.NewFromConfig(l.AWS, func(o *awss3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		var owned *s3types.BucketAlreadyOwnedByYou
		if !errors.As(err, &owned) {
			return fmt.Errorf("awslocal: create the assets bucket %s: %w", bucket, err)
		}
	}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(zip)}); err != nil {
		return fmt.Errorf("awslocal: put the code asset %s/%s: %w", bucket, key, err)
	}
	if l.uploaded == nil {
		l.uploaded = map[string]bool{}
	}
	l.uploaded[bucket+"/"+key] = true
	return nil
}

// FunctionEnv implements Target: LocalStack gives its Lambda containers
// AWS_ENDPOINT_URL (itself) and credentials; only Keel's executor, when
// the stack runs it, has to be named.
func (l *LocalStackTarget) FunctionEnv(sfnURL string) map[string]string {
	if sfnURL == "" {
		return nil
	}
	return map[string]string{"AWS_ENDPOINT_URL_SFN": sfnURL}
}

// Started implements Target: it waits until the function is Active
// (LocalStack pulls the provided.al2023 image when the function is
// created). The bound is a guard against a hang, not a timing claim.
func (l *LocalStackTarget) Started(ctx context.Context, fn *Function, spec FunctionSpec) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		state, reason, err := l.Lambda.FunctionState(ctx, spec.Name)
		switch {
		case err != nil:
			return err
		case state == "Active":
			return nil
		case state == "Failed":
			return fmt.Errorf("awslocal: function %s failed to create: %s", spec.Name, reason)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("awslocal: function %s still %s: %w", spec.Name, state, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Kill implements Target. A sandbox kill is `docker kill` (SIGKILL) of
// every running container of the function's execution environments;
// LocalStack starts a new environment for the next Invoke. A runtime kill
// SIGKILLs every process in those containers but their init (LocalStack's
// Lambda init, PID 1, which runs the bootstrap): `kill -9 -1` from a
// shell in the container signals all processes but PID 1 and itself.
func (l *LocalStackTarget) Kill(ctx context.Context, fn *Function, kind KillKind) (string, error) {
	all, err := l.Docker.Running(ctx, lambdaContainerPrefix(l.Container, fn.Name))
	if err != nil {
		return "", err
	}
	cs := lambdaContainers(all, l.Container, fn.Name)
	if len(cs) == 0 {
		return "", fmt.Errorf("no running Lambda container named %s* (LocalStack's container is %q: %s)", lambdaContainerPrefix(l.Container, fn.Name), l.Container, EnvLocalStackContainer)
	}
	var names, ids []string
	for _, c := range cs {
		names, ids = append(names, c.Name), append(ids, c.ID)
	}
	switch kind {
	case KillSandbox:
		if err := l.Docker.Kill(ctx, ids...); err != nil {
			return "", err
		}
	case KillRuntime:
		for _, id := range ids {
			if _, err := l.Docker.Exec(ctx, id, "/bin/sh", "-c", "kill -9 -1"); err != nil {
				return "", err
			}
		}
	default:
		return "", fmt.Errorf("unknown kill %q", kind)
	}
	return fmt.Sprintf("containers %v", names), nil
}

// KillErrors implements Target. How LocalStack reports an invocation
// whose container died has never been observed by this kit (no Docker
// engine where it was written): any error the definition's Step retriers
// name for a lost or crashed invocation is accepted.
func (l *LocalStackTarget) KillErrors(KillKind) []string {
	return []string{"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
		"Lambda.Unknown", "Runtime.ExitError", "Sandbox.Timedout"}
}

// Stop implements Target: the function is deleted, and LocalStack stops
// its containers (a stack's end; a failure leaves them to LocalStack's
// idle timeout).
func (l *LocalStackTarget) Stop(fn *Function) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Lambda.DeleteFunction(ctx, fn.Name); err != nil && l.Logf != nil {
		l.Logf("localstack: %v", err)
	}
}

// Unsupported implements Target: every scenario of the stock program has
// a LocalStack way; a program of its own (the sub-agents scenario) is not
// packaged for LocalStack.
func (l *LocalStackTarget) Unsupported(scenario string) string {
	if scenario == subagentsScenarioName {
		return "the LocalStack target packages ./cmd/keel only"
	}
	return ""
}

// Close implements Target: LocalStack itself is make localstack-up's.
func (l *LocalStackTarget) Close() {}

// EnvLocalStackContainer names LocalStack's container when it is not
// localstack-main (localstack/docker-compose.yml's container_name, and
// LocalStack's own default MAIN_CONTAINER_NAME).
const EnvLocalStackContainer = "KEEL_LOCALSTACK_CONTAINER"

func envDefault(getenv func(string) string, k, def string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return def
}
