#!/usr/bin/env bash
# test/bench/run.sh - the benchmark suite: schedlock side by side with
# pg_cron (and, for locks, ShedLock's SQL and advisory locks), on two
# throwaway clusters of this machine, one workload after the other.
#
#   bash test/bench/run.sh                  (as root, or a user with sudo)
#   BENCH_ONLY="lag burst" bash test/bench/run.sh
#   SL_PGVER=17 bash test/bench/run.sh      (PostgreSQL 17: in a Debian 13
#                                           root, see test/bench/matrix.sh)
#
# Workloads (BENCH_ONLY picks some; default all, about 60 minutes):
#   lag     start lag of one job: a "1 seconds" schedlock job (>= 60 samples);
#           on pg_cron 1.5 and later a "1 seconds" pg_cron job, once over
#           libpq and once with background workers; then a "* * * * *" job
#           of each, side by side (3 samples)
#   burst   1000 one-row INSERT jobs of one role due at one instant:
#           schedlock with the default settings and with 1, 2 and 4 job
#           backends (runs committed alone, and up to 32 per commit), pg_cron over libpq and with background workers, and
#           the floor: pgbench running the same INSERT 1000 times
#   tenants 100 roles x 10 one-row INSERT jobs due at one instant:
#           schedlock (defaults) and pg_cron with background workers; the
#           floor of a backend per role: pgbench connecting anew for each
#           role's 10 INSERTs, 4 at a time
#   dbs     32 databases with a "1 seconds" job each: start lag, processes
#           and memory, with PostgreSQL's default max_worker_processes (8)
#           and with enough slots for a backend per database; pg_cron with
#           background workers beside it (a "* * * * *" job in each database
#           before pg_cron 1.5, 2 minutes); the floor of a backend per
#           database: pgbench connecting anew for each of 32 INSERTs, 3 and
#           4 at a time
#   fleet   100 databases with a "1 seconds" job each (each of a role of
#           its own; then all of one role, which schedlock.max_runs_per_role
#           holds to 3 backends), PostgreSQL's and schedlock's defaults (a
#           budget of 4 job backends), 60 s: slots
#           run, start lag, the whole cluster's CPU, backend starts a second
#           and a one-row query's latency beside it; pg_cron 1.5 and later
#           (background workers) with the same jobs; then a "* * * * *" and
#           a "*/5 * * * *" job in each of the 100, 3 minutes, beside
#           pg_cron; and 200 databases' "1 seconds" jobs on a budget of 104
#   lagburst start lag of one role's "1 seconds" job while another role's
#           1000-job burst runs (defaults)
#   notify  10000 NOTIFY jobs due at one instant, one listening client
#   scale   1,000,000 schedlock jobs (100,000 pg_cron jobs) due days ahead
#           plus one every-second (every-minute) job: insert rate, the
#           scheduler's CPU over 60 s (180 s for pg_cron), lag of that job
#   claim   50,000 no-op jobs due at once, with 1, 2 and 4 job backends,
#           each run committed alone and with schedlock.runs_per_commit =
#           32; beside pgbench's one-row INSERT with 1, 2 and 4 clients
#   steady  300 "1 seconds" jobs of one role for 60 s (300 runs a second):
#           start lag, with the defaults and with runs_per_commit = 32
#   locks   test/bench/lock_bench.sh
#
# Both clusters are durable (fsync and synchronous_commit on), listen on a
# Unix socket only and are stopped at the end.  Each schedlock trial runs in
# a new database whose workers are first warmed up with 2 s of small jobs.  Writes test/bench/out/:
# results.tsv (every figure), BENCHMARKS.md (the tables), burst.png (start
# time of each job of the burst), burst-*.dat (the plot's data).
# Environment: BENCH_ONLY, BENCH_OUT (output directory), SL_PGVER (the
# PostgreSQL major version, default 15; pg_cron is postgresql-NN-cron's), and
# for short trial runs (the defaults are the benchmark's):
#   BENCH_LAG_SAMPLES=60      "1 seconds" samples of each side
#   BENCH_LAG_MINUTES=3       "* * * * *" samples of each side
#   BENCH_SCALE_JOBS=1000000  schedlock jobs of the scale workload
#   BENCH_SCALE_CRON_JOBS=100000   pg_cron's
#   BENCH_SCALE_SECONDS=60    seconds over which schedlock's CPU is read
#   BENCH_STEADY_SECONDS=60   seconds of the steady load
#   BENCH_STEADY_RPC="1 32"   the runs_per_commit settings it is measured with
# An interrupted run stops its clusters and removes its scratch directory.

set -u
cd "$(dirname "$0")/../.." || exit 2
source test/lib.sh

