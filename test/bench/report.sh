#!/usr/bin/env bash
# test/bench/report.sh OUT [NEW] - the markdown report of test/bench/run.sh
# runs: a summary table with the targets, then the spread of every workload.
#
# OUT/results.tsv is the run on this machine's PostgreSQL 15 with Debian 12's
# pg_cron 1.4.2; NEW (default: the last OUT/pg*/ holding a results.tsv, as
# test/bench/matrix.sh leaves it) is a run on a newer PostgreSQL with its
# release's pg_cron (1.6 on PostgreSQL 17, Debian 13).  With NEW the tables
# carry both runs side by side; each run's versions and date come from its
# own meta.* lines.  Figures missing from a run show as n/a (a workload not
# run) or as an empty cell (pg_cron before 1.5 has no "1 seconds" schedule).
# Written by run.sh to OUT/BENCHMARKS.md, and by matrix.sh.

set -u
OUT=${1:?usage: report.sh OUT [NEW]}
NEW=${2:-}
if [ -z "$NEW" ]; then
	for d in "$OUT"/pg*/; do
		[ -s "$d/results.tsv" ] && NEW=${d%/}
	done
fi
A=$OUT/results.tsv
Bf=""
[ -n "$NEW" ] && [ -s "$NEW/results.tsv" ] && Bf=$NEW/results.tsv

# get KEY [FILE] : one figure of a run (default the first run); n/a if absent
get()
{
	local f=${2:-$A}
	[ -s "$f" ] || { echo n/a; return; }
	awk -F'\t' -v k="$1" '$1 == k {v = $2} END {print (v == "" ? "n/a" : v)}' "$f"
}

# calc EXPR VARS... : awk arithmetic on figures; n/a when one is missing
calc()
{
	local expr=$1 a
	shift
	for a in "$@"; do
		case $a in n/a | "") echo "n/a"; return ;; esac
	done
	awk -v a="${1:-0}" -v b="${2:-0}" -v c="${3:-0}" "BEGIN {$expr}"
}

# verdict CONDITION VARS... : "met" / "**missed**" / "n/a"
verdict()
{
	calc "print (($1) ? \"met\" : \"**missed**\")" "${@:2}"
}

# lead SCHEDLOCK PG_CRON : how many times smaller schedlock's figure is
lead()
{
	calc 'printf "%.0fx", b / a' "$1" "$2"
}

# label FILE : "PostgreSQL 15.x, pg_cron 1.4.2" of a run
label()
{
	local v c
	v=$(get meta.pg_version "$1")
	c=$(get meta.pg_cron "$1")
	# runs from before the meta lines: this machine's PostgreSQL 15
	[ "$v" = n/a ] && v=$(/usr/lib/postgresql/15/bin/postgres --version 2>/dev/null | awk '{print $3}')
	[ "$c" = n/a ] && c=$(dpkg-query -W -f '${Version}' postgresql-15-cron 2>/dev/null | sed 's/-.*//')
	echo "PostgreSQL ${v:-15}, pg_cron ${c:-n/a}"
}

# ratio A B [FILE] : figure A over figure B as a whole percentage ("n/a"
# when either is missing)
ratio()
{
	awk -v a="$(get "$1" "$3")" -v b="$(get "$2" "$3")" \
		'BEGIN { if (a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.0f %%", 100 * a / b }'
}

# short FILE : "PG 15" of a run
short()
{
	local m
	m=$(get meta.pg_major "$1")
	[ "$m" = n/a ] && m=15
	echo "PG $m"
}

# cron_short FILE : "pg_cron 1.4.2" of a run
cron_short()
{
	local c
	c=$(get meta.pg_cron "$1")
	[ "$c" = n/a ] && c=$(dpkg-query -W -f '${Version}' postgresql-15-cron 2>/dev/null | sed 's/-.*//')
	echo "pg_cron ${c:-?}"
}

