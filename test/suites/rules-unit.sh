#!/usr/bin/env bash
# rules-unit: plain C unit tests of the scheduling rules (src/sched/rules.c:
# misfire, overlap, next_run_at, retry and backoff, the dispatch hold;
# src/sched/run_status.c: a run's statuses), no
# server needed; built plain and with sanitizers by test/unit/run.sh.
#
# Needs: a C compiler (cc) and clang.
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)} bash test/unit/run.sh test_rules src/sched/rules.c src/sched/run_status.c src/cron/cron_parse.c src/cron/cron_next.c -lm
echo "rules-unit: passed (plain and sanitizer builds)"
