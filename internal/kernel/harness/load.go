package harness

// Reading a run back at the start of a Step: the transcript from its
// checkpoint chain (following forks), the plan items, or the worker's cache.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/model"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// load rebuilds the transcript from the checkpoint chain and the plan
// items, or takes them from the cache when nothing was written since this
// worker's last Step of the run.
func (s *step) load(ctx context.Context) error {
	if !s.fromCache() {
		if err := s.loadStore(ctx); err != nil {
			return err
		}
	}
	if s.tr.size() == 0 {
		s.tr.add(model.Message{Role: model.RoleUser, Text: s.run.Request})
		s.pend.event(run.Event{Type: run.EventTurnStarted, Data: jsonObj("request_chars", len(s.run.Request))})
	}
	s.tr.setWindow(windowChars(s.agent))
	// A transcript read back whole keeps only its window, like a warm one.
	s.tr.trim(s.cur.msgs, false)
	if s.pend.status == run.StatusCreated || s.pend.status == run.StatusPlanned {
		s.pend.setStatus(run.StatusRunning)
	}
	return nil
}

func (s *step) loadStore(ctx context.Context) error {
	msgs, cp, err := s.chain(ctx, s.run.ID, s.run.CheckpointID, 0)
	if err != nil {
		return err
	}
	if s.run.ParentRunID != "" && s.run.CheckpointID == "" {
		msgs, cp, err = s.chain(ctx, s.run.ParentRunID, s.run.ForkCheckpointID, 1)
		if err != nil {
			return err
		}
		cp.Seq = 0
	}
	s.tr.msgs = msgs
	s.cur.checkpoint, s.cur.seq, s.cur.workspace, s.cur.msgs = cp.ID, cp.Seq, cp.WorkspaceVersion, len(msgs)
	if s.cur.checkpoint == "" && s.run.ParentRunID != "" {
		s.cur.checkpoint = s.run.ForkCheckpointID
	}
	items, err := s.opt.Store.ListPlanItems(ctx, s.run.ID)
	if err != nil {
		return err
	}
	s.pl.load(items)
	for parent, depth := s.run.ParentRunID, 0; parent != "" && depth < 32; depth++ {
		pitems, err := s.opt.Store.ListPlanItems(ctx, parent)
		if err != nil {
			return err
		}
		s.pl.inherit(pitems)
		pr, err := s.opt.Store.GetRun(ctx, parent)
		if err != nil {
			return err
		}
		parent = pr.ParentRunID
	}
	return nil
}

// chain returns the transcript up to checkpoint upTo of runID (all of it
// when upTo is empty), following forks to their parents.
func (s *step) chain(ctx context.Context, runID, upTo string, depth int) ([]model.Message, run.Checkpoint, error) {
	if depth > 32 {
		return nil, run.Checkpoint{}, errors.New("fork chain deeper than 32")
	}
	r := s.run
	if runID != s.run.ID {
		var err error
		if r, err = s.opt.Store.GetRun(ctx, runID); err != nil {
			return nil, run.Checkpoint{}, err
		}
	}
	var msgs []model.Message
	var last run.Checkpoint
	if r.ParentRunID != "" {
		var err error
		if msgs, last, err = s.chain(ctx, r.ParentRunID, r.ForkCheckpointID, depth+1); err != nil {
			return nil, run.Checkpoint{}, err
		}
	}
	if upTo == "" && runID == s.run.ID && s.run.CheckpointID == "" {
		return msgs, last, nil
	}
	var after int64
	for {
		page, err := s.opt.Store.ListCheckpoints(ctx, runID, after, 1000)
		if err != nil {
			return nil, run.Checkpoint{}, err
		}
		for _, cp := range page {
			st, err := s.state(ctx, cp)
			if err != nil {
				return nil, run.Checkpoint{}, err
			}
			msgs = append(msgs, st.Messages...)
			last = cp
			if st.AgentVersion != "" && runID == s.run.ID {
				s.cur.records = st.AgentVersion
			}
			if cp.ID == upTo {
				return msgs, last, nil
			}
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if upTo != "" {
		return nil, run.Checkpoint{}, fmt.Errorf("checkpoint %s of run %s: %w", upTo, runID, store.ErrNotFound)
	}
	return msgs, last, nil
}

func (s *step) state(ctx context.Context, cp run.Checkpoint) (checkpointState, error) {
	return readState(ctx, s.opt.Artifacts, cp)
}

// readState decodes a checkpoint's state, inline or from the artifact
// store (verified against its hash).
func readState(ctx context.Context, arts artifact.Store, cp run.Checkpoint) (checkpointState, error) {
	data := cp.State
	if cp.StateRef != "" {
		if arts == nil {
			return checkpointState{}, fmt.Errorf("checkpoint %s is in the artifact store, which is not configured", cp.ID)
		}
		k, err := artifact.ParsePath(cp.StateRef)
		if err != nil {
			return checkpointState{}, err
		}
		b, info, err := arts.Get(ctx, k)
		if err != nil {
			return checkpointState{}, fmt.Errorf("checkpoint %s state: %w", cp.ID, err)
		}
		if cp.StateHash != "" && info.SHA256 != cp.StateHash {
			return checkpointState{}, fmt.Errorf("checkpoint %s state: %w", cp.ID, artifact.ErrCorrupt)
		}
		data = b
	}
	var st checkpointState
	if err := json.Unmarshal(data, &st); err != nil {
		return checkpointState{}, fmt.Errorf("checkpoint %s state: %w", cp.ID, err)
	}
	return st, nil
}