# when FILE : "<date>, <os>, <n> cores" of a run
when()
{
	local d o c
	d=$(get meta.date "$1") o=$(get meta.os "$1") c=$(get meta.cores "$1")
	[ "$o" = n/a ] && o=""
	[ "$c" = n/a ] && c="" || c="$c cores"
	echo "measured ${d/#n\/a/on an earlier date}${o:+, $o}${c:+, $c}"
}

# seconds_cron FILE : pg_cron's "1 seconds" job, p99 (ms) of the mode with
# the lower one, "p99 (mode)"; empty when the run has none
seconds_cron()
{
	local l b
	l=$(get lag.pg_cron_second.libpq.p99 "$1")
	b=$(get lag.pg_cron_second.bgw.p99 "$1")
	if [ "$l" = n/a ] && [ "$b" = n/a ]; then
		echo ""
	elif [ "$b" = n/a ] || { [ "$l" != n/a ] && awk -v l="$l" -v b="$b" 'BEGIN {exit !(l <= b)}'; }; then
		echo "$l (libpq)"
	else
		echo "$b (bgw)"
	fi
}

# cells FILE ROW : the "schedlock | pg_cron | lead" cells of summary row ROW
# for one run, then a tab and the verdict of that run
cells()
{
	local f=$1 s c best
	case $2 in
		lag1s)
			s=$(get lag.schedlock.p99 "$f")
			c=$(seconds_cron "$f")
			printf '%s | %s | %s\t%s' "$s" "$c" "$([ -n "$c" ] && lead "$s" "${c%% *}")" "$(verdict 'a <= 5' "$s")"
			;;
		lagm)
			s=$(get lag.schedlock_minute.p99 "$f")
			c=$(get lag.pg_cron.p99 "$f")
			printf '%s | %s | %s\t%s' "$s" "$c" "$(lead "$s" "$c")" "$(verdict 'a <= 5' "$s")"
			;;
		burst2)
			s=$(get burst.schedlock.w2.last_finish_ms "$f")
			c=$(get burst.pg_cron.libpq.last_finish_ms "$f")
			best=$(calc 'print (a < b ? a : b)' "$c" "$(get burst.pg_cron.bgw.last_finish_ms "$f")")
			printf '%s | libpq %s | %s\t%s' "$s" "$c" "$(lead "$s" "$c")" "$(verdict 'a <= 1000 && b / a >= 20' "$s" "$best")"
			;;
		burst4)
			s=$(get burst.schedlock.w4.last_finish_ms "$f")
			c=$(get burst.pg_cron.bgw.last_finish_ms "$f")
			printf '%s | bgw %s | %s\t%s' "$s" "$c" "$(lead "$s" "$c")" "$(verdict 'a <= 1000 && b / a >= 20' "$s" "$c")"
			;;
		share)
			local s2 s4
			s2=$(calc 'printf "%.0f", b / a * 100' "$(get burst.schedlock.w2.last_finish_ms "$f")" "$(get burst.floor.c2.ms "$f")")
			s4=$(calc 'printf "%.0f", b / a * 100' "$(get burst.schedlock.w4.last_finish_ms "$f")" "$(get burst.floor.c4.ms "$f")")
			printf '%s / %s (floor %s / %s ms) | | \t%s' "${s2/%[0-9]/&%}" "${s4/%[0-9]/&%}" "$(get burst.floor.c2.ms "$f")" \
				"$(get burst.floor.c4.ms "$f")" "$(verdict 'a >= 50 && b >= 50' "$s2" "$s4")"
			;;
		burstd)
			s=$(get burst.schedlock.wdefault.last_finish_ms "$f")
			c=$(get burst.schedlock.w1.last_finish_ms "$f")
			printf '%s / %s | | \t%s' "$s" "$c" "$(verdict 'a <= 1000' "$s")"
			;;
		share1)
			local sd s1
			sd=$(calc 'printf "%.0f", b / a * 100' "$(get burst.schedlock.wdefault.last_finish_ms "$f")" "$(get burst.floor.c2.ms "$f")")
			s1=$(calc 'printf "%.0f", b / a * 100' "$(get burst.schedlock.w1.last_finish_ms "$f")" "$(get burst.floor.c1.ms "$f")")
			printf '%s / %s (floor %s / %s ms) | | \t%s' "${sd/%[0-9]/&%}" "${s1/%[0-9]/&%}" "$(get burst.floor.c2.ms "$f")" \
				"$(get burst.floor.c1.ms "$f")" "$(verdict 'a >= 50' "$s1")"
			;;
		tenants)
			s=$(get tenants.schedlock.last_finish_ms "$f")
			c=$(get tenants.pg_cron.last_finish_ms "$f")
			printf '%s (floor %s) | bgw %s | %s\t%s' "$s" "$(get tenants.floor.ms "$f")" "$c" "$(lead "$s" "$c")" "$(verdict 'a <= 2000' "$s")"
			;;
		dbs8)
			s=$(get dbs.default.lag.p99 "$f")
			printf '%s (floor %s / %s ms for all 32 with 3 / 4 backends; %s of 32 databases ran; %s processes, %s kB PSS) | bgw %s, p99 %s (%s of 32 ran; %s processes between runs, %s kB PSS) | \t%s' "$s" \
				"$(get dbs.floor.c3.ms "$f")" "$(get dbs.floor.c4.ms "$f")" \
				"$(get dbs.default.databases_with_runs "$f")" "$(get dbs.default.processes "$f")" \
				"$(get dbs.default.pss_kb "$f")" "'$(get dbs.pg_cron.schedule "$f")'" "$(get dbs.pg_cron.lag.p99 "$f")" \
				"$(get dbs.pg_cron.databases_with_runs "$f")" "$(get dbs.pg_cron.processes "$f")" \
				"$(get dbs.pg_cron.pss_kb "$f")" "$(verdict 'a <= 500' "$s")"
			;;
		dbsmany)
			s=$(get dbs.enough.lag.p99 "$f")
			printf '%s (%s processes, %s kB PSS) | | \t%s' "$s" "$(get dbs.enough.processes "$f")" \
				"$(get dbs.enough.pss_kb "$f")" "$(verdict 'a <= 5' "$s")"
			;;
		fleetslots)
			s=$(ratio fleet.seconds.within_1s fleet.seconds.slots "$f")
			printf '%s (%s of %s; lag p50 / p99 %s / %s ms; %s starts/s) | %s of the slots ran (%s runs) | \t%s' "$s" \
				"$(get fleet.seconds.within_1s "$f")" "$(get fleet.seconds.slots "$f")" \
				"$(get fleet.seconds.lag.median "$f")" "$(get fleet.seconds.lag.p99 "$f")" \
				"$(get fleet.seconds.starts_per_s "$f")" "$(ratio fleet.pg_cron_seconds.runs fleet.seconds.slots "$f")" \
				"$(get fleet.pg_cron_seconds.runs "$f")" "$(verdict 'a >= 100' "${s% %}")"
			;;
		fleetone)
			s=$(ratio fleet.onerole.within_1s fleet.onerole.slots "$f")
			printf '%s (lag p50 / p99 %s / %s ms; %s starts/s; %s %% of a core) | | \t%s' "$s" \
				"$(get fleet.onerole.lag.median "$f")" "$(get fleet.onerole.lag.p99 "$f")" \
				"$(get fleet.onerole.starts_per_s "$f")" "$(get fleet.onerole.cpu_pct "$f")" "$(verdict 'a >= 100' "${s% %}")"
			;;
		fleetcpu)
			s=$(get fleet.seconds.cpu_pct "$f")
			c=$(get fleet.pg_cron_seconds.cpu_pct "$f")
			printf '%s (SELECT 1 p99 %s ms) | %s (SELECT 1 p99 %s ms) | %s\t%s' "$s" "$(get fleet.seconds.select1.p99 "$f")" \
				"$c" "$(get fleet.pg_cron_seconds.select1.p99 "$f")" "$(lead "$s" "$c")" \
				"$(verdict 'a < b && c < 10' "$s" "$c" "$(get fleet.seconds.select1.p99 "$f")")"
			;;
		fleetmin)
			s=$(get fleet.minutes.lag.p99 "$f")
			c=$(get fleet.pg_cron_minutes.lag.p99 "$f")
			printf '%s (%s %% of a core) | bgw %s (%s %% of a core) | %s\t%s' "$s" "$(get fleet.minutes.cpu_pct "$f")" \
				"$c" "$(get fleet.pg_cron_minutes.cpu_pct "$f")" "$(lead "$s" "$c")" \
				"$(verdict 'a <= b' "$(get fleet.minutes.cpu_pct "$f")" "$(get fleet.pg_cron_minutes.cpu_pct "$f")")"
			;;
		fleetbig)
			printf '%s starts/s, %s %% of a core, SELECT 1 p99 %s ms; %s of the slots within 1 s | | \t%s' \
				"$(get fleet.big.starts_per_s "$f")" "$(get fleet.big.cpu_pct "$f")" "$(get fleet.big.select1.p99 "$f")" \
				"$(ratio fleet.big.within_1s fleet.big.slots "$f")" "$(verdict 'a < 10' "$(get fleet.big.select1.p99 "$f")")"
			;;
		lagburst)
			s=$(get lagburst.tick.p99 "$f")
			printf '%s (during the burst: %s) | | \t%s' "$s" "$(get lagburst.tick.during_burst_ms "$f")" "$(verdict 'a <= 5' "$s")"
			;;
		notify)
			s=$(get notify.last_ms "$f")
			printf '%s | | \t%s' "$s" "$(verdict 'a <= 1000' "$s")"
			;;
		insert)
			s=$(get scale.schedlock.insert_per_s "$f")
			printf '%s | %s (cron.schedule) | \t%s' "$s" "$(get scale.pg_cron.insert_per_s "$f")" "$(verdict 'a >= 5000' "$s")"
			;;
		cpu)
			s=$(get scale.schedlock.cpu_pct "$f")
			printf '%s | %s | \t%s' "$s" "$(get scale.pg_cron.cpu_pct "$f")" "$(verdict 'a < 1' "$s")"
			;;
		scalelag)
			s=$(get scale.schedlock.lag.p99 "$f")
			c=$(get scale.pg_cron.lag.p99 "$f")
			printf '%s | %s | %s\t%s' "$s" "$c" "$(lead "$s" "$c")" \
				"$(verdict 'a - b <= 2' "$s" "$(get lag.schedlock.p99 "$f")")"
			;;
		claim)
			local c1 c2 c4
			c1=$(get claim.w1.per_s "$f") c2=$(get claim.w2.per_s "$f") c4=$(get claim.w4.per_s "$f")
			best=$(calc 'm = a; if (b > m) m = b; if (c > m) m = c; print m' "$c1" "$c2" "$c4")
			printf '%s / %s / %s | | \t%s' "$c1" "$c2" "$c4" "$(verdict 'a >= 2000' "$best")"
			;;
	esac
}

