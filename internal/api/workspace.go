package api

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/workspace"
)

// maxWorkspaceCheckpoints bounds the versions one listing reads: each costs
// a manifest read from the artifact store.
const maxWorkspaceCheckpoints = 1000

// listWorkspace serves GET /v1/runs/{id}/workspace: the workspace version of
// each checkpoint that has one, read from the manifests in the artifact
// store (never a worker's cache, so it answers after every worker is gone).
func (s *server) listWorkspace(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	cps, err := s.store.ListCheckpoints(r.Context(), rr.ID, 0, maxWorkspaceCheckpoints)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	out := WorkspaceList{Versions: []WorkspaceVersion{}}
	for _, c := range cps {
		if c.WorkspaceVersion == "" {
			continue
		}
		out.Versions = append(out.Versions, s.workspaceVersion(r.Context(), rr.ID, c))
	}
	writeJSON(w, http.StatusOK, out)
}

// workspaceVersion summarises one checkpoint's manifest; a manifest that
// cannot be read is reported on its line, so one bad version does not hide
// the others.
func (s *server) workspaceVersion(ctx context.Context, runID string, c run.Checkpoint) WorkspaceVersion {
	v := WorkspaceVersion{CheckpointID: c.ID, Seq: c.Seq, Version: c.WorkspaceVersion,
		Href: "/v1/runs/" + runID + "/workspace/files?checkpoint=" + url.QueryEscape(c.ID)}
	m, err := s.readManifest(ctx, c.WorkspaceVersion)
	if err != nil {
		s.log.ErrorContext(ctx, "workspace manifest unreadable", "run", runID, "checkpoint", c.ID, "err", err)
		v.Error = "the manifest is missing or fails its hash"
		return v
	}
	v.Files, v.Entries, v.Bytes = m.Files(), len(m.Entries), m.TotalBytes()
	return v
}

func (s *server) readManifest(ctx context.Context, version string) (*workspace.Manifest, error) {
	if s.artifacts == nil {
		return nil, errors.New("no artifact store")
	}
	ver, err := workspace.ParseVersion(version)
	if err != nil {
		return nil, err
	}
	return workspace.ReadManifest(ctx, s.artifacts, ver)
}

// workspaceFiles serves GET /v1/runs/{id}/workspace/files?checkpoint=&path=:
// a directory lists its entries, a file downloads its bytes, verified
// against the manifest's hash before the first byte goes out.
func (s *server) workspaceFiles(w http.ResponseWriter, r *http.Request, principal string) {
	q := r.URL.Query()
	cpID := q.Get("checkpoint")
	if cpID == "" {
		writeError(w, badField(CodeMissingField, "checkpoint", "checkpoint is required"))
		return
	}
	p, perr := workspacePath(q.Get("path"))
	if perr != nil {
		writeError(w, perr)
		return
	}
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	cp, ok := s.workspaceCheckpoint(w, r, rr, cpID)
	if !ok {
		return
	}
	m, err := s.readManifest(r.Context(), cp.WorkspaceVersion)
	if err != nil {
		s.log.ErrorContext(r.Context(), "workspace manifest unreadable", "run", rr.ID, "checkpoint", cp.ID, "err", err)
		writeError(w, errWorkspaceCorrupt(cp.WorkspaceVersion))
		return
	}
	if p == "" {
		writeJSON(w, http.StatusOK, dirView(rr.ID, cp, p, m))
		return
	}
	e, found := m.Lookup(p)
	switch {
	case !found:
		writeError(w, notFound("path"))
	case e.Type == workspace.TypeDir:
		writeJSON(w, http.StatusOK, dirView(rr.ID, cp, p, m))
	case e.Type == workspace.TypeFile:
		s.sendWorkspaceFile(w, r, e)
	default: // a symlink: named with its target in the listing, never followed
		writeJSON(w, http.StatusOK, WorkspaceDir{CheckpointID: cp.ID, Version: cp.WorkspaceVersion, Path: p,
			Entries: []WorkspaceEntry{entryView(rr.ID, cp.ID, e)}})
	}
}

func (s *server) sendWorkspaceFile(w http.ResponseWriter, r *http.Request, e workspace.Entry) {
	data, err := workspace.ReadFile(r.Context(), s.artifacts, e)
	switch {
	case errors.Is(err, workspace.ErrBlob):
		// Nothing is written before the whole blob is checked: the client
		// gets the error, never part of a file.
		s.log.ErrorContext(r.Context(), "workspace blob fails its manifest", "path", e.Path, "err", err)
		writeError(w, &Error{Status: http.StatusInternalServerError, Code: CodeArtifactCorrupt,
			Message: "workspace blob " + workspace.BlobKey(e).Path() + " (file " + e.Path + ") is missing or does not match the manifest's sha256; it is not served"})
		return
	case err != nil:
		s.fail(w, r, "file", err)
		return
	}
	name := safeFileName(path.Base(e.Path))
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("ETag", `"`+e.SHA256+`"`)
	h.Set("X-Content-SHA256", e.SHA256)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("X-Content-Type-Options", "nosniff")
	// A workspace file is the model's output: never let a browser run it.
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func errWorkspaceCorrupt(version string) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeArtifactCorrupt,
		Message: "the manifest of workspace version " + version + " is missing or does not match its sha256; it is not served"}
}

func dirView(runID string, cp run.Checkpoint, dir string, m *workspace.Manifest) WorkspaceDir {
	out := WorkspaceDir{CheckpointID: cp.ID, Version: cp.WorkspaceVersion, Path: dir, Entries: []WorkspaceEntry{}}
	for _, e := range m.Children(dir) {
		out.Entries = append(out.Entries, entryView(runID, cp.ID, e))
	}
	return out
}

func entryView(runID, cpID string, e workspace.Entry) WorkspaceEntry {
	return WorkspaceEntry{Path: e.Path, Name: path.Base(e.Path), Type: e.Type, Mode: e.Mode, Size: e.Size,
		SHA256: e.SHA256, Target: e.Target,
		Href: "/v1/runs/" + runID + "/workspace/files?checkpoint=" + url.QueryEscape(cpID) + "&path=" + url.QueryEscape(e.Path)}
}
