//go:build !keel_role_api && !keel_role_step && !keel_role_approval && !keel_role_finalize && !keel_role_schedule && !keel_role_sweep && !keel_role_task

package roles

// Built is empty: no role tag, so this binary is every role and the
// command line.
const Built = ""
