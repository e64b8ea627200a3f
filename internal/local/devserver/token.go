// The dev token: how Start picks, checks and persists the bearer token (split from devserver.go to keep files short).

package devserver

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MinTokenLen is the shortest dev token Start accepts.
const MinTokenLen = 16

// token returns the dev token: the given one, else DIR/token, else a new
// random one written there. Surrounding white space is dropped (a client
// never sends it: the Authorization header is trimmed); a token shorter
// than MinTokenLen is refused.
func token(dir, given string) (string, error) {
	path := filepath.Join(dir, "token")
	check := func(t, from string) error {
		if len(t) < MinTokenLen {
			return fmt.Errorf("the dev token (%s) is %d characters: at least %d are required", from, len(t), MinTokenLen)
		}
		if strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return fmt.Errorf("the dev token (%s) holds white space or control characters", from)
		}
		return nil
	}
	if given = strings.TrimSpace(given); given != "" {
		if err := check(given, "--dev-token"); err != nil {
			return "", err
		}
		return given, writeFile(path, given)
	}
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		t := strings.TrimSpace(string(b))
		return t, check(t, path)
	}
	t := "kdev_" + randHex(20)
	return t, writeFile(path, t)
}

// InstanceFile is the file of the data directory holding its instance id.
const InstanceFile = "instance"

// instance returns the data directory's instance id, DIR/instance, made
// once and kept: GET /healthz answers it (no auth), and a client that
// found the url and token in DIR checks it there before sending the token,
// so a stale url now answered by another project's dev never gets it.
func instance(dir string) (string, error) {
	path := filepath.Join(dir, InstanceFile)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	id := "kins_" + randHex(12)
	return id, writeFile(path, id)
}

func writeFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
