#!/usr/bin/env bash
# readme-samples: every code sample in README.md is run or compiled, read
# from README.md itself (test/readme/samples.py says how; a tagged code
# block without a "<!-- sample: ... -->" line fails).  SQL and Python
# samples run against the shared test cluster (PGHOST, PGPORT), each in a
# database of its own; the Java sample is compiled.
#
# Needs: python3-psycopg2, python3-psycopg, default-jdk-headless,
# libpostgresql-jdbc-java (test/run-all.sh installs them).
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)}
/usr/bin/python3 test/readme/samples.py README.md "$OUT"
