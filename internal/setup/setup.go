// Package setup turns configuration (environment variables) into the
// runtime's parts: the store, the artifact store, the agents and the
// harness. Every entrypoint — `keel dev`, `keel task`, the Lambda functions
// and the Fargate task — builds its parts here, so they agree on what a
// variable means.
//
// Variables (all optional unless noted):
//
//	KEEL_STORE          sqlite:PATH (default sqlite:.keel/keel.db) | dynamo:TABLE
//	KEEL_ARTIFACTS      fs:DIR (default fs:.keel/artifacts) | s3:BUCKET
//	KEEL_MODEL          scripted (the research script, default) | scripted:PATH |
//	                    anthropic:MODEL | openai:MODEL | bedrock:MODEL_ID
//	KEEL_PUBLISH        where the research agent publishes: dir:PATH (default
//	                    dir:.keel/published) | an http(s) URL of a publication server
//	KEEL_PUBLISH_CONTRACT  full (default) | idempotent | lookup | none: what the
//	                    HTTP destination promises
//	KEEL_SPILL_TOOLS    comma-separated tools that run in the long-running task
//	                    (e.g. analyze_documents)
//	KEEL_OWNER          this worker's name in leases (default host/pid)
//	KEEL_PUBLISH_TIMEOUT  HTTP timeout of a publication request (default 30s)
//	KEEL_TOOL_DELAY     tool=duration: hold that read-only tool before it runs
//	                    (for cancellation and crash tests of in-flight calls)
package setup

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/examples/research"
	"github.com/keelrun/keel/internal/artifact"
	artfs "github.com/keelrun/keel/internal/artifact/fs"
	"github.com/keelrun/keel/internal/harness"
	"github.com/keelrun/keel/internal/model"
	"github.com/keelrun/keel/internal/model/scripted"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/store/sqlite"
	"github.com/keelrun/keel/internal/tool"
)

// Config is the parsed configuration.
type Config struct {
	Store           string
	Artifacts       string
	Model           string
	Publish         string
	PublishContract string
	SpillTools      []string
	Owner           string
	PublishTimeout  time.Duration
	ToolDelay       map[string]time.Duration
}

// FromEnv reads the KEEL_* variables through getenv, with defaults under
// dataDir (".keel" when empty).
func FromEnv(getenv func(string) string, dataDir string) (Config, error) {
	if dataDir == "" {
		dataDir = ".keel"
	}
	get := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	host, _ := os.Hostname()
	c := Config{
		Store:           get("KEEL_STORE", "sqlite:"+filepath.Join(dataDir, "keel.db")),
		Artifacts:       get("KEEL_ARTIFACTS", "fs:"+filepath.Join(dataDir, "artifacts")),
		Model:           get("KEEL_MODEL", "scripted"),
		Publish:         get("KEEL_PUBLISH", "dir:"+filepath.Join(dataDir, "published")),
		PublishContract: get("KEEL_PUBLISH_CONTRACT", "full"),
		Owner:           get("KEEL_OWNER", fmt.Sprintf("%s/%d", host, os.Getpid())),
	}
	if s := getenv("KEEL_PUBLISH_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("KEEL_PUBLISH_TIMEOUT %q: want a positive duration such as 30s", s)
		}
		c.PublishTimeout = d
	}
	if s := getenv("KEEL_TOOL_DELAY"); s != "" {
		c.ToolDelay = map[string]time.Duration{}
		for _, kv := range strings.Split(s, ",") {
			name, ds, ok := strings.Cut(strings.TrimSpace(kv), "=")
			d, err := time.ParseDuration(ds)
			if !ok || name == "" || err != nil || d < 0 {
				return c, fmt.Errorf("KEEL_TOOL_DELAY %q: want tool=duration[,tool=duration]", s)
			}
			c.ToolDelay[name] = d
		}
	}
	if s := getenv("KEEL_SPILL_TOOLS"); s != "" {
		for _, t := range strings.Split(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				c.SpillTools = append(c.SpillTools, t)
			}
		}
	}
	return c, c.Validate()
}

