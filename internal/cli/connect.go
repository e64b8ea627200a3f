package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
			tok = fileTok
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
	return cl, nil
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
