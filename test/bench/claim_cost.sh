#!/usr/bin/env bash
# test/bench/claim_cost.sh - what one run of an atomic job costs a job
# backend: N no-op '* * * * *' jobs of one role due at one instant, run by
# one job backend on a throwaway durable cluster with pg_stat_statements
# (track = all, so the backend's own statements are counted): runs per
# second, the server's CPU, commits, WAL bytes and WAL records per run,
# and the statements each run executes with their time.  Then the same
# with schedlock.runs_per_commit = RPC.  For A/B comparisons of two builds, each
# installed into a copy of PostgreSQL of its own (make install
# DESTDIR=...); run as root (the server runs as postgres).  The floor, a
# one-row INSERT per transaction with pgbench, is measured first on the
# same cluster.  The cluster listens on a Unix socket of a scratch
# directory, on a port picked here.
#
#   PG_BINDIR=/path/to/bin N=20000 RPC=32 bash test/bench/claim_cost.sh
#
# FLOOR=each measures the floor again after every trial, with as many
# clients as BACKENDS, and prints the trial's share of it: the disk's
# speed swings within minutes.  PREP="SQL|SQL" runs SQL in each trial's
# database after CREATE EXTENSION, the i-th trial taking the i-th field
# (cyclically; an empty field runs nothing): to compare a schema change
# with the tables as installed, alternating, in one sitting.
# TRIALS="1" runs only the trial with each run committed alone, FLOOR=0
# skips pgbench.  BACKENDS=4 lets the role have up to 4 job backends
# (default 1).  SAMPLE=1 samples what the job backends wait for every
# 20 ms during each trial (pg_stat_activity's wait events; "CPU" when
# none) and prints the share of each.  RECORD_RUNS=failures sets
# schedlock.record_runs (default: all) for every trial.
#
# Prints one block per setting; the figures swing with the disk (the commit
# waits for its WAL flush), so compare builds in one sitting.
set -u
. "$(dirname "$0")/../lib.sh"
N=${N:-20000}
RPC=${RPC:-32}
TRIALS=${TRIALS:-"1 $RPC"}
FLOOR=${FLOOR:-1}
BACKENDS=${BACKENDS:-1}
SAMPLE=${SAMPLE:-0}
PREP=${PREP:-}
RECORD_RUNS=${RECORD_RUNS:-all}
q() { sl_psql "$@"; }
# the runs ended so far, and the runs a second once all have: from the
# runs' rows, or, when succeeded runs leave none, from the jobs' counts
if [ "$RECORD_RUNS" = all ]; then
	ENDED_Q="SELECT count(*) FROM schedlock.job_runs WHERE finished_at IS NOT NULL"
	RATE_Q="SELECT round(count(*) / extract(epoch FROM max(finished_at) - min(scheduled_for)))
		FROM schedlock.job_runs WHERE job_name LIKE 'c%'"
else
	ENDED_Q="SELECT coalesce(sum(total_runs), 0) FROM schedlock.jobs WHERE job_name LIKE 'c%'"
	RATE_Q="SELECT round(sum(total_runs) / extract(epoch FROM max(last_success_at)
			- date_trunc('minute', min(last_success_at))))
		FROM schedlock.jobs WHERE job_name LIKE 'c%'"
fi
sl_bench_cluster schedlock-claimcost "shared_preload_libraries = 'schedlock,pg_stat_statements'
pg_stat_statements.track = all
schedlock.max_job_backends = $BACKENDS
schedlock.max_workers = $BACKENDS
schedlock.max_runs_per_role = 0
schedlock.record_runs = $RECORD_RUNS" || exit 2
D=$SL_BENCH_DIR

