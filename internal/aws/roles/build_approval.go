//go:build keel_role_approval

package roles

// Built is the role this binary was narrowed to (-tags keel_role_approval).
const Built = "approval"
