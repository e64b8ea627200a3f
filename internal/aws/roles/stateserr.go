package roles

import (
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/kernel/run"
)

// Text is what a Catch's error says, for the run's error. A Lambda
// function's error arrives as aws-lambda-go's JSON envelope in Cause
// ({"errorMessage","errorType","stackTrace"}); a person reads its message,
// not the envelope. A panic that escaped a handler reads "handler panic:
// <value>": its stack is in the function's log, not in the run's error.
// A Cause that is no envelope (States.Timeout's) is kept as it is.
func (e StatesError) Text() string {
	var env struct {
		Message *string         `json:"errorMessage"`
		Stack   json.RawMessage `json:"stackTrace"`
	}
	if json.Unmarshal([]byte(e.Cause), &env) != nil || env.Message == nil {
		return fmt.Sprintf("%s: %s", e.Error, e.Cause)
	}
	msg := *env.Message
	switch {
	case run.TellsOfPanic(msg): // the local executor's "handler panic: …"
		return msg
	case len(env.Stack) > 0 && string(env.Stack) != "null":
		// aws-lambda-go sends a stack with a panic only, whose message is
		// the bare value.
		return run.HandlerPanicked(msg)
	}
	return fmt.Sprintf("%s: %s", e.Error, msg)
}
