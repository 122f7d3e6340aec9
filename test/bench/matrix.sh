#!/usr/bin/env bash
# test/bench/matrix.sh - the scheduler benchmark against Debian 12's pg_cron
# 1.4.2 on PostgreSQL 15 (this machine) and against pg_cron 1.6 on
# PostgreSQL 17 (Debian 13 "trixie", in a chroot), and one report of both.
#
#   bash test/bench/matrix.sh        (as root, on Debian 12)
#
# 1. builds a trixie root with test/roots.sh (debootstrap from Debian's
#    archive, postgresql-17, its -dev, pgtap, postgresql-17-cron, gnuplot-nox),
#    before any benchmark runs, so that it does not load the machine during
#    one;
# 2. PostgreSQL 15: bash test/bench/run.sh on this machine, all workloads
#    (BENCH_ONLY_15), into test/bench/out/;
# 3. PostgreSQL 17: the tree copied into the root, SL_PGVER=17 bash
#    test/bench/run.sh there, the scheduler workloads (BENCH_ONLY_17: lag,
#    burst, scale), schedlock and pg_cron 1.6 both on PostgreSQL 17, into
#    test/bench/out/pg17/;
# 4. bash test/bench/report.sh test/bench/out > test/bench/out/BENCHMARKS.md:
#    the tables with both runs side by side.
# About 40 minutes for 15 and 15 for 17 (plus the root: 5-10 minutes).
#
# Every server listens on a Unix socket only and is stopped by run.sh, also
# when it is interrupted; on exit (or INT/TERM) this script ends whatever
# still runs in the root (TERM, then KILL after 30 s), unmounts what is left
# and deletes its scratch directory with the root (unless SL_KEEP).
#
# Settings (environment):
#   BENCH_MATRIX="15 17"    the runs (17: trixie; 18: sid, pg_cron 1.6 too)
#   BENCH_ONLY_15           workloads on 15 (default all)
#   BENCH_ONLY_17           workloads on 17 and 18 (default "lag burst scale")
#   BENCH_ROOT=DIR          use DIR, a root prepare_root made (with
#                           gnuplot-nox, or run.sh installs it), instead of
#                           building one; it is kept
#   BENCH_TIMEOUT=5400      seconds one run may take
#   BENCH_OUT               output directory (default test/bench/out)
#   BENCH_LAG_SAMPLES, BENCH_LAG_MINUTES, BENCH_SCALE_*: passed on to both
#                           runs (short trial runs; see run.sh)
#   SL_MIRROR, SL_KEEP      as in test/matrix.sh

set -u
cd "$(dirname "$0")/../.." || exit 2
SRC=$(pwd)

BENCH_MATRIX=${BENCH_MATRIX:-"15 17"}
BENCH_ONLY_15=${BENCH_ONLY_15:-"lag burst notify scale claim locks"}
BENCH_ONLY_17=${BENCH_ONLY_17:-"lag burst scale"}
BENCH_ROOT=${BENCH_ROOT:-}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-5400}
OUT=${BENCH_OUT:-$SRC/test/bench/out}
SL_MIRROR=${SL_MIRROR:-http://deb.debian.org/debian}
SL_KEEP=${SL_KEEP:-}
# knobs passed on to every run.sh
PASS=""
for k in BENCH_LAG_SAMPLES BENCH_LAG_MINUTES BENCH_SCALE_JOBS BENCH_SCALE_CRON_JOBS BENCH_SCALE_SECONDS; do
	[ -n "${!k:-}" ] && PASS="$PASS $k=${!k}"
done

# release_of, root_pids, in_root, prepare_root, unmount_under, run_logged
source test/roots.sh

log()
{
	printf '[%s] bench matrix: %s\n' "$(date +%H:%M:%S)" "$*"
}

if [ "$(id -u)" -ne 0 ]; then
	echo "test/bench/matrix.sh: needs root (debootstrap, chroot)" >&2
	exit 2
fi
for v in $BENCH_MATRIX; do
	case $(release_of "$v") in
		none)
			echo "test/bench/matrix.sh: no Debian release known for PostgreSQL $v" >&2
			exit 2
			;;
	esac
done

mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/schedlock-benchmatrix.XXXXXX)
chmod 755 "$WORK"
log "scratch directory $WORK"
CHILD=""
ROOTS=""

