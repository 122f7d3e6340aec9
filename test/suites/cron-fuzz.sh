#!/usr/bin/env bash
# cron-fuzz: a bounded libFuzzer run (SL_FUZZ_SECONDS, default 60) of
# test/fuzz/fuzz_cron.c over the pure C cron engine, with AddressSanitizer
# and UndefinedBehaviorSanitizer.  The harness checks the parser's errors
# and the properties of every next fire time (see the harness header).
# Starts from the small seed corpus in test/fuzz/corpus, copied so the
# repository is not modified.  Any crash, sanitizer report, failed property
# (abort) or hang (-timeout) fails the suite and prints the reproducer.
#
# Needs: clang and libclang-rt-14-dev (libFuzzer and sanitizer runtimes).
set -eu
cd "${SRCDIR:-$(dirname "$0")/../..}"
OUT=${SUITE_TMP:-$(mktemp -d)}
SECS=${SL_FUZZ_SECONDS:-60}

echo "building test/fuzz/fuzz_cron.c"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc \
	-o "$OUT/fuzz_cron" test/fuzz/fuzz_cron.c src/cron/cron_parse.c src/cron/cron_next.c
mkdir -p "$OUT/corpus" "$OUT/artifacts"
cp test/fuzz/corpus/* "$OUT/corpus/"

echo "fuzzing for $SECS s"
rc=0
(cd "$OUT" && ./fuzz_cron -max_total_time="$SECS" -timeout=10 -max_len=256 \
	-print_final_stats=1 -artifact_prefix="$OUT/artifacts/" corpus) >"$OUT/fuzz.log" 2>&1 || rc=$?

runs=$(grep -E -o 'Done [0-9]+ runs' "$OUT/fuzz.log" | grep -E -o '[0-9]+' || echo 0)
if [ $rc -ne 0 ] || [ -n "$(ls -A "$OUT/artifacts")" ]; then
	tail -n 40 "$OUT/fuzz.log"
	for f in "$OUT"/artifacts/*; do
		[ -f "$f" ] || continue
		echo "reproducer $f:"
		od -c "$f" | head -20
	done
	echo "cron-fuzz: FAILED after $runs runs (exit $rc)"
	exit 1
fi
grep -E '^stat::' "$OUT/fuzz.log" || true
echo "cron-fuzz: $runs executions in $SECS s, 0 crashes, 0 hangs"
