package harness

// How a step's pending records become one commit (flush), and the run's
// signals that commit returns.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// signalCommitter is a store whose commit also returns the run's signals,
// read in the commit's own transaction (the SQLite store). A step that
// goes on right after a commit then needs no read to see a cancel request
// or a lost lease; other stores are read with RunSignals. A wrapper that
// embeds such a store and overrides Commit must override CommitSignals
// too, or its Commit is bypassed.
type signalCommitter interface {
	CommitSignals(ctx context.Context, c store.Commit) ([]int64, store.RunSignals, error)
}

// flush writes everything pending in one commit, with a checkpoint when the
// transcript grew.
func (s *step) flush(ctx context.Context, extra store.Commit) error {
	s.fresh = nil // signals are fresh only right after the commit they came from
	c := extra
	c.RunID, c.Token = s.run.ID, s.token
	c.Used, c.Released = s.pend.used, s.pend.released
	c.ConsumeInputs = append(c.ConsumeInputs, s.pend.consume...)
	patch := s.pend.patch
	patch.StepsDelta = s.pend.steps
	cp, err := s.checkpoint(ctx)
	if err != nil {
		return err
	}
	if cp != nil {
		c.Checkpoint = cp
		patch.CheckpointID = cp.ID
	}
	c.Events = append(s.pend.events, c.Events...)
	for _, id := range s.pend.itemIDs {
		c.PlanItems = append(c.PlanItems, s.pend.items[id])
	}
	if patch != (store.RunPatch{}) {
		c.Run = &patch
	}
	s.red.commit(&c)
	enqueueNotifications(&c)
	if c.Run == nil && len(c.Events) == 0 && len(c.PlanItems) == 0 && cp == nil && len(c.NewOperations) == 0 &&
		len(c.OperationUpdates) == 0 && len(c.NewApprovals) == 0 && len(c.CancelApprovals) == 0 && len(c.ConsumeInputs) == 0 &&
		c.Used == (store.Amounts{}) && c.Released == (store.Amounts{}) {
		return nil
	}
	s.opt.Faults.Hit(FaultInStepCommit)
	seqs, err := s.commit(ctx, c)
	if err != nil {
		return err
	}
	s.committedAs(seqs, cp, patch.ReleaseLease)
	return nil
}

// checkpoint is the checkpoint of the messages the transcript gained since
// the last commit (nil when none), its state inline or, past
// store.MaxInlineState, in the artifact store; its checkpoint_written
// event joins the pending events.
func (s *step) checkpoint(ctx context.Context) (*run.Checkpoint, error) {
	newMsgs := s.tr.since(s.cur.msgs)
	if len(newMsgs) == 0 {
		return nil, nil
	}
	st := checkpointState{Messages: newMsgs}
	if !s.cur.said {
		st.AgentVersion = s.agent.Version
	}
	state, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	wsv, err := s.ws.version(ctx, s.cur.workspace)
	if err != nil {
		return nil, err
	}
	id, seq, parent := s.cur.nextCheckpoint()
	cp := &run.Checkpoint{ID: id, RunID: s.run.ID, Seq: seq, Parent: parent,
		Step: s.cur.steps + s.pend.steps, Size: int64(len(state)), StateHash: run.HashBytes(state), WorkspaceVersion: wsv, CreatedAt: s.opt.Clock()}
	if len(state) > store.MaxInlineState && s.opt.Artifacts != nil {
		info, err := s.opt.Artifacts.Put(ctx, artifact.Key{RunID: s.run.ID, CheckpointID: cp.ID, Name: "state.json"}, state)
		if err != nil {
			return nil, &RetryableError{Err: err}
		}
		cp.StateRef = info.Key.Path()
	} else {
		cp.State = state
	}
	ev := run.Event{Type: run.EventCheckpointWritten, Time: s.opt.Clock(), Data: checkpointData(cp)}
	// The checkpoint is part of the step: it goes before the events that
	// end the turn or the run, so they stay the log's last word.
	at := len(s.pend.events)
	for i, e := range s.pend.events {
		if closing(e.Type) {
			at = i
			break
		}
	}
	s.pend.events = append(s.pend.events[:at], append([]run.Event{ev}, s.pend.events[at:]...)...)
	return cp, nil
}

// commit writes c under the Step's token, keeping the signals the store
// returns with it when it can.
func (s *step) commit(ctx context.Context, c store.Commit) ([]int64, error) {
	var seqs []int64
	var err error
	if sc, ok := s.opt.Store.(signalCommitter); ok {
		var sig store.RunSignals
		if seqs, sig, err = sc.CommitSignals(ctx, c); err == nil {
			s.fresh = &sig
		}
	} else {
		seqs, err = s.opt.Store.Commit(ctx, c)
	}
	if err != nil {
		if errors.Is(err, store.ErrFenced) {
			return nil, &FencedError{RunID: s.run.ID}
		}
		return nil, fmt.Errorf("commit: %w", err)
	}
	return seqs, nil
}

// committedAs moves the Step's view of the run past a commit: its log
// head, transcript, checkpoint and counters; nothing is pending after it.
func (s *step) committedAs(seqs []int64, cp *run.Checkpoint, released bool) {
	s.cur.advance(seqs, cp, s.tr.size(), s.pend.steps, s.pend.used)
	if released {
		s.token = -1
	}
	s.pend = pending{}
}

// signals returns the run's signals: those the last commit returned, once,
// or a read.
func (s *step) signals(ctx context.Context) (store.RunSignals, error) {
	if sig := s.fresh; sig != nil {
		s.fresh = nil
		return *sig, nil
	}
	return s.opt.Store.RunSignals(ctx, s.run.ID)
}