# stop_root ROOT : end what still runs in ROOT: first 60 s for an
# interrupted run.sh to stop its servers itself, then TERM to all, then KILL
# what is left after 30 s more
stop_root()
{
	local r=$1 pids i
	for i in $(seq 1 60); do
		pids=$(root_pids "$r")
		[ -n "$pids" ] || return 0
		sleep 1
	done
	log "ending processes left in $r: $(echo $pids)"
	kill -TERM $pids 2>/dev/null
	for i in $(seq 1 30); do
		sleep 1
		pids=$(root_pids "$r")
		[ -n "$pids" ] || return 0
	done
	kill -9 $pids 2>/dev/null
	sleep 1
}

# cleanup : end the run in progress, anything left in the roots, unmount
# leftovers, delete the scratch directory and the tree copied into a
# BENCH_ROOT
cleanup()
{
	local r
	trap - EXIT INT TERM
	if [ -n "$CHILD" ]; then
		# the timeout of the run in progress, and (on 15) run.sh itself
		pkill -TERM -P "$CHILD" 2>/dev/null
		wait "$CHILD" 2>/dev/null
	fi
	for r in $ROOTS; do
		stop_root "$r"
		unmount_under "$r"
	done
	[ -n "$BENCH_ROOT" ] && rm -rf "$BENCH_ROOT/schedlock-bench"
	if [ -z "$SL_KEEP" ]; then
		rm -rf --one-file-system "$WORK"
	else
		log "kept $WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. the roots, before any benchmark
declare -A ROOT_OF
for v in $BENCH_MATRIX; do
	[ "$(release_of "$v")" = host ] && continue
	if [ -n "$BENCH_ROOT" ]; then
		ROOT_OF[$v]=$BENCH_ROOT
		ROOTS="$ROOTS $BENCH_ROOT"
	else
		roots_ensure_tools || exit 2
		ROOTS="$ROOTS $WORK/root-$v"
		SL_ROOT_PACKAGES=gnuplot-nox prepare_root "$v" || {
			log "PostgreSQL $v: preparing the root FAILED"
			exit 1
		}
		ROOT_OF[$v]=$WORK/root-$v
	fi
done

failed=0
for v in $BENCH_MATRIX; do
	t0=$(date +%s)
	if [ "$(release_of "$v")" = host ]; then
		# 2. this machine
		log "PostgreSQL $v: test/bench/run.sh ($BENCH_ONLY_15)"
		run_logged "$WORK/bench-$v.log" "$BENCH_TIMEOUT" env $PASS BENCH_ONLY="$BENCH_ONLY_15" BENCH_OUT="$OUT" \
			SL_PGVER="$v" bash test/bench/run.sh || failed=1
	else
		# 3. in the root
		root=${ROOT_OF[$v]}
		rm -rf "$root/schedlock-bench"
		mkdir "$root/schedlock-bench"
		tar --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
			--exclude=./test/bench/out -cf - . | tar -xf - -C "$root/schedlock-bench"
		log "PostgreSQL $v: test/bench/run.sh in the $(release_of "$v") root ($BENCH_ONLY_17)"
		run_logged "$WORK/bench-$v.log" "$BENCH_TIMEOUT" bash -c "$(declare -f in_root); in_root \"\$@\"" in_root "$root" \
			env $PASS BENCH_ONLY="$BENCH_ONLY_17" BENCH_OUT=/schedlock-bench/test/bench/out \
			SL_PGVER="$v" bash /schedlock-bench/test/bench/run.sh || failed=1
		stop_root "$root"
		# 4. the figures out of the root
		rm -rf "$OUT/pg$v"
		mkdir -p "$OUT/pg$v"
		cp -p "$root"/schedlock-bench/test/bench/out/* "$OUT/pg$v"/ 2>/dev/null
		[ -s "$OUT/pg$v/results.tsv" ] || {
			log "PostgreSQL $v: no results"
			failed=1
		}
	fi
	log "PostgreSQL $v took $(($(date +%s) - t0)) s"
done

bash test/bench/report.sh "$OUT" >"$OUT/BENCHMARKS.md"
cat "$OUT/BENCHMARKS.md"
log "wrote $OUT/BENCHMARKS.md"
exit $failed
