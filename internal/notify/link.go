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
