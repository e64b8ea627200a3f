package awslocal

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/keelrun/keel/internal/aws/states"
)

// keelSFN is Keel's executor (internal/aws/states, what keel dev runs) as a
// stack's Step Functions: its API where the functions reach it
// (AWS_ENDPOINT_URL_SFN), its lambda:invoke through the target's Lambda Invoke —
// the same path the target's interpreter takes, so only the interpreter differs.
type keelSFN struct {
	url   string
	exec  *states.Executor
	store *states.Store
	srv   *http.Server
}

func startKeelSFN(ctx context.Context, w *World, name string) (*keelSFN, error) {
	store, err := states.OpenStore(ctx, filepath.Join(w.Dir, name+"-sfn.db"))
	if err != nil {
		return nil, err
	}
	k := &keelSFN{store: store}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	k.exec, err = states.New(states.Config{Store: store, Region: Region, Account: Account, Logger: log,
		Lambdas: map[string]states.LambdaFunc{}})
	if err != nil {
		store.Close()
		return nil, err
	}
	// The functions call this endpoint: it listens where their code runs.
	ln, err := w.Target.Listen()
	if err != nil {
		k.close()
		return nil, err
	}
	k.url = "http://" + ln.Addr().String()
	k.srv = &http.Server{Handler: states.NewHandler(k.exec, log)}
	go func() { _ = k.srv.Serve(ln) }()
	return k, nil
}

// register loads the definition with the template's substitutions (as
// keel dev loads run.asl.json), wires each function it names to moto's
// Lambda Invoke, and starts the executor.
func (k *keelSFN) register(ctx context.Context, name string, def []byte, subs map[string]string, s *Stack) error {
	m, err := states.Load(def, subs)
	if err != nil {
		return err
	}
	lambdas := map[string]states.LambdaFunc{}
	for _, f := range s.Functions {
		lambdas[f.ARN] = invokeThrough(s.world.Lambda, f.ARN)
	}
	// The executor was built before the functions existed (their
	// environment names its state machine); a second one on the same
	// store takes the map.
	k.exec.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A qualified name (the live alias's ARN, NAME:N a step returned)
	// goes to the target's Lambda as it is, which resolves it, as AWS
	// Step Functions passes it to Lambda.
	named := func(name string) (states.LambdaFunc, bool) {
		for _, f := range s.Functions {
			if qualifiedName(name) == f.Name {
				return invokeThrough(s.world.Lambda, name), true
			}
		}
		return nil, false
	}
	if k.exec, err = states.New(states.Config{Store: k.store, Region: Region, Account: Account, Logger: log, Lambdas: lambdas, LambdaNamed: named}); err != nil {
		return err
	}
	k.srv.Handler = states.NewHandler(k.exec, log)
	if _, err := k.exec.Register(ctx, name, m); err != nil {
		return err
	}
	return k.exec.Start(ctx)
}

// invokeThrough is a Lambda function as the Step Functions integration
// sees it: a function error is named by its payload's errorType (as
// aws-lambda-go reports it), a Lambda service error by Lambda.<code>.
func invokeThrough(l *LambdaAPI, arn string) states.LambdaFunc {
	return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		inv, err := l.Invoke(ctx, arn, payload)
		if err != nil {
			return nil, messages.InvokeResponse_Error{Type: "Lambda.SdkClientException", Message: err.Error()}
		}
		if inv.Status/100 != 2 {
			var e struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(inv.Payload, &e)
			if e.Type == "" {
				e.Type = "AWSLambdaException"
			}
			return nil, messages.InvokeResponse_Error{Type: "Lambda." + e.Type, Message: fmt.Sprintf("HTTP %d: %s", inv.Status, e.Message)}
		}
		if inv.FunctionError != "" {
			var e messages.InvokeResponse_Error
			if json.Unmarshal(inv.Payload, &e) != nil || e.Type == "" {
				e.Type = "Lambda.Unknown"
			}
			return nil, e
		}
		return inv.Payload, nil
	}
}

func (k *keelSFN) close() {
	if k.srv != nil {
		_ = k.srv.Close()
	}
	if k.exec != nil {
		k.exec.Close()
	}
	if k.store != nil {
		_ = k.store.Close()
	}
}

// qualifiedName is the function name of a qualified FunctionName
// (arn:…:function:NAME:Q or NAME:Q); "" for an unqualified one.
func qualifiedName(fn string) string {
	if parts := strings.Split(fn, ":"); strings.HasPrefix(fn, "arn:") && len(parts) == 8 {
		return parts[6]
	}
	if name, _, ok := strings.Cut(fn, ":"); ok && !strings.HasPrefix(fn, "arn:") {
		return name
	}
	return ""
}
