#!/usr/bin/env bash
# test/bench/claim_probe.sh - one job backend, N no-op '* * * * *' jobs due
# at once, on a throwaway durable cluster of the PostgreSQL in PG_BINDIR
# (with schedlock installed there): jobs per second, commits and WAL bytes
# per job.  For A/B comparisons of two builds, each installed into a copy
# of PostgreSQL of its own; run as root (the server runs as postgres).  The
# cluster listens on a Unix socket of a scratch directory, on a port picked
# here.  test/bench/claim_cost.sh says more of the same runs.
#
#   PG_BINDIR=/path/to/bin N=50000 bash test/bench/claim_probe.sh
set -u
. "$(dirname "$0")/../lib.sh"
N=${N:-50000}
q() { sl_psql "$@"; }
# one worker for the builds before the job backends (1.1), one job
# backend for the others
sl_bench_cluster schedlock-claimprobe "schedlock.workers = 1
schedlock.max_job_backends = 1
schedlock.max_workers = 1" || exit 2
q postgres -c "CREATE DATABASE b"
q b -c "CREATE EXTENSION schedlock"
sleep 3
# schedule well before a minute boundary, measure from just before it
s=$(q b -c "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint % 60")
[ $((60 - s)) -lt 20 ] && sleep $((62 - s))
q b -c "SELECT count(schedlock.schedule_job('c' || i, '* * * * *', 'SELECT 1')) FROM generate_series(1, $N) i" >/dev/null
s=$(q b -c "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint % 60")
sleep $((59 - s))
c0=$(q b -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'b'")
l0=$(q b -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 300); do
	[ "$(q b -c "SELECT count(*) FROM schedlock.job_runs WHERE finished_at IS NOT NULL")" -ge "$N" ] && break
	sleep 1
done
q b -c "UPDATE schedlock.jobs SET enabled = false" >/dev/null
sleep 1
c1=$(q b -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'b'")
l1=$(q b -c "SELECT pg_current_wal_lsn()")
q b -F ' ' -c "SELECT 'per_s', round(count(*) / extract(epoch FROM max(finished_at) - min(scheduled_for))),
	'commits/job', round(($c1 - $c0)::numeric / count(*), 2),
	'wal/job', round(pg_wal_lsn_diff('$l1', '$l0') / count(*)) FROM schedlock.job_runs"
