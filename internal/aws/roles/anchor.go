package roles

import (
	"context"
	"encoding/json"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
)

// AuditHeadName is the artifact Finalize writes for every finished run: the
// head of its event chain when it finished, so the head is kept outside the
// store (on AWS in S3, where object lock can make it unchangeable). An
// audit export later verifies against it: every event up to that head is
// pinned (README, Auditing a run).
const AuditHeadName = "audit-head.json"

// AuditHead is the document stored as AuditHeadName.
type AuditHead struct {
	RunID  string     `json:"run_id"`
	Status run.Status `json:"status"`
	Seq    int64      `json:"seq"`
	Hash   string     `json:"hash"`
}

// writeAuditHead stores r's chain head under its last checkpoint (or
// "final"). r is the run as Finalize read it back after its last commit,
// so its head is the one the store holds: reading it once more would cost
// a query per run and say the same. Artifacts are immutable: a second
// Finalize of the same run finds the head already there (ErrExists when
// the log grew since, e.g. a fork recorded on it; the first head stays,
// which is the point).
func writeAuditHead(ctx context.Context, arts artifact.Store, r run.Run) (artifact.Info, error) {
	b, err := json.MarshalIndent(AuditHead{RunID: r.ID, Status: r.Status, Seq: r.LastSeq, Hash: r.LastHash}, "", "  ")
	if err != nil {
		return artifact.Info{}, err
	}
	cp := r.CheckpointID
	if cp == "" {
		cp = "final"
	}
	return arts.Put(ctx, artifact.Key{RunID: r.ID, CheckpointID: cp, Name: AuditHeadName}, append(b, '\n'))
}
