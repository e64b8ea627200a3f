package awslocal

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/keelrun/keel/keeltest"
)

// TestMCPTokenFromSecretsManagerOnMoto: a program's MCP server token
// lives in Secrets Manager (moto) and reaches the server through
// keel.MCPServer.BearerTokenFrom and awssecret.From; the run calls the
// server's three tools (it answers 401 without the token), and the token
// is in no file of keel dev's data directory, though the server echoes it
// into lookup's answers.
func TestMCPTokenFromSecretsManagerOnMoto(t *testing.T) {
	ctx := context.Background()
	m := motoOnly(t)
	const token = "sm-mcp-token-4e1d90c7a2b35f68"
	sm := secretsmanager.New(secretsmanager.Options{Region: Region, BaseEndpoint: aws.String(m.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("keel/mcp-fx"),
		SecretString: aws.String(`{"token":"` + token + `"}`)}); err != nil {
		t.Fatal(err)
	}
	fx := keeltest.Build(t, "../../cmd/mcpfixture")
	agent := keeltest.Build(t, "../../mcptool/testdata/mcpagent")
	log := filepath.Join(t.TempDir(), "applied.jsonl")
	urlFile := filepath.Join(t.TempDir(), "url")
	srv := exec.Command(fx, "-http", "127.0.0.1:0", "-url-file", urlFile, "-log", log, "-token", token, "-hostile", "echo")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	var url string
	for deadline := time.Now().Add(keeltest.HangGuard); url == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("mcpfixture did not serve")
		}
		b, _ := os.ReadFile(urlFile)
		url = string(b)
	}
	p := keeltest.StartProgram(t, agent, "MCPAGENT_URL="+url, "MCPAGENT_TOKEN_SECRET=keel/mcp-fx", "MCPAGENT_LOG="+log,
		"AWS_ENDPOINT_URL="+m.URL, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION="+Region)
	id := p.StartRun(t, "mcp", "go")
	for range 4 {
		p.Approve(t, id, p.WaitApproval(t, id))
	}
	p.WaitFor(t, id, "completed")
	applied, err := os.ReadFile(log)
	if err != nil || strings.Count(string(applied), `"kind":"applied"`) != 3 {
		t.Errorf("the server's log %s (%v): want set_flag, delete_item and delete_record applied", applied, err)
	}
	err = filepath.WalkDir(p.DataDir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // a temp file the live server removed meanwhile
		}
		if strings.Contains(string(b), token) {
			t.Errorf("the MCP token from Secrets Manager is in %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