// Validate names the variable at fault.
func (c Config) Validate() error {
	kind := func(v string) string { k, _, _ := strings.Cut(v, ":"); return k }
	switch kind(c.Store) {
	case "sqlite", "dynamo":
	default:
		return fmt.Errorf("KEEL_STORE %q: want sqlite:PATH or dynamo:TABLE", c.Store)
	}
	switch kind(c.Artifacts) {
	case "fs", "s3":
	default:
		return fmt.Errorf("KEEL_ARTIFACTS %q: want fs:DIR or s3:BUCKET", c.Artifacts)
	}
	if !strings.HasPrefix(c.Publish, "dir:") && !strings.HasPrefix(c.Publish, "http://") && !strings.HasPrefix(c.Publish, "https://") {
		return fmt.Errorf("KEEL_PUBLISH %q: want dir:PATH or an http(s) URL", c.Publish)
	}
	switch c.PublishContract {
	case "full", "idempotent", "lookup", "none":
	default:
		return fmt.Errorf("KEEL_PUBLISH_CONTRACT %q: want full, idempotent, lookup or none", c.PublishContract)
	}
	return nil
}

// Backends builds what the configuration names: AWS backends (dynamo, s3)
// come from the AWS hook so this package compiles the embedded default
// without the AWS SDK at its core.
type Backends struct {
	// AWSStore and AWSArtifacts open the dynamo and s3 kinds; nil makes
	// those kinds an error.
	AWSStore     func(ctx context.Context, table string, arts artifact.Store) (store.Store, error)
	AWSArtifacts func(ctx context.Context, bucket string) (artifact.Store, error)
	// NewModel builds a provider model from a spec such as
	// "anthropic:claude-sonnet-4-5"; nil allows only the scripted model.
	NewModel func(ctx context.Context, spec string) (model.Model, error)
	// WrapScripted wraps the scripted streamer; nil puts it behind the
	// same transport as the real providers (whole-call retry, idle
	// timeout, 429 handling), so scripted faults meet the real rules.
	WrapScripted func(s model.Streamer) model.Model
	// Clock for the store; nil is time.Now.
	SQLiteOptions sqlite.Options
	// Faults, when set, are hit inside every model stream (in_model_stream,
	// after its first chunk).
	Faults harness.FaultPoints
}

// Parts are the opened runtime parts.
type Parts struct {
	Store     store.Store
	SQLite    *sqlite.Store // set when the store is SQLite
	Artifacts artifact.Store
	Agents    harness.AgentMap
	Publisher research.Publisher
}

// Close releases the store.
func (p *Parts) Close() error {
	if p.Store != nil {
		return p.Store.Close()
	}
	return nil
}

// Open opens the store and artifact store and builds the research agent.
func (c Config) Open(ctx context.Context, b Backends) (*Parts, error) {
	p := &Parts{}
	kind, arg, _ := strings.Cut(c.Artifacts, ":")
	var err error
	switch kind {
	case "fs":
		p.Artifacts, err = artfs.New(arg)
	case "s3":
		if b.AWSArtifacts == nil {
			return nil, fmt.Errorf("KEEL_ARTIFACTS %q: s3 is not available in this binary", c.Artifacts)
		}
		p.Artifacts, err = b.AWSArtifacts(ctx, arg)
	}
	if err != nil {
		return nil, fmt.Errorf("KEEL_ARTIFACTS %q: %w", c.Artifacts, err)
	}
	kind, arg, _ = strings.Cut(c.Store, ":")
	switch kind {
	case "sqlite":
		if err := os.MkdirAll(filepath.Dir(arg), 0o755); err != nil {
			return nil, fmt.Errorf("KEEL_STORE %q: %w", c.Store, err)
		}
		p.SQLite, err = sqlite.Open(ctx, arg, b.SQLiteOptions)
		p.Store = p.SQLite
	case "dynamo":
		if b.AWSStore == nil {
			return nil, fmt.Errorf("KEEL_STORE %q: dynamo is not available in this binary", c.Store)
		}
		p.Store, err = b.AWSStore(ctx, arg, p.Artifacts)
	}
	if err != nil {
		return nil, fmt.Errorf("KEEL_STORE %q: %w", c.Store, err)
	}
	p.Publisher = c.publisher()
	m, err := c.model(ctx, b)
	if err != nil {
		p.Close()
		return nil, err
	}
	agent, err := research.NewAgent(m, nil, p.Artifacts, p.Publisher)
	if err != nil {
		p.Close()
		return nil, err
	}
	if len(c.SpillTools) > 0 || len(c.ToolDelay) > 0 {
		if agent.Tools, err = wrapTools(agent.Tools, c.SpillTools, c.ToolDelay); err != nil {
			p.Close()
			return nil, err
		}
	}
	p.Agents = harness.AgentMap{research.AgentName: agent}
	return p, nil
}