# summary ROW TEXT TARGET : one row of the summary table
summary()
{
	local a b
	a=$(cells "$A" "$1")
	if [ -n "$Bf" ]; then
		b=$(cells "$Bf" "$1")
		echo "| $2 | ${a%%$'\t'*} | ${b%%$'\t'*} | $3 | ${a#*$'\t'} / ${b#*$'\t'} |"
	else
		echo "| $2 | ${a%%$'\t'*} | $3 | ${a#*$'\t'} |"
	fi
}

echo "## Benchmarks: schedlock and pg_cron"
echo
if [ -s "$A" ]; then
	echo "\`bash test/bench/run.sh\`: $(label "$A"), $(when "$A")."
else
	echo "No PostgreSQL 15 run in $OUT (\`bash test/bench/run.sh\` makes one): its columns are n/a."
fi
if [ -n "$Bf" ]; then
	echo "\`bash test/bench/matrix.sh\` (run.sh with SL_PGVER=$(get meta.pg_major "$Bf") in a chroot): $(label "$Bf"), $(when "$Bf"); schedlock and pg_cron both on that server version."
fi
echo "All clusters durable (fsync and synchronous_commit on); one workload at a time."
echo
sa="schedlock ($(short "$A"))"
ca="$(cron_short "$A") ($(short "$A"))"
if [ -n "$Bf" ]; then
	sb="schedlock ($(short "$Bf"))"
	cb="$(cron_short "$Bf") ($(short "$Bf"))"
	echo "| workload | $sa | $ca | lead | $sb | $cb | lead | target | $(short "$A") / $(short "$Bf") |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"
