package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/config"
)

// devDirName is the data directory `PROG dev` uses by default; it holds
// the url and token files the client commands discover.
const devDirName = ".keel"

// client builds the API client. The URL is --url, else KEEL_URL, else the
// url file of the runtime's data directory; the token likewise, the file
// only when it belongs to the runtime the URL names (a token is never
// sent to an API it was not made for). The data directory is KEEL_DATA_DIR
// when set, else the nearest .keel/ holding a url file in this directory
// or its parents: so a new shell in the project needs no exports.
func (c *cli) client() (*client.Client, error) {
	if c.environ != nil {
		// A misspelt KEEL_TOKEN would otherwise be ignored, and the
		// token file sent instead: refused as dev refuses it.
		if err := config.CheckEnviron(c.environ()); err != nil {
			return nil, &configError{err}
		}
	}
	u, tok := c.url, c.token
	tokDir := "" // the data directory the token was read from
	source := "--url"
	if u == "" {
		u, source = c.getenv("KEEL_URL"), "KEEL_URL"
	}
	if tok == "" {
		tok = c.getenv("KEEL_TOKEN")
	}
	if u == "" || tok == "" {
		dir, fileURL, fileTok := c.discover()
		switch {
		case u == "" && fileURL == "":
			where := "in this directory or its parents"
			if dir != "" {
				where = "in " + dir
			}
			return nil, &configError{fmt.Errorf("%w: found no %s/url %s; start `%s dev` here, or set KEEL_URL (or pass --url)", errNoAPI, devDirName, where, c.prog)}
		case u == "":
			u, source = fileURL, filepath.Join(dir, "url")
		}
		if tok == "" && sameURL(u, fileURL) {
			tok, tokDir = fileTok, dir
		}
	}
	c.apiURL = u
	cl, err := client.New(u, tok, c.hc)
	if err != nil {
		if !strings.Contains(u, "://") {
			err = fmt.Errorf("%w (add http://: %s)", err, "http://"+u)
		}
		if source == "--url" {
			return nil, usagef("--url: %v", err)
		}
		// The command line was right: the variable or file is not.
		return nil, &configError{fmt.Errorf("%s: %w", source, err)}
	}
	if tokDir != "" {
		if err := c.checkInstance(cl, tokDir); err != nil {
			return nil, err
		}
	}
	return cl, nil
}

// checkInstance makes sure the API at cl is the dev whose data directory
// dir the token came from, before the token is sent: dir/instance must be
// what its GET /healthz answers (no auth). A stale url file whose port
// another project's dev (or any program) now holds is refused naming
// that; a directory of an older dev (no instance file) is not checked,
// nor is a URL nothing answers (the command then says so).
func (c *cli) checkInstance(cl *client.Client, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "instance"))
	want := strings.TrimSpace(string(b))
	if err != nil || want == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := cl.Instance(ctx)
	if err != nil || got == want {
		return nil
	}
	who := "a program that is not a Keel dev"
	if got != "" {
		who = "another Keel dev (instance " + termSafe(clip(got, 80)) + ")" // the other program's text
	}
	return fmt.Errorf("%s answers at %s, not the dev of %s (instance %s): the token in %s was not sent. "+
		"The dev that wrote %s has stopped and its port is taken: start `%s dev` here (--addr or KEEL_ADDR for another port), or set KEEL_URL and KEEL_TOKEN",
		who, cl.BaseURL(), dir, want, dir, filepath.Join(dir, "url"), c.prog)
}

// discover reads the url and token files of the runtime's data directory
// (see client). A missing file reads as "".
func (c *cli) discover() (dir, url, token string) {
	if d := c.getenv("KEEL_DATA_DIR"); d != "" {
		dir = d
	} else {
		dir = findDevDir(c.dir)
		if dir == "" {
			return "", "", ""
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	return dir, read("url"), read("token")
}

// findDevDir returns the nearest .keel directory holding a url file in
// start (empty: the working directory) or one of its parents, or "".
func findDevDir(start string) string {
	if start == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ""
		}
		start = wd
	}
	for d := filepath.Clean(start); ; {
		p := filepath.Join(d, devDirName)
		if _, err := os.Stat(filepath.Join(p, "url")); err == nil {
			return p
		} else if !errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func sameURL(a, b string) bool {
	return a != "" && strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}
