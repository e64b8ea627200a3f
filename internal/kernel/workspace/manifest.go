package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// Entry is one node of the tree. Field order is the canonical JSON order.
type Entry struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Mode   uint32 `json:"mode"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Run is the run whose prefix holds the blob (files only): the
	// snapshotting run for new content, an ancestor's for inherited content.
	Run    string `json:"run,omitempty"`
	Target string `json:"target,omitempty"`
}

// Manifest is a workspace version's content, sorted by path.
type Manifest struct {
	Entries []Entry `json:"entries"`
}

// TotalBytes is the sum of the files' sizes.
func (m *Manifest) TotalBytes() int64 {
	var n int64
	for _, e := range m.Entries {
		n += e.Size
	}
	return n
}

// Lookup returns the entry at p.
func (m *Manifest) Lookup(p string) (Entry, bool) {
	for _, e := range m.Entries {
		if e.Path == p {
			return e, true
		}
	}
	return Entry{}, false
}

// blobRuns maps each content hash to the run holding its blob.
func (m *Manifest) blobRuns() map[string]string {
	out := map[string]string{}
	if m == nil {
		return out
	}
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			out[e.SHA256] = e.Run
		}
	}
	return out
}

// encode is the canonical form: entries sorted by path (the caller sorts),
// encoding/json's fixed field order, no indentation.
func (m *Manifest) encode() ([]byte, error) {
	if m.Entries == nil {
		m.Entries = []Entry{}
	}
	return json.Marshal(m)
}

// ErrBadManifest means a manifest does not match its version or is malformed.
var ErrBadManifest = errors.New("workspace manifest invalid")

// decodeManifest parses b, checks it hashes to want and validates every
// entry, so a tampered manifest can neither pass nor place a file outside
// the tree.
func decodeManifest(b []byte, want string) (*Manifest, error) {
	if got := sha256Hex(b); got != want {
		return nil, fmt.Errorf("%w: hash %s, version says %s", ErrBadManifest, got, want)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return &m, m.validate()
}

func (m *Manifest) validate() error {
	prev := ""
	for i, e := range m.Entries {
		if i > 0 && e.Path <= prev {
			return fmt.Errorf("%w: entries not sorted or duplicated at %q", ErrBadManifest, e.Path)
		}
		prev = e.Path
		if err := checkRel(e.Path); err != nil {
			return err
		}
		if e.Mode&^uint32(fs.ModePerm) != 0 {
			return fmt.Errorf("%w: %s: mode %o", ErrBadManifest, e.Path, e.Mode)
		}
		switch e.Type {
		case TypeDir:
		case TypeFile:
			if !isHex64(e.SHA256) || e.Size < 0 || e.Run == "" {
				return fmt.Errorf("%w: %s: bad hash, size or run", ErrBadManifest, e.Path)
			}
		case TypeSymlink:
			if err := checkLinkTarget(e.Path, e.Target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %s: type %q", ErrBadManifest, e.Path, e.Type)
		}
	}
	return nil
}

// Version names a stored manifest: its hash and the run holding it.
type Version struct {
	RunID  string
	SHA256 string
}

// String is the form kept in run.Checkpoint.WorkspaceVersion.
func (v Version) String() string { return "sha256:" + v.SHA256 + "@" + v.RunID }

// ParseVersion is the inverse of Version.String.
func ParseVersion(s string) (Version, error) {
	rest, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(rest) < 66 || rest[64] != '@' || !isHex64(rest[:64]) {
		return Version{}, fmt.Errorf("%w: version %q is not sha256:{hex}@{run}", ErrBadManifest, s)
	}
	v := Version{SHA256: rest[:64], RunID: rest[65:]}
	if !filepath.IsLocal(v.RunID) || strings.ContainsAny(v.RunID, "/\\") {
		return Version{}, fmt.Errorf("%w: version %q names run %q", ErrBadManifest, s, v.RunID)
	}
	return v, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// DecodeManifest parses b as the manifest whose sha256 is want, checking
// the hash and every entry (ErrBadManifest otherwise): what a holder of a
// manifest received from elsewhere (the AWS command runner's answer) must
// call before trusting it.
func DecodeManifest(b []byte, want string) (*Manifest, error) { return decodeManifest(b, want) }

// Encode is the manifest's canonical form; its sha256 names the version.
func (m *Manifest) Encode() ([]byte, error) { return m.encode() }