else
	echo "| workload | $sa | $ca | schedlock's lead | target | |"
	echo "| --- | ---: | ---: | ---: | --- | --- |"
fi
summary lag1s "1. start lag p99 (ms), a '1 seconds' job (pg_cron 1.5+: best of libpq / bgw)" "<= 5 ms"
summary lagm "1. start lag p99 (ms), a '* * * * *' job each" "<= 5 ms"
summary burst2 "2. burst of 1000: last job finished (ms), 2 job backends / pg_cron libpq" "<= 1000 ms, >= 20x"
summary burst4 "2. burst of 1000, 4 job backends / pg_cron background workers" "<= 1000 ms, >= 20x"
summary share "2. burst: share of the pgbench floor (same INSERT, 2 / 4 clients)" ">= 50 %"
summary burstd "2. burst of 1000: last job finished (ms), default settings / 1 job backend" "<= 1000 ms"
summary share1 "2. burst: share of the floor, default settings (2 clients) / 1 backend (1 client)" ">= 50 %"
summary tenants "2b. 100 roles x 10 jobs at one instant: last finished (ms)" "<= 2000 ms"
summary dbs8 "2c. 32 databases, '1 seconds' job each, max_worker_processes 8: start lag p99 (ms)" "<= 500 ms"
summary dbsmany "2c. the same with a backend per database: start lag p99 (ms)" "<= 5 ms"
summary fleetslots "2e. 100 databases, '1 seconds' job each (a role each), defaults: slots started within 1 s of their instant" "all"
summary fleetone "2e. the same jobs, all of one role (schedlock.max_runs_per_role 3): slots within 1 s" "all"
summary fleetcpu "2e. the same: the cluster's CPU, % of a core (postmaster and every child)" "below pg_cron's; SELECT 1 p99 < 10 ms"
summary fleetmin "2e. 100 databases, '* * * * *' and '*/5' job each: start lag p99 (ms)" "CPU not above pg_cron's"
summary fleetbig "2e. 200 databases, '1 seconds' job each, a budget of 104: rotation" "no storm"
summary lagburst "2d. start lag p99 (ms) of a '1 seconds' job while another role's burst runs" "<= 5 ms"
summary notify "3. NOTIFY burst of 10000: last received (ms)" "<= 1000 ms"
summary insert "4. scale: schedule_job calls per second, one session" ">= 5000"
summary cpu "4. scale: scheduler CPU, % of one core (1M jobs / pg_cron 100k)" "< 1 %"
summary scalelag "4. scale: start lag p99 (ms) with them" "within 2 ms of the empty case"
summary claim "5. claim: no-op jobs per second, 1 / 2 / 4 job backends" ">= 2000"

