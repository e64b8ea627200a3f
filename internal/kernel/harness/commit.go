package harness

// How a Step's pending records become one commit (flush), the run's
// signals that commit returns, and the checkpoint it carries. The calls
// of Store.Commit in this file are the package's only ones.

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

// leased is the pending commit of run r outside a Step (Finalize, a Step
// that could not start): it writes only what it is sent.
func leased(opt *Options, r run.Run) *pending {
	return &pending{e: &env{opt: opt, run: r}, token: r.Lease.Token, status: r.Status}
}

// flush writes everything pending, and extra, in one commit, with a
// checkpoint when the transcript grew.
func (p *pending) flush(ctx context.Context, extra store.Commit) error {
	p.fresh = nil // signals are fresh only right after the commit they came from
	c := extra
	c.RunID, c.Token = p.e.run.ID, p.token
	c.Used, c.Released = p.rec.used, p.rec.released
	c.ConsumeInputs = append(c.ConsumeInputs, p.rec.consume...)
	patch := p.rec.patch
	patch.StepsDelta = p.rec.steps
	cp, err := p.checkpoint(ctx)
	if err != nil {
		return err
	}
	if cp != nil {
		c.Checkpoint = cp
		patch.CheckpointID = cp.ID
	}
	c.Events = append(p.rec.events, c.Events...)
	for _, id := range p.rec.itemIDs {
		c.PlanItems = append(c.PlanItems, p.rec.items[id])
	}
	if patch != (store.RunPatch{}) {
		c.Run = &patch
	}
	p.e.red.commit(&c)
	enqueueNotifications(&c)
	if c.Run == nil && len(c.Events) == 0 && len(c.PlanItems) == 0 && cp == nil && len(c.NewOperations) == 0 &&
		len(c.OperationUpdates) == 0 && len(c.NewApprovals) == 0 && len(c.CancelApprovals) == 0 && len(c.ConsumeInputs) == 0 &&
		c.Used == (store.Amounts{}) && c.Released == (store.Amounts{}) {
		return nil
	}
	p.e.opt.Faults.Hit(FaultInStepCommit)
	seqs, err := p.write(ctx, c)
	if err != nil {
		return err
	}
	p.cur.advance(seqs, cp, p.tr.size(), p.rec.steps, p.rec.used)
	if patch.ReleaseLease {
		p.token = -1
	}
	p.rec = records{}
	return nil
}

// checkpoint is the checkpoint of the messages the transcript gained since
// the last commit (nil when none), its state inline or, past
// store.MaxInlineState, in the artifact store; its checkpoint_written
// event joins the pending events.
func (p *pending) checkpoint(ctx context.Context) (*run.Checkpoint, error) {
	newMsgs := p.tr.since(p.cur.msgs)
	if len(newMsgs) == 0 {
		return nil, nil
	}
	st := checkpointState{Messages: newMsgs}
	if !p.cur.said {
		st.AgentVersion = p.e.agent.Version
	}
	state, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	wsv, err := p.ws.version(ctx, p.cur.workspace)
	if err != nil {
		return nil, err
	}
	id, seq, parent := p.cur.nextCheckpoint()
	cp := &run.Checkpoint{ID: id, RunID: p.e.run.ID, Seq: seq, Parent: parent,
		Step: p.cur.steps + p.rec.steps, Size: int64(len(state)), StateHash: run.HashBytes(state), WorkspaceVersion: wsv, CreatedAt: p.e.opt.Clock()}
	if len(state) > store.MaxInlineState && p.e.opt.Artifacts != nil {
		info, err := p.e.opt.Artifacts.Put(ctx, artifact.Key{RunID: p.e.run.ID, CheckpointID: cp.ID, Name: "state.json"}, state)
		if err != nil {
			return nil, &RetryableError{Err: err}
		}
		cp.StateRef = info.Key.Path()
	} else {
		cp.State = state
	}
	ev := run.Event{Type: run.EventCheckpointWritten, Time: p.e.opt.Clock(), Data: checkpointData(cp)}
	// The checkpoint is part of the step: it goes before the events that
	// end the turn or the run, so they stay the log's last word.
	at := len(p.rec.events)
	for i, e := range p.rec.events {
		if closing(e.Type) {
			at = i
			break
		}
	}
	p.rec.events = append(p.rec.events[:at], append([]run.Event{ev}, p.rec.events[at:]...)...)
	return cp, nil
}

// write commits c under the Step's token, keeping the signals the store
// returns with it when it can.
func (p *pending) write(ctx context.Context, c store.Commit) ([]int64, error) {
	var seqs []int64
	var err error
	if sc, ok := p.e.opt.Store.(signalCommitter); ok {
		var sig store.RunSignals
		if seqs, sig, err = sc.CommitSignals(ctx, c); err == nil {
			p.fresh = &sig
		}
	} else {
		seqs, err = p.e.opt.Store.Commit(ctx, c)
	}
	if err != nil {
		if errors.Is(err, store.ErrFenced) {
			return nil, &FencedError{RunID: p.e.run.ID}
		}
		return nil, fmt.Errorf("commit: %w", err)
	}
	return seqs, nil
}

// send writes c as it is, apart from the Step's records: the progress of
// calls running concurrently (whose goroutines own no part of the
// records), and the end of a run outside a Step. c names its run and
// token itself.
func (p *pending) send(ctx context.Context, c store.Commit) ([]int64, error) {
	return p.e.opt.Store.Commit(ctx, c)
}

// progress commits a concurrent call's progress event on its own, fenced
// like every write of the Step.
func (p *pending) progress(ctx context.Context, ev run.Event) error {
	_, err := p.send(ctx, store.Commit{RunID: p.e.run.ID, Token: p.token, Events: []run.Event{ev}})
	return err
}

// signals returns the run's signals: those the last commit returned, once,
// or a read.
func (p *pending) signals(ctx context.Context) (store.RunSignals, error) {
	if sig := p.fresh; sig != nil {
		p.fresh = nil
		return *sig, nil
	}
	return p.e.opt.Store.RunSignals(ctx, p.e.run.ID)
}
