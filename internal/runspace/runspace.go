package runspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/keelrun/keel/internal/kernel/workspace"
	"github.com/keelrun/keel/internal/sandbox"
)

// Config builds a Manager: one per agent with a workspace.
type Config struct {
	// Root holds the runs' trees on this worker (see the package doc).
	Root string
	// Artifacts keeps the versions: manifests and blobs under each run's
	// prefix.
	Artifacts workspace.Artifacts
	// Limits bound each run's tree (zero fields: workspace.DefaultLimits).
	Limits workspace.Limits
	// Sandbox runs the agent's commands; nil: commands are refused, or
	// run by Remote.
	Sandbox *sandbox.Sandbox
	// Remote, when set and Sandbox is nil, runs the commands away from
	// this worker (on AWS: the command runner function, remote.go).
	Remote Remote
	// Policy bounds each command (zero fields: sandbox.DefaultPolicy).
	Policy sandbox.Policy
	// Started, when set, is called right after each command's process
	// started (the in_command fault point).
	Started func()
}

// ErrNoSandbox is returned by Exec when the agent has no sandbox.
var ErrNoSandbox = errors.New("runspace: this agent runs no commands (no sandbox configured)")

// Manager opens runs' trees on this worker. It is safe for concurrent use;
// one run's tree is used by one Step at a time (the run's lease).
type Manager struct {
	cfg Config
	ver *workspace.Versioner

	mu        sync.Mutex
	manifests map[string]*workspace.Manifest // by version string, the last few read or written
}

// New makes Root (0711) and returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Root == "" || cfg.Artifacts == nil {
		return nil, errors.New("runspace: Root and Artifacts are required")
	}
	if err := os.MkdirAll(cfg.Root, 0o711); err != nil {
		return nil, fmt.Errorf("runspace: %w", err)
	}
	if err := os.Chmod(cfg.Root, 0o711); err != nil {
		return nil, fmt.Errorf("runspace: %w", err)
	}
	return &Manager{cfg: cfg, ver: workspace.NewVersioner(cfg.Artifacts, cfg.Limits), manifests: map[string]*workspace.Manifest{}}, nil
}

// Sandbox reports the isolation commands get, for doctor; ok is false when
// the agent runs no commands.
func (m *Manager) Sandbox() (iso sandbox.Isolation, ok bool) {
	if m.cfg.Sandbox == nil && m.cfg.Remote != nil {
		return m.cfg.Remote.Isolation(), true
	}
	if m.cfg.Sandbox == nil {
		return sandbox.Isolation{}, false
	}
	return m.cfg.Sandbox.Isolation(), true
}

// Policy is the bound of each command.
func (m *Manager) Policy() sandbox.Policy { return m.cfg.Policy }

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Open returns runID's tree as of version ("" is the empty tree of a run
// that never had files), restoring it on this worker unless the copy here
// is known to be exactly that version.
func (m *Manager) Open(ctx context.Context, runID, version string) (*Tree, error) {
	if !runIDPattern.MatchString(runID) {
		return nil, fmt.Errorf("runspace: run id %q cannot name a directory", runID)
	}
	t := &Tree{m: m, run: runID, dir: filepath.Join(m.cfg.Root, runID), marker: filepath.Join(m.cfg.Root, runID+".version"), version: version}
	if b, err := os.ReadFile(t.marker); err == nil && string(b) == markerOf(version) {
		if fi, err := os.Stat(t.dir); err == nil && fi.IsDir() {
			return t, nil
		}
	}
	if err := t.restore(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// markerOf is what the marker holds for version: never empty, so an empty
// file left by a crash mid-write matches nothing.
func markerOf(version string) string { return "version " + version + "\n" }

func (m *Manager) remember(version string, mf *workspace.Manifest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.manifests) >= 256 {
		clear(m.manifests)
	}
	m.manifests[version] = mf
}

// manifest is version's manifest, read from the store unless remembered.
func (m *Manager) manifest(ctx context.Context, version string) (*workspace.Manifest, error) {
	if version == "" {
		return nil, nil
	}
	m.mu.Lock()
	mf, ok := m.manifests[version]
	m.mu.Unlock()
	if ok {
		return mf, nil
	}
	v, err := workspace.ParseVersion(version)
	if err != nil {
		return nil, err
	}
	if mf, err = m.ver.Manifest(ctx, v); err != nil {
		return nil, err
	}
	m.remember(version, mf)
	return mf, nil
}
