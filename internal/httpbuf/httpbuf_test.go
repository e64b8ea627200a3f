package httpbuf

import (
	"net/http"
	"testing"
)

func TestResponse(t *testing.T) {
	cases := []struct {
		name       string
		handler    http.HandlerFunc
		wantStatus int
		wantBody   string
	}{
		{"nothing written", func(http.ResponseWriter, *http.Request) {}, 0, ""},
		{"a write is a 200", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hi")) }, 200, "hi"},
		{"the first status wins", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(404)
			w.WriteHeader(500)
			_, _ = w.Write([]byte("x"))
		}, 404, "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := New()
			tc.handler(r, nil)
			if r.Status != tc.wantStatus || r.Body.String() != tc.wantBody {
				t.Fatalf("status %d body %q, want %d %q", r.Status, r.Body.String(), tc.wantStatus, tc.wantBody)
			}
		})
	}
	var _ http.Flusher = New()
}
