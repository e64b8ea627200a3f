package store

import (
	"context"

	"github.com/keelrun/keel/internal/kernel/run"
)

// AuditReader is what ReadAudit needs: the run (its chain head) and its log.
type AuditReader interface {
	GetRun(ctx context.Context, id string) (run.Run, error)
	ReadEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Event, error)
}

// Audit is a run's whole event log with the head of its hash chain, and
// what run.VerifyChain found wrong with it (nothing, if Problems is empty).
type Audit struct {
	Run      run.Run
	Events   []run.Event
	Problems []run.ChainProblem
}

// ReadAudit reads the run, then every event of it in order, and verifies
// the chain against the head read first. Events appended after the run was
// read are left out, so a live run verifies too.
func ReadAudit(ctx context.Context, s AuditReader, runID string) (Audit, error) {
	r, err := s.GetRun(ctx, runID)
	if err != nil {
		return Audit{}, err
	}
	var evs []run.Event
	after := int64(0)
	for after < r.LastSeq {
		page, err := s.ReadEvents(ctx, runID, after, MaxEventsPerPage)
		if err != nil {
			return Audit{}, err
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if e.Seq <= r.LastSeq {
				evs = append(evs, e)
			}
		}
		after = page[len(page)-1].Seq
	}
	return Audit{Run: r, Events: evs, Problems: run.VerifyChain(runID, evs, r.LastSeq, r.LastHash)}, nil
}
