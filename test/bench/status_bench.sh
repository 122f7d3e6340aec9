#!/usr/bin/env bash
# test/bench/status_bench.sh - the cost of schedlock.job_status and of
# history pruning on a large schedlock.job_runs, on a throwaway cluster of
# the installed PostgreSQL (SL_PGVER, default 15) with schedlock installed.
# Run as root (the server runs as postgres) or as the server's user.
#
#   ROWS=3000000 JOBS=100 bash test/bench/status_bench.sh
#
# The cluster starts with schedlock.history_retention = 0 (keep every run).
# 1. job_status: JOBS disabled jobs (so that no job runs during the
#    measure) under release 1.1's tables: JOBS-2 of them share ROWS
#    finished runs round-robin, one ran once before all of them, one never
#    ran.  The mean time of "SELECT * FROM schedlock.job_status" (pgbench,
#    one client), then the same after ALTER EXTENSION schedlock UPDATE to
#    1.2 (which adds job_runs_last_idx).
# 2. pruning: schedlock.history_retention lowered (ALTER SYSTEM, reload)
#    below the age of every one of those runs while a job runs every
#    second: seconds until schedlock.history_backlog() says none is left,
#    rows per second, WAL bytes per row, and the every-second job's largest
#    start lag meanwhile.
set -u
ROWS=${ROWS:-3000000}
JOBS=${JOBS:-100}
source "$(dirname "$0")/../lib.sh"

D=$(sl_mktemp_dir schedlock-statusbench)
trap 'sl_cluster_stop_all; rm -rf "$D"' EXIT
sl_cluster_start "$D" "max_worker_processes = 16
schedlock.history_retention = 0" || exit 2
q() { sl_as_server psql -XAtq -v ON_ERROR_STOP=1 -d bench "$@"; }

sl_as_server psql -XAtq -d postgres -c "CREATE DATABASE bench" >/dev/null
q -c "CREATE EXTENSION schedlock VERSION '1.1'"
q -c "SELECT count(schedule_job('job' || i, '0 0 1 1 *', 'SELECT 1', enabled => false))
	    FROM generate_series(1, $JOBS) i" >/dev/null
sl_log "loading $ROWS runs"
q <<SQL
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
								started_at, finished_at)
SELECT j.job_id, j.owner, now() - interval '30 days', 1, 'succeeded',
	   now() - interval '30 days', now() - interval '30 days'
  FROM schedlock.jobs j WHERE j.job_name = 'job$((JOBS - 1))';
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
								started_at, finished_at)
SELECT min_id + i % ($JOBS - 2), 'postgres',
	   now() - interval '20 days' + i * interval '100 ms', 1,
	   CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'succeeded' END,
	   now() - interval '20 days' + i * interval '100 ms',
	   now() - interval '20 days' + i * interval '100 ms' + interval '5 ms'
  FROM (SELECT min(job_id) AS min_id FROM schedlock.jobs) j,
	   generate_series(1, $ROWS) i;
VACUUM ANALYZE schedlock.jobs, schedlock.job_runs;
SQL

echo "SELECT * FROM schedlock.job_status;" >"$D/status.sql"
chmod 644 "$D/status.sql"
# mean_ms TRANSACTIONS : mean latency of the view, in ms
mean_ms()
{
	sl_as_server pgbench -n -c 1 -t "$1" -f "$D/status.sql" bench 2>/dev/null |
		sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
before=$(mean_ms 5)
q -c "ALTER EXTENSION schedlock UPDATE" -c "ANALYZE schedlock.job_runs"
mean_ms 20 >/dev/null
after=$(mean_ms 200)
echo "job_status, $ROWS runs, $JOBS jobs: 1.1 $before ms, 1.2 $after ms (mean of pgbench -t 5 / -t 200)"

# pruning while a job runs every second
q -c "CREATE TABLE ticks (at timestamptz)" \
  -c "SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (clock_timestamp())')" >/dev/null
sleep 5
lsn0=$(q -c "SELECT pg_current_wal_lsn()")
t0=$(date +%s.%N)
q -c "ALTER SYSTEM SET schedlock.history_retention = '1d'" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 3000); do
	[ "$(q -c "SELECT expired_runs FROM schedlock.history_backlog()")" = 0 ] && break
	sleep 0.1
done
t1=$(date +%s.%N)
lsn1=$(q -c "SELECT pg_current_wal_lsn()")
q -F ' ' -c "SELECT 'pruned', $ROWS + 1, 'runs in', round(($t1 - $t0)::numeric, 1), 's:',
	round(($ROWS + 1) / ($t1 - $t0)), 'rows/s,',
	round(pg_wal_lsn_diff('$lsn1', '$lsn0') / ($ROWS + 1)), 'WAL bytes/row;',
	'every-second job: largest start lag',
	(SELECT round(extract(epoch FROM max(started_at - scheduled_for)) * 1000)
	   FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	  WHERE j.job_name = 'tick' AND r.started_at >= to_timestamp($t0)), 'ms'"
