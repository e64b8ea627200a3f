//go:build keel_role_finalize

package roles

// Built is the role this binary was narrowed to (-tags keel_role_finalize).
const Built = "finalize"
