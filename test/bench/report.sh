#!/usr/bin/env bash
# test/bench/report.sh OUT - the markdown report of a test/bench/run.sh run,
# from OUT/results.tsv (and OUT/locks.md): a summary table with the targets,
# then the spread of every workload.  Figures missing from the run show as
# n/a.  Written by run.sh to OUT/BENCHMARKS.md.

set -u
OUT=${1:?usage: report.sh OUT}
RESULTS=$OUT/results.tsv

get()
{
	awk -F'\t' -v k="$1" '$1 == k {v = $2} END {print (v == "" ? "n/a" : v)}' "$RESULTS"
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
	local r
	r=$(calc "print (($1) ? \"met\" : \"**missed**\")" "${@:2}")
	echo "$r"
}

lag_s=$(get lag.schedlock.p99)
lag_c=$(get lag.pg_cron.p99)
lag_m=$(get lag.schedlock_minute.p99)
w2=$(get burst.schedlock.w2.last_finish_ms)
w4=$(get burst.schedlock.w4.last_finish_ms)
cl=$(get burst.pg_cron.libpq.last_finish_ms)
cb=$(get burst.pg_cron.bgw.last_finish_ms)
f2=$(get burst.floor.c2.ms)
f4=$(get burst.floor.c4.ms)
best_c=$(calc 'print (a < b ? a : b)' "$cl" "$cb")
share2=$(calc 'printf "%.0f", b / a * 100' "$w2" "$f2")
share4=$(calc 'printf "%.0f", b / a * 100' "$w4" "$f4")
nl=$(get notify.last_ms)
ins=$(get scale.schedlock.insert_per_s)
cpu=$(get scale.schedlock.cpu_pct)
cpu_c=$(get scale.pg_cron.cpu_pct)
slag=$(get scale.schedlock.lag.p99)
slag_c=$(get scale.pg_cron.lag.p99)
c1=$(get claim.w1.per_s)
c2=$(get claim.w2.per_s)
c4=$(get claim.w4.per_s)
best_claim=$(calc 'm = a; if (b > m) m = b; if (c > m) m = c; print m' "$c1" "$c2" "$c4")

cat <<EOF
## Benchmarks: schedlock and pg_cron

\`bash test/bench/run.sh\` on $(nproc) cores, PostgreSQL $(/usr/lib/postgresql/15/bin/postgres --version 2>/dev/null | awk '{print $3}'), pg_cron $(dpkg-query -W -f '${Version}' postgresql-15-cron 2>/dev/null | sed 's/-.*//'), $(date -u +%Y-%m-%d).
Both clusters durable (fsync and synchronous_commit on); one workload at a time.

| workload | schedlock | pg_cron | schedlock's lead | target | |
| --- | ---: | ---: | ---: | --- | --- |
| 1. start lag p99 (ms), a '1 seconds' job | $lag_s | | | <= 5 ms | $(verdict 'a <= 5' "$lag_s") |
| 1. start lag p99 (ms), a '* * * * *' job each | $lag_m | $lag_c | $(calc 'printf "%.0fx", b / a' "$lag_m" "$lag_c") | <= 5 ms | $(verdict 'a <= 5' "$lag_m") |
| 2. burst of 1000: last job finished (ms), default workers (2) | $w2 | libpq $cl | $(calc 'printf "%.0fx", b / a' "$w2" "$cl") | <= 1000 ms, >= 20x | $(verdict 'a <= 1000 && b / a >= 20' "$w2" "$best_c") |
| 2. burst of 1000, 4 workers / pg_cron background workers | $w4 | bgw $cb | $(calc 'printf "%.0fx", b / a' "$w4" "$cb") | <= 1000 ms, >= 20x | $(verdict 'a <= 1000 && b / a >= 20' "$w4" "$cb") |
| 2. burst: share of the pgbench floor (same INSERT, 2 / 4 clients: $f2 / $f4 ms) | $share2% / $share4% | | | >= 50 % | $(verdict 'a >= 50 && b >= 50' "$share2" "$share4") |
| 3. NOTIFY burst of 10000: last received (ms) | $nl | | | <= 1000 ms | $(verdict 'a <= 1000' "$nl") |
| 4. scale: schedule_job calls per second, one session | $ins | $(get scale.pg_cron.insert_per_s) (cron.schedule) | | >= 5000 | $(verdict 'a >= 5000' "$ins") |
| 4. scale: scheduler CPU, % of one core (1M jobs / pg_cron 100k) | $cpu | $cpu_c | | < 1 % | $(verdict 'a < 1' "$cpu") |
| 4. scale: start lag p99 (ms) with them | $slag | $slag_c | | within 2 ms of the empty case | $(verdict 'a - b <= 2' "$slag" "$lag_s") |
| 5. claim: no-op jobs per second, 1 / 2 / 4 workers | $c1 / $c2 / $c4 | | | >= 2000 | $(verdict 'a >= 2000' "$best_claim") |

### Spread

| workload | samples | min | median | p99 | max |
| --- | ---: | ---: | ---: | ---: | ---: |
EOF
row()
{
	echo "| $2 | $(get "$1.samples") | $(get "$1.min") | $(get "$1.median") | $(get "$1.p99") | $(get "$1.max") |"
}
row lag.schedlock "1. start lag (ms), schedlock '1 seconds' job"
row lag.schedlock_minute "1. start lag (ms), schedlock '* * * * *' job"
row lag.pg_cron "1. start lag (ms), pg_cron '* * * * *' job"
row burst.schedlock.w2.start "2. burst: start of each job after the instant (ms), schedlock, 2 workers"
row burst.schedlock.w4.start "2. burst: same, schedlock, 4 workers"
row burst.pg_cron.libpq.start "2. burst: same, pg_cron, libpq"
row burst.pg_cron.bgw.start "2. burst: same, pg_cron, background workers"
row scale.schedlock.lag "4. start lag (ms) with 1,000,000 jobs, schedlock"
row scale.pg_cron.lag "4. start lag (ms) with 100,000 jobs, pg_cron"

cat <<EOF

Burst, last job started (ms): schedlock $(get burst.schedlock.w2.last_start_ms) (2 workers), $(get burst.schedlock.w4.last_start_ms) (4 workers); pg_cron $(get burst.pg_cron.libpq.last_start_ms) (libpq), $(get burst.pg_cron.bgw.last_start_ms) (background workers).
Jobs that did not succeed: schedlock $(get burst.schedlock.w2.failed) / $(get burst.schedlock.w4.failed), pg_cron $(get burst.pg_cron.libpq.failed) / $(get burst.pg_cron.bgw.failed).
NOTIFY burst: $(get notify.received) of 10000 notifications received, the first $(get notify.first_ms) ms and the last $(get notify.last_ms) ms after the instant.
Claim: 50,000 jobs in $(get claim.w1.seconds) s / $(get claim.w2.seconds) s / $(get claim.w4.seconds) s with 1 / 2 / 4 workers.
Scale: $(get scale.schedlock.jobs) schedlock jobs; CPU of the $(get scale.schedlock.processes) scheduler processes (launcher and workers) over 60 s; pg_cron's launcher over the minutes of 3 samples (its libpq job connections not counted).
EOF

if [ -s "$OUT/locks.md" ]; then
	echo
	echo "### Locks"
	echo
	cat "$OUT/locks.md"
fi
