package compose

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/notify"
)

// NotifyWorker builds the delivery worker of the notification outbox from
// Config.Notify: one channel per configured destination, the link key, and
// baseURL (Config.Notify.BaseURL when set) as the start of approval links.
// On SQLite without KEEL_NOTIFY_LINK_KEY, the key is DataDir/link.key,
// made once (random, owner-only) and kept, so links sent before a restart
// still work after it; a file holding a key shorter than MinLinkKey is an
// error (devLinkKey).
func (rt *Runtime) NotifyWorker(baseURL string) (*notify.Worker, error) {
	n := rt.Config.Notify
	var chans []notify.Channel
	if n.WebhookURL != "" {
		chans = append(chans, &notify.Webhook{URL: n.WebhookURL, Secret: []byte(n.WebhookSecret)})
	}
	if n.SlackSecret != "" {
		chans = append(chans, &notify.Slack{URL: n.SlackSecret})
	}
	if n.SMTPAddr != "" {
		chans = append(chans, &notify.Email{Addr: n.SMTPAddr, From: n.SMTPFrom, To: n.SMTPTo,
			Username: n.SMTPUser, Password: n.SMTPPassword})
	}
	key := []byte(n.LinkKey)
	if len(key) == 0 && rt.SQLite != nil {
		var err error
		if key, err = devLinkKey(filepath.Join(rt.Config.DataDir, "link.key"), rt.Logger); err != nil {
			return nil, err
		}
	}
	if n.BaseURL != "" {
		baseURL = n.BaseURL
	}
	return notify.NewWorker(rt.Store, notify.Options{Channels: chans, LinkKey: key, BaseURL: baseURL,
		LinkTTL: n.LinkTTL, MaxAttempts: n.MaxAttempts, Backoff: n.Backoff, Logger: rt.Logger, Secrets: rt.Secrets}), nil
}

// MinLinkKey is the fewest characters DATA/link.key must hold: keel dev
// writes 64 hex characters (32 random bytes); a key shorter than 32
// would make approval links guessable.
const MinLinkKey = 32

// devLinkKey reads the key at path, or makes it when there is none. The
// file is written whole before it appears (a temporary file linked into
// place), so another process never reads a half-made key. A file that
// holds nothing — a crash of an older keel dev while it wrote it — is
// replaced by a new key, and log says so: no link was ever made from an
// empty key. A file that holds a key shorter than MinLinkKey is refused
// with an error naming the file, not replaced: links sent with it would
// stop working silently.
func devLinkKey(path string, log *slog.Logger) ([]byte, error) {
	key, err := readLinkKey(path)
	switch {
	case err == nil && len(key) > 0:
		return key, nil
	case err == nil: // there, but empty
		key := newLinkKey()
		if err := writeLinkKey(path, key, true); err != nil {
			return nil, err
		}
		log.Warn("link key file was empty (a crash while it was written?): made a new key", "path", path)
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	key = newLinkKey()
	err = writeLinkKey(path, key, false)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it between the read and the link; it was
		// written whole before it appeared.
		if key, err = readLinkKey(path); err == nil && len(key) == 0 {
			err = fmt.Errorf("compose: link key: %s is empty", path)
		}
	}
	if err != nil {
		return nil, err
	}
	return key, nil
}

// readLinkKey reads the key at path: nil when the file holds nothing but
// white space, an error naming the file when it holds a key shorter than
// MinLinkKey.
func readLinkKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("compose: link key: %w", err)
	}
	k := strings.TrimSpace(string(b))
	if k != "" && len(k) < MinLinkKey {
		return nil, fmt.Errorf("compose: link key: %s holds %d characters; it must hold a key of at least %d "+
			"(keel dev writes 64 hex characters). Delete the file to have a new one made, or set KEEL_NOTIFY_LINK_KEY; "+
			"approval links sent before then stop working", path, len(k), MinLinkKey)
	}
	if k == "" {
		return nil, nil
	}
	return []byte(k), nil
}

// newLinkKey is 32 random bytes in hex.
func newLinkKey() []byte {
	var k [32]byte
	_, _ = rand.Read(k[:]) // crypto/rand.Read never fails on supported platforms
	return []byte(hex.EncodeToString(k[:]))
}

// writeLinkKey writes key to a temporary file beside path (owner-only),
// syncs it, and puts it in place whole: replacing path when replace, else
// only if path does not exist (fs.ErrExist otherwise).
func writeLinkKey(path string, key []byte, replace bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".link.key-*")
	if err != nil {
		return fmt.Errorf("compose: link key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a link (or a failure); a rename leaves nothing to remove
	_, werr := f.Write(append(key, '\n'))
	if err := errors.Join(werr, f.Chmod(0o600), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("compose: link key: %w", err)
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = os.Link(tmp, path)
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	if err != nil {
		return fmt.Errorf("compose: link key: %w", err)
	}
	return nil
}
