package cli

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// keelModule is the module a new agent module requires.
const keelModule = "github.com/keelrun/keel"

// develVersion is required when the running binary has no released
// version of Keel to name; a replace directive must then supply the code.
const develVersion = "v0.0.0-00010101000000-000000000000"

// templates is the new agent module. A file whose name ends in .tmpl is a
// text/template (the suffix is dropped); every other file is copied as it
// is. The Go files are an ordinary package of this module, so the build
// and vet of Keel check them against the public API.
//
//go:embed templates/agent
var templates embed.FS

const templateRoot = "templates/agent"

// initData is what the .tmpl files see.
type initData struct {
	Module  string // module path
	Version string // of github.com/keelrun/keel
	Replace string // go.mod-quoted directory, or empty: no replace
}

func initCommand() command {
	return command{
		usage:   "[--module PATH] [--replace DIR] DIR",
		summary: "create a new agent module in DIR: go.mod, main.go, an agent with a read-only tool and an effect, its test",
		run: func(_ context.Context, c *cli, args []string) error {
			set := flag.NewFlagSet(c.prog+" init", flag.ContinueOnError)
			set.SetOutput(io.Discard)
			c.fs = set
			mod := set.String("module", "", "module path (default: the base name of DIR)")
			replace := set.String("replace", "", "a Keel checkout to build against (a replace directive), needed until a released Keel is used")
			pos, err := parseArgs(set, args, "DIR")
			if err != nil {
				return err
			}
			dir := pos[0]
			abs, err := filepath.Abs(dir)
			if err != nil {
				return usagef("DIR %s: %v", dir, err)
			}
			d := initData{Module: *mod}
			if d.Module == "" {
				d.Module = filepath.Base(abs)
				if err := checkModulePath(d.Module); err != nil {
					return usagef("module path %q (the base name of DIR): %v; name one with --module", d.Module, err)
				}
			} else if err := checkModulePath(d.Module); err != nil {
				return usagef("--module %q: %v", d.Module, err)
			}
			d.Version = keelVersion(debug.ReadBuildInfo())
			released := d.Version != ""
			if !released {
				d.Version = develVersion
			}
			if *replace != "" {
				checkout, err := keelCheckout(*replace)
				if err != nil {
					return usagef("--replace %q: %v", *replace, err)
				}
				d.Replace = goModQuote(checkout)
			}
			if err := checkEmptyDir(dir); err != nil {
				return err
			}
			files, err := renderTemplates(d)
			if err != nil {
				return err
			}
			if err := writeFiles(dir, files); err != nil {
				return err
			}
			names := make([]string, 0, len(files))
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			fmt.Fprintf(c.stdout, "%s init: created %s (module %s): %s\n", c.prog, dir, d.Module, strings.Join(names, " "))
			next := "go mod tidy && go test ./... && go run . dev"
			if !released && d.Replace == "" {
				fmt.Fprintf(c.stderr, "%s init: warning: this %s is a development build with no released version to require;\n"+
					"  until you use a released Keel, go.mod needs `replace %s => PATH_TO_KEEL_CHECKOUT`\n"+
					"  (run %s init with --replace PATH_TO_KEEL_CHECKOUT, or add the line to %s)\n",
					c.prog, c.prog, keelModule, c.prog, filepath.Join(dir, "go.mod"))
				checkout := enclosingCheckout(c.dir)
				if checkout == "" {
					// go mod tidy would fail on the zero version: the
					// next step is the replace, which only the user can name.
					fmt.Fprintf(c.stdout, "next:\n  cd %s && go mod edit -replace %s=PATH_TO_KEEL_CHECKOUT && %s\n", shellQuote(dir), keelModule, next)
					return nil
				}
				next = fmt.Sprintf("go mod edit -replace %s=%s && %s", keelModule, shellQuote(checkout), next)
			}
			fmt.Fprintf(c.stdout, "next:\n  cd %s && %s\n", shellQuote(dir), next)
			return nil
		},
	}
}

