#!/usr/bin/env bash
# check-tracked: fails when git tracks a compiled executable (ELF, Mach-O,
# PE) or any file over 5 MB. Build outputs belong in bin/ or dist/, which
# are ignored; a tracked binary makes every clone pay for it forever.
# One perl pass reads every tracked file's size and first four bytes (a
# process per file took seconds).
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
git ls-files -z | perl -0 -ne '
	BEGIN { $limit = 5 * 1024 * 1024; $bad = 0 }
	chomp;
	next unless -f;
	$size = (lstat)[7];
	if ($size > $limit) {
		print STDERR "check-tracked: $_ is $size bytes, over 5 MB: keep it out of git\n";
		$bad = 1;
		next;
	}
	open(my $fh, "<:raw", $_) or die "check-tracked: $_: $!\n";
	read($fh, my $head, 4);
	close $fh;
	if (unpack("H*", $head) =~ /^(7f454c46|cffaedfe|cefaedfe|feedfacf|feedface|cafebabe|4d5a)/) {
		print STDERR "check-tracked: $_ is a compiled executable: build it, do not commit it\n";
		$bad = 1;
	}
	END { $? = $bad }
'
