#!/usr/bin/env bash
# test/bench/burst_backends.sh - when each job backend of a burst starts:
# 1000 one-row INSERT jobs of one role due at one instant, on a throwaway
# durable cluster, with W job backends for the role (schedlock.max_workers =
# schedlock.max_job_backends = W, no cap per role; "d": the defaults) and
# schedlock.runs_per_commit = R, for each W in SETS and R in RPCS, in that
# order, in one sitting.  Prints the burst's last finish after the instant
# (ms) and, per job backend, its runs, its first start and its last finish
# after the instant (ms).  Run as root (the server runs as postgres); for
# A/B comparisons install each build into a copy of PostgreSQL of its own
# (make install DESTDIR=...) and point PG_BINDIR at it.  The cluster
# listens on a Unix socket of a scratch directory, on a port picked here.
#
#   SETS="2 4 2 4" RPCS="1 32" bash test/bench/burst_backends.sh
#
# Each trial waits for the next minute (the jobs are '* * * * *'), so a
# trial takes about a minute.
set -u
. "$(dirname "$0")/../lib.sh"
SETS=${SETS:-"2 4 2 4"}
RPCS=${RPCS:-1}
q() { sl_psql "$@"; }
sl_bench_cluster schedlock-burstbackends || exit 1
for rpc in $RPCS; do
	for w in $SETS; do
		if [ "$w" = d ]; then
			q postgres -c "ALTER SYSTEM RESET schedlock.max_job_backends" \
				-c "ALTER SYSTEM RESET schedlock.max_workers" \
				-c "ALTER SYSTEM RESET schedlock.max_runs_per_role"
		else
			q postgres -c "ALTER SYSTEM SET schedlock.max_job_backends = $w" \
				-c "ALTER SYSTEM SET schedlock.max_workers = $w" \
				-c "ALTER SYSTEM SET schedlock.max_runs_per_role = 0"
		fi
		q postgres -c "ALTER SYSTEM SET schedlock.runs_per_commit = $rpc" \
			-c "SELECT pg_reload_conf()" >/dev/null
		sleep 1
		q postgres -c "DROP DATABASE IF EXISTS b" -c "CREATE DATABASE b" 2>/dev/null
		# warm up as run.sh does: 2 s of 50 every-second jobs
		q b -c "CREATE EXTENSION schedlock" -c "CREATE TABLE warm_up (at timestamptz)" \
			-c "SELECT count(schedlock.schedule_job('warm' || i, '1 seconds', 'INSERT INTO warm_up VALUES (clock_timestamp())')) FROM generate_series(1, 50) i" >/dev/null
		sleep 2.5
		q b -c "SELECT count(schedlock.unschedule_job(job_name)) FROM schedlock.jobs WHERE job_name LIKE 'warm%'" \
			-c "DELETE FROM schedlock.job_runs WHERE job_name LIKE 'warm%'" -c "DROP TABLE warm_up" >/dev/null
		q b -c "CREATE TABLE b (job int, started timestamptz)"
		# at least 10 s before the minute, so that all 1000 are due at it
		while [ "$(date +%-S)" -ge 50 ] || [ "$(date +%-S)" -lt 2 ]; do sleep 1; done
		q b -c "SELECT count(schedlock.schedule_job('b' || i, '* * * * *', 'INSERT INTO b VALUES (' || i || ', clock_timestamp())')) FROM generate_series(1, 1000) i" >/dev/null
		for _ in $(seq 1 150); do
			[ "$(q b -c "SELECT count(*) FROM schedlock.job_runs WHERE finished_at IS NOT NULL")" -ge 1000 ] && break
			sleep 1
		done
		q b -c "UPDATE schedlock.jobs SET enabled = false" >/dev/null
		echo "== $w job backends, runs_per_commit $rpc: last finished $(q b -c "SELECT round((extract(epoch FROM max(finished_at) - min(scheduled_for)) * 1000)::numeric, 1) FROM schedlock.job_runs") ms"
		echo "backend runs first_start_ms last_finish_ms"
		q b -F' ' -c "SELECT worker_pid, count(*),
				round((extract(epoch FROM min(started_at) - i.at) * 1000)::numeric, 1) AS first_ms,
				round((extract(epoch FROM max(finished_at) - i.at) * 1000)::numeric, 1)
			FROM schedlock.job_runs, (SELECT min(scheduled_for) AS at FROM schedlock.job_runs) i
			GROUP BY worker_pid, i.at ORDER BY 3"
		q postgres -c "DROP DATABASE b" >/dev/null
	done
done
