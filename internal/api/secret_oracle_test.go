package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/scrub"
)

// TestSecretGuessesRefused: a run input of 12,000 guesses (as many as the
// input bound holds at this length), one of them a
// configured secret (as it is, or spelled with \u escapes), is refused
// with 400 secret_in_request naming the field, and the answer does not say
// which guess matched; nothing is stored. Masking it in the echo answered
// every guess at once. Guesses in a query value that an error echoes are
// refused too. An input without a secret is echoed as sent.
func TestSecretGuessesRefused(t *testing.T) {
	const secret = "sk-canary-9d41be77"
	e := newEnv(t, nil)
	h, err := api.New(api.Deps{Store: e.store, Starter: e.starter, Resumer: e.resumer,
		Auth: api.Tokens{aliceToken: "alice"}, Agents: api.AgentSet{"echo": {}}, Secrets: scrub.New(secret)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(body string) (int, string) { return send("POST", "/v1/runs", body) }
	guesses := make([]string, 12_000)
	for i := range guesses {
		guesses[i] = fmt.Sprintf("sk-canary-%08x", i)
	}
	guesses[7_331] = secret
	input, _ := json.Marshal(strings.Join(guesses, " "))
	escaped := `"try \u0073k-canary-9d41be77 please"`
	for name, in := range map[string]string{"guesses": string(input), "escaped": escaped} {
		code, body := post(`{"agent":"echo","input":` + in + `}`)
		var eb api.ErrorBody
		if err := json.Unmarshal([]byte(body), &eb); err != nil || code != http.StatusBadRequest || eb.Error == nil ||
			eb.Error.Code != api.CodeSecretInRequest || eb.Error.Field != "input" {
			t.Fatalf("%s: %d %.300s", name, code, body)
		}
		if strings.Contains(body, scrub.Mask) || strings.Contains(body, "sk-canary") {
			t.Fatalf("%s: the refusal tells which guess matched: %.300s", name, body)
		}
	}
	// A query value an error would echo ("unknown status ...") is refused
	// the same way.
	code, body := send("GET", "/v1/runs?limit=5&status="+url.QueryEscape(strings.Join(guesses[7_000:7_400], " ")), "")
	if code != http.StatusBadRequest || !strings.Contains(body, `"secret_in_request"`) || !strings.Contains(body, `"field":"status"`) ||
		strings.Contains(body, scrub.Mask) || strings.Contains(body, "sk-canary") {
		t.Fatalf("guesses in a query: %d %.300s", code, body)
	}
	page, err := e.store.ListRuns(t.Context(), store.ListRunsQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("stored runs %d, %v", len(page.Runs), err)
	}
	if code, body := post(`{"agent":"echo","input":"sk-canary-00000001 is not it"}`); code != http.StatusCreated ||
		!strings.Contains(body, "sk-canary-00000001 is not it") {
		t.Fatalf("an input without a secret: %d %.300s", code, body)
	}
}
