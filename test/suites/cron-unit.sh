#!/usr/bin/env bash
# cron-unit: plain C unit tests of the cron parser and search (src/cron.c),
# no server needed.  Built twice: optimised with warnings as errors, and
# with AddressSanitizer + UndefinedBehaviorSanitizer (clang).
#
# Needs: a C compiler (cc) and clang.
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)}

echo "building test/unit/test_cron.c (cc -O2 -Werror)"
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -Isrc \
	-o "$OUT/test_cron" test/unit/test_cron.c src/cron.c
"$OUT/test_cron"

echo "building test/unit/test_cron.c (clang -fsanitize=address,undefined)"
clang -std=c99 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -Isrc \
	-o "$OUT/test_cron_san" test/unit/test_cron.c src/cron.c
"$OUT/test_cron_san"

echo "cron-unit: passed (plain and sanitizer builds)"
