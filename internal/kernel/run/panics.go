package run

import (
	"fmt"
	"strings"
)

// ToolPanicked is how a tool's recovered panic reads in the records
// (events, plan items, operations, the run's error): one spelling, so
// that whoever reads the records (explain) can tell a panic from an
// error the tool returned.
func ToolPanicked(tool string, v any) string {
	return fmt.Sprintf("tool %s panicked: %v", tool, v)
}

// handlerPanicked starts the message of a panic that escaped a whole
// handler (a Step) instead of being recovered around one tool call.
const handlerPanicked = "handler panic: "

// HandlerPanicked is how a panic that escaped a handler reads in the
// run's error.
func HandlerPanicked(v any) string { return handlerPanicked + fmt.Sprint(v) }

// TellsOfPanic reports whether a recorded message (an event's error or
// reason, a run's error) tells of a panic, recovered around a tool call
// or escaped from a handler. The message may quote it after a prefix
// ("dispatch to … failed with an unknown outcome …: tool x panicked: …").
func TellsOfPanic(msg string) bool {
	if strings.Contains(msg, handlerPanicked) {
		return true
	}
	// "tool <name> panicked: ", the name one word.
	i := strings.Index(msg, " panicked: ")
	if i < 0 {
		return false
	}
	head := msg[:i]
	return strings.HasSuffix(head[:strings.LastIndexByte(head, ' ')+1], "tool ")
}