echo
echo "### Spread"
echo
echo "| run | workload | samples | min | median | p99 | max |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"

# row FILE KEY TEXT : one spread row, left out when the run lacks it
row()
{
	[ "$(get "$2.samples" "$1")" = n/a ] && return
	echo "| $(short "$1") | $3 | $(get "$2.samples" "$1") | $(get "$2.min" "$1") | $(get "$2.median" "$1") | $(get "$2.p99" "$1") | $(get "$2.max" "$1") |"
}
for f in "$A" $Bf; do
	cr=$(cron_short "$f")
	row "$f" lag.schedlock "1. start lag (ms), schedlock '1 seconds' job"
	row "$f" lag.pg_cron_second.libpq "1. start lag (ms), $cr '1 seconds' job, libpq (after its due time: the previous start + 1 s)"
	row "$f" lag.pg_cron_second.bgw "1. start lag (ms), $cr '1 seconds' job, background workers (same)"
	row "$f" lag.schedlock_minute "1. start lag (ms), schedlock '* * * * *' job"
	row "$f" lag.pg_cron "1. start lag (ms), $cr '* * * * *' job"
	row "$f" burst.schedlock.w2.start "2. burst: start of each job after the instant (ms), schedlock, 2 workers"
	row "$f" burst.schedlock.w4.start "2. burst: same, schedlock, 4 workers"
	row "$f" burst.pg_cron.libpq.start "2. burst: same, $cr, libpq"
	row "$f" burst.pg_cron.bgw.start "2. burst: same, $cr, background workers"
	row "$f" scale.schedlock.lag "4. start lag (ms) with $(get scale.schedlock.jobs "$f") jobs, schedlock"
	row "$f" scale.pg_cron.lag "4. start lag (ms) with the scale run's jobs, $cr"
