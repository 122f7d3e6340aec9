#!/usr/bin/env bash
# rules-unit: plain C unit tests of the scheduling rules (src/rules.c:
# misfire, overlap, next_run_at, retry and backoff, the dispatch hold),
# no server needed.  Built twice: optimised with warnings as errors, and
# with AddressSanitizer + UndefinedBehaviorSanitizer (clang).
#
# Needs: a C compiler (cc) and clang.
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)}

echo "building test/unit/test_rules.c (cc -O2 -Werror)"
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -Isrc \
	-o "$OUT/test_rules" test/unit/test_rules.c src/rules.c src/cron.c -lm
"$OUT/test_rules"

echo "building test/unit/test_rules.c (clang -fsanitize=address,undefined)"
clang -std=c99 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -Isrc \
	-o "$OUT/test_rules_san" test/unit/test_rules.c src/rules.c src/cron.c -lm
"$OUT/test_rules_san"

echo "rules-unit: passed (plain and sanitizer builds)"
