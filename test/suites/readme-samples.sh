#!/usr/bin/env bash
# readme-samples: every code sample in README.md and docs/*.md is run or
# compiled, read from the Markdown files themselves (test/readme/samples.py
# says how; a tagged code block without a "<!-- sample: ... -->" line
# fails).  SQL, Python and JavaScript samples run against the shared test
# cluster (PGHOST, PGPORT), each in a database of its own; the Java sample
# is compiled.  The same run checks that sample names are unique and that the
# files' relative links and anchors resolve.
#
# First it makes sure the test still fails on a tagged block without a
# marker line, so that an unmarked sample can never pass unnoticed.
#
# Needs: python3-psycopg (psycopg 3), default-jdk-headless,
# libpostgresql-jdbc-java, nodejs and npm (test/run-all.sh installs them),
# and the npm registry, from which samples.py installs the pg module.
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)}

mkdir -p "$OUT/selftest"
printf '# An unmarked sample\n\n```sql\nSELECT 1;\n```\n' >"$OUT/selftest/unmarked.md"
if /usr/bin/python3 test/readme/samples.py --static "$OUT/selftest/unmarked.md" >"$OUT/selftest/out" 2>&1; then
	echo "FAILED  samples.py passed a tagged block without a marker line"
	cat "$OUT/selftest/out"
	exit 1
fi
if ! grep -q '^FAILED  .*unmarked.md:3 sql' "$OUT/selftest/out"; then
	echo "FAILED  samples.py did not name the unmarked block"
	cat "$OUT/selftest/out"
	exit 1
fi
echo "ok      an unmarked tagged block fails the test"

/usr/bin/python3 test/readme/samples.py "$OUT" README.md docs/*.md CHANGELOG.md
