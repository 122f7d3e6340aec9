#!/usr/bin/env bash
# test/matrix.sh - the test command on every tested PostgreSQL version.
#
#   bash test/matrix.sh         (as root, on Debian 12; what CI runs)
#
# Runs bash test/run-all.sh once per version and ends with one line
# "N passed, M failed" over all of them; the exit status is non-zero when
# anything failed or a version could not be set up.
#
#   15   Debian 12's own packages, on this machine itself, the ha layer
#        (Patroni and etcd) and the cassert layer (PostgreSQL 15 built with
#        assertions, in the background)
#   17   Debian 13 "trixie" packages, in a chroot
#   18   Debian sid packages, in a chroot
#
# The chroots are made by this script (with test/roots.sh), from Debian's
# archive only:
# `debootstrap --variant=minbase` into the run's scratch directory, then
# apt-get install --no-install-recommends of postgresql-NN, its -dev, pgtap,
# pg_cron and pgbouncer packages and the test tools.  They are built one
# after the other in the background while the PostgreSQL 15 run goes on,
# used by this run only and deleted at its end (nothing outside the scratch
# directory is kept for a later run).  The archive reachable here is a dated snapshot
# whose sid Release file is past its Valid-Until date, so apt in the roots
# does not check that date.
#
# Every chroot command runs in a mount namespace of its own (unshare), with
# /proc, /dev and a fresh /dev/shm mounted for initdb and the servers; they
# are unmounted when the command ends, and the namespace takes them away
# even if it is killed.  Servers listen only on a Unix socket (test/lib.sh,
# PostgreSQL::Test::Cluster); run-all.sh stops every server it starts, and
# on exit this script also ends any process still running inside a root.
#
# Settings (environment):
#   SL_MATRIX="15 17 18"    the versions to test
#   SL_MATRIX_ONLY          layers run-all.sh runs on 17 and 18 (default all
#                           but two: "regress isolation pgtap suites tap
#                           security"; the ha layer, Patroni failing over a
#                           primary and a standby, and the cassert layer run
#                           on 15 only: the failover paths do not depend on
#                           the version, and CI time is short)
#   SL_MATRIX_SKIP_SUITES   suites left out on 17 and 18 (default
#                           "cron-fuzz readme-samples": the 60 s fuzzer tests
#                           pure C code that does not depend on the server,
#                           and the README samples need a JDK, Node.js and
#                           npm in every root; both run on 15)
#   SL_MATRIX_TIMEOUT=1800  seconds the run of 17 or 18 may take
#   SL_MATRIX_HOST_TIMEOUT=2700  seconds the run of 15 may take (with the
#                           cassert layer: its build and a second pass of
#                           regress, isolation, tap and security)
#   SL_MIRROR               Debian mirror (default http://deb.debian.org/debian)
#   SL_KEEP=1               keep the scratch directory (roots and logs)

set -u
cd "$(dirname "$0")/.." || exit 2
SRC=$(pwd)

SL_MATRIX=${SL_MATRIX:-"15 17 18"}
SL_MATRIX_ONLY=${SL_MATRIX_ONLY:-"regress isolation pgtap suites tap security"}
SL_MATRIX_SKIP_SUITES=${SL_MATRIX_SKIP_SUITES-"cron-fuzz readme-samples"}
SL_MATRIX_TIMEOUT=${SL_MATRIX_TIMEOUT:-1800}
SL_MATRIX_HOST_TIMEOUT=${SL_MATRIX_HOST_TIMEOUT:-2700}
SL_MIRROR=${SL_MIRROR:-http://deb.debian.org/debian}
SL_KEEP=${SL_KEEP:-}

# release_of, root_pids, in_root, prepare_root, prepare_all, unmount_under,
# run_logged
source test/roots.sh

log()
{
	printf '[%s] matrix: %s\n' "$(date +%H:%M:%S)" "$*"
}

START=$(date +%s)
needs_roots=""
for v in $SL_MATRIX; do
	case $(release_of "$v") in
		host) ;;
		none)
			echo "test/matrix.sh: no Debian release known for PostgreSQL $v" >&2
			exit 2
			;;
		*) needs_roots="$needs_roots $v" ;;
	esac
done

