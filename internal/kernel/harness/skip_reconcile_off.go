//go:build !keel_skip_reconcile

package harness

// skipReconcile is false in every real build; see skip_reconcile_on.go.
const skipReconcile = false
