package cli

import (
	"encoding/json"
	"flag"
	"strings"

	"github.com/keelrun/keel/internal/client"
)

func printJSON(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// wantArgs checks that exactly the named positional arguments are present.
func wantArgs(pos []string, names ...string) error {
	if len(pos) < len(names) {
		return usagef("missing argument %s", names[len(pos)])
	}
	if len(pos) > len(names) {
		return usagef("unexpected argument %q", pos[len(names)])
	}
	for i, p := range pos {
		if strings.TrimSpace(p) == "" {
			return usagef("argument %s is empty", names[i])
		}
	}
	return nil
}

// parseArgs parses the flags and checks that exactly the named positional
// arguments are present.
func parseArgs(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if err := wantArgs(pos, names...); err != nil {
		return nil, err
	}
	return pos, nil
}

// connect is parseArgs, then the API client: the opening of every command
// whose arguments are fixed and whose flags need no further check.
func (c *cli) connect(fs *flag.FlagSet, args []string, names ...string) ([]string, *client.Client, error) {
	pos, err := parseArgs(fs, args, names...)
	if err != nil {
		return nil, nil, err
	}
	cl, err := c.client()
	if err != nil {
		return nil, nil, err
	}
	return pos, cl, nil
}
