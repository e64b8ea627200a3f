package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
)

// The web viewer is served by the API handler itself, without a token (the
// page holds no data); everything else keeps the API's JSON 404.
func TestViewerIsServedByTheAPI(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, path, ctype string
		status            int
	}{
		{"page", "/", "text/html", 200},
		{"script", "/ui/app.js", "text/javascript", 200},
		{"style", "/ui/app.css", "text/css", 200},
		{"unknown asset", "/ui/nope.js", "", 404},
		{"unknown path keeps the JSON 404", "/nope", "application/json", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, h, body := e.do("GET", tc.path, "", "", nil)
			if st != tc.status || !strings.HasPrefix(h.Get("Content-Type"), tc.ctype) {
				t.Fatalf("GET %s: %d %q %s", tc.path, st, h.Get("Content-Type"), body)
			}
			if st == 200 && !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Fatalf("GET %s: CSP %q", tc.path, h.Get("Content-Security-Policy"))
			}
		})
	}
	if st, _, _ := e.do("POST", "/", "", "", nil); st != http.StatusMethodNotAllowed {
		t.Fatalf("POST /: %d, want 405", st)
	}
	if st, _, body := e.do("GET", "/v1/runs", "", "", nil); st != http.StatusUnauthorized || !strings.Contains(string(body), api.CodeUnauthorized) {
		t.Fatalf("the API still needs its token: %d %s", st, body)
	}
}
