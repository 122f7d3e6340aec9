#!/usr/bin/env bash
# cron_bench: evaluate cron_next() 1,000,000 times from SQL over a mix of
# 8 schedules and 5 time zones, with "after" moving 37 s per call (so the
# run spans 14 months and crosses every zone's DST changes), and print
# evaluations per second.
#
#   bash test/bench/cron_bench.sh        (as root or as the postgres user)
#
# Starts its own throwaway cluster (Unix socket only, port SL_BENCH_PORT,
# default 5497) with schedlock preloaded, and stops it on exit.  The
# extension must be installed (make install).  Also prints the cost of the
# same query without cron_next(), so the per-call cost can be read off.
set -eu
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
PORT=${SL_BENCH_PORT:-5497}
N=${SL_BENCH_CALLS:-1000000}
RUNS=${SL_BENCH_RUNS:-5}

D=$(mktemp -d /tmp/cron-bench-XXXX)
as_pg()
{
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}
[ "$(id -u)" -eq 0 ] && chown postgres "$D"
cleanup()
{
	as_pg "$PG_BINDIR/pg_ctl" -D "$D/data" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT

as_pg "$PG_BINDIR/initdb" -D "$D/data" -A trust >/dev/null
echo "shared_preload_libraries = 'schedlock'" >>"$D/data/postgresql.conf"
as_pg "$PG_BINDIR/pg_ctl" -D "$D/data" -l "$D/log" -w \
	-o "-k $D -c listen_addresses='' -p $PORT" start >/dev/null
# JIT compilation would add a fixed cost that depends on the plan's estimates
PSQL="env PGOPTIONS=-cjit=off $PG_BINDIR/psql -X -q -h $D -p $PORT -U postgres -d postgres"
as_pg $PSQL -c "CREATE EXTENSION schedlock"

QUERY="SELECT count(@EXPR@)
  FROM generate_series(1, $N) AS i,
       LATERAL (SELECT (ARRAY['*/5 * * * *', '0 12 * * mon-fri', '0 0 \$ * *', '30 2 * * *',
                              '@hourly', '59 23 31 12 *', '30 seconds', '0 0 29 2 *'])[i % 8 + 1] AS s,
                       (ARRAY['UTC', 'Europe/Prague', 'America/New_York',
                              'Australia/Lord_Howe', 'Asia/Tokyo'])[i % 5 + 1] AS z,
                       timestamptz '2024-01-01 00:00:00+00' + i * interval '37 seconds' AS a) AS x"

# best of RUNS, in milliseconds, from psql's \timing
best_ms()
{
	local sql=$1 best="" t
	for _ in $(seq "$RUNS"); do
		t=$(printf '\\timing on\n%s;\n' "$sql" | as_pg $PSQL -t 2>&1 |
			sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
		if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then
			best=$t
		fi
	done
	echo "$best"
}

# sanity: every call of the mix returns a time
as_pg $PSQL -t -c "${QUERY//@EXPR@/cron_next(s, a, z)}"

full=$(best_ms "${QUERY//@EXPR@/cron_next(s, a, z)}")
base=$(best_ms "${QUERY//@EXPR@/x.a}")
awk -v n="$N" -v full="$full" -v base="$base" 'BEGIN {
	printf "cron_next: %d evaluations in %.0f ms = %.0f evaluations/s (whole query, best of runs)\n", n, full, n / (full / 1000)
	printf "same query without cron_next: %.0f ms; cron_next alone: %.3f us per call\n", base, (full - base) * 1000 / n
}'
