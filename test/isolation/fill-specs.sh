#!/usr/bin/env bash
# test/isolation/fill-specs.sh - put the workers' own SQL into the isolation
# specs before they run.
#
#   bash test/isolation/fill-specs.sh TREE [SPECDIR]
#
# A spec may name a statement of the C source as @NAME@, where NAME is a
# macro of src/sched/claim_sql.h (e.g. @SCHEDLOCK_CLAIM_SQL@).  For every
# TREE/test/isolation/specs/*.spec this compiles a program that prints the
# macro -- so the text is exactly what the compiler gives store_claim.c -- and
# replaces @NAME@ with it, in place.  TREE is a scratch copy of the source
# tree (test/run-all.sh passes its own), or SPECDIR a copy of the specs
# (the Makefile's tmp_isolation/specs); the committed specs keep their
# placeholders, and a spec run without this step fails on them.  Exits
# non-zero when a macro does not compile or a placeholder is left.

set -eu
tree=$(cd "$1" && pwd)
cc=${CC:-cc}
header="$tree/src/sched/claim_sql.h"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

specdir=${2:-$tree/test/isolation/specs}
for spec in "$specdir"/*.spec; do
	names=$(grep -o '@SCHEDLOCK_[A-Z_]*@' "$spec" | tr -d @ | sort -u)
	[ -z "$names" ] && continue
	for name in $names; do
		printf '#include <stdio.h>\n#include "%s"\nint main(void) { fputs(%s, stdout); return 0; }\n' \
			"$header" "$name" >"$bin/print.c"
		"$cc" -o "$bin/print" "$bin/print.c"
		"$bin/print" >"$bin/$name.sql"
		# the statement as one line, with the placeholder's indentation
		SL_NAME=$name SL_SQL_FILE="$bin/$name.sql" perl -0pi -e '
			open(my $f, "<", $ENV{SL_SQL_FILE}) or die;
			my $sql = do { local $/; <$f> };
			s/\@$ENV{SL_NAME}\@/$sql/g;' "$spec"
	done
	if grep -q '@SCHEDLOCK_[A-Z_]*@' "$spec"; then
		echo "fill-specs: placeholders left in $spec" >&2
		exit 1
	fi
	echo "fill-specs: $(basename "$spec"): $(echo $names)"
done
