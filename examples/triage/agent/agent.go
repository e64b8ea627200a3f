package agent

import (
	_ "embed"
	"fmt"
	"net/http"
	"time"

	"github.com/keelrun/keel"
	"github.com/keelrun/keel/examples/triage/tickets"
)

// Name is the name runs use for this agent: keel run triage "...".
const Name = "triage"

// Instructions is the triage agent's system prompt.
const Instructions = `You triage support tickets. Look up the ticket and similar open tickets,
read the customer's profile, then answer the customer and set the ticket's status
(open, pending or solved) with update_ticket. Be brief and concrete.`

// Script plays a whole triage deterministically: search_tickets →
// read_customer → update_ticket → final answer.
//
//go:embed script.json
var Script []byte

// The environment variables ConfigFromEnv reads.
const (
	EnvTicketsURL   = "TRIAGE_TICKETS_URL"
	EnvTicketsToken = "TRIAGE_TICKETS_TOKEN"
)

// Config is the triage agent's configuration.
type Config struct {
	// TicketsURL is the ticket service's base URL (TRIAGE_TICKETS_URL).
	TicketsURL string
	// TicketsToken is its bearer token (TRIAGE_TICKETS_TOKEN).
	TicketsToken string
	// HTTPClient calls the service; nil means a client with a 30 s timeout.
	HTTPClient *http.Client
	// Model answers the agent; nil means the scripted triage, [Script].
	// KEEL_MODEL, when set, replaces either.
	Model keel.Model
}

// ConfigFromEnv reads TRIAGE_TICKETS_URL and TRIAGE_TICKETS_TOKEN through
// getenv; both are required. Errors name the variable and never quote the
// token.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{TicketsURL: getenv(EnvTicketsURL), TicketsToken: getenv(EnvTicketsToken)}
	switch {
	case c.TicketsURL == "":
		return c, fmt.Errorf("%s is not set: the ticket service's URL, e.g. http://127.0.0.1:8181", EnvTicketsURL)
	case c.TicketsToken == "":
		return c, fmt.Errorf("%s is not set: the ticket service's API token", EnvTicketsToken)
	}
	if _, err := c.client(); err != nil {
		return c, err
	}
	return c, nil
}

func (c Config) client() (*tickets.Client, error) {
	if c.TicketsToken == "" {
		return nil, fmt.Errorf("%s is empty: the ticket service's API token", EnvTicketsToken)
	}
	cl, err := tickets.NewClient(c.TicketsURL, c.TicketsToken, c.HTTPClient)
	if err != nil {
		// The token is set, so the URL is what NewClient refused.
		return nil, fmt.Errorf("%s %q: want an http(s) URL such as http://127.0.0.1:8181", EnvTicketsURL, c.TicketsURL)
	}
	return cl, nil
}

// Limits are the agent's default run limits: a triage is a handful of
// steps; a run's own limits override them.
var Limits = keel.Limits{
	MaxSteps:         20,
	MaxToolCalls:     10,
	MaxTokens:        200_000,
	MaxSpendMicroUSD: 1_000_000, // 1 USD
	// Long enough for a person to approve during a working day.
	Timeout: 24 * time.Hour,
}

// New builds the triage agent on the ticket service c names.
func New(c Config) (keel.Agent, error) {
	cl, err := c.client()
	if err != nil {
		return keel.Agent{}, err
	}
	m := c.Model
	if m == nil {
		m = keel.ScriptedModel(Script)
	}
	return keel.Agent{
		Name:         Name,
		Instructions: Instructions,
		Model:        m,
		Tools:        Tools(cl),
		Limits:       Limits,
		// A triage answers the ticket it was given: input sent while it
		// runs is refused rather than queued (start another run).
		InputPolicy:     keel.InputReject,
		MaxOutputTokens: 2048,
	}, nil
}
