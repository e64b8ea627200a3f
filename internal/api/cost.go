package api

import (
	"net/http"

	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/observe/cost"
)

// runCost serves GET /v1/runs/{id}/cost: what the run has cost so far on
// AWS and on which part (internal/observe/cost), priced from the default dated
// table and the CDK app's default sizes. The usage is in the answer, so a
// client with other prices can price it again (`keel cost` does, with
// KEEL_PRICES).
func (s *server) runCost(w http.ResponseWriter, r *http.Request, principal string) {
	rr, ok := s.pathRun(w, r, principal)
	if !ok {
		return
	}
	ctx := r.Context()
	audit, err := store.ReadAudit(ctx, s.store, rr.ID)
	if err != nil {
		s.fail(w, r, "run", err)
		return
	}
	rec := cost.Records{Run: audit.Run, Events: audit.Events}
	for after := int64(0); ; {
		page, err := s.store.ListCheckpoints(ctx, rr.ID, after, 1000)
		if err != nil {
			s.fail(w, r, "run", err)
			return
		}
		rec.Checkpoints = append(rec.Checkpoints, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if s.artifacts != nil {
		infos, err := s.artifacts.List(ctx, rr.ID)
		if err != nil {
			s.fail(w, r, "run", err)
			return
		}
		for _, i := range infos {
			rec.ArtifactBytes = append(rec.ArtifactBytes, i.Size)
		}
	}
	res := cost.DefaultResources()
	writeJSON(w, http.StatusOK, cost.Price(rr.ID, cost.Measure(rec, res), res, cost.Default()))
}
