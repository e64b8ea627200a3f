//go:build keel_role_sweep

package roles

// Built is the role this binary was narrowed to (-tags keel_role_sweep).
const Built = "sweep"
