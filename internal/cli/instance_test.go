package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestStaleURLAnotherDev: .keel/url names a port that another project's
// dev now holds (this project's dev stopped). The client asks the
// server's instance id (no token) and, as it is not the one in .keel/,
// refuses without sending the token, saying why; the right dev, or a
// .keel/ of an older dev with no instance file, is used as before.
func TestStaleURLAnotherDev(t *testing.T) {
	e := newTestEnv(t, false)
	var mu sync.Mutex
	var sent []string // Authorization headers the server saw
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Get("Authorization"))
		mu.Unlock()
		e.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cases := []struct {
		name     string
		instance string // in .keel/instance; "" writes none
		code     int
		want     string
	}{
		{name: "another project's dev", instance: "kins_mine", code: exitFailure,
			want: "another Keel dev (instance kins_test) answers at " + srv.URL + ", not the dev of "},
		{name: "this project's dev", instance: testInstance, code: exitOK},
		{name: "an older dev's directory", code: exitOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			sent = nil
			mu.Unlock()
			dir := t.TempDir()
			writeDevDir(t, dir, srv.URL, token)
			if tc.instance != "" {
				if err := os.WriteFile(filepath.Join(dir, devDirName, "instance"), []byte(tc.instance+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, _, errOut := runAs(t, "shop", dir, nil, "runs")
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errOut, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			gotToken := false
			for _, h := range sent {
				gotToken = gotToken || strings.Contains(h, token)
			}
			if tc.code != exitOK && (gotToken || !strings.Contains(errOut, "was not sent") || strings.Contains(errOut, "check the token")) {
				t.Errorf("the token reached the other program (%v) or the message blames it: %q", gotToken, errOut)
			}
		})
	}
}
