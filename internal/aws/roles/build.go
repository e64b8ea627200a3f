package roles

// A role build tag (keel_role_api, keel_role_step, keel_role_approval,
// keel_role_finalize, keel_role_schedule, keel_role_sweep, keel_role_task)
// narrows a Keel binary to that one role: the CDK app builds each Lambda
// function's bootstrap, and the Fargate task's, with its own tag, so each
// links only what its role runs. Without a role tag the binary is every
// role and the whole command line (the library promise: `keel` is one
// program). One role tag per build: two of them do not compile (Built is
// declared twice).
//
// Built is a constant so that the compiler drops the branches of the roles
// a build leaves out, and the linker never sees what only they reach.

// Serves reports whether this build serves role: always without a role tag,
// else only the tagged role.
func Serves(role string) bool { return Built == "" || Built == role }

// Narrowed reports whether this build was narrowed to one role (it then has
// no command line).
const Narrowed = Built != ""

// CallsModels reports whether a role calls models: the step functions and
// the long-running task do; the api, approval, finalize, schedule and sweep
// roles only read and write records, so they build no provider client
// (and read no API key).
func CallsModels(role string) bool { return role == "step" || role == "task" || role == "" }
