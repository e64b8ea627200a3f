package compose

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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
// still work after it.
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
		if key, err = devLinkKey(filepath.Join(rt.Config.DataDir, "link.key")); err != nil {
			return nil, err
		}
	}
	if n.BaseURL != "" {
		baseURL = n.BaseURL
	}
	return notify.NewWorker(rt.Store, notify.Options{Channels: chans, LinkKey: key, BaseURL: baseURL,
		LinkTTL: n.LinkTTL, MaxAttempts: n.MaxAttempts, Backoff: n.Backoff, Logger: rt.Logger, Secrets: rt.Secrets}), nil
}

// devLinkKey reads the key at path, or makes it.
func devLinkKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("compose: link key: %w", err)
	}
	var k [32]byte
	_, _ = rand.Read(k[:]) // crypto/rand.Read never fails on supported platforms
	key := hex.EncodeToString(k[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return devLinkKey(path) // another process made it first
	}
	if err != nil {
		return nil, fmt.Errorf("compose: link key: %w", err)
	}
	_, werr := f.WriteString(key + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return nil, fmt.Errorf("compose: link key: %w", err)
	}
	return []byte(key), nil
}