ONLY=${BENCH_ONLY:-"lag burst tenants dbs fleet lagburst notify scale claim steady locks"}
LAG_SAMPLES=${BENCH_LAG_SAMPLES:-60}
LAG_MINUTES=${BENCH_LAG_MINUTES:-3}
OUT=${BENCH_OUT:-$SL_SRCDIR/test/bench/out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
RESULTS=$OUT/results.tsv
rm -f "$OUT"/locks.md "$OUT"/burst*

sl_ensure_packages $SL_BASE_PACKAGES postgresql-$SL_PGVER-cron gnuplot-nox || exit 2
if { exec 9>>/tmp/schedlock-build.lock; } 2>/dev/null; then
	flock 9
fi
sl_build_install || exit 2
exec 9>&-

B=$(sl_mktemp_dir schedlock-bench-suite)
chmod 755 "$B"

# bench_cleanup : stop every cluster this run started and remove its scratch
# directory; on exit, also after INT or TERM.  sl_cluster_start sets its own
# EXIT trap, so each start below sets this one again.
bench_cleanup()
{
	# a second INT or TERM must not cut the cleanup short
	trap - EXIT
	trap '' INT TERM
	sl_cluster_stop_all
	rm -rf "$B"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
gcc -O2 -Wall -I"$("$PG_CONFIG" --includedir)" -o "$B/listen" test/bench/listen.c \
	-L"$("$PG_CONFIG" --libdir)" -lpq || exit 2

# --- the clusters ---------------------------------------------------------

mkdir -p "$B/s" "$B/c"
chown "$SL_SERVER_USER" "$B/s" "$B/c" 2>/dev/null
# the job backends of each trial are set by set_workers
sl_cluster_start "$B/s" "$SL_DURABLE_CONF" || exit 2
trap bench_cleanup EXIT
S_HOST=$PGHOST S_PORT=$PGPORT

# the pg_cron package's version (1.4.2 on Debian 12, 1.6.x on Debian 13):
# "N seconds" schedules exist from 1.5 on
CRON_VER=$(dpkg-query -W -f '${Version}' "postgresql-$SL_PGVER-cron" 2>/dev/null | sed 's/-.*//')
CRON_SECONDS=""
dpkg --compare-versions "${CRON_VER:-0}" ge 1.5 && CRON_SECONDS=yes

# pg_cron_start MODE : (re)start the pg_cron cluster; MODE libpq or bgw
pg_cron_start()
{
	local bgw=off
	[ "$1" = bgw ] && bgw=on
	sl_cluster_stop "$B/c"
	if [ ! -d "$B/c/data" ]; then
		sl_cluster_start "$B/c" "$SL_DURABLE_CONF
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.host = '$B/c'
max_worker_processes = 40
include_if_exists = 'cron_mode.conf'" || return 1
		trap bench_cleanup EXIT
		C_HOST=$PGHOST C_PORT=$PGPORT
		sl_cluster_stop "$B/c"
	fi
	echo "cron.use_background_workers = $bgw" | sl_as_server tee "$B/c/data/cron_mode.conf" >/dev/null
	sl_as_server "$PG_BINDIR/pg_ctl" -D "$B/c/data" -l "$B/c/server.log" -w -t 60 start >/dev/null || {
		tail -n 20 "$B/c/server.log" >&2
		return 1
	}
	SL_CLUSTERS="$SL_CLUSTERS $B/c"
	cq postgres -c "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null
	[ "$(get meta.cron_max_running_jobs)" = n/a ] &&
		put meta.cron_max_running_jobs "$(cq postgres -c "SHOW cron.max_running_jobs")"
	return 0
}

# sq DB ARGS... / cq DB ARGS... : psql on the schedlock / pg_cron cluster
sq()
{
	local db=$1
	shift
	sl_as_server psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$S_HOST" -p "$S_PORT" -U postgres -d "$db" "$@"
}
cq()
{
	local db=$1
	shift
	sl_as_server psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$C_HOST" -p "$C_PORT" -U postgres -d "$db" "$@"
}

# --- helpers ---------------------------------------------------------------

: >"$RESULTS"
# put KEY VALUE : record one figure
put()
{
	printf '%s\t%s\n' "$1" "$2" >>"$RESULTS"
	sl_log "  $1 = $2"
}
get()
{
	awk -F'\t' -v k="$1" '$1 == k {v = $2} END {print (v == "" ? "n/a" : v)}' "$RESULTS"
}

# what the figures were measured on (report.sh prints it)
put meta.pg_major "$SL_PGVER"
put meta.pg_version "$(sq postgres -c "SHOW server_version" | awk '{print $1}')"
put meta.pg_cron "${CRON_VER:-n/a}"
put meta.os "$(. /etc/os-release && echo "$PRETTY_NAME")"
put meta.cores "$(nproc)"
put meta.date "$(date -u +%Y-%m-%d)"

# fresh_db NAME : a new database with schedlock created in it
fresh_db()
{
	sq postgres -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" || return 1
	sq "$1" -c "CREATE EXTENSION schedlock" || return 1
}
# warm_up DB : 2 s of 50 every-second jobs, then nothing left of them.  A
# new worker prepares its statements and loads its caches on its first
# claims; a server's workers live long, so the trials measure warm ones.
warm_up()
{
	sq "$1" -c "CREATE TABLE warm_up (at timestamptz)" \
		-c "SELECT count(schedlock.schedule_job('warm' || i, '1 seconds', 'INSERT INTO warm_up VALUES (clock_timestamp())')) FROM generate_series(1, 50) i" >/dev/null
	sleep 2.5
	# their runs go too: an unscheduled job's history stays, and the
	# workloads read the times of their own runs from schedlock.job_runs
	sq "$1" -c "SELECT count(schedlock.unschedule_job(job_name)) FROM schedlock.jobs WHERE job_name LIKE 'warm%'" \
		-c "DELETE FROM schedlock.job_runs WHERE job_name LIKE 'warm%'" \
		-c "DROP TABLE warm_up" >/dev/null
}

drop_db()
{
	sq postgres -c "DROP DATABASE IF EXISTS $1"
}

# set_workers N : N job backends for the cluster and for one database, and
# no cap per role (every job of a workload belongs to one role), so that the
# figures for N are N backends at work; "default": the settings' defaults
set_workers()
{
	if [ "$1" = default ]; then
		sq postgres -c "ALTER SYSTEM RESET schedlock.max_job_backends" \
			-c "ALTER SYSTEM RESET schedlock.max_workers" \
			-c "ALTER SYSTEM RESET schedlock.max_runs_per_role" \
			-c "SELECT pg_reload_conf()" >/dev/null
	else
		sq postgres -c "ALTER SYSTEM SET schedlock.max_job_backends = $1" \
			-c "ALTER SYSTEM SET schedlock.max_workers = $1" \
			-c "ALTER SYSTEM SET schedlock.max_runs_per_role = 0" \
			-c "SELECT pg_reload_conf()" >/dev/null
	fi
	sleep 1
}
set_workers 2

# set_batch N : schedlock.runs_per_commit = N
set_batch()
{
	sq postgres -c "ALTER SYSTEM SET schedlock.runs_per_commit = $1" \
		-c "SELECT pg_reload_conf()" >/dev/null
	sleep 1
}

# before_minute SECONDS : wait, if needed, until at least SECONDS remain
# before the next minute boundary (of the server's clock)
before_minute()
{
	local s
	s=$(sq postgres -c "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint % 60")
	if [ $((60 - s)) -lt "$1" ]; then
		sleep $((61 - s))
	fi
}

# spread Q : "samples min median p99 max" (ms, 2 decimals) of the values
# (ms) that query Q returns, computed by the server Q runs on (argument 2:
# sq or cq, argument 3: database)
spread()
{
	local q=$1 on=$2 db=$3
	$on "$db" -F ' ' -c "WITH v(x) AS ($q)
		SELECT count(*), round(min(x)::numeric, 2),
			   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 2),
			   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY x)::numeric, 2),
			   round(max(x)::numeric, 2) FROM v"
}

# put_spread PREFIX "n min median p99 max"
put_spread()
{
	local n mn md p99 mx
	read -r n mn md p99 mx <<<"$2"
	put "$1.samples" "$n"
	put "$1.min" "$mn"
	put "$1.median" "$md"
	put "$1.p99" "$p99"
	put "$1.max" "$mx"
}

# file_spread ON FILE : spread's "samples min median p99 max" of the values
# (ms), one a line, in FILE, computed by the server of ON (sq or cq)
file_spread()
{
	local on=$1 f=$2
	chmod a+r "$f"
	$on postgres -c "DROP TABLE IF EXISTS bench_values" -c "CREATE TABLE bench_values (ms float8)" \
		-c "\\copy bench_values FROM '$f'" >/dev/null
	spread "SELECT ms FROM bench_values" "$on" postgres
	$on postgres -c "DROP TABLE bench_values" >/dev/null
}

# now_s : this machine's clock (the servers' clock), in seconds
now_s()
{
	date +%s.%N
}

# cpu_pct TICKS0 TICKS1 T0 T1 : CPU time between two cpu_ticks readings,
# as a percentage of one core over the wall time T0..T1
cpu_pct()
{
	awk -v a="$1" -v b="$2" -v t0="$3" -v t1="$4" -v hz="$(getconf CLK_TCK)" \
		'BEGIN {printf "%.2f", (b - a) / hz / (t1 - t0) * 100}'
}

# cpu_ticks PIDS... : utime + stime of the processes, in clock ticks
cpu_ticks()
{
	local p t=0 u s
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] || continue
		read -r u s <<<"$(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12, $13}')"
		t=$((t + u + s))
	done
	echo "$t"
}

# wait_for ON DB QUERY TARGET TIMEOUT : poll until QUERY returns >= TARGET
wait_for()
{
	local on=$1 db=$2 q=$3 target=$4 timeout=$5 v i
	for i in $(seq 1 $((timeout * 5))); do
		v=$($on "$db" -c "$q")
		[ "${v:-0}" -ge "$target" ] && return 0
		sleep 0.2
	done
	sl_log "timed out waiting for $q >= $target (last $v)"
	return 1
}

# --- 1. start lag ----------------------------------------------------------

bench_lag()
{
	sl_log "lag: schedlock, a '1 seconds' job, $((LAG_SAMPLES + 1)) samples"
	fresh_db lag || return 1
	sq lag -c "CREATE TABLE lag (started timestamptz)"
	sq lag -c "SELECT schedlock.schedule_job('tick', '1 seconds', 'INSERT INTO lag VALUES (clock_timestamp())')" >/dev/null
	wait_for sq lag "SELECT count(*) FROM lag" $((LAG_SAMPLES + 2)) $((LAG_SAMPLES * 2 + 60))
	sq lag -c "SELECT schedlock.alter_job('tick', enabled => false)" >/dev/null
	# the first slot can fall before the job's row was visible; drop it
	put_spread lag.schedlock "$(spread "SELECT extract(epoch FROM started - date_trunc('second', started)) * 1000
		FROM lag ORDER BY started OFFSET 1" sq lag)"
	put lag.schedlock.late "$(sq lag -c "SELECT count(*) FROM schedlock.job_runs WHERE started_at - scheduled_for >= interval '1 second'")"
	drop_db lag

	if [ -n "$CRON_SECONDS" ]; then
		lag_pg_cron_seconds libpq
		lag_pg_cron_seconds bgw
	else
		sl_log "lag: pg_cron $CRON_VER has no '1 seconds' schedule"
	fi

	# A job due once a minute: the worker sleeps close to a minute before
	# each slot, as for most real schedules; pg_cron's job beside it.
	sl_log "lag: schedlock and pg_cron side by side, a '* * * * *' job each, $LAG_MINUTES samples"
	pg_cron_start libpq || return 1
	fresh_db lagm || return 1
	sq lagm -c "CREATE TABLE lag (started timestamptz)"
	cq postgres -c "DROP TABLE IF EXISTS lag" -c "CREATE TABLE lag (started timestamptz)"
	before_minute 5
	sq lagm -c "SELECT schedlock.schedule_job('tick', '* * * * *', 'INSERT INTO lag VALUES (clock_timestamp())')" >/dev/null
	cq postgres -c "SELECT cron.schedule('tick', '* * * * *', 'INSERT INTO lag VALUES (clock_timestamp())')" >/dev/null
	wait_for cq postgres "SELECT count(*) FROM lag" "$LAG_MINUTES" $((LAG_MINUTES * 60 + 70))
	wait_for sq lagm "SELECT count(*) FROM lag" "$LAG_MINUTES" 60
	cq postgres -c "SELECT cron.unschedule('tick')" >/dev/null
	sq lagm -c "SELECT schedlock.alter_job('tick', enabled => false)" >/dev/null
	put_spread lag.pg_cron "$(spread "SELECT extract(epoch FROM started - date_trunc('minute', started)) * 1000 FROM lag" cq postgres)"
	put_spread lag.schedlock_minute "$(spread "SELECT extract(epoch FROM started - date_trunc('minute', started)) * 1000 FROM lag ORDER BY started LIMIT $LAG_MINUTES" sq lagm)"
	drop_db lagm
}

