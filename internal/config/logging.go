package config

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/keelrun/keel/internal/scrub"
)

// Logger returns the process's logger at LogLevel: JSON for the AWS roles
// (Lambda's JSON log format and CloudWatch parse it), text otherwise;
// every configured secret (Secrets) is masked in what it writes.
func (c Config) Logger(w interface{ Write([]byte) (int, error) }) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.Role != "" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(scrub.Handler(h, c.Secrets()))
}

func logLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("KEEL_LOG_LEVEL %q: want debug, info, warn or error", s)
}
