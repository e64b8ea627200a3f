package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/agentver"
	"github.com/keelrun/keel/internal/kernel/run"
)

func TestRunVersion(t *testing.T) {
	h, st, arts := newAPI(t, 0)
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()
	d := agentver.Definition{Agent: "research", Model: "scripted:x", Build: "b", Version: strings.Repeat("c", 64)}
	if err := agentver.Save(ctx, arts, d); err != nil {
		t.Fatal(err)
	}
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: run.NewID("ses"), Owner: "me", Agent: "research",
		Request: "x", InputPolicy: run.InputQueue, Limits: run.DefaultLimits(), AgentVersion: d.Version})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv.URL)
	got, err := c.RunVersion(ctx, r.ID)
	if err != nil || got.RunID != r.ID || got.Status != run.StatusCreated || got.RecordsVersion != d.Version ||
		got.Definition == nil || got.Definition.Model != "scripted:x" || got.Open == nil {
		t.Fatalf("RunVersion = %+v, %v", got, err)
	}
	if _, err := c.RunVersion(ctx, "run_nosuch"); err == nil || !strings.Contains(err.Error(), "run not found") || client.StatusOf(err) != http.StatusNotFound {
		t.Fatalf("unknown run: %v", err)
	}
}