# lag_pg_cron_seconds MODE : a pg_cron '1 seconds' job, over libpq or with
# background workers (MODE libpq or bgw).  pg_cron's interval jobs have no
# fixed instants: a run is due one interval after the previous run's start
# as pg_cron records it (cron.job_run_details.start_time: when the command
# was sent, or the background worker started), so a run's lag is its
# command's clock_timestamp() minus that.  period_ms is the mean time
# between two starts (schedlock's '1 seconds' slots are whole seconds: 1000).
lag_pg_cron_seconds()
{
	local mode=$1 n
	sl_log "lag: pg_cron, a '1 seconds' job ($mode), $((LAG_SAMPLES + 1)) samples"
	pg_cron_start "$mode" || return 1
	cq postgres -c "DROP TABLE IF EXISTS lag" -c "CREATE TABLE lag (started timestamptz)" \
		-c "TRUNCATE cron.job_run_details"
	cq postgres -c "SELECT cron.schedule('tick1s', '1 seconds', 'INSERT INTO lag VALUES (clock_timestamp())')" >/dev/null
	wait_for cq postgres "SELECT count(*) FROM lag" $((LAG_SAMPLES + 2)) $((LAG_SAMPLES * 3 + 60))
	cq postgres -c "SELECT cron.unschedule('tick1s')" >/dev/null
	# run n of the job (in the order of start_time; one at a time) wrote
	# row n (in the order of started): pair them by number, since pg_cron
	# sets start_time just after it has sent the command over libpq, so a
	# row can be older than its own run's start_time
	put_spread "lag.pg_cron_second.$mode" "$(spread "WITH r AS (SELECT start_time, row_number() OVER (ORDER BY start_time) AS n
			FROM cron.job_run_details WHERE start_time IS NOT NULL),
		l AS (SELECT started, row_number() OVER (ORDER BY started) AS n FROM lag)
		SELECT extract(epoch FROM l.started - interval '1 second' - r.start_time) * 1000
		FROM l JOIN r ON r.n = l.n - 1" cq postgres)"
	n=$(cq postgres -c "SELECT round((extract(epoch FROM max(started) - min(started)) * 1000 / (count(*) - 1))::numeric, 1) FROM lag")
	put "lag.pg_cron_second.$mode.period_ms" "$n"
	put "lag.pg_cron_second.$mode.failed" "$(cq postgres -c "SELECT count(*) FROM cron.job_run_details WHERE status NOT IN ('succeeded', 'running')")"
}

# --- 2. burst ---------------------------------------------------------------

N_BURST=1000
BURST_CMD="'INSERT INTO b VALUES (' || i || ', clock_timestamp())'"

# burst_schedlock BACKENDS : BACKENDS job backends, or "default" settings
burst_schedlock()
{
	local w=$1 db=burst$1 s name=schedlock.w$1
	sl_log "burst: schedlock, $w job backends${2:+, $2 runs per commit}"
	set_workers "$w"
	[ -n "${2:-}" ] && { set_batch "$2"; name=schedlock.w$w.rpc$2; }
	fresh_db "$db" || return 1
	warm_up "$db"
	sq "$db" -c "CREATE TABLE b (job int, started timestamptz)"
	before_minute 10
	sq "$db" -c "SELECT count(schedlock.schedule_job('b' || i, '* * * * *', $BURST_CMD)) FROM generate_series(1, $N_BURST) i" >/dev/null
	s=$(sq "$db" -c "SELECT count(DISTINCT next_run_at) FROM schedlock.jobs")
	[ "$s" = 1 ] || sl_log "burst: the jobs are not all due at one instant ($s)"
	wait_for sq "$db" "SELECT count(*) FROM schedlock.job_runs WHERE finished_at IS NOT NULL" $N_BURST 120
	sq "$db" -c "UPDATE schedlock.jobs SET enabled = false"
	burst_result "$name" sq "$db" \
		"(SELECT min(scheduled_for) FROM schedlock.job_runs)" \
		"(SELECT max(finished_at) FROM schedlock.job_runs)"
	put "burst.$name.failed" "$(sq "$db" -c "SELECT count(*) FROM schedlock.job_runs WHERE status <> 'succeeded'")"
	# when each job backend that ran the burst started its first run: the
	# backends a burst needs are there by the instant, or come one by one
	put "burst.$name.backend_first_ms" "$(sq "$db" -c "SELECT string_agg(ms::text, ' ' ORDER BY ms) FROM (SELECT round((extract(epoch FROM min(started_at) - (SELECT min(scheduled_for) FROM schedlock.job_runs)) * 1000)::numeric, 1) AS ms FROM schedlock.job_runs GROUP BY worker_pid) s")"
	drop_db "$db"
	[ -n "${2:-}" ] && set_batch 1
	return 0
}

# burst_result NAME ON DB SLOT_EXPR FINISH_EXPR : figures and plot data
burst_result()
{
	local name=$1 on=$2 db=$3 slot=$4 fin=$5
	put_spread "burst.$name.start" "$(spread "SELECT extract(epoch FROM started - $slot) * 1000 FROM b" "$on" "$db")"
	put "burst.$name.jobs" "$($on "$db" -c "SELECT count(*) FROM b")"
	put "burst.$name.last_start_ms" "$($on "$db" -c "SELECT round((extract(epoch FROM max(started) - $slot) * 1000)::numeric, 1) FROM b")"
	put "burst.$name.last_finish_ms" "$($on "$db" -c "SELECT round((extract(epoch FROM $fin - $slot) * 1000)::numeric, 1)")"
	$on "$db" -c "SELECT row_number() OVER (ORDER BY started), extract(epoch FROM started - $slot) FROM b ORDER BY started" \
		-F ' ' >"$OUT/burst-$name.dat"
}

# burst_pg_cron MODE
burst_pg_cron()
{
	local mode=$1 once
	sl_log "burst: pg_cron, $mode"
	pg_cron_start "$mode" || return 1
	cq postgres -c "DROP TABLE IF EXISTS b" -c "CREATE TABLE b (job int, started timestamptz)" \
		-c "TRUNCATE cron.job_run_details"
	before_minute 10
	# due at the next minute only (pg_cron's schedules are in GMT): a burst
	# that takes longer than a minute must not start a second one
	once=$(cq postgres -c "SELECT to_char(date_trunc('minute', now() AT TIME ZONE 'UTC') + interval '1 minute', 'FMMI FMHH24 FMDD FMMM') || ' *'")
	cq postgres -c "SELECT count(cron.schedule('b' || i, '$once', $BURST_CMD)) FROM generate_series(1, $N_BURST) i" >/dev/null
	wait_for cq postgres "SELECT count(*) FROM b" $N_BURST 120
	cq postgres -c "SELECT count(cron.unschedule(jobid)) FROM cron.job" >/dev/null
	wait_for cq postgres "SELECT count(*) FROM cron.job_run_details WHERE end_time IS NOT NULL" $N_BURST 120
	burst_result "pg_cron.$mode" cq postgres \
		"date_trunc('minute', (SELECT min(started) FROM b))" \
		"(SELECT max(end_time) FROM cron.job_run_details)"
	put "burst.pg_cron.$mode.failed" "$(cq postgres -c "SELECT count(*) FROM cron.job_run_details WHERE status <> 'succeeded'")"
}

