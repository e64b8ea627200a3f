package telemetry

import (
	"context"
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Records is what a bundle reads.
type Records interface {
	GetRun(ctx context.Context, id string) (run.Run, error)
	ReadEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Event, error)
	ListPlanItems(ctx context.Context, runID string) ([]run.PlanItem, error)
	ListOperations(ctx context.Context, runID string, pendingOnly bool) ([]run.Operation, error)
	ListApprovals(ctx context.Context, runID string) ([]run.Approval, error)
	ListInputs(ctx context.Context, runID string, pendingOnly bool) ([]run.Input, error)
	ListCheckpoints(ctx context.Context, runID string, afterSeq int64, limit int) ([]run.Checkpoint, error)
}

// Bundle is the debug bundle document.
type Bundle struct {
	Version     int              `json:"version"`
	WrittenAt   time.Time        `json:"written_at"`
	Run         run.Run          `json:"run"`
	Events      []run.Event      `json:"events"`
	PlanItems   []run.PlanItem   `json:"plan_items"`
	Operations  []run.Operation  `json:"operations"`
	Approvals   []run.Approval   `json:"approvals"`
	Inputs      []run.Input      `json:"inputs"`
	Checkpoints []run.Checkpoint `json:"checkpoints"`
}

// Collect reads a run's records into a bundle. Checkpoints keep their
// inline State (last_state.json is made of it; checkpoints.jsonl drops it). WrittenAt is the run's
// last update, so collecting a finished run twice gives the same bytes.
func Collect(ctx context.Context, rec Records, runID string) (Bundle, error) {
	b := Bundle{Version: 1}
	var err error
	if b.Run, err = rec.GetRun(ctx, runID); err != nil {
		return b, fmt.Errorf("bundle: run: %w", err)
	}
	b.WrittenAt = b.Run.UpdatedAt.UTC()
	for after := int64(0); ; {
		page, err := rec.ReadEvents(ctx, runID, after, 1000)
		if err != nil {
			return b, fmt.Errorf("bundle: events: %w", err)
		}
		b.Events = append(b.Events, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	for after := int64(0); ; {
		page, err := rec.ListCheckpoints(ctx, runID, after, 1000)
		if err != nil {
			return b, fmt.Errorf("bundle: checkpoints: %w", err)
		}
		b.Checkpoints = append(b.Checkpoints, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if b.PlanItems, err = rec.ListPlanItems(ctx, runID); err != nil {
		return b, fmt.Errorf("bundle: plan items: %w", err)
	}
	if b.Operations, err = rec.ListOperations(ctx, runID, false); err != nil {
		return b, fmt.Errorf("bundle: operations: %w", err)
	}
	if b.Approvals, err = rec.ListApprovals(ctx, runID); err != nil {
		return b, fmt.Errorf("bundle: approvals: %w", err)
	}
	if b.Inputs, err = rec.ListInputs(ctx, runID, false); err != nil {
		return b, fmt.Errorf("bundle: inputs: %w", err)
	}
	return b, nil
}
