#!/usr/bin/env bash
# test/bench/lock_bench.sh - lock throughput, side by side, on one throwaway
# cluster: SELECT 1; pg_try_advisory_lock + pg_advisory_unlock; ShedLock's
# own PostgreSQL statements (usingDbTime); schedlock lease acquire+release;
# schedlock session-bound acquire+release.  Uncontended (random among
# 100,000 names) and contended (one name).  Each pgbench transaction of a
# lock workload is one lock + one unlock (the unlock only when the lock was
# obtained).
#
#   bash test/bench/lock_bench.sh
#
# Environment: BENCH_CLIENTS (8), BENCH_SECONDS (10 per run), BENCH_ROUNDS
# (3; the median tps of the rounds is reported), BENCH_CONF (extra
# postgresql.conf lines; default: durable settings, fsync and
# synchronous_commit on), BENCH_OUT (the markdown table; default
# test/bench/out/locks.md).

set -u
cd "$(dirname "$0")/../.." || exit 2
source test/lib.sh

CLIENTS=${BENCH_CLIENTS:-8}
SECS=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-3}
CONF=${BENCH_CONF:-"fsync = on
synchronous_commit = on"}

sl_ensure_packages $SL_BASE_PACKAGES || exit 2
# build under the project's build lock when we may take it
if { exec 9>>/tmp/schedlock-build.lock; } 2>/dev/null; then
	flock 9
fi
sl_build_install || exit 2
exec 9>&-
B=$(sl_mktemp_dir schedlock-bench)
sl_cluster_start "$B" "$CONF
shared_buffers = '256MB'" || exit 2
export PGDATABASE=postgres

sl_as_server psql -X -q -v ON_ERROR_STOP=1 <<'SQL' || exit 1
CREATE EXTENSION schedlock;
-- ShedLock's table for PostgreSQL, as its documentation creates it
CREATE TABLE shedlock (name varchar(64) NOT NULL PRIMARY KEY, lock_until timestamp NOT NULL,
                       locked_at timestamp NOT NULL, locked_by varchar(255) NOT NULL);
SQL

# write_scripts DIR PICK: the workload scripts; PICK sets :k, the lock
# number (lock name 'n<k>', advisory key k)
write_scripts()
{
	local dir=$1 pick=$2
	mkdir -p "$dir"
	cat >"$dir/select1.sql" <<EOF
SELECT 1;
EOF
	cat >"$dir/advisory.sql" <<EOF
$pick
SELECT pg_try_advisory_lock(:k) AS got \gset
\if :got
SELECT pg_advisory_unlock(:k);
\endif
EOF
	# ShedLock's PostgreSQL lock provider with usingDbTime(): lock, then
	# unlock (lock_until = the later of now and locked_at + lockAtLeastFor,
	# here 0).  ShedLock checks the INSERT's row count; the CTE turns that
	# count into a variable pgbench can test.
	cat >"$dir/shedlock.sql" <<EOF
$pick
WITH l AS (
INSERT INTO shedlock (name, lock_until, locked_at, locked_by)
VALUES (('n' || :k), timezone('utc', CURRENT_TIMESTAMP) + interval '10 minutes', timezone('utc', CURRENT_TIMESTAMP), 'bench-host')
ON CONFLICT (name) DO UPDATE
SET lock_until = timezone('utc', CURRENT_TIMESTAMP) + interval '10 minutes', locked_at = timezone('utc', CURRENT_TIMESTAMP), locked_by = 'bench-host'
WHERE shedlock.lock_until <= timezone('utc', CURRENT_TIMESTAMP)
RETURNING 1) SELECT count(*) AS got FROM l \gset
\if :got
UPDATE shedlock SET lock_until = CASE WHEN locked_at + interval '0 seconds' > timezone('utc', CURRENT_TIMESTAMP) THEN locked_at + interval '0 seconds' ELSE timezone('utc', CURRENT_TIMESTAMP) END WHERE name = ('n' || :k) AND locked_by = 'bench-host';
\endif
EOF
	cat >"$dir/lease.sql" <<EOF
$pick
SELECT coalesce(schedlock_acquire(('n' || :k), '10 minutes', '0', 'bench-host'), 0) AS tok \gset
\if :tok > 0
SELECT schedlock_release(('n' || :k), :tok);
\endif
EOF
	cat >"$dir/session.sql" <<EOF
$pick
SELECT coalesce(schedlock_acquire(('n' || :k), '10 minutes', '0', 'bench-host', true), 0) AS tok \gset
\if :tok > 0
SELECT schedlock_release(('n' || :k), :tok);
\endif
EOF
	chmod -R a+rX "$dir"
}

write_scripts "$B/uncontended" '\set k random(1, 100000)'
write_scripts "$B/contended" '\set k 1'

# run_one DIR SCRIPT -> tps
run_one()
{
	sl_as_server "$PG_BINDIR/pgbench" -n -M prepared -c "$CLIENTS" -j 2 -T "$SECS" \
		-f "$1/$2.sql" 2>&1 | awk '/^tps = /{print int($3)}'
}

median()
{
	tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

declare -A TPS RUNS
WORKLOADS="select1 advisory shedlock lease session"
for mode in uncontended contended; do
	# warm the name space once so that uncontended runs update existing rows
	run_one "$B/$mode" lease >/dev/null
	run_one "$B/$mode" shedlock >/dev/null
	# rounds go round the workloads, so that a change in the machine's load
	# during the run hits every workload alike
	for r in $(seq 1 "$ROUNDS"); do
		for w in $WORKLOADS; do
			RUNS[$mode.$w]="${RUNS[$mode.$w]:-} $(run_one "$B/$mode" "$w")"
		done
		sl_log "$mode round $r done"
	done
	for w in $WORKLOADS; do
		TPS[$mode.$w]=$(echo "${RUNS[$mode.$w]}" | median)
		sl_log "$mode $w: tps per round:${RUNS[$mode.$w]} -> median ${TPS[$mode.$w]}"
	done
done

ratio()
{
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}

OUT=${BENCH_OUT:-test/bench/out/locks.md}
mkdir -p "$(dirname "$OUT")"
SETTINGS="$(echo "$CONF" | tr '\n' ',' | sed 's/,$//'); PostgreSQL $("$PG_BINDIR/postgres" --version | awk '{print $3}'), $(nproc) cores"
{
	echo "\`bash test/bench/lock_bench.sh\` ($SETTINGS; pgbench -M prepared -c $CLIENTS -j 2, $(date -u +%Y-%m-%d))"
	echo
	echo "| workload ($CLIENTS clients, median of $ROUNDS x ${SECS}s) | uncontended tps | contended tps |"
	echo "| --- | ---: | ---: |"
	echo "| \`SELECT 1\` | ${TPS[uncontended.select1]} | ${TPS[contended.select1]} |"
	echo "| \`pg_try_advisory_lock\` + \`pg_advisory_unlock\` | ${TPS[uncontended.advisory]} | ${TPS[contended.advisory]} |"
	echo "| ShedLock's SQL (usingDbTime lock + unlock) | ${TPS[uncontended.shedlock]} | ${TPS[contended.shedlock]} |"
	echo "| schedlock lease acquire + release | ${TPS[uncontended.lease]} | ${TPS[contended.lease]} |"
	echo "| schedlock session-bound acquire + release | ${TPS[uncontended.session]} | ${TPS[contended.session]} |"
	echo "| **lease / ShedLock** (target >= 1.0) | **$(ratio "${TPS[uncontended.lease]}" "${TPS[uncontended.shedlock]}")** | **$(ratio "${TPS[contended.lease]}" "${TPS[contended.shedlock]}")** |"
	echo "| **session-bound / advisory pair** (target >= 0.7) | **$(ratio "${TPS[uncontended.session]}" "${TPS[uncontended.advisory]}")** | **$(ratio "${TPS[contended.session]}" "${TPS[contended.advisory]}")** |"
} >"$OUT"

echo
cat "$OUT"
sl_cluster_stop_all
rm -rf "$B"