# pgbench_tps DB CLIENTS SCRIPT OPTION... : the tps pgbench gives running
# SCRIPT in CLIENTS clients at once against DB, for as long as the options
# say (-t N transactions per client, -T seconds); the floors of this file,
# each measured in the same run as what it is beside
pgbench_tps()
{
	local db=$1 c=$2 script=$3
	shift 3
	chmod a+r "$script"
	sl_as_server "$PG_BINDIR/pgbench" -n "$@" -h "$S_HOST" -p "$S_PORT" -U postgres \
		-c "$c" -j "$c" -f "$script" "$db" 2>&1 |
		awk '/^tps = /{print $3}'
}

# ms_of N TPS : how long N transactions take at TPS, in ms
ms_of()
{
	awk -v n="$1" -v t="$2" 'BEGIN {printf "%.1f", n / t * 1000}'
}

# burst_floor CLIENTS : pgbench running the burst's INSERT N_BURST times
burst_floor()
{
	local c=$1 tps
	sl_log "burst: pgbench floor, $c clients"
	sq postgres -c "DROP TABLE IF EXISTS b" -c "CREATE TABLE b (job int, started timestamptz)"
	echo "INSERT INTO b VALUES (1, clock_timestamp());" >"$B/floor.sql"
	tps=$(pgbench_tps postgres "$c" "$B/floor.sql" -t $((N_BURST / c)) -M prepared)
	put "burst.floor.c$c.tps" "$(printf '%.0f' "$tps")"
	put "burst.floor.c$c.ms" "$(ms_of $N_BURST "$tps")"
	sq postgres -c "DROP TABLE b"
}

bench_burst()
{
	burst_schedlock default
	burst_schedlock 1
	burst_schedlock 2
	burst_schedlock 4
	burst_schedlock 1 32
	burst_schedlock 2 32
	burst_schedlock 4 32
	set_workers 2
	burst_floor 1
	burst_floor 2
	burst_floor 4
	burst_pg_cron libpq
	burst_pg_cron bgw
	plot_burst
}

plot_burst()
{
	local f files="" name
	for name in schedlock.wdefault schedlock.w1 schedlock.w2 schedlock.w4 pg_cron.libpq pg_cron.bgw; do
		f="$OUT/burst-$name.dat"
		[ -s "$f" ] || continue
		files="$files${files:+, }'$f' using 1:(\$2 > 0.0001 ? \$2 : 0.0001) with lines lw 2 title '$(burst_title "$name")'"
	done
	[ -n "$files" ] || return
	gnuplot <<EOF
set terminal png size 900,520 font ',11'
set termoption noenhanced
set output '$OUT/burst.png'
set title "1000 INSERT jobs due at the same instant: when each job started\n(PostgreSQL $SL_PGVER, $(nproc) cores, fsync on; SL_PGVER=$SL_PGVER bash test/bench/run.sh)"
set xlabel 'jobs started'
set ylabel 'seconds after the scheduled instant (log scale)'
set logscale y
set grid
set key top left
plot $files
EOF
}

burst_title()
{
	case $1 in
		schedlock.wdefault) echo "schedlock, default settings" ;;
		schedlock.w1) echo "schedlock, 1 job backend" ;;
		schedlock.w2) echo "schedlock, 2 job backends" ;;
		schedlock.w4) echo "schedlock, 4 job backends" ;;
		pg_cron.libpq) echo "pg_cron $CRON_VER, libpq" ;;
		pg_cron.bgw) echo "pg_cron $CRON_VER, background workers" ;;
	esac
}

# --- 2b. many tenants --------------------------------------------------------

N_TENANTS=100
N_TENANT_JOBS=10

# tenant_script FUNC : SQL that creates the tenant roles' jobs, each role's
# with FUNC (schedule_job or cron.schedule) as that role
tenant_script()
{
	local i
	for i in $(seq 1 $N_TENANTS); do
		echo "SET ROLE tenant$i;"
		if [ "$1" = cron ]; then
			echo "SELECT count(cron.schedule('t' || j, '$2', 'INSERT INTO public.tb VALUES (''tenant$i'', ' || j || ', clock_timestamp())')) FROM generate_series(1, $N_TENANT_JOBS) j;"
		else
			echo "SELECT count(schedlock.schedule_job('t' || j, '* * * * *', 'INSERT INTO public.tb VALUES (''tenant$i'', ' || j || ', clock_timestamp())')) FROM generate_series(1, $N_TENANT_JOBS) j;"
		fi
		echo "RESET ROLE;"
	done
}

# tenant_roles ON DB : the tenant roles, each allowed to schedule and to
# insert into tb
tenant_roles()
{
	local on=$1 db=$2
	$on "$db" -c "DO \$\$ BEGIN FOR i IN 1..$N_TENANTS LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tenant' || i) THEN
			EXECUTE format('CREATE ROLE tenant%s LOGIN', i);
		END IF; END LOOP; END \$\$" >/dev/null
	$on "$db" -c "DROP TABLE IF EXISTS tb" -c "CREATE TABLE tb (role text, job int, started timestamptz)" \
		-c "GRANT INSERT ON tb TO PUBLIC" >/dev/null
}

# tenants_floor : the floor of a backend per role on this machine: pgbench
# connecting anew for each of N_TENANTS transactions, 4 at a time (the
# default budget of job backends), each transaction N_TENANT_JOBS one-row
# INSERTs committed alone, as the jobs are; the time all of them take
tenants_floor()
{
	local tps j
	sl_log "tenants: the floor, pgbench -C, 4 clients, $N_TENANTS connections x $N_TENANT_JOBS INSERTs"
	fresh_db tenants_floor >/dev/null || return 1
	sq tenants_floor -c "CREATE TABLE tb (role text, job int, started timestamptz)" >/dev/null
	for j in $(seq 1 $N_TENANT_JOBS); do
		echo "INSERT INTO tb VALUES ('floor', $j, clock_timestamp());"
	done >"$B/tenants-floor.sql"
	tps=$(pgbench_tps tenants_floor 4 "$B/tenants-floor.sql" -t $((N_TENANTS / 4)) -C)
	put tenants.floor.ms "$(ms_of $N_TENANTS "$tps")"
	drop_db tenants_floor
}

bench_tenants()
{
	local n=$((N_TENANTS * N_TENANT_JOBS)) once
	sl_log "tenants: $N_TENANTS roles x $N_TENANT_JOBS jobs due at one instant, schedlock (defaults)"
	set_workers default
	fresh_db tenants || return 1
	tenant_roles sq tenants
	sq tenants -c "GRANT INSERT ON schedlock.jobs TO PUBLIC" >/dev/null
	tenant_script schedlock >"$B/tenants.sql"
	chmod a+r "$B/tenants.sql"
	before_minute 20
	sq tenants -f "$B/tenants.sql" >/dev/null
	wait_for sq tenants "SELECT count(*) FROM schedlock.job_runs WHERE finished_at IS NOT NULL" $n 120
	sq tenants -c "UPDATE schedlock.jobs SET enabled = false"
	put_spread tenants.schedlock.start "$(spread "SELECT extract(epoch FROM started - (SELECT min(scheduled_for) FROM schedlock.job_runs)) * 1000 FROM tb" sq tenants)"
	put tenants.schedlock.last_finish_ms "$(sq tenants -c "SELECT round((extract(epoch FROM max(finished_at) - min(scheduled_for)) * 1000)::numeric, 1) FROM schedlock.job_runs")"
	put tenants.schedlock.slowest_role_first_ms "$(sq tenants -c "SELECT round(max(first)::numeric, 1) FROM (SELECT extract(epoch FROM min(started) - (SELECT min(scheduled_for) FROM schedlock.job_runs)) * 1000 AS first FROM tb GROUP BY role) f")"
	put tenants.schedlock.failed "$(sq tenants -c "SELECT count(*) FROM schedlock.job_runs WHERE status <> 'succeeded'")"
	drop_db tenants
	tenants_floor
	set_workers 2

	sl_log "tenants: pg_cron, background workers"
	pg_cron_start bgw || return 1
	tenant_roles cq postgres
	cq postgres -c "GRANT USAGE ON SCHEMA cron TO PUBLIC" -c "TRUNCATE cron.job_run_details" >/dev/null
	before_minute 20
	once=$(cq postgres -c "SELECT to_char(date_trunc('minute', now() AT TIME ZONE 'UTC') + interval '1 minute', 'FMMI FMHH24 FMDD FMMM') || ' *'")
	tenant_script cron "$once" >"$B/tenants-cron.sql"
	chmod a+r "$B/tenants-cron.sql"
	cq postgres -f "$B/tenants-cron.sql" >/dev/null
	wait_for cq postgres "SELECT count(*) FROM cron.job_run_details WHERE end_time IS NOT NULL" $n 180
	cq postgres -c "SELECT count(cron.unschedule(jobid)) FROM cron.job" >/dev/null
	put_spread tenants.pg_cron.start "$(spread "SELECT extract(epoch FROM started - date_trunc('minute', (SELECT min(started) FROM tb))) * 1000 FROM tb" cq postgres)"
	put tenants.pg_cron.last_finish_ms "$(cq postgres -c "SELECT round((extract(epoch FROM max(end_time) - date_trunc('minute', (SELECT min(started) FROM tb))) * 1000)::numeric, 1) FROM cron.job_run_details")"
	put tenants.pg_cron.failed "$(cq postgres -c "SELECT count(*) FROM cron.job_run_details WHERE status <> 'succeeded'")"
}

