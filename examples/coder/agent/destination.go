package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel"
)

// Destination is where releases are shipped: a directory outside every
// workspace, holding {dir}/{operation_id}.tar. Creation is exclusive (a
// hard link of a fully written temp file), so shipping again with the same
// operation id never makes a second release, and Find is a stat.
type Destination struct{ Dir string }

// Ship stores content as opID's release.
func (d Destination) Ship(opID string, content []byte) (keel.Outcome, error) {
	final, err := d.path(opID)
	if err != nil {
		return keel.Outcome{}, keel.Reject("%s", err.Error())
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return keel.Outcome{}, err
	}
	tmp, err := os.CreateTemp(d.Dir, ".tmp-*")
	if err != nil {
		return keel.Outcome{}, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(content)
	serr := tmp.Sync()
	if err := errors.Join(werr, serr, tmp.Close()); err != nil {
		return keel.Outcome{}, err
	}
	if err := os.Link(tmp.Name(), final); err != nil && !errors.Is(err, os.ErrExist) {
		return keel.Outcome{}, err
	}
	out, found, err := d.Find(opID)
	if err == nil && !found {
		err = fmt.Errorf("release %s vanished after shipping", opID)
	}
	return out, err
}

// Find looks opID's release up.
func (d Destination) Find(opID string) (keel.Outcome, bool, error) {
	p, err := d.path(opID)
	if err != nil {
		return keel.Outcome{}, false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return keel.Outcome{}, false, nil
	}
	if err != nil {
		return keel.Outcome{}, false, err
	}
	res, err := json.Marshal(map[string]any{"path": p, "sha256": sha256Hex(b), "size": len(b)})
	return keel.Outcome{ExternalID: opID, Result: res}, true, err
}

// CountOf is how many releases opID made here (0 or 1).
func (d Destination) CountOf(opID string) (int, error) {
	_, found, err := d.Find(opID)
	if found {
		return 1, err
	}
	return 0, err
}

// Releases lists the shipped releases' paths: the destination's own count.
func (d Destination) Releases() ([]string, error) {
	return filepath.Glob(filepath.Join(d.Dir, "*.tar"))
}

func (d Destination) path(opID string) (string, error) {
	if opID == "" || opID != filepath.Base(opID) || strings.HasPrefix(opID, ".") {
		return "", fmt.Errorf("bad operation id %q", opID)
	}
	return filepath.Join(d.Dir, opID+".tar"), nil
}
