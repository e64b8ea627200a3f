package cmdrunner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// PrlimitCommand is the runner binary's subcommand that does what
// prlimit(1) does for the sandbox: set the limits, then exec the command.
// The Lambda runtime image (provided.al2023) is not promised to ship
// util-linux, so the runner carries its own (sandbox.Config.PrlimitArgs).
const PrlimitCommand = "__keel-prlimit"

// rlimitNPROC is RLIMIT_NPROC on Linux (the syscall package does not name it).
const rlimitNPROC = 6

// Prlimit applies --cpu=SOFT:HARD, --as=N, --nproc=N and --fsize=N to
// itself and execs the argv after "--" (looked up in its PATH). It returns
// only on error; the caller exits 127 then.
func Prlimit(args []string) error {
	var argv []string
	for i, a := range args {
		if a == "--" {
			argv = args[i+1:]
			break
		}
		name, val, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%s: bad flag %q", PrlimitCommand, a)
		}
		soft, hard, err := limits(val)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", PrlimitCommand, name, err)
		}
		res := map[string]int{"--cpu": syscall.RLIMIT_CPU, "--as": syscall.RLIMIT_AS, "--nproc": rlimitNPROC, "--fsize": syscall.RLIMIT_FSIZE}
		r, ok := res[name]
		if !ok {
			return fmt.Errorf("%s: unknown limit %q", PrlimitCommand, name)
		}
		if err := syscall.Setrlimit(r, &syscall.Rlimit{Cur: soft, Max: hard}); err != nil {
			return fmt.Errorf("%s: set %s: %w", PrlimitCommand, name, err)
		}
	}
	if len(argv) == 0 {
		return errors.New(PrlimitCommand + ": no command after --")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%s: %w", PrlimitCommand, err)
	}
	return syscall.Exec(path, argv, os.Environ())
}

func limits(v string) (soft, hard uint64, err error) {
	s, h, both := strings.Cut(v, ":")
	if soft, err = strconv.ParseUint(s, 10, 64); err != nil {
		return 0, 0, err
	}
	hard = soft
	if both {
		hard, err = strconv.ParseUint(h, 10, 64)
	}
	return soft, hard, err
}
