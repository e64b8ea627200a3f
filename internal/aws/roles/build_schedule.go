//go:build keel_role_schedule

package roles

// Built is the role this binary was narrowed to (-tags keel_role_schedule).
const Built = "schedule"
