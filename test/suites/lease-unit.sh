#!/usr/bin/env bash
# lease-unit: plain C unit tests of the lease rules (src/lock/lease.c:
# the acquire's windows, blocks and in force, release, extend, assert's
# answer, whose leases a session ends), no server needed; built plain and
# with sanitizers by test/unit/run.sh.
#
# Needs: a C compiler (cc) and clang.
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)} bash test/unit/run.sh test_lease src/lock/lease.c
echo "lease-unit: passed (plain and sanitizer builds)"
