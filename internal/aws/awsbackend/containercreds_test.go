package awsbackend

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEnvConfigContainerCredentials serves a container credentials
// endpoint on loopback, as ECS/EKS do, and retrieves through EnvConfig's
// provider: the token goes in the Authorization header (from the file,
// read at each fetch, when both are set), the keys come back.
func TestEnvConfigContainerCredentials(t *testing.T) {
	var gotAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		if r.URL.Path != "/creds" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{
			"AccessKeyId": "ASIACONTAINER", "SecretAccessKey": "s3cr3t-canary", "Token": "session",
			"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, wantAuth string
		env            map[string]string
	}{
		{"token", "tok-env", map[string]string{"AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok-env"}},
		{"token file", "from-file", map[string]string{"AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok-env", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile}},
		{"no token", "", map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gotAuth = nil
			tc.env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = srv.URL + "/creds"
			cfg, err := EnvConfig(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil || creds.AccessKeyID != "ASIACONTAINER" || creds.SecretAccessKey != "s3cr3t-canary" || creds.SessionToken != "session" {
				t.Fatalf("credentials %+v, %v", creds, err)
			}
			if len(gotAuth) != 1 || gotAuth[0] != tc.wantAuth {
				t.Errorf("Authorization %q, want one request with %q", gotAuth, tc.wantAuth)
			}
		})
	}
}

// TestEnvConfigContainerCredentialsRefused: a URI a token must not be sent
// to, or a malformed one, is refused naming its variable; static keys win
// over a container endpoint.
func TestEnvConfigContainerCredentialsRefused(t *testing.T) {
	for _, tc := range []struct{ name, key, value, want string }{
		{"plain http elsewhere", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://credentials.example.com/c", "AWS_CONTAINER_CREDENTIALS_FULL_URI"},
		{"no host", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "http:///c", "no host"},
		{"other scheme", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "ftp://127.0.0.1/c", "http or https"},
		{"relative without slash", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "v2/credentials", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{tc.key: tc.value, "AWS_CONTAINER_AUTHORIZATION_TOKEN": "s3cr3t-canary"}
			_, err := EnvConfig(func(k string) string { return env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t-canary") {
				t.Fatal("the error carries the token")
			}
		})
	}
	for _, ok := range []string{"https://credentials.example.com/c", "http://localhost:9/c", "http://[::1]:9/c", "http://169.254.170.23/c"} {
		if err := checkCredentialsURL(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "x", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/c"}
	cfg, err := EnvConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c, err := cfg.Credentials.Retrieve(context.Background()); err != nil || c.AccessKeyID != "AKIDEXAMPLE" {
		t.Errorf("static keys did not win: %+v %v", c, err)
	}
}
