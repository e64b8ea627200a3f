package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
)

// LinkPath is where keel's HTTP server serves approval links:
// LinkPath + token.
const LinkPath = "/approve/"

// LinkToken is the token of n's approval link: the run id, the
// notification id and a secret, dot-separated. The secret is an
// HMAC-SHA256 under key of the notification, approval id and args hash, so
// the link is bound to that exact action and every attempt sends the same
// one.
func LinkToken(key []byte, n run.Notification) string {
	m := hmac.New(sha256.New, key)
	for _, s := range []string{"keel approval link v1", n.RunID, n.ID, n.ApprovalID, n.ArgsHash} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return n.RunID + "." + n.ID + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// LinkCurrent reports whether token is n's link under key, the current
// link key: a link sent under a key since rotated is not (its hash still
// matches the stored one, but it is revoked). Constant time in the token.
func LinkCurrent(key []byte, n run.Notification, token string) bool {
	return len(key) > 0 && hmac.Equal([]byte(LinkToken(key, n)), []byte(token))
}

// LinkCurrent is [LinkCurrent] under the worker's link key; false when the
// worker has none (it sends no links).
func (w *Worker) LinkCurrent(n run.Notification, token string) bool {
	return LinkCurrent(w.opt.LinkKey, n, token)
}

// ParseLink splits a token into the run id, the notification id and the
// hash of the whole token (what the store keeps); ok is false for a token
// of another form.
func ParseLink(token string) (runID, id, hash string, ok bool) {
	runID, rest, ok1 := strings.Cut(token, ".")
	i := strings.LastIndexByte(rest, '.')
	if !ok1 || i <= 0 || runID == "" || len(rest)-i-1 != 43 {
		return "", "", "", false
	}
	return runID, rest[:i], LinkHash(token), true
}

// LinkHash is the SHA-256 (hex) of a token, the only form stored.
func LinkHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}
