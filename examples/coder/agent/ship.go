package agent

import (
	"context"
	"fmt"

	"github.com/keelrun/keel"
)

// ShipArgs are ship_release's arguments, all of them bound by the
// approval: the person approves this file content in this workspace
// version, not a path.
type ShipArgs struct {
	Path             string `json:"path"`
	SHA256           string `json:"sha256"`
	WorkspaceVersion string `json:"workspace_version"`
}

// shipRelease ships a workspace file to dest. Prepare and Dispatch both
// check that the file still has the approved hash and that the workspace
// is still the approved version: a tree changed between the approval and
// the dispatch (or restored to another version) ships nothing.
func shipRelease(dest Destination) keel.Tool {
	return keel.Effect("ship_release", "ship a release file of the workspace (needs approval)", keel.EffectSpec[ShipArgs]{
		Prepare: func(ctx context.Context, a ShipArgs) (string, error) {
			if _, err := approvedContent(ctx, a); err != nil {
				return "", err
			}
			return a.SHA256, nil
		},
		Dispatch: func(ctx context.Context, opID string, a ShipArgs) (keel.Outcome, error) {
			b, err := approvedContent(ctx, a)
			if err != nil {
				return keel.Outcome{}, err
			}
			return dest.Ship(opID, b)
		},
		Lookup:      func(_ context.Context, opID string) (keel.Outcome, bool, error) { return dest.Find(opID) },
		Count:       func(_ context.Context, opID string) (int, error) { return dest.CountOf(opID) },
		Promises:    keel.IdempotentByKey | keel.LookupByKey,
		Destination: "dir:" + dest.Dir,
	})
}

// approvedContent is the file's content if it and the workspace are the
// approved ones; else a rejection naming what differs.
func approvedContent(ctx context.Context, a ShipArgs) ([]byte, error) {
	w, err := keel.RunWorkspace(ctx)
	if err != nil {
		return nil, err
	}
	if v := w.Version(); v != a.WorkspaceVersion {
		return nil, keel.Reject("the workspace is at %s, not the approved %s", v, a.WorkspaceVersion)
	}
	b, err := w.ReadFile(a.Path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", a.Path, err)
	}
	if got := sha256Hex(b); got != a.SHA256 {
		return nil, keel.Reject("%s is %s, not the approved %s", a.Path, got, a.SHA256)
	}
	return b, nil
}