# --- 2c. many databases ----------------------------------------------------

N_DBS=32
DBS_SECONDS=${BENCH_DBS_SECONDS:-30}

# restart_schedlock : restart the schedlock cluster (a new
# max_worker_processes)
restart_schedlock()
{
	sl_as_server "$PG_BINDIR/pg_ctl" -D "$B/s/data" -l "$B/s/server.log" -w -t 60 restart >/dev/null
}

# pss_kb PIDS... : proportional set size of the processes, in kB
pss_kb()
{
	local p t=0 v
	for p in "$@"; do
		v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null)
		t=$((t + ${v:-0}))
	done
	echo "$t"
}

# dbs_trial NAME : the databases' '1 seconds' jobs for DBS_SECONDS; start
# lag of every run, processes and memory
dbs_trial()
{
	local name=$1 i pids
	for i in $(seq 1 $N_DBS); do
		sq "d$i" -c "TRUNCATE schedlock.job_runs" -c "TRUNCATE lag" >/dev/null 2>&1
	done
	sleep "$DBS_SECONDS"
	pids=$(scheduler_pids sq 'schedlock%')
	put "dbs.$name.processes" "$(echo $pids | wc -w)"
	put "dbs.$name.pss_kb" "$(pss_kb $pids)"
	: >"$B/dbs-lag.tsv"
	# when each command started (its clock_timestamp), after its second
	for i in $(seq 1 $N_DBS); do
		sq "d$i" -c "SELECT extract(epoch FROM started - date_trunc('second', started)) * 1000 FROM lag
			WHERE started >= (SELECT min(started_at) FROM schedlock.job_runs)" >>"$B/dbs-lag.tsv"
	done
	put_spread "dbs.$name.lag" "$(file_spread sq "$B/dbs-lag.tsv")"
	put "dbs.$name.expected_runs" "$((N_DBS * DBS_SECONDS))"
	put "dbs.$name.databases_with_runs" "$(for i in $(seq 1 $N_DBS); do sq "d$i" -c "SELECT count(*) > 0 FROM schedlock.job_runs WHERE status = 'succeeded'"; done | grep -c t)"
}

# dbs_floor CLIENTS : the floor of a backend per database: pgbench
# connecting anew for each of N_DBS one-row INSERTs, CLIENTS at a time; the
# time all of them take, which the last of N_DBS jobs due at one instant
# cannot start before, with that many backends
dbs_floor()
{
	local c=$1 tps
	sl_log "dbs: the floor, pgbench -C, $c clients, $N_DBS connections"
	fresh_db dbs_floor >/dev/null || return 1
	sq dbs_floor -c "CREATE TABLE lag (started timestamptz)" >/dev/null
	echo "INSERT INTO lag VALUES (clock_timestamp());" >"$B/dbs-floor.sql"
	tps=$(pgbench_tps dbs_floor "$c" "$B/dbs-floor.sql" -t $(((N_DBS + c - 1) / c)) -C)
	put "dbs.floor.c$c.ms" "$(ms_of $N_DBS "$tps")"
	drop_db dbs_floor
}

bench_dbs()
{
	local i
	sl_log "dbs: $N_DBS databases with a '1 seconds' job each, PostgreSQL's default max_worker_processes (8)"
	set_workers default
	sq postgres -c "ALTER SYSTEM SET max_worker_processes = 8" >/dev/null
	restart_schedlock
	for i in $(seq 1 $N_DBS); do
		fresh_db "d$i" >/dev/null || return 1
		sq "d$i" -c "CREATE TABLE lag (started timestamptz)" \
			-c "SELECT schedlock.schedule_job('tick', '1 seconds', 'INSERT INTO lag VALUES (clock_timestamp())')" >/dev/null
	done
	put dbs.default.max_worker_processes "$(sq postgres -c "SHOW max_worker_processes")"
	sleep 5
	dbs_trial default

	sl_log "dbs: the same with enough slots (max_worker_processes = $((N_DBS + 8)))"
	# the jobs are all the superuser's: schedlock.max_runs_per_role counts a
	# role's backends in every database, so it is lifted too
	sq postgres -c "ALTER SYSTEM SET max_worker_processes = $((N_DBS + 8))" \
		-c "ALTER SYSTEM SET schedlock.max_job_backends = $((N_DBS + 2))" \
		-c "ALTER SYSTEM SET schedlock.max_runs_per_role = 0" >/dev/null
	restart_schedlock
	sleep 5
	dbs_trial enough
	sq postgres -c "ALTER SYSTEM RESET max_worker_processes" \
		-c "ALTER SYSTEM RESET schedlock.max_runs_per_role" >/dev/null
	restart_schedlock
	for i in $(seq 1 $N_DBS); do
		drop_db "d$i" >/dev/null
	done
	# the superuser's jobs share its schedlock.max_runs_per_role (3) of
	# the budget (4)
	dbs_floor 3
	dbs_floor 4
	set_workers 2
	dbs_pg_cron
}

# dbs_pg_cron : pg_cron beside it, with background workers: a job in each of
# the 32 databases (cron.schedule_in_database), every minute when pg_cron
# has no seconds schedules (before 1.5), else every second; start lag from
# the slot, processes and memory of pg_cron between runs.
DBS_CRON_MINUTES=${BENCH_DBS_CRON_MINUTES:-2}
dbs_pg_cron()
{
	local i sched=$'* * * * *' unit=minute n pids
	[ -n "$CRON_SECONDS" ] && sched='1 seconds' unit=second
	sl_log "dbs: pg_cron $CRON_VER with background workers, $N_DBS databases with a '$sched' job each"
	pg_cron_start bgw || return 1
	for i in $(seq 1 $N_DBS); do
		cq postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS d$i" \
			-c "CREATE DATABASE d$i" >/dev/null
		cq "d$i" -c "CREATE TABLE lag (started timestamptz)"
	done
	before_minute 10
	for i in $(seq 1 $N_DBS); do
		cq postgres -c "SELECT cron.schedule_in_database('tick$i', '$sched',
			'INSERT INTO lag VALUES (clock_timestamp())', 'd$i')" >/dev/null
	done
	if [ "$unit" = minute ]; then
		n=$DBS_CRON_MINUTES
		wait_for cq d$N_DBS "SELECT count(*) FROM lag" "$n" $((n * 60 + 70))
		sleep 5
	else
		n=$DBS_SECONDS
		sleep $((n + 2))
	fi
	pids=$(scheduler_pids cq 'pg_cron%')
	put dbs.pg_cron.processes "$(echo $pids | wc -w)"
	put dbs.pg_cron.pss_kb "$(pss_kb $pids)"
	cq postgres -c "SELECT count(cron.unschedule(jobname)) FROM cron.job WHERE jobname LIKE 'tick%'" >/dev/null
	: >"$B/dbs-cron-lag.tsv"
	for i in $(seq 1 $N_DBS); do
		cq "d$i" -c "SELECT extract(epoch FROM started - date_trunc('$unit', started)) * 1000 FROM lag" >>"$B/dbs-cron-lag.tsv"
	done
	put dbs.pg_cron.schedule "$sched"
	put_spread dbs.pg_cron.lag "$(file_spread cq "$B/dbs-cron-lag.tsv")"
	put dbs.pg_cron.databases_with_runs "$(for i in $(seq 1 $N_DBS); do cq "d$i" -c "SELECT count(*) > 0 FROM lag"; done | grep -c t)"
	for i in $(seq 1 $N_DBS); do
		cq postgres -c "DROP DATABASE d$i" >/dev/null
	done
}

# --- 2e. a fleet of databases on a small budget -----------------------------

N_FLEET=${BENCH_FLEET_DBS:-100}
N_FLEET_BIG=${BENCH_FLEET_BIG_DBS:-200}
FLEET_SECONDS=${BENCH_FLEET_SECONDS:-60}
FLEET_MINUTES=${BENCH_FLEET_MINUTES:-3}

