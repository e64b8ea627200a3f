#!/usr/bin/env bash
# suites: make test's runner. Runs the make targets it is given, up to
# TEST_JOBS (default 2) at once, in the order given: name the longest
# first, and each next one starts as soon as one ends. Targets before a
# lone -- run first, one after another (what the others share); when one
# of them fails, none of the rest runs.
#
#   TEST_JOBS=2 scripts/suites.sh test-bins -- test-go lint aws-local-e2e
#
# A suite's output goes to $TEST_LOGS/SUITE.log (default bin/test-logs)
# and is printed whole when the suite ends, so that suites running at once
# never interleave their lines. At the end a table gives each suite's
# seconds, CPU seconds (its processes' user + system time: on a shared
# machine the wall clock alone says little) and result (ok; skipped: the
# target said SKIPPED; FAIL), also when a suite failed, and the slowest
# Go packages of the logs. Exits 1 when any suite failed.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
logs=${TEST_LOGS:-bin/test-logs}
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/*.result "$logs"/*.times "$logs"/print.lock

now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# run_suite SUITE: make SUITE into its log, then print the log and write
# "seconds cpu-seconds result" to SUITE.result. Run it in a subshell of
# its own (& or parentheses): its CPU time is that subshell's children's.
run_suite() {
	local s=$1 start rc secs cpu result
	start=$(now)
	echo "suites: $s started"
	# A job started with & ignores SIGINT and passes that on: restore it,
	# for the tests that interrupt the programs they start.
	(
		trap - INT QUIT
		exec $MAKE --no-print-directory "$s"
	) >"$logs/$s.log" 2>&1
	rc=$?
	secs=$(elapsed "$start")
	# The times builtin's second line: user and system time of this
	# subshell's children (redirected, it runs in this shell; piped, not).
	times >"$logs/$s.times"
	cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); c += t[1] * 60 + t[2] } printf "%.1f", c }' "$logs/$s.times")
	if [ "$rc" -ne 0 ]; then
		result="FAIL (exit $rc)"
	elif grep -q '^[a-z0-9-]*: SKIPPED' "$logs/$s.log"; then
		result=skipped
	else
		result=ok
	fi
	echo "$secs $cpu $result" >"$logs/$s.result"
	{
		flock 9 2>/dev/null
		echo "==== $s: $result in ${secs}s ($logs/$s.log)"
		cat "$logs/$s.log"
		echo "==== $s: end"
	} 9>"$logs/print.lock"
}

first=()
if [[ " $* " == *" -- "* ]]; then
	for s in "$@"; do
		[ "$s" = -- ] && break
		first+=("$s")
	done
	shift $((${#first[@]} + 1))
fi
rest=("$@")

# Ctrl-C or a TERM stops every suite and what it started (they share
# this process group).
trap 'trap "" INT TERM; kill -TERM 0 2>/dev/null; wait; exit 130' INT TERM

start=$(now)
for s in "${first[@]}"; do
	(run_suite "$s")
	read -r _ _ result <"$logs/$s.result"
	case $result in FAIL*) rest=() && break ;; esac
done
for s in "${rest[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "${TEST_JOBS:-2}" ]; do wait -n; done
	run_suite "$s" &
done
wait
total=$(elapsed "$start")

failed=0 cpus=
echo
echo "make test: ${#first[@]} suite(s) first, then $# up to ${TEST_JOBS:-2} at once"
printf '%-16s %8s %8s  %s\n' suite seconds cpu-s result
for s in "${first[@]}" "$@"; do
	secs=- cpu=0 result="not run"
	[ -f "$logs/$s.result" ] && read -r secs cpu result <"$logs/$s.result"
	case $result in ok | skipped) ;; *) failed=1 ;; esac
	printf '%-16s %8s %8s  %s\n' "$s" "$secs" "$cpu" "$result"
	cpus+=" $cpu"
done
cpu=$(echo "$cpus" | awk '{ for (i = 1; i <= NF; i++) c += $i; printf "%.1f", c }')
printf '%-16s %8s %8s  %s\n' total "$total" "$cpu" "$([ $failed = 0 ] && echo ok || echo FAIL)"

# The slowest Go packages, from go test's "ok" lines in every log.
slow=$(cat "$logs"/*.log 2>/dev/null | awk '$1 == "ok" && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); printf "%8.1f  %s\n", $3, $2 }' | sort -rn | head -8)
if [ -n "$slow" ]; then
	echo
	echo "slowest Go packages (seconds, as go test reports them):"
	echo "$slow"
fi
exit $failed
