package harness

import (
	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// enqueueNotifications adds to c the notifications its changes call for,
// so that they are written in the same commit as what they announce (the
// outbox rule: a crash never loses one): one per approval it requests,
// bound to the approval's args hash, and one when it leaves the run in
// needs_human. Delivery is not the harness's: a worker reads the outbox.
func enqueueNotifications(c *store.Commit) {
	for _, a := range c.NewApprovals {
		hash := a.ArgsHash
		if hash == "" {
			hash, _ = run.ArgsHash(a.Args) // ValidateCommit refuses args that have no hash
		}
		c.Notifications = append(c.Notifications, run.Notification{ID: run.NotificationID(a.ID), Kind: run.NotifyApproval,
			ApprovalID: a.ID, Tool: a.Tool, ArgsHash: hash})
	}
	if c.Run != nil && c.Run.Status == run.StatusNeedsHuman {
		c.Notifications = append(c.Notifications, run.Notification{ID: run.NewID("ntf"), Kind: run.NotifyNeedsHuman})
	}
}