# cluster_ticks DATADIR : the CPU of a whole cluster so far, in clock ticks:
# the postmaster's own and that of its children it has reaped (utime,
# stime, cutime, cstime), and that of its live children
cluster_ticks()
{
	local pm p t=0 u s cu cs
	pm=$(head -n 1 "$1/postmaster.pid")
	for p in $pm $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
		read -r u s cu cs <<<"$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12, $13, $14, $15}')"
		t=$((t + ${u:-0} + ${s:-0} + ${cu:-0} + ${cs:-0}))
	done
	echo "$t"
}

# fleet_dbs ON N WITH_EXTENSION : databases f1..fN, each with a table lag,
# copied from a template (with the extension when WITH_EXTENSION is yes)
fleet_dbs()
{
	local on=$1 n=$2 ext=$3 i
	$on postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS fleet_tpl" \
		-c "CREATE DATABASE fleet_tpl" >/dev/null || return 1
	[ "$ext" = yes ] && { $on fleet_tpl -c "CREATE EXTENSION schedlock" >/dev/null || return 1; }
	$on fleet_tpl -c "CREATE TABLE lag (started timestamptz)" >/dev/null
	for i in $(seq 1 "$n"); do
		echo "SET client_min_messages = warning; DROP DATABASE IF EXISTS f$i; CREATE DATABASE f$i TEMPLATE fleet_tpl;"
		echo "DROP ROLE IF EXISTS fleet_r$i; CREATE ROLE fleet_r$i LOGIN;"
	done | $on postgres >/dev/null
	for i in $(seq 1 "$n"); do
		$on "f$i" -c "GRANT INSERT ON public.lag TO fleet_r$i" >/dev/null
		[ "$ext" = yes ] && $on "f$i" -c "GRANT INSERT ON schedlock.jobs TO fleet_r$i" >/dev/null
	done
	return 0
}

fleet_drop()
{
	local on=$1 n=$2 i
	# no backend starts for the databases while they go
	[ "$on" = sq ] && sq postgres -c "ALTER SYSTEM SET schedlock.enabled = off" \
		-c "SELECT pg_reload_conf()" >/dev/null
	for i in $(seq 1 "$n"); do
		echo "SET client_min_messages = warning; DROP DATABASE IF EXISTS f$i; DROP ROLE IF EXISTS fleet_r$i;"
	done | $on postgres >/dev/null
	$on postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS fleet_tpl" >/dev/null
	[ "$on" = sq ] && sq postgres -c "ALTER SYSTEM RESET schedlock.enabled" \
		-c "SELECT pg_reload_conf()" >/dev/null
	return 0
}

# fleet_window ON DATADIR NAME SECONDS : over SECONDS, the cluster's CPU
# and the latency of a one-row query sent ten times a second over one
# connection (pgbench -R 10); leaves FLEET_T0 and FLEET_T1 (epoch seconds)
fleet_window()
{
	local on=$1 data=$2 name=$3 secs=$4 c0 c1 host port
	if [ "$on" = sq ]; then host=$S_HOST port=$S_PORT; else host=$C_HOST port=$C_PORT; fi
	echo "SELECT 1;" >"$B/select1.sql"
	chmod a+r "$B/select1.sql"
	rm -f "$B"/pgb-"$name"*
	FLEET_T0=$(now_s)
	c0=$(cluster_ticks "$data")
	(cd "$B" && sl_as_server "$PG_BINDIR/pgbench" -n -h "$host" -p "$port" -U postgres -c 1 -R 10 \
		-T "$secs" -f "$B/select1.sql" --log --log-prefix="$B/pgb-$name" postgres >/dev/null 2>&1)
	c1=$(cluster_ticks "$data")
	FLEET_T1=$(now_s)
	put "fleet.$name.cpu_pct" "$(cpu_pct "$c0" "$c1" "$FLEET_T0" "$FLEET_T1")"
	cat "$B"/pgb-"$name"* 2>/dev/null | awk '{print $3 / 1000}' >"$B/select1-$name.tsv"
	put_spread "fleet.$name.select1" "$(file_spread "$on" "$B/select1-$name.tsv")"
}

# fleet_schedlock_runs NAME N PERIOD_S (0: not counted) : what schedlock made of the slots of
# the window: slots, runs, runs started within 1 s of their slot, start lag
# (started_at - scheduled_for) and the job backends that ran them, a second
fleet_schedlock_runs()
{
	local name=$1 n=$2 period=$3 i
	: >"$B/fleet-lag.tsv"
	: >"$B/fleet-pids"
	for i in $(seq 1 "$n"); do
		sq "f$i" -c "SELECT extract(epoch FROM started_at - scheduled_for) * 1000 FROM schedlock.job_runs
			WHERE scheduled_for >= to_timestamp($FLEET_T0) AND scheduled_for < to_timestamp($FLEET_T1)
			  AND started_at IS NOT NULL" >>"$B/fleet-lag.tsv"
		sq "f$i" -c "SELECT DISTINCT worker_pid FROM schedlock.job_runs
			WHERE scheduled_for >= to_timestamp($FLEET_T0) AND scheduled_for < to_timestamp($FLEET_T1)
			  AND worker_pid IS NOT NULL" >>"$B/fleet-pids"
	done
	# the slots of a job every PERIOD_S seconds in [FLEET_T0, FLEET_T1)
	[ "$period" -gt 0 ] && put "fleet.$name.slots" "$(awk -v a="$FLEET_T0" -v b="$FLEET_T1" -v n="$n" -v p="$period" \
		'function ceil(x) { return x == int(x) ? x : int(x) + 1 } BEGIN {printf "%d", (ceil(b / p) - ceil(a / p)) * n}')"
	put "fleet.$name.runs" "$(wc -l <"$B/fleet-lag.tsv")"
	put "fleet.$name.within_1s" "$(awk '$1 < 1000' "$B/fleet-lag.tsv" | wc -l)"
	put_spread "fleet.$name.lag" "$(file_spread sq "$B/fleet-lag.tsv")"
	put "fleet.$name.starts_per_s" "$(sort -u "$B/fleet-pids" | wc -l |
		awk -v a="$FLEET_T0" -v b="$FLEET_T1" '{printf "%.1f", $1 / (b - a)}')"
}

# fleet_pg_cron_runs NAME N UNIT : pg_cron's runs of the window: runs and
# the start lag from the start of their second or minute (pg_cron records
# no slot)
fleet_pg_cron_runs()
{
	local name=$1 n=$2 unit=$3 i
	: >"$B/fleet-lag.tsv"
	for i in $(seq 1 "$n"); do
		cq "f$i" -c "SELECT extract(epoch FROM started - date_trunc('$unit', started)) * 1000 FROM lag
			WHERE started >= to_timestamp($FLEET_T0) AND started < to_timestamp($FLEET_T1)" >>"$B/fleet-lag.tsv"
	done
	put "fleet.$name.runs" "$(wc -l <"$B/fleet-lag.tsv")"
	put_spread "fleet.$name.lag" "$(file_spread cq "$B/fleet-lag.tsv")"
}

# fleet_schedlock NAME N PERIOD_S SECONDS ROLE SCHEDULE... : N databases
# with a job on each SCHEDULE, of ROLE ("": database fI's role fleet_rI),
# measured over SECONDS after a warm-up
fleet_schedlock()
{
	local name=$1 n=$2 period=$3 secs=$4 role=$5 i s k
	shift 5
	fleet_dbs sq "$n" yes || return 1
	for i in $(seq 1 "$n"); do
		k=0
		{
			echo "SET ROLE ${role:-fleet_r$i};"
			for s in "$@"; do
				k=$((k + 1))
				echo "SELECT schedlock.schedule_job('fleet$k', '$s', 'INSERT INTO public.lag VALUES (clock_timestamp())');"
			done
		} | sq "f$i" >/dev/null
	done
	[ "$(sq "f$n" -c "SELECT count(*) FROM schedlock.jobs WHERE owner = '${role:-fleet_r$n}'::regrole")" -eq $# ] || {
		sl_log "fleet: the jobs of f$n were not scheduled"
		return 1
	}
	sleep 10
	fleet_window sq "$B/s/data" "$name" "$secs"
	fleet_schedlock_runs "$name" "$n" "$period"
	fleet_drop sq "$n"
}

