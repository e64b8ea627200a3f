package api

import (
	"errors"
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
)

// listCheckpoints serves GET /v1/runs/{id}/checkpoints?after=N&limit=M.
func (s *server) listCheckpoints(w http.ResponseWriter, r *http.Request, principal string) {
	after, e := queryInt(r, "after", 0, 0, 1<<62)
	if e != nil {
		writeError(w, e)
		return
	}
	limit, e := queryInt(r, "limit", 100, 1, 1000)
	if e != nil {
		writeError(w, e)
		return
	}
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	cps, err := s.store.ListCheckpoints(r.Context(), rr.ID, after, int(limit))
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	out := CheckpointPage{Checkpoints: make([]Checkpoint, 0, len(cps)), NextAfter: after}
	for _, c := range cps {
		out.Checkpoints = append(out.Checkpoints, checkpointView(c))
		out.NextAfter = c.Seq
	}
	writeJSON(w, http.StatusOK, out)
}

// listArtifacts serves GET /v1/runs/{id}/artifacts.
func (s *server) listArtifacts(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	out := ArtifactList{Artifacts: []Artifact{}}
	if s.artifacts != nil {
		infos, err := s.artifacts.List(r.Context(), rr.ID)
		if err != nil {
			s.fail(w, r, "run", err)
			return
		}
		for _, i := range infos {
			out.Artifacts = append(out.Artifacts, artifactView(i))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// downloadArtifact serves GET /v1/runs/{id}/artifacts/{checkpoint_id}/{name}:
// the blob's bytes, checked against its sha256 before the first byte goes
// out (the hash is also sent, as ETag and X-Content-SHA256).
func (s *server) downloadArtifact(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	key := artifact.Key{RunID: rr.ID, CheckpointID: r.PathValue("checkpoint_id"), Name: r.PathValue("name")}
	if s.artifacts == nil || key.Validate() != nil {
		writeError(w, notFound("artifact"))
		return
	}
	data, info, err := s.artifacts.Get(r.Context(), key)
	switch {
	case errors.Is(err, artifact.ErrNotFound), errors.Is(err, artifact.ErrInvalid):
		writeError(w, notFound("artifact"))
		return
	case errors.Is(err, artifact.ErrCorrupt):
		s.log.ErrorContext(r.Context(), "artifact fails its hash", "key", key.Path(), "err", err)
		writeError(w, &Error{Status: http.StatusInternalServerError, Code: CodeArtifactCorrupt,
			Message: "the stored artifact does not match its sha256; it is not served"})
		return
	case err != nil:
		s.fail(w, r, "artifact", err)
		return
	}
	// The store verifies on Get; checking again here costs one hash and
	// keeps the promise even with a backend that does not.
	if got := run.HashBytes(data); got != info.SHA256 {
		s.log.ErrorContext(r.Context(), "artifact fails its hash", "key", key.Path(), "want", info.SHA256, "got", got)
		writeError(w, &Error{Status: http.StatusInternalServerError, Code: CodeArtifactCorrupt,
			Message: "the stored artifact does not match its sha256; it is not served"})
		return
	}
	ct := mime.TypeByExtension(path.Ext(key.Name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("ETag", `"`+info.SHA256+`"`)
	h.Set("X-Content-SHA256", info.SHA256)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": key.Name}))
	h.Set("X-Content-Type-Options", "nosniff")
	if match := r.Header.Get("If-None-Match"); match == `"`+info.SHA256+`"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}
