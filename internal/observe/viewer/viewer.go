package viewer

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
)

//go:embed assets
var files embed.FS

// Prefix is the path under which the assets other than the page are
// served; the page itself is served at "/".
const Prefix = "/ui/"

// csp allows this origin's own script, styles, images and connections and
// nothing else: no inline script, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Asset is one embedded file as served.
type Asset struct {
	Path string // the URL path: "/" or under Prefix
	Size int
}

var assets = load()

// contentType is the type of one of the viewer's own files, by its
// extension; "" for another.
func contentType(ext string) string {
	switch ext {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".json":
		return "application/json"
	}
	return ""
}

func load() map[string]asset {
	m := map[string]asset{}
	err := fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		// The viewer's own types first: mime.TypeByExtension reads the
		// system's mime.types files on first use, ~15 ms of every api
		// cold start, for three known extensions.
		ct := contentType(path.Ext(p))
		if ct == "" {
			ct = mime.TypeByExtension(path.Ext(p))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		name := strings.TrimPrefix(p, "assets/")
		url := Prefix + name
		if name == "index.html" {
			url = "/"
		}
		m[url] = asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		panic("viewer: reading embedded assets: " + err.Error()) // the embed is checked at compile time
	}
	return m
}

// Assets lists the served files and their sizes (the page weight is their
// sum), sorted by path.
func Assets() []Asset {
	out := make([]Asset, 0, len(assets))
	for p, a := range assets {
		out = append(out, Asset{Path: p, Size: len(a.body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Handler serves the page at "/" and its assets under [Prefix], for GET
// and HEAD. Any other path is a 404. Responses are revalidated by ETag
// (Cache-Control: no-cache), so a new binary's assets are seen at once.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && inm == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		_, _ = w.Write(a.body)
	})
}
