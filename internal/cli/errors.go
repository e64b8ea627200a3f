package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"github.com/keelrun/keel/internal/api"
)

// usageError is a mistake in the command line; its message names the flag
// or argument at fault.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// configError is a configuration the command cannot run with (an
// environment variable, the program's agents): exit 2 like a usage error,
// but the command line was right, so no usage follows it.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// declinedError: the person answered no at a prompt.
type declinedError struct{ msg string }

func (e *declinedError) Error() string { return e.msg }

// report prints err for the user and returns its exit code.
func (c *cli) report(name string, cmd command, err error) int {
	w, prog := c.stderr, c.prog
	var ue *usageError
	var ae *api.Error
	var de *declinedError
	var ce *configError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(w, "%s %s: %s\nusage: %s %s %s\n", prog, name, ue.msg, prog, name, cmd.usage)
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(w, "%s %s: %v\n", prog, name, ce.err)
		return exitUsage
	case errors.As(err, &de):
		fmt.Fprintf(w, "%s %s: %s\n", prog, name, de.msg)
		return exitFailure
	case errors.As(err, &ae):
		where := ""
		if ae.Field != "" {
			where = ae.Field
			if f, ok := cmd.fields[ae.Field]; ok {
				where = f
			}
			where = " [" + where + "]"
		}
		fmt.Fprintf(w, "%s %s: %s%s: %s\n", prog, name, termSafe(string(ae.Code)), termSafe(where), termSafe(ae.Message))
		switch {
		case ae.Status == http.StatusNotFound:
			return exitNotFound
		case ae.Status == http.StatusConflict:
			return exitConflict
		case ae.Status == http.StatusUnauthorized:
			fmt.Fprintf(w, "%s: check the token: --token, KEEL_TOKEN, or the token file beside .keel/url\n", prog)
			return exitFailure
		case ae.Status == http.StatusBadRequest || ae.Status == http.StatusRequestEntityTooLarge:
			return exitUsage
		}
		return exitFailure
	case errors.As(err, new(*conflictError)):
		fmt.Fprintf(w, "%s %s: %v\n", prog, name, err)
		return exitConflict
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(w, "%s %s: interrupted\n", prog, name)
		return exitInterrupted
	}
	fmt.Fprintf(w, "%s %s: %v\n", prog, name, err)
	if errors.Is(err, syscall.ECONNREFUSED) {
		fmt.Fprintf(w, "%s: nothing answers at %s: is `%s dev` running?\n", prog, c.apiURL, prog)
	}
	return exitFailure
}