done

echo
for f in "$A" $Bf; do
	echo "$(short "$f"), $(cron_short "$f") (cron.max_running_jobs = $(get meta.cron_max_running_jobs "$f")):"
	if [ "$(get lag.pg_cron_second.libpq.period_ms "$f")$(get lag.pg_cron_second.bgw.period_ms "$f")" != n/an/a ]; then
		echo "pg_cron's '1 seconds' job started every $(get lag.pg_cron_second.libpq.period_ms "$f") ms (libpq) / $(get lag.pg_cron_second.bgw.period_ms "$f") ms (background workers) on average (schedlock's: every 1000 ms, on the second)."
	fi
	echo "Burst, last job started (ms): schedlock $(get burst.schedlock.w2.last_start_ms "$f") (2 workers), $(get burst.schedlock.w4.last_start_ms "$f") (4 workers); pg_cron $(get burst.pg_cron.libpq.last_start_ms "$f") (libpq), $(get burst.pg_cron.bgw.last_start_ms "$f") (background workers)."
	echo "Jobs that did not succeed: schedlock $(get burst.schedlock.w2.failed "$f") / $(get burst.schedlock.w4.failed "$f"), pg_cron $(get burst.pg_cron.libpq.failed "$f") / $(get burst.pg_cron.bgw.failed "$f")."
	echo "NOTIFY burst: $(get notify.received "$f") of 10000 notifications received, the first $(get notify.first_ms "$f") ms and the last $(get notify.last_ms "$f") ms after the instant."
	echo "Claim: 50,000 jobs in $(get claim.w1.seconds "$f") s / $(get claim.w2.seconds "$f") s / $(get claim.w4.seconds "$f") s with 1 / 2 / 4 workers."
	echo "Scale: $(get scale.schedlock.jobs "$f") schedlock jobs; CPU of the $(get scale.schedlock.processes "$f") scheduler processes (launcher and workers); pg_cron's launcher over the minutes of its lag samples (its libpq job connections not counted)."
	echo
done