if [ -n "$needs_roots" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "test/matrix.sh: building the chroots for$needs_roots needs root" >&2
		exit 2
	fi
	roots_ensure_tools || exit 2
fi

WORK=$(mktemp -d /tmp/schedlock-matrix.XXXXXX)
chmod 755 "$WORK"
log "scratch directory $WORK"
PREP_PID=""
CHILD=""

# cleanup : end the background preparation and anything still running in a
# root, unmount whatever is still mounted under the scratch directory, and
# delete it (unless SL_KEEP).
cleanup()
{
	local r pids
	trap - EXIT INT TERM
	if [ -n "$CHILD" ]; then
		# the timeout and tee processes of the run in progress
		pkill -TERM -P "$CHILD" 2>/dev/null
		wait "$CHILD" 2>/dev/null
	fi
	if [ -n "$PREP_PID" ] && kill -0 "$PREP_PID" 2>/dev/null; then
		kill -- "-$PREP_PID" 2>/dev/null
		wait "$PREP_PID" 2>/dev/null
	fi
	for r in "$WORK"/root-*; do
		[ -d "$r" ] || continue
		pids=$(root_pids "$r")
		if [ -n "$pids" ]; then
			log "ending processes left in $r: $(echo $pids)"
			kill -9 $pids 2>/dev/null
			sleep 1
		fi
	done
	unmount_under "$WORK"
	if [ -z "$SL_KEEP" ]; then
		rm -rf --one-file-system "$WORK"
	else
		log "kept $WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "$needs_roots" ]; then
	# at the lowest CPU and I/O priority, as run-all.sh builds the cassert
	# layer's PostgreSQL: the PostgreSQL 15 run goes on meanwhile
	setsid nice -n 19 ionice -t -c 3 bash -c "$(declare -f log release_of in_root prepare_root prepare_all);
		WORK='$WORK' SL_MIRROR='$SL_MIRROR'; prepare_all $needs_roots" \
		>"$WORK/prepare.log" 2>&1 &
	PREP_PID=$!
	log "building the roots for$needs_roots in the background (log $WORK/prepare.log)"
fi

TOTAL_PASS=0
TOTAL_FAIL=0
SUMMARY=""

# result VERSION LOG RC : add the "N passed, M failed" line of LOG to the
# totals; a run that printed none, or exited non-zero with no failure
# counted, counts as one failure
result()
{
	local v=$1 logf=$2 rc=$3 line p f failing
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logf" | tail -n 1)
	if [ -n "$line" ]; then
		p=${line%% passed*}
		f=${line#*passed, }
		f=${f%% failed*}
	else
		p=0
		f=0
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		line="${line:-no result} (exit $rc)"
	fi
	TOTAL_PASS=$((TOTAL_PASS + p))
	TOTAL_FAIL=$((TOTAL_FAIL + f))
	SUMMARY="$SUMMARY$(printf '  PostgreSQL %-3s %-10s %s' "$v" "$(release_of "$v")" "$line")
"
	# which layers failed, and the failing files run-all.sh names
	if [ "$f" -ne 0 ]; then
		failing=$(sed -n '/^Summary:$/,$p' "$logf" | grep -E ' [1-9][0-9]* failed' | grep -v -E '^[0-9]+ passed' | sed 's/^ */      /')
		[ -n "$failing" ] && SUMMARY="$SUMMARY$failing
"
	fi
	log "PostgreSQL $v: $line"
}

for v in $SL_MATRIX; do
	t0=$(date +%s)
	logf="$WORK/pg$v.log"
	if [ "$(release_of "$v")" = host ]; then
		log "PostgreSQL $v: bash test/run-all.sh on this machine"
		run_logged "$logf" "$SL_MATRIX_HOST_TIMEOUT" env SL_PGVER="$v" bash test/run-all.sh
		rc=$?
	else
		root="$WORK/root-$v"
		log "PostgreSQL $v: waiting for its root"
		while [ ! -e "$root.ok" ] && kill -0 "$PREP_PID" 2>/dev/null; do
			sleep 5
		done
		if [ ! -e "$root.ok" ]; then
			cat "$WORK/prepare.log"
			echo "root for PostgreSQL $v could not be prepared" >"$logf"
			result "$v" "$logf" 1
			continue
		fi
		rm -rf "$root/schedlock"
		mkdir "$root/schedlock"
		tar --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . |
			tar -xf - -C "$root/schedlock"
		log "PostgreSQL $v: bash test/run-all.sh in the $(release_of "$v") root" \
			"(layers: $SL_MATRIX_ONLY; suites skipped: ${SL_MATRIX_SKIP_SUITES:-none})"
		run_logged "$logf" "$SL_MATRIX_TIMEOUT" bash -c "$(declare -f in_root); in_root \"\$@\"" in_root "$root" \
			env SL_PGVER="$v" SL_ONLY="$SL_MATRIX_ONLY" SL_SKIP_SUITES="$SL_MATRIX_SKIP_SUITES" \
			SL_KEEP="$SL_KEEP" bash /schedlock/test/run-all.sh
		rc=$?
		# anything a killed run left behind
		pids=$(root_pids "$root")
		[ -n "$pids" ] && kill -9 $pids 2>/dev/null
	fi
	result "$v" "$logf" "$rc"
	log "PostgreSQL $v took $(($(date +%s) - t0)) s"
done

echo
echo "Matrix summary ($(($(date +%s) - START)) s):"
printf '%s' "$SUMMARY"
echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
[ "$TOTAL_FAIL" -eq 0 ] && [ "$TOTAL_PASS" -gt 0 ]
