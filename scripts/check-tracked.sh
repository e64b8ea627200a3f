#!/usr/bin/env bash
# check-tracked: fails when git tracks a compiled executable (ELF, Mach-O,
# PE) or any file over 5 MB. Build outputs belong in bin/ or dist/, which
# are ignored; a tracked binary makes every clone pay for it forever.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
limit=$((5 * 1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "check-tracked: $f is $size bytes, over 5 MB: keep it out of git" >&2
		bad=1
		continue
	fi
	magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
	case "$magic" in
	7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | cafebabe | 4d5a*)
		echo "check-tracked: $f is a compiled executable: build it, do not commit it" >&2
		bad=1
		;;
	esac
done < <(git ls-files -z)
exit $bad
