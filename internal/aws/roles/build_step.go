//go:build keel_role_step

package roles

// Built is the role this binary was narrowed to (-tags keel_role_step).
const Built = "step"