func (c Config) publisher() research.Publisher {
	if dir, ok := strings.CutPrefix(c.Publish, "dir:"); ok {
		return research.DirPublisher{Dir: dir}
	}
	h := research.HTTPPublisher{Base: c.Publish}
	if c.PublishTimeout > 0 {
		h.Client = &http.Client{Timeout: c.PublishTimeout}
	}
	switch c.PublishContract {
	case "idempotent":
		h.NoLookup = true
	case "lookup":
		h.NotIdempotent = true
	case "none":
		h.NoLookup, h.NotIdempotent = true, true
	}
	return h
}

func (c Config) model(ctx context.Context, b Backends) (model.Model, error) {
	base := b.WrapScripted
	if base == nil {
		base = func(s model.Streamer) model.Model {
			return model.NewTransport(s, model.TransportOptions{Provider: "scripted", Model: "scripted"})
		}
	}
	wrap := base
	if b.Faults != nil {
		wrap = func(s model.Streamer) model.Model { return base(faultStreamer{s: s, faults: b.Faults}) }
	}
	switch {
	case c.Model == "scripted":
		m, err := scripted.Parse(research.Script)
		if err != nil {
			return nil, err
		}
		return wrap(m), nil
	case strings.HasPrefix(c.Model, "scripted:"):
		m, err := scripted.Load(strings.TrimPrefix(c.Model, "scripted:"))
		if err != nil {
			return nil, fmt.Errorf("KEEL_MODEL %q: %w", c.Model, err)
		}
		return wrap(m), nil
	}
	if b.NewModel == nil {
		return nil, fmt.Errorf("KEEL_MODEL %q: only scripted models are available in this binary", c.Model)
	}
	m, err := b.NewModel(ctx, c.Model)
	if err != nil {
		return nil, fmt.Errorf("KEEL_MODEL %q: %w", c.Model, err)
	}
	return m, nil
}

// long marks a tool as one to run in the long-running task.
type long struct{ tool.Tool }

func (l long) Info() tool.Info { i := l.Tool.Info(); i.Long = true; return i }

type longEffect struct{ tool.Effectful }

func (l longEffect) Info() tool.Info { i := l.Effectful.Info(); i.Long = true; return i }

// delayed holds a read-only tool before it runs, honouring cancellation.
type delayed struct {
	tool.Tool
	d time.Duration
}

func (t delayed) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	select {
	case <-time.After(t.d):
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	return t.Tool.Run(ctx, c)
}

func wrapTools(reg *tool.Registry, spill []string, delay map[string]time.Duration) (*tool.Registry, error) {
	want := map[string]bool{}
	for _, n := range spill {
		if _, ok := reg.Get(n); !ok {
			return nil, fmt.Errorf("KEEL_SPILL_TOOLS: unknown tool %q (known: %s)", n, strings.Join(reg.Names(), ", "))
		}
		want[n] = true
	}
	for n := range delay {
		t, ok := reg.Get(n)
		if !ok {
			return nil, fmt.Errorf("KEEL_TOOL_DELAY: unknown tool %q (known: %s)", n, strings.Join(reg.Names(), ", "))
		}
		if isEffect(t) {
			return nil, fmt.Errorf("KEEL_TOOL_DELAY: %q has an external effect; only read-only tools can be delayed", n)
		}
	}
	var tools []tool.Tool
	for _, n := range reg.Names() {
		t, _ := reg.Get(n)
		if d, ok := delay[n]; ok {
			t = delayed{Tool: t, d: d}
		}
		switch {
		case !want[n]:
		case isEffect(t):
			t = longEffect{t.(tool.Effectful)}
		default:
			t = long{t}
		}
		tools = append(tools, t)
	}
	return tool.NewRegistry(tools...)
}

func isEffect(t tool.Tool) bool { _, ok := t.(tool.Effectful); return ok }

// faultStreamer hits the in_model_stream fault point after the first chunk
// of every stream: a process killed there dies with a model answer half
// received.
type faultStreamer struct {
	s      model.Streamer
	faults harness.FaultPoints
}

func (f faultStreamer) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	st, err := f.s.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &faultStream{Stream: st, faults: f.faults}, nil
}

type faultStream struct {
	model.Stream
	faults harness.FaultPoints
	n      int
}

func (f *faultStream) Next() (model.Chunk, error) {
	c, err := f.Stream.Next()
	f.n++
	if f.n == 2 {
		f.faults.Hit(harness.FaultInModelStream)
	}
	return c, err
}
