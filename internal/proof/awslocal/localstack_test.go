package awslocal

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLocalStack plays the scenarios of TestAWSLocal on LocalStack: the
// functions run in LocalStack's Lambda containers from the template's
// code asset, the interpreters are LocalStack's and Keel's executor, and
// the differential check is the same. It skips, naming everything that
// is missing, without a Docker engine, LOCALSTACK_AUTH_TOKEN, a running
// LocalStack with its Lambda service, or a bridge address (make
// localstack-e2e brings LocalStack up and sets KEEL_E2E_LOCALSTACK=1).
func TestLocalStack(t *testing.T) {
	playAll(t, newLocalStackWorld(t))
}

func newLocalStackWorld(t *testing.T) *World {
	t.Helper()
	ctx := context.Background()
	docker := Docker{}
	setup, skip := SelectLocalStack(ctx, os.Getenv, docker, LocalStackHealth)
	if skip != "" {
		t.Skip(skip)
	}
	root := repoRoot(t)
	cdkOut := envOr("KEEL_AWSLOCAL_CDKOUT", filepath.Join(root, "infra", "cdk", "cdk.out"))
	tmpl, err := LoadTemplate(cdkOut)
	if err != nil {
		t.Skipf("localstack-e2e: SKIPPED: no synthesized template (make synth writes it): %v", err)
	}
	dir := t.TempDir()
	// LocalStack takes a 12-digit access key id for the account id
	// (else 000000000000): the stacks' ARNs name Account.
	w := worldAt(nil, tmpl, dir, setup.Endpoint, Account)
	w.Target = &LocalStackTarget{Endpoint: setup.Endpoint, Container: setup.Container, HostAddr: setup.HostAddr,
		Arch: setup.Arch, Root: root, Dir: dir, Docker: docker, AWS: w.AWS, Lambda: w.Lambda, Logf: t.Logf}
	fmt.Printf("localstack: %s (container %s, engine %s); the Lambda containers reach this host at %s\n",
		setup.Endpoint, setup.Container, setup.Arch, setup.HostAddr)
	return w
}

// TestLocalStackPackageOnMoto runs the LocalStack target's package step
// — a template's code asset zipped and put where the template's Code
// points, then CreateFunction from that S3 location and the wait for
// Active — against moto's S3 and Lambda APIs, on the fixture template
// (TestLambdaPackages reads the real asset back; 20 MB through moto
// costs minutes on a loaded machine). This is not LocalStack (no Lambda
// container runs the code here): it checks the requests the LocalStack
// path makes against a real API server, as far as this machine allows.
func TestLocalStackPackageOnMoto(t *testing.T) {
	if os.Getenv("KEEL_AWSLOCAL") == "" {
		t.Skip("SKIPPED: set KEEL_AWSLOCAL=1 (make aws-local-e2e runs it)")
	}
	python := envOr("KEEL_AWSLOCAL_PYTHON", "python3")
	if why := MotoAvailable(python); why != "" {
		t.Skip("SKIPPED: " + why)
	}
	t.Parallel()
	ctx := context.Background()
	tmpl, err := LoadTemplate("testdata/cdkout")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := StartMoto(ctx, python, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	w := worldAt(nil, tmpl, dir, m.URL, "test")
	id, err := w.Template.Only("AWS::Lambda::Function", "FunctionsStep")
	if err != nil {
		t.Fatal(err)
	}
	p := physicalIDs(w.Template, "pkg", "ABCD")
	props, err := p.Resolve(w.Template.Resources[id].Properties)
	if err != nil {
		t.Fatal(err)
	}
	pm := props.(map[string]any)
	tcode, _ := pm["Code"].(map[string]any)
	arch := w.Template.Architecture(id)
	ls := &LocalStackTarget{Arch: arch, Root: repoRoot(t), Dir: t.TempDir(), AWS: w.AWS, Lambda: w.Lambda, Logf: t.Logf}
	code, gotArch, err := ls.Package(ctx, w.Template, id, tcode)
	if err != nil {
		t.Fatal(err)
	}
	if gotArch != arch || code["S3Bucket"] != tcode["S3Bucket"] || code["S3Key"] != tcode["S3Key"] {
		t.Fatalf("package %v for %s, want the template's Code %v for %s", code, gotArch, tcode, arch)
	}
	bucket := fmt.Sprint(code["S3Bucket"])
	if bucket != fmt.Sprintf("cdk-hnb659fds-assets-%s-%s", Account, Region) {
		t.Errorf("assets bucket %s", bucket)
	}
	obj, err := awss3.NewFromConfig(w.AWS, func(o *awss3.Options) { o.UsePathStyle = true }).GetObject(ctx,
		&awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprint(code["S3Key"]))})
	if err != nil {
		t.Fatal(err)
	}
	put, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if boot := unzip(t, put)["bootstrap"]; boot.mode.Perm() != 0o755 || !strings.HasPrefix(string(boot.data), "#!/bin/sh") {
		t.Errorf("the uploaded package's bootstrap: %v %q", boot.mode, boot.data)
	}
	// A second function of the same asset does not upload it again.
	if _, _, err := ls.Package(ctx, w.Template, id, tcode); err != nil || len(ls.uploaded) != 1 {
		t.Errorf("second package: %v, %d uploads", err, len(ls.uploaded))
	}

	roleID, err := w.Template.Only("AWS::IAM::Role", "FunctionsStep")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Lambda.CreateRole(ctx, p.Refs[roleID], `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}`); err != nil {
		t.Fatal(err)
	}
	env, err := functionEnv(pm, nil, ls.FunctionEnv("http://172.17.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	name := p.Refs[id]
	if err := w.Lambda.CreateFunction(ctx, createFunctionRequest(name, pm, env, code, gotArch)); err != nil {
		t.Fatal(err)
	}
	if err := ls.Started(ctx, &Function{Name: name}, FunctionSpec{Name: name}); err != nil {
		t.Fatal(err)
	}
	ls.Stop(&Function{Name: name})
	if _, _, err := w.Lambda.FunctionState(ctx, name); err == nil {
		t.Errorf("%s still exists after Stop", name)
	}
	fmt.Printf("localstack package on moto: %s created from s3://%s/%s (%.1f MB), %s, Active, deleted\n", name, bucket, code["S3Key"], float64(len(put))/1e6, gotArch)
}
