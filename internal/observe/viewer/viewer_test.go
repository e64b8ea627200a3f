package viewer_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/observe/viewer"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandler(t *testing.T) {
	h := viewer.Handler()
	for _, tc := range []struct {
		name, method, path, ctype string
		status                    int
		bodyHas                   string
	}{
		{"page", "GET", "/", "text/html; charset=utf-8", 200, `<script type="module" src="ui/app.js">`},
		{"module", "GET", "/ui/app.js", "text/javascript; charset=utf-8", 200, "sessionStorage"},
		{"styles", "GET", "/ui/app.css", "text/css; charset=utf-8", 200, "@media"},
		{"head has no body", "HEAD", "/ui/app.js", "text/javascript; charset=utf-8", 200, ""},
		{"unknown", "GET", "/ui/missing.js", "text/plain; charset=utf-8", 404, "not found"},
		{"the page only at /", "GET", "/index.html", "text/plain; charset=utf-8", 404, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := get(t, h, tc.method, tc.path, nil)
			if w.Code != tc.status || w.Header().Get("Content-Type") != tc.ctype || !strings.Contains(w.Body.String(), tc.bodyHas) {
				t.Fatalf("%s %s: %d %q %.80q", tc.method, tc.path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
			}
			if tc.method == "HEAD" && w.Body.Len() != 0 {
				t.Fatalf("HEAD wrote %d bytes", w.Body.Len())
			}
			if tc.status == 200 {
				for _, k := range []string{"Content-Security-Policy", "X-Content-Type-Options", "ETag", "Cache-Control"} {
					if w.Header().Get(k) == "" {
						t.Errorf("no %s", k)
					}
				}
			}
		})
	}
}

func TestRevalidatesByETag(t *testing.T) {
	h := viewer.Handler()
	etag := get(t, h, "GET", "/ui/app.js", nil).Header().Get("ETag")
	if w := get(t, h, "GET", "/ui/app.js", map[string]string{"If-None-Match": etag}); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Fatalf("If-None-Match %s: %d, %d bytes", etag, w.Code, w.Body.Len())
	}
	if w := get(t, h, "GET", "/ui/app.js", map[string]string{"If-None-Match": `"other"`}); w.Code != http.StatusOK {
		t.Fatalf("another ETag: %d", w.Code)
	}
}

// Nothing is fetched at run time: every URL the page and its module name
// is relative and served by the handler (no CDN, no other origin), and the
// token never goes into a URL.
func TestSelfContained(t *testing.T) {
	h := viewer.Handler()
	served := map[string]bool{}
	total := 0
	for _, a := range viewer.Assets() {
		served[a.Path] = true
		total += a.Size
	}
	page := get(t, h, "GET", "/", nil).Body.String()
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "data:") && !served["/"+m[1]] {
			t.Errorf("the page loads %q, which the handler does not serve", m[1])
		}
	}
	for _, a := range viewer.Assets() {
		body := get(t, h, "GET", a.Path, nil).Body.String()
		if regexp.MustCompile(`(?i)https?://|//cdn|@import`).MatchString(body) {
			t.Errorf("%s names another origin", a.Path)
		}
		if regexp.MustCompile(`[?&]token=|access_token`).MatchString(body) {
			t.Errorf("%s puts a token in a URL", a.Path)
		}
	}
	if total > 100_000 {
		t.Errorf("page weight %d bytes: keep the viewer small", total)
	}
	t.Logf("page weight: %d bytes in %d files", total, len(served))
}
