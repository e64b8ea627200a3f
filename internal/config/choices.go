package config

import "fmt"

// The sandboxes KEEL_SANDBOX names.
const (
	SandboxBubblewrap = "bubblewrap"
	SandboxUnsafe     = "unsafe"
)

// What KEEL_MCP may say.
const (
	MCPOn        = "on"
	MCPOff       = "off"
	MCPDecisions = "decisions"
)

// checkChoices refuses a KEEL_SANDBOX or KEEL_MCP that names no choice,
// and fills KEEL_MCP's default.
func (c *Config) checkChoices() error {
	switch c.Sandbox {
	case "", SandboxBubblewrap, SandboxUnsafe:
	default:
		return fmt.Errorf("KEEL_SANDBOX %q: want %s or %s", c.Sandbox, SandboxBubblewrap, SandboxUnsafe)
	}
	switch c.MCP {
	case "":
		c.MCP = MCPOn
	case MCPOn, MCPOff, MCPDecisions:
	default:
		return fmt.Errorf("KEEL_MCP %q: want %s, %s or %s", c.MCP, MCPOn, MCPOff, MCPDecisions)
	}
	return nil
}
