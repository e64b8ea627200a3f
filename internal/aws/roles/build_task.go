//go:build keel_role_task

package roles

// Built is the role this binary was narrowed to (-tags keel_role_task).
const Built = "task"
