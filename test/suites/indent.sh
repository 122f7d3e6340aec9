#!/usr/bin/env bash
# indent: the C files of src/, test/unit and test/fuzz are as pgindent lays
# them out, with PostgreSQL's typedefs.list and the project's own
# (test/indent/typedefs.list, which must name every typedef of those files:
# test/indent/typedefs.pl lists them).  The layout is the one of
# PostgreSQL 17's pgindent and pg_bsd_indent, which come with its server
# development package (15 and 16 ship neither; a later release's
# typedefs.list may lay a file out otherwise): against another version the
# suite says so and exits 77 (skipped).  test/matrix.sh runs it in its
# PostgreSQL 17 leg.
#
# To lay a file out as this checks it: pgindent --typedefs=FILE FILE.c, FILE
# being the two lists concatenated.
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
bindir=${PG_BINDIR:-$(pg_config --bindir)}
major=$("$bindir/pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
if [ "$major" != 17 ]; then
	echo "indent: the layout is checked with PostgreSQL 17's pgindent, this is $major: skipped"
	exit 77
fi
if [ ! -x "$bindir/pgindent" ] || [ ! -x "$bindir/pg_bsd_indent" ]; then
	echo "indent: $bindir has no pgindent (postgresql-server-dev-17 brings it)"
	exit 1
fi
OUT=${SUITE_TMP:-$(mktemp -d)}
files=$(ls src/*.c src/*/*.[ch] src/*/*/*.[ch] test/unit/*.[ch] test/fuzz/*.c 2>/dev/null)

# the committed list names every typedef, and nothing else
perl test/indent/typedefs.pl $files >"$OUT/typedefs.found"
if ! diff -u test/indent/typedefs.list "$OUT/typedefs.found"; then
	echo "indent: test/indent/typedefs.list differs from the typedefs of the C files (above: + to add, - to remove)"
	echo "        perl test/indent/typedefs.pl FILES... >test/indent/typedefs.list"
	exit 1
fi

cat "$("$bindir/pg_config" --sharedir)/typedefs.list" test/indent/typedefs.list >"$OUT/typedefs.all"
# a copy: pgindent reads and, without --diff, rewrites files in place
mkdir -p "$OUT/tree"
cp --parents $files "$OUT/tree"
cd "$OUT/tree"
rc=0
"$bindir/pgindent" --indent="$bindir/pg_bsd_indent" --typedefs="$OUT/typedefs.all" \
	--check --diff $files >"$OUT/indent.diff" 2>&1 || rc=$?
if [ $rc -ne 0 ] || [ -s "$OUT/indent.diff" ]; then
	cat "$OUT/indent.diff"
	echo "indent: files not laid out as pgindent lays them out: $(grep -c '^+++' "$OUT/indent.diff") (exit $rc)"
	exit 1
fi
echo "indent: $(echo $files | wc -w) files as pgindent lays them out"
