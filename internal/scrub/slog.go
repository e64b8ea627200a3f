package scrub

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a slog handler that masks every secret in a record's
// message and attributes (nested groups, errors and other values by their
// text) before h sees it. With no secrets it returns h.
func Handler(h slog.Handler, s Secrets) slog.Handler {
	if s.r == nil {
		return h
	}
	return handler{h: h, s: s}
}

type handler struct {
	h slog.Handler
	s Secrets
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return handler{h: h.h.WithAttrs(clean), s: h.s}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{h: h.h.WithGroup(name), s: h.s}
}

// attr masks one attribute; a value whose text holds no secret is kept
// as it is (its kind and its own formatting).
func (h handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = h.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindString:
		return slog.String(a.Key, h.s.String(v.String()))
	case slog.KindAny:
		text := fmt.Sprint(v.Any())
		if h.s.Contains(text) {
			return slog.String(a.Key, h.s.String(text))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