# the claim path: runs committed alone and up to 32 per commit, beside the
# floor measured in the same run
for f in "$A" $Bf; do
	[ "$(get claim.floor.c1.tps "$f")$(get steady.rpc1.lag.samples "$f")" = n/an/a ] && continue
	echo "### Claim path, $(short "$f")"
	echo
	echo "| workload | 1 job backend | 2 | 4 | the floor (pgbench, 1 / 2 / 4 clients) |"
	echo "| --- | ---: | ---: | ---: | --- |"
	echo "| no-op jobs claimed per second, each run committed alone | $(get claim.w1.per_s "$f") | $(get claim.w2.per_s "$f") | $(get claim.w4.per_s "$f") | one-row INSERT: $(get claim.floor.c1.tps "$f") / $(get claim.floor.c2.tps "$f") / $(get claim.floor.c4.tps "$f") tps |"
	echo "| the same, schedlock.runs_per_commit = 32 | $(get claim.w1.rpc32.per_s "$f") | $(get claim.w2.rpc32.per_s "$f") | $(get claim.w4.rpc32.per_s "$f") | |"
	echo "| share of the floor with as many clients, each run committed alone | $(ratio claim.w1.per_s claim.floor.c1.tps "$f") | $(ratio claim.w2.per_s claim.floor.c2.tps "$f") | $(ratio claim.w4.per_s claim.floor.c4.tps "$f") | |"
	echo "| 1000 INSERT jobs at one instant, last finished (ms), each run committed alone | $(get burst.schedlock.w1.last_finish_ms "$f") | $(get burst.schedlock.w2.last_finish_ms "$f") | $(get burst.schedlock.w4.last_finish_ms "$f") | the same 1000 INSERTs: $(get burst.floor.c1.ms "$f") / $(get burst.floor.c2.ms "$f") / $(get burst.floor.c4.ms "$f") ms |"
	echo "| the same, schedlock.runs_per_commit = 32 | $(get burst.schedlock.w1.rpc32.last_finish_ms "$f") | $(get burst.schedlock.w2.rpc32.last_finish_ms "$f") | $(get burst.schedlock.w4.rpc32.last_finish_ms "$f") | |"
	echo "| share of the floor (its time over the burst's), each run committed alone | $(ratio burst.floor.c1.ms burst.schedlock.w1.last_finish_ms "$f") | $(ratio burst.floor.c2.ms burst.schedlock.w2.last_finish_ms "$f") | $(ratio burst.floor.c4.ms burst.schedlock.w4.last_finish_ms "$f") | |"
	echo "| the same, schedlock.runs_per_commit = 32 | $(ratio burst.floor.c1.ms burst.schedlock.w1.rpc32.last_finish_ms "$f") | $(ratio burst.floor.c2.ms burst.schedlock.w2.rpc32.last_finish_ms "$f") | $(ratio burst.floor.c4.ms burst.schedlock.w4.rpc32.last_finish_ms "$f") | |"
	if [ "$(get burst.schedlock.w4.backend_first_ms "$f")" != n/a ]; then
		echo "| the burst's job backends, each one's first start after the instant (ms), each run committed alone | $(get burst.schedlock.w1.backend_first_ms "$f") | $(get burst.schedlock.w2.backend_first_ms "$f") | $(get burst.schedlock.w4.backend_first_ms "$f") | |"
		echo "| the same, schedlock.runs_per_commit = 32 | $(get burst.schedlock.w1.rpc32.backend_first_ms "$f") | $(get burst.schedlock.w2.rpc32.backend_first_ms "$f") | $(get burst.schedlock.w4.rpc32.backend_first_ms "$f") | |"
	fi
	echo
	echo "| steady load: 300 '1 seconds' jobs of one role, default backends | samples | median (ms) | p99 (ms) | max (ms) |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	# every runs_per_commit the run measured (BENCH_STEADY_RPC)
	for r in $(awk -F'\t' '$1 ~ /^steady\.rpc[0-9]+\.lag\.samples$/ { split($1, k, "."); sub("rpc", "", k[2]); print k[2] }' "$f" | sort -n -u); do
		if [ "$r" = 1 ]; then
			setting="each run committed alone"
		else
			setting="schedlock.runs_per_commit = $r"
		fi
		echo "| $setting | $(get steady.rpc$r.lag.samples "$f") | $(get steady.rpc$r.lag.median "$f") | $(get steady.rpc$r.lag.p99 "$f") | $(get steady.rpc$r.lag.max "$f") |"
	done
	echo
done

if [ -s "$OUT/locks.md" ]; then
	echo "### Locks"
	echo
	cat "$OUT/locks.md"
fi
