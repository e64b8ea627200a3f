//go:build keel_skip_reconcile

package harness

// skipReconcile is true only in the deliberately broken build
// (`go build -tags keel_skip_reconcile`) the crash suite uses to prove it
// can fail: pending operations are never reconciled, so a crash between
// dispatch and result leads to a second dispatch. Never ship this tag.
const skipReconcile = true
