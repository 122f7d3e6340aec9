#!/usr/bin/env bash
# cron-unit: plain C unit tests of the cron parser and search
# (src/cron/cron_parse.c, src/cron/cron_next.c),
# no server needed; built plain and with sanitizers by test/unit/run.sh.
#
# Needs: a C compiler (cc) and clang.
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)} bash test/unit/run.sh test_cron src/cron/cron_parse.c src/cron/cron_next.c
echo "cron-unit: passed (plain and sanitizer builds)"