# trial RPC : one burst of N jobs with schedlock.runs_per_commit = RPC
trial()
{
	local s c0 c1 l0 l1 prep rate f cpu0 cpu1
	[ "$HAS_RPC" = 1 ] &&
		q postgres -c "ALTER SYSTEM SET schedlock.runs_per_commit = $1" -c "SELECT pg_reload_conf()" >/dev/null
	q postgres -c "DROP DATABASE IF EXISTS b" -c "CREATE DATABASE b" >/dev/null 2>&1
	q b -c "CREATE EXTENSION schedlock" -c "CREATE EXTENSION pg_stat_statements" >/dev/null
	TRIAL_NO=$((TRIAL_NO + 1))
	prep=$(printf '%s' "$PREP" | awk -F'|' -v i="$TRIAL_NO" '{ print $(((i - 1) % NF) + 1) }')
	if [ -n "$prep" ]; then
		echo "trial $TRIAL_NO, after CREATE EXTENSION: $prep"
		q b -c "$prep" >/dev/null || return 1
	fi
	# a warm job backend: its statements prepared, its caches loaded
	q b -c "SELECT count(schedlock.schedule_job('warm' || i, '1 seconds', 'SELECT 1')) FROM generate_series(1, 50) i" >/dev/null
	sleep 2.5
	q b -c "SELECT count(schedlock.unschedule_job(job_name)) FROM schedlock.jobs" \
		-c "DELETE FROM schedlock.job_runs" >/dev/null
	s=$(q b -c "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint % 60")
	[ $((60 - s)) -lt 25 ] && sleep $((61 - s))
	q b -c "SELECT count(schedlock.schedule_job('c' || i, '* * * * *', 'SELECT 1')) FROM generate_series(1, $N) i" >/dev/null
	s=$(q b -c "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint % 60")
	sleep $((59 - s))
	q b -c "SELECT pg_stat_statements_reset()" -c "SELECT pg_stat_reset_shared('wal')" >/dev/null
	c0=$(q b -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'b'")
	cpu0=$(srvcpu)
	l0=$(q b -c "SELECT pg_current_wal_lsn()")
	if [ "$SAMPLE" = 1 ]; then
		# one psql session samples until the runs are done (at most as
		# long as the trial waits for them)
		q b -c "CREATE TEMP TABLE w (ev text)" \
			-c "DO \$\$ BEGIN
				WHILE ($ENDED_Q) < $N
						AND clock_timestamp() < statement_timestamp() + interval '600 s' LOOP
					INSERT INTO w SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
						FROM pg_stat_activity WHERE backend_type = 'schedlock job';
					PERFORM pg_stat_clear_snapshot();
					PERFORM pg_sleep(0.02);
				END LOOP; END \$\$" \
			-c "SELECT '  waits: ' || string_agg(ev || ' ' || pct || ' %', ', ' ORDER BY n DESC)
				FROM (SELECT ev, count(*) n, round(100.0 * count(*) / sum(count(*)) OVER (), 1) pct
					FROM w GROUP BY ev) s" >"$D/waits" 2>&1 &
		SAMPLER=$!
	fi
	for _ in $(seq 1 1200); do
		[ "$(q b -c "$ENDED_Q")" -ge "$N" ] && break
		sleep 0.5
	done
	sleep 1		# the statistics of the last commit
	c1=$(q b -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'b'")
	cpu1=$(srvcpu)
	l1=$(q b -c "SELECT pg_current_wal_lsn()")
	q b -c "UPDATE schedlock.jobs SET enabled = false" >/dev/null
	echo "runs_per_commit = $1, $N no-op jobs, up to $BACKENDS job backend(s), record_runs = $RECORD_RUNS"
	if [ "$SAMPLE" = 1 ]; then
		wait "$SAMPLER"
		cat "$D/waits"
	fi
	rate=$(q b -c "$RATE_Q")
	echo "  runs per second $rate"
	echo "  the server's CPU per run (all its processes): $(awk -v a="$cpu0" -v b="$cpu1" -v n="$N" \
		-v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }') microseconds"
	# the commits of the client's psql calls above are fewer than 20: noise
	q b -F ' ' -c "SELECT '  commits per run', round(($c1 - $c0)::numeric / $N, 3),
		'/ WAL bytes per run', round(pg_wal_lsn_diff('$l1', '$l0') / $N),
		'/ WAL records per run', round(wal_records::numeric / $N, 1),
		'/ WAL flushes', wal_sync FROM pg_stat_wal"
	echo "  statements per run (calls / run, microseconds / run, statement):"
	q b -F ' | ' -c "SELECT '   ', round(calls::numeric / $N, 2), round((total_exec_time / $N)::numeric * 1000, 1),
			left(regexp_replace(query, '\s+', ' ', 'g'), 90)
		FROM pg_stat_statements WHERE calls >= $N / 2 ORDER BY total_exec_time DESC"
	if [ "$FLOOR" = each ]; then
		f=$(floor_tps "$BACKENDS")
		echo "  floor right after, pgbench one-row INSERT, $BACKENDS client(s): $f tps; the trial ran $(awk -v r="$rate" -v f="$f" 'BEGIN { printf "%.0f", 100 * r / f }') % of it"
	fi
}

# srvcpu : the CPU (user + system, clock ticks) the server's processes
# have used: the postmaster's own, its live children's, and its exited
# children's (the job backends that left, the housekeepers)
srvcpu()
{
	local pm p t c
	pm=$(head -1 "$D/data/postmaster.pid")
	t=$(sed 's/.*) //' "/proc/$pm/stat" | awk '{ print $12 + $13 + $14 + $15 }')
	for p in $(ps --ppid "$pm" -o pid=); do
		c=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }')
		t=$((t + ${c:-0}))
	done
	echo "$t"
}

# floor_tps C : a one-row INSERT per transaction with pgbench, C clients,
# 10 s, on the same cluster: the commit every run of a job needs
floor_tps()
{
	q postgres -c "DROP TABLE IF EXISTS floor_t" -c "CREATE TABLE floor_t (x int)" >/dev/null 2>&1
	echo "INSERT INTO floor_t VALUES (1);" >"$D/floor.sql"
	chmod a+r "$D/floor.sql"
	sl_as_server pgbench -n -f "$D/floor.sql" -c "$1" -j "$1" -T 10 postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

# floor : the floor with 1, 2 and 4 clients
floor()
{
	local c
	for c in 1 2 4; do
		echo "  floor, pgbench one-row INSERT, $c client(s): $(floor_tps "$c") tps"
	done
}

# a build before schedlock.runs_per_commit commits each run alone
TRIAL_NO=0
HAS_RPC=$(q postgres -c "SELECT count(*) FROM pg_settings WHERE name = 'schedlock.runs_per_commit'")
[ "$FLOOR" = 1 ] && floor
for t in $TRIALS; do
	if [ "$t" = 1 ] || [ "$HAS_RPC" = 1 ]; then trial "$t"; fi
done
