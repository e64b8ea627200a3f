package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// ErrUnauthenticated is returned by the authenticators of this package when
// a request carries no valid credentials.
var ErrUnauthenticated = errors.New("unauthenticated")

// Tokens is an [Authenticator] for bearer tokens (`keel dev`): it maps each
// token to its principal. Comparison takes the same time whichever token
// matches, or none.
type Tokens map[string]string

// Principal returns the principal of the request's bearer token.
func (t Tokens) Principal(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", ErrUnauthenticated
	}
	tok = strings.TrimSpace(tok)
	found := ""
	for k, p := range t {
		if subtle.ConstantTimeCompare([]byte(k), []byte(tok)) == 1 {
			found = p
		}
	}
	if found == "" {
		return "", ErrUnauthenticated
	}
	return found, nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying an already authenticated principal.
// The API Gateway adapter (functions/api) puts the authorizer's principal
// there; [ContextPrincipal] reads it back.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// ContextPrincipal is an [Authenticator] that trusts the principal placed in
// the request's context by [WithPrincipal]: use it only behind a gateway
// that has authenticated the caller.
type ContextPrincipal struct{}

// Principal returns the principal from the request's context.
func (ContextPrincipal) Principal(r *http.Request) (string, error) {
	p, _ := r.Context().Value(principalKey{}).(string)
	if p == "" {
		return "", ErrUnauthenticated
	}
	return p, nil
}
