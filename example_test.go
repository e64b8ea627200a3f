package keel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/keelrun/keel"
)

// httpAPI calls a Keel API with its bearer token.
type httpAPI struct{ url, token string }

func (a httpAPI) call(method, path, body string) map[string]any {
	req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	time.Sleep(10 * time.Millisecond) // polling pace
	return out
}

// Arguments are Go structs; the JSON Schema the model sees is reflected
// from them.
type lookupArgs struct {
	City string `json:"city" jsonschema:"description=City name,minLength=1"`
}

type forecast struct {
	City string `json:"city"`
	Sky  string `json:"sky"`
}

type bookArgs struct {
	Room  string `json:"room" jsonschema:"enum=blue,enum=green"`
	Hours int    `json:"hours" jsonschema:"minimum=1,maximum=8"`
}

// rooms stands for the destination of an effect: a booking service that
// takes an idempotency key and can be asked by it.
type rooms struct{ booked map[string]string }

func (r *rooms) book(_ context.Context, opID string, a bookArgs) (keel.Outcome, error) {
	if _, dup := r.booked[opID]; !dup {
		r.booked[opID] = a.Room
	}
	return keel.Outcome{ExternalID: "booking-" + a.Room}, nil
}

func (r *rooms) find(_ context.Context, opID string) (keel.Outcome, bool, error) {
	room, ok := r.booked[opID]
	return keel.Outcome{ExternalID: "booking-" + room}, ok, nil
}

// An agent with a read-only tool and an effect. In a program, main calls
// keel.Main(agent); here the embedded runtime runs it, and a person's
// approval of the exact booking is given through the API.
func Example() {
	dest := &rooms{booked: map[string]string{}}
	agent := keel.Agent{
		Name:         "planner",
		Instructions: "Check the weather, then book a room.",
		// A deterministic model for the example; in production e.g.
		// keel.ModelSpec("anthropic:claude-sonnet-4-5").
		Model: keel.ScriptedModel([]byte(`{"turns": [
			{"tool_calls": [{"name": "weather", "args": {"city": "Lyon"}}]},
			{"tool_calls": [{"name": "book_room", "args": {"room": "blue", "hours": 2}}]}],
			"final": "Booked the blue room."}`)),
		Tools: []keel.Tool{
			keel.ReadOnly("weather", "Today's sky in a city.", func(ctx context.Context, a lookupArgs) (forecast, error) {
				return forecast{City: a.City, Sky: "clear"}, nil
			}),
			keel.Effect("book_room", "Book a meeting room.", keel.EffectSpec[bookArgs]{
				Dispatch: dest.book,
				Lookup:   dest.find,
				Promises: keel.IdempotentByKey | keel.LookupByKey,
			}),
		},
		Limits: keel.Limits{MaxSteps: 20},
	}

	dir, _ := os.MkdirTemp("", "keel-example-*")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	dev, err := keel.Dev(ctx, keel.DevOptions{DataDir: dir}, agent)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	// The HTTP API, as `keel run` and `keel approve` use it.
	api := httpAPI{url: dev.URL, token: dev.Token}
	id := api.call("POST", "/v1/runs", `{"agent": "planner", "input": "Plan my meeting"}`)["run_id"].(string)
	var ap map[string]any
	for ap == nil {
		if aps := api.call("GET", "/v1/runs/"+id+"/approvals", "")["approvals"].([]any); len(aps) > 0 {
			ap = aps[0].(map[string]any)
		}
	}
	args, _ := json.Marshal(ap["args"])
	fmt.Println("approval asked for:", ap["tool"], string(args))
	api.call("POST", "/v1/runs/"+id+"/approvals/"+ap["approval_id"].(string),
		fmt.Sprintf(`{"decision": "approve", "args_hash": %q}`, ap["args_hash"]))
	r := api.call("GET", "/v1/runs/"+id, "")
	for r["status"] != "completed" && r["status"] != "failed" {
		r = api.call("GET", "/v1/runs/"+id, "")
	}
	fmt.Println(r["status"].(string)+":", r["output"], "bookings:", len(dest.booked))
	// Output:
	// approval asked for: book_room {"hours":2,"room":"blue"}
	// completed: Booked the blue room. bookings: 1
}

// A tool's arguments that are not a struct, or an effect that declares a
// lookup it does not have, are reported before anything starts.
func ExampleEffect_promises() {
	bad := keel.Effect("charge", "Charge a card.", keel.EffectSpec[bookArgs]{
		Dispatch: func(context.Context, string, bookArgs) (keel.Outcome, error) { return keel.Outcome{}, nil },
		Promises: keel.LookupByKey, // but no Lookup
	})
	_, err := keel.Dev(context.Background(), keel.DevOptions{DataDir: os.TempDir()}, keel.Agent{Name: "billing", Tools: []keel.Tool{bad}})
	fmt.Println(strings.TrimPrefix(err.Error(), "keel: "))
	// Output:
	// agent "billing": effect "charge": promises include LookupByKey but Lookup is nil
}

// A Dispatch refuses what the destination definitely refused; a test of it
// checks that with IsRejected.
func ExampleReject() {
	dispatch := func(_ context.Context, _ string, a bookArgs) (keel.Outcome, error) {
		if a.Hours > 4 {
			return keel.Outcome{}, keel.Reject("room %s: at most 4 hours, not %d", a.Room, a.Hours)
		}
		return keel.Outcome{ExternalID: "b-1"}, nil
	}
	_, err := dispatch(context.Background(), "op_1", bookArgs{Room: "blue", Hours: 6})
	fmt.Println(keel.IsRejected(err), err)
	// Output:
	// true destination rejected the operation: room blue: at most 4 hours, not 6
}

// A program whose agent needs configuration of its own reads it inside
// MainFunc's function: `shop run`, `shop approve` and the other client
// commands then work in a shell without SHOP_DB_URL, and `shop dev`
// without it exits 2 naming the variable. (An example with no output
// comment is compiled, never run: MainFunc would exit.)
func ExampleMainFunc() {
	keel.MainFunc(func() ([]keel.Agent, error) {
		db := os.Getenv("SHOP_DB_URL")
		if db == "" {
			return nil, fmt.Errorf("SHOP_DB_URL is not set (the order database)")
		}
		return []keel.Agent{{Name: "shop", Instructions: "Answer questions about orders in " + db}}, nil
	})
}
