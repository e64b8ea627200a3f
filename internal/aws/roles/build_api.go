//go:build keel_role_api

package roles

// Built is the role this binary was narrowed to (-tags keel_role_api).
const Built = "api"