// keelVersion is the version of Keel this binary was built from, or ""
// when it names no released code: a development build ("(devel)", the
// zero pseudo-version of a require satisfied by a replace, a dirty
// tree), or a Keel replaced by other code.
func keelVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return ""
	}
	v := ""
	if bi.Main.Path == keelModule {
		v = bi.Main.Version
	} else {
		for _, dep := range bi.Deps {
			if dep.Path == keelModule && dep.Replace == nil {
				v = dep.Version
			}
		}
	}
	if v == "(devel)" || v == develVersion || strings.HasSuffix(v, "+dirty") {
		return ""
	}
	return v
}

// enclosingCheckout returns the Keel checkout that holds dir (empty: the
// working directory), or "": the one a development build was most likely
// built from, to name in the next step.
func enclosingCheckout(dir string) string {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ""
		}
		dir = wd
	}
	for d := filepath.Clean(dir); ; {
		if abs, err := keelCheckout(d); err == nil {
			return abs
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// keelCheckout returns dir as an absolute path, checked to hold Keel's
// go.mod.
func keelCheckout(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	f, err := os.Open(filepath.Join(abs, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("want a Keel checkout: %w", err)
	}
	defer f.Close()
	if m := moduleOf(f); m != keelModule {
		return "", fmt.Errorf("want a Keel checkout: its go.mod is module %q, not %s", m, keelModule)
	}
	return abs, nil
}

// moduleOf returns the module path declared by a go.mod file.
func moduleOf(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if rest, ok := strings.CutPrefix(line, "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			m := strings.TrimSpace(rest)
			if u, err := strconv.Unquote(m); err == nil {
				m = u
			}
			return m
		}
	}
	return ""
}

// checkModulePath checks the syntax `go mod init` accepts for a module
// path: slash-separated elements of ASCII letters, digits and - . _ ~ +,
// none empty, none beginning or ending with a dot, the first not
// beginning with a dash.
func checkModulePath(p string) error {
	if p == "" {
		return errors.New("empty")
	}
	for i, elem := range strings.Split(p, "/") {
		switch {
		case elem == "":
			return errors.New("has an empty path element (a leading, trailing or double slash)")
		case elem[0] == '.' || elem[len(elem)-1] == '.':
			return fmt.Errorf("path element %q begins or ends with a dot", elem)
		case i == 0 && elem[0] == '-':
			return fmt.Errorf("path element %q begins with a dash", elem)
		}
		for _, r := range elem {
			ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~+", r)
			if !ok {
				return fmt.Errorf("%q is not allowed in a module path (letters, digits and - . _ ~ + separated by /)", r)
			}
		}
	}
	return nil
}

// checkEmptyDir refuses a DIR that exists and is not an empty directory.
func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err == nil && len(entries) > 0:
		return usagef("DIR %s exists and is not empty", dir)
	case err == nil:
		return nil
	}
	if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
		return usagef("DIR %s exists and is not a directory", dir)
	}
	return fmt.Errorf("DIR %s: %w", dir, err)
}

// renderTemplates returns the new module's files by name.
func renderTemplates(d initData) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(templates, templateRoot, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := templates.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, templateRoot+"/")
		if name == "gitignore" {
			// Stored without its dot: go:embed leaves dot files out.
			name = ".gitignore"
		}
		if base, ok := strings.CutSuffix(name, ".tmpl"); ok {
			t, err := template.New(path.Base(p)).Option("missingkey=error").Parse(string(b))
			if err != nil {
				return fmt.Errorf("template %s: %w", name, err)
			}
			var buf bytes.Buffer
			if err := t.Execute(&buf, d); err != nil {
				return fmt.Errorf("template %s: %w", name, err)
			}
			name, b = base, buf.Bytes()
		}
		out[name] = b
		return nil
	})
	return out, err
}

// writeFiles creates dir and writes files into it.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// goModQuote quotes s for go.mod where it would not read as one token.
func goModQuote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n\"'`()[]{},") || strings.Contains(s, "//") || strings.Contains(s, "/*") {
		return strconv.Quote(s)
	}
	return s
}

// shellQuote quotes s for a POSIX shell where needed.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/+=:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