# fleet_pg_cron NAME N UNIT SECONDS SCHEDULE... : the same on pg_cron, with
# background workers (cron.schedule_in_database), each database's jobs of
# its role fleet_rI
fleet_pg_cron()
{
	local name=$1 n=$2 unit=$3 secs=$4 i s k
	shift 4
	pg_cron_start bgw || return 1
	# PostgreSQL's default, as schedlock has it here
	cq postgres -c "ALTER SYSTEM SET max_worker_processes = 8" >/dev/null
	sl_as_server "$PG_BINDIR/pg_ctl" -D "$B/c/data" -l "$B/c/server.log" -w -t 60 restart >/dev/null || return 1
	fleet_dbs cq "$n" no || return 1
	for i in $(seq 1 "$n"); do
		k=0
		for s in "$@"; do
			k=$((k + 1))
			echo "SELECT cron.schedule_in_database('fleet${k}_$i', '$s', 'INSERT INTO public.lag VALUES (clock_timestamp())', 'f$i', 'fleet_r$i');"
		done | cq postgres >/dev/null
	done
	sleep 10
	fleet_window cq "$B/c/data" "$name" "$secs"
	fleet_pg_cron_runs "$name" "$n" "$unit"
	cq postgres -c "SELECT count(cron.unschedule(jobid)) FROM cron.job WHERE jobname LIKE 'fleet%'" \
		-c "TRUNCATE cron.job_run_details" >/dev/null
	fleet_drop cq "$n"
	cq postgres -c "ALTER SYSTEM RESET max_worker_processes" >/dev/null
	sl_cluster_stop "$B/c"
}

bench_fleet()
{
	set_workers default
	sq postgres -c "ALTER SYSTEM SET max_worker_processes = 8" >/dev/null
	restart_schedlock
	put fleet.dbs "$N_FLEET"
	sl_log "fleet: $N_FLEET databases with a '1 seconds' job each, of a role each, defaults, ${FLEET_SECONDS} s"
	fleet_schedlock seconds "$N_FLEET" 1 "$FLEET_SECONDS" "" '1 seconds'
	# one role for all: schedlock.max_runs_per_role (3) caps it in the cluster
	sl_log "fleet: the same jobs, all of one role"
	fleet_schedlock onerole "$N_FLEET" 1 "$FLEET_SECONDS" postgres '1 seconds'
	if [ -n "$CRON_SECONDS" ]; then
		sl_log "fleet: pg_cron $CRON_VER, the same jobs"
		fleet_pg_cron pg_cron_seconds "$N_FLEET" second "$FLEET_SECONDS" '1 seconds'
	fi
	sl_log "fleet: $N_FLEET databases with a '* * * * *' and a '*/5 * * * *' job each, defaults, $FLEET_MINUTES minutes"
	fleet_schedlock minutes "$N_FLEET" 0 $((FLEET_MINUTES * 60)) "" '* * * * *' '*/5 * * * *'
	sl_log "fleet: pg_cron $CRON_VER, the same jobs"
	fleet_pg_cron pg_cron_minutes "$N_FLEET" minute $((FLEET_MINUTES * 60)) '* * * * *' '*/5 * * * *'

	# more databases with frequent jobs than the budget, which is sized as
	# docs/operations.md says for the rest: the rotation must not storm
	put fleet.big.dbs "$N_FLEET_BIG"
	put fleet.big.budget 104
	sl_log "fleet: $N_FLEET_BIG databases with a '1 seconds' job each on a budget of 104"
	sq postgres -c "ALTER SYSTEM SET max_worker_processes = 112" \
		-c "ALTER SYSTEM SET schedlock.max_job_backends = 104" \
		-c "ALTER SYSTEM SET max_connections = 200" >/dev/null
	restart_schedlock
	fleet_schedlock big "$N_FLEET_BIG" 1 "$FLEET_SECONDS" "" '1 seconds'
	sq postgres -c "ALTER SYSTEM RESET max_worker_processes" \
		-c "ALTER SYSTEM RESET schedlock.max_job_backends" \
		-c "ALTER SYSTEM RESET max_connections" >/dev/null
	restart_schedlock
	set_workers 2
}

# --- 2d. lag during another role's burst ------------------------------------

bench_lagburst()
{
	sl_log "lagburst: a '1 seconds' job of role b while role a's burst of $N_BURST jobs runs (defaults)"
	set_workers default
	fresh_db lagb || return 1
	sq lagb -c "DO \$\$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'burst_a') THEN CREATE ROLE burst_a LOGIN; END IF;
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tick_b') THEN CREATE ROLE tick_b LOGIN; END IF;
		END \$\$" \
		-c "CREATE TABLE lag (started timestamptz)" -c "CREATE TABLE b (job int, started timestamptz)" \
		-c "GRANT INSERT ON lag TO tick_b" -c "GRANT INSERT ON b TO burst_a" \
		-c "GRANT INSERT ON schedlock.jobs TO burst_a, tick_b" >/dev/null
	sq lagb -c "SET ROLE tick_b" -c "SELECT schedlock.schedule_job('tick', '1 seconds', 'INSERT INTO public.lag VALUES (clock_timestamp())')" >/dev/null
	before_minute 20
	sq lagb -c "SET ROLE burst_a" -c "SELECT count(schedlock.schedule_job('b' || i, '* * * * *', 'INSERT INTO public.b VALUES (' || i || ', clock_timestamp())')) FROM generate_series(1, $N_BURST) i" >/dev/null
	sq lagb -c "TRUNCATE lag" >/dev/null
	wait_for sq lagb "SELECT count(*) FROM b" $N_BURST 120
	sleep 5
	sq lagb -c "UPDATE schedlock.jobs SET enabled = false"
	put_spread lagburst.tick "$(spread "SELECT extract(epoch FROM started - date_trunc('second', started)) * 1000 FROM lag ORDER BY started OFFSET 1" sq lagb)"
	put lagburst.tick.during_burst_ms "$(sq lagb -c "SELECT round(max(extract(epoch FROM started - date_trunc('second', started)) * 1000)::numeric, 2) FROM lag WHERE started BETWEEN (SELECT min(started) FROM b) - interval '10 ms' AND (SELECT max(started) FROM b) + interval '1 second'")"
	put lagburst.burst.last_finish_ms "$(sq lagb -c "SELECT round((extract(epoch FROM max(r.finished_at) - min(r.scheduled_for)) * 1000)::numeric, 1) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name LIKE 'b%'")"
	drop_db lagb
	set_workers 2
}

# --- 3. NOTIFY burst --------------------------------------------------------

N_NOTIFY=10000

bench_notify()
{
	local out slot got first last
	sl_log "notify: $N_NOTIFY NOTIFY jobs due at one instant, one listener"
	fresh_db notify || return 1
	warm_up notify
	before_minute 15
	sq notify -c "SELECT count(schedlock.schedule_job('n' || i, '* * * * *', notify_channel => 'bench', payload => jsonb_build_object('n', i))) FROM generate_series(1, $N_NOTIFY) i" >/dev/null
	slot=$(sq notify -c "SELECT extract(epoch FROM min(next_run_at)) FROM schedlock.jobs")
	out=$(sl_as_server "$B/listen" "host=$S_HOST port=$S_PORT user=postgres dbname=notify" bench $N_NOTIFY 120 | tail -n 1)
	sq notify -c "UPDATE schedlock.jobs SET enabled = false"
	read -r got first last <<<"$out"
	put notify.received "$got"
	put notify.first_ms "$(awk -v a="$first" -v s="$slot" 'BEGIN {printf "%.1f", (a - s) * 1000}')"
	put notify.last_ms "$(awk -v a="$last" -v s="$slot" 'BEGIN {printf "%.1f", (a - s) * 1000}')"
	put notify.runs "$(sq notify -c "SELECT count(*) FROM schedlock.job_runs WHERE status = 'pending'")"
	drop_db notify
}

# --- 4. scale ---------------------------------------------------------------

N_SCALE=${BENCH_SCALE_JOBS:-1000000}
N_SCALE_CRON=${BENCH_SCALE_CRON_JOBS:-100000}
SCALE_SECONDS=${BENCH_SCALE_SECONDS:-60}
# a schedule days ahead: minute, hour and day of a month two months on
FAR="format('%s %s %s %s *', i % 60, i % 24, 1 + i % 28, 1 + (extract(month FROM now())::int + 1) % 12)"

scheduler_pids()
{
	# $1: sq or cq; $2: backend_type pattern
	$1 postgres -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE backend_type LIKE '$2'"
}

