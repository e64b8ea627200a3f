package workspace

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Sentinel errors.
var (
	// ErrPathEscapes: a path, or a symlink's target, leaves the workspace.
	ErrPathEscapes = errors.New("path escapes the workspace")
	// ErrTooLarge: a limit (named in the message) would be exceeded.
	ErrTooLarge = errors.New("workspace over its limit")
	// ErrUnsupported: a socket, FIFO or device file in the tree.
	ErrUnsupported = errors.New("unsupported file type in workspace")
	// ErrNotEmpty: Restore's destination holds something that is not a directory.
	ErrNotEmpty = errors.New("restore destination is not a directory")
)

// checkRel refuses a path that is not a clean, local, slash-separated
// relative path ("a/b", never "/a", "../a", "a/../b", "" or ".").
func checkRel(p string) error {
	if p == "" || p == "." || !filepath.IsLocal(p) || path.Clean(p) != p || strings.Contains(p, "\\") {
		return fmt.Errorf("%w: %q", ErrPathEscapes, p)
	}
	return nil
}

// cleanRel accepts the forms a tool may pass ("./a//b") and returns the
// canonical relative path, or ErrPathEscapes.
func cleanRel(p string) (string, error) {
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: %q is absolute", ErrPathEscapes, p)
	}
	c := path.Clean(p)
	if err := checkRel(c); err != nil {
		return "", err
	}
	return c, nil
}

// checkLinkTarget keeps a symlink at link only when its target is relative
// and, resolved lexically from the link's directory, stays in the tree.
func checkLinkTarget(link, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("%w: symlink %s -> %q is absolute", ErrPathEscapes, link, target)
	}
	resolved := path.Join(path.Dir(link), target)
	if resolved != "." && !filepath.IsLocal(resolved) {
		return fmt.Errorf("%w: symlink %s -> %q points outside", ErrPathEscapes, link, target)
	}
	return nil
}

// rootEscape maps os.Root's refusal (its sentinel is unexported, so only
// its text identifies it) onto ErrPathEscapes; other errors pass unchanged.
func rootEscape(name string, err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: %q resolves outside: %w", ErrPathEscapes, name, err)
	}
	return err
}

// CleanPath returns the canonical relative form of a path a person names
// ("", "." and "/" name the root, returned as ""), or ErrPathEscapes for one
// leaving the tree ("..", "a/../../b"). A leading slash is taken as the
// workspace's root, as a browser's path is.
func CleanPath(p string) (string, error) {
	p = strings.TrimLeft(p, "/")
	if p == "" || p == "." {
		return "", nil
	}
	return cleanRel(p)
}
