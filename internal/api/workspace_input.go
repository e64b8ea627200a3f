package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/workspace"
)

// workspacePath checks the path parameter of /workspace/files: relative,
// slash-separated, inside the tree. An absolute path or a backslash is
// refused rather than reinterpreted, so what a client asked for is what it
// gets or a 400 naming path.
func workspacePath(p string) (string, *Error) {
	if strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return "", badField(CodeInvalidField, "path", "path must be relative to the workspace's root, with / between names (empty: the root)")
	}
	c, err := workspace.CleanPath(p)
	if err != nil {
		return "", badField(CodeInvalidField, "path", "path must stay inside the workspace (no '..' above its root)")
	}
	return c, nil
}

// workspaceCheckpoint loads the run's checkpoint cpID and checks it has a
// workspace version. A 404 names the checkpoint, and says when the run
// has no workspace at all (its latest checkpoint has no version either:
// versions carry forward, so an earlier one cannot have one).
func (s *server) workspaceCheckpoint(w http.ResponseWriter, r *http.Request, rr run.Run, cpID string) (run.Checkpoint, bool) {
	unknown := &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "checkpoint",
		Message: "the run has no checkpoint with this id (keel checkpoints RUN_ID lists them)"}
	if !validID(cpID) {
		writeError(w, unknown)
		return run.Checkpoint{}, false
	}
	cp, err := s.store.GetCheckpoint(r.Context(), rr.ID, cpID)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, unknown)
		return run.Checkpoint{}, false
	}
	if err != nil {
		s.fail(w, r, "checkpoint", err)
		return run.Checkpoint{}, false
	}
	if cp.WorkspaceVersion != "" {
		return cp, true
	}
	latest := cp
	if rr.CheckpointID != "" && rr.CheckpointID != cp.ID {
		if latest, err = s.store.GetCheckpoint(r.Context(), rr.ID, rr.CheckpointID); err != nil {
			s.fail(w, r, "checkpoint", err)
			return run.Checkpoint{}, false
		}
	}
	if latest.WorkspaceVersion == "" {
		writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: "run " + rr.ID + " has no workspace: its agent has none, or no checkpoint has recorded one yet"})
	} else {
		writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "checkpoint",
			Message: "checkpoint " + cp.ID + " has no workspace version: the run's workspace starts at a later checkpoint"})
	}
	return run.Checkpoint{}, false
}

// safeFileName is name fit for Content-Disposition: letters, digits and
// ".-_" kept, anything else (quotes, controls, separators, non-ASCII a
// browser may render confusingly) replaced by "_"; never empty or a dot
// file name a browser would hide.
func safeFileName(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 120 {
			break
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if out == "" {
		return "file"
	}
	return out
}