bench_scale()
{
	local t0 t1 pids c0 c1 w0 w1 batches=$(((N_SCALE + 19999) / 20000))
	sl_log "scale: schedlock, $N_SCALE jobs days ahead"
	fresh_db scale || return 1
	sq scale -c "CREATE TABLE lag (started timestamptz)"
	# one session, 20,000 schedule_job calls per statement
	{
		echo "SELECT extract(epoch FROM clock_timestamp());"
		for i in $(seq 0 $((batches - 1))); do
			echo "SELECT count(schedlock.schedule_job('far' || i, $FAR, 'SELECT 1')) FROM generate_series($((i * 20000 + 1)), $((i * 20000 + 20000 < N_SCALE ? i * 20000 + 20000 : N_SCALE))) i;"
		done
		echo "SELECT extract(epoch FROM clock_timestamp());"
	} >"$B/scale.sql"
	chmod a+r "$B/scale.sql"
	read -r t0 t1 <<<"$(sq scale -f "$B/scale.sql" | sed -n '1p;$p' | tr '\n' ' ')"
	put scale.schedlock.jobs "$(sq scale -c "SELECT count(*) FROM schedlock.jobs")"
	put scale.schedlock.insert_per_s "$(awk -v a="$t0" -v b="$t1" -v n=$N_SCALE 'BEGIN {printf "%.0f", n / (b - a)}')"
	sq scale -c "VACUUM ANALYZE schedlock.jobs"
	sq scale -c "SELECT schedlock.schedule_job('tick', '1 seconds', 'INSERT INTO lag VALUES (clock_timestamp())')" >/dev/null
	sleep 3
	pids=$(scheduler_pids sq 'schedlock%')
	sq scale -c "TRUNCATE lag"
	c0=$(cpu_ticks $pids) w0=$(now_s)
	sleep "$SCALE_SECONDS"
	c1=$(cpu_ticks $pids) w1=$(now_s)
	sq scale -c "SELECT schedlock.alter_job('tick', enabled => false)" >/dev/null
	put scale.schedlock.cpu_pct "$(cpu_pct "$c0" "$c1" "$w0" "$w1")"
	put scale.schedlock.processes "$(echo $pids | wc -w)"
	put_spread scale.schedlock.lag "$(spread "SELECT extract(epoch FROM started - date_trunc('second', started)) * 1000 FROM lag" sq scale)"
	drop_db scale

	sl_log "scale: pg_cron, $N_SCALE_CRON jobs days ahead"
	pg_cron_start libpq || return 1
	cq postgres -c "DROP TABLE IF EXISTS lag" -c "CREATE TABLE lag (started timestamptz)"
	t0=$(cq postgres -c "SELECT extract(epoch FROM clock_timestamp())")
	cq postgres -c "SELECT count(cron.schedule('far' || i, $FAR, 'SELECT 1')) FROM generate_series(1, $N_SCALE_CRON) i" >/dev/null
	t1=$(cq postgres -c "SELECT extract(epoch FROM clock_timestamp())")
	put scale.pg_cron.insert_per_s "$(awk -v a="$t0" -v b="$t1" -v n=$N_SCALE_CRON 'BEGIN {printf "%.0f", n / (b - a)}')"
	cq postgres -c "SELECT cron.schedule('tick', '* * * * *', 'INSERT INTO lag VALUES (clock_timestamp())')" >/dev/null
	pids=$(scheduler_pids cq 'pg_cron%')
	c0=$(cpu_ticks $pids) w0=$(now_s)
	wait_for cq postgres "SELECT count(*) FROM lag" "$LAG_MINUTES" $((LAG_MINUTES * 60 + 70))
	c1=$(cpu_ticks $pids) w1=$(now_s)
	put scale.pg_cron.cpu_pct "$(cpu_pct "$c0" "$c1" "$w0" "$w1")"
	put scale.pg_cron.processes "$(echo $pids | wc -w)"
	put_spread scale.pg_cron.lag "$(spread "SELECT extract(epoch FROM started - date_trunc('minute', started)) * 1000 FROM lag" cq postgres)"
	cq postgres -c "SELECT count(cron.unschedule(jobid)) FROM cron.job" >/dev/null
}

# --- 5. claim throughput ----------------------------------------------------

N_CLAIM=50000

bench_claim()
{
	local w db c rpc k tps
	# the floor: one commit of a one-row INSERT per transaction
	sq postgres -c "DROP TABLE IF EXISTS floor_t" -c "CREATE TABLE floor_t (x int)"
	echo "INSERT INTO floor_t VALUES (1);" >"$B/claim_floor.sql"
	for c in 1 2 4; do
		tps=$(pgbench_tps postgres "$c" "$B/claim_floor.sql" -T 10 -M prepared)
		put "claim.floor.c$c.tps" "$(printf '%.0f' "$tps")"
	done
	sq postgres -c "DROP TABLE floor_t"
	for rpc in 1 32; do
		set_batch "$rpc"
		for w in 1 2 4; do
			db=claim$w
			k=claim.w$w
			[ "$rpc" = 1 ] || k=claim.w$w.rpc$rpc
			sl_log "claim: $N_CLAIM no-op jobs, $w job backends, $rpc runs per commit"
			set_workers "$w"
			fresh_db "$db" || return 1
			warm_up "$db"
			before_minute 25
			sq "$db" -c "SELECT count(schedlock.schedule_job('c' || i, '* * * * *', 'SELECT 1')) FROM generate_series(1, $N_CLAIM) i" >/dev/null
			wait_for sq "$db" "SELECT count(*) FROM schedlock.job_runs WHERE finished_at IS NOT NULL" $N_CLAIM 200
			sq "$db" -c "UPDATE schedlock.jobs SET enabled = false"
			put "$k.seconds" "$(sq "$db" -c "SELECT round(extract(epoch FROM max(finished_at) - min(scheduled_for))::numeric, 2) FROM schedlock.job_runs")"
			put "$k.per_s" "$(sq "$db" -c "SELECT round(count(*) / extract(epoch FROM max(finished_at) - min(scheduled_for))) FROM schedlock.job_runs")"
			put "$k.failed" "$(sq "$db" -c "SELECT count(*) FROM schedlock.job_runs WHERE status <> 'succeeded'")"
			drop_db "$db"
		done
	done
	set_batch 1
	set_workers 2
}

# --- 5b. steady load ----------------------------------------------------------

N_STEADY=300
STEADY_SECONDS=${BENCH_STEADY_SECONDS:-60}

bench_steady()
{
	local rpc
	set_workers default
	for rpc in ${BENCH_STEADY_RPC:-1 32}; do
		sl_log "steady: $N_STEADY '1 seconds' jobs for $STEADY_SECONDS s, $rpc runs per commit"
		set_batch "$rpc"
		fresh_db steady || return 1
		sq steady -c "CREATE TABLE lag (started timestamptz)" \
			-c "SELECT count(schedlock.schedule_job('s' || i, '1 seconds', 'INSERT INTO lag VALUES (clock_timestamp())')) FROM generate_series(1, $N_STEADY) i" >/dev/null
		sleep 5
		sq steady -c "TRUNCATE lag"
		sleep "$STEADY_SECONDS"
		sq steady -c "UPDATE schedlock.jobs SET enabled = false"
		put_spread "steady.rpc$rpc.lag" "$(spread "SELECT extract(epoch FROM started - date_trunc('second', started)) * 1000 FROM lag" sq steady)"
		drop_db steady
	done
	set_batch 1
	set_workers 2
}

# --- 6. locks ---------------------------------------------------------------

bench_locks()
{
	sl_log "locks: test/bench/lock_bench.sh"
	BENCH_OUT="$OUT/locks.md" bash test/bench/lock_bench.sh >"$B/locks.log" 2>&1 ||
		tail -n 20 "$B/locks.log"
}

for w in $ONLY; do
	case $w in
		lag) bench_lag ;;
		burst) bench_burst ;;
		tenants) bench_tenants ;;
		dbs) bench_dbs ;;
		fleet) bench_fleet ;;
		lagburst) bench_lagburst ;;
		notify) bench_notify ;;
		scale) bench_scale ;;
		claim) bench_claim ;;
		steady) bench_steady ;;
		locks) bench_locks ;;
		*) echo "unknown workload $w" >&2 ;;
	esac
done

sl_cluster_stop_all
bash test/bench/report.sh "$OUT" >"$OUT/BENCHMARKS.md"
cat "$OUT/BENCHMARKS.md"
rm -rf "$B"
