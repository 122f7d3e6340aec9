#!/usr/bin/env bash
# test/run-all.sh - the test command: every test layer of schedlock.
#
#   bash test/run-all.sh            (as root or as a user with sudo)
#
# Installs the Debian packages it needs when they are missing, builds and
# installs the extension, copies the tree to a scratch directory owned by the
# unprivileged server user, starts one throwaway cluster (Unix socket only,
# its own port) for the suites that share a server, and runs:
#
#   regress     pg_regress on sql/*.sql against expected/*.out, through
#               "make installcheck" (a temporary server of its own), once
#               with schedlock preloaded and once with pg_cron beside it
#   isolation   isolationtester specs in test/isolation/specs
#   pgtap       pg_prove on test/pgtap/*.sql (one assertion = one test)
#   suites      every test/suites/*.sh (unit tests, fuzzing, stress)
#   tap         Perl TAP tests test/t/*.pl (PostgreSQL::Test::Cluster)
#   security    Perl TAP tests test/security/*.pl: hostile roles, escalation,
#               session isolation, secrets, role lifecycle
#   ha          Perl TAP tests test/ha/*.pl: schedlock under the HA manager
#               Patroni (Debian's patroni, with a one-member etcd from
#               etcd-server): kill -9 of the primary, rejoin, switchover,
#               kill -9 with WAL the standby never got (pg_rewind).
#               In the default set on PostgreSQL 15 only (about 50 s)
#   cassert     PostgreSQL 15 built with assertions, and regress, isolation,
#               tap and security again against it (test/cassert/run.sh);
#               in the default set on PostgreSQL 15 only.  Its build starts
#               in the background once the shared cluster runs (about 8 min
#               of the 2 cores' time) and the layer waits for it, so the
#               build overlaps the other layers
#   logcheck    always last: every server log of the run is searched for
#               crashes and internal errors (see check_logs)
#
# It prints a summary per suite and ends with "N passed, M failed"; the exit
# status is non-zero when anything failed.  SL_ONLY="regress isolation" runs a
# subset (logcheck then covers the logs of that subset), SL_SKIP_SUITES=
# "cron-fuzz lock-stress" leaves out the named test/suites/*.sh,
# SL_TAP_FILTER=REGEX runs only the TAP and security tests whose name
# matches (SL_TAP_FILTER="^10[12]_" runs 101 and 102), SL_TAP_JOBS=2 is
# how many of those files run at the same time (1: one after the other;
# the ha layer always runs one at a time), SL_PGVER=17
# tests against PostgreSQL 17 (test/matrix.sh runs every supported version).
# Every server it starts is stopped on exit.

set -u
cd "$(dirname "$0")/.." || exit 2
source test/lib.sh

if [ "$SL_PGVER" = 15 ]; then
	SL_ONLY=${SL_ONLY:-"regress isolation pgtap suites tap security ha cassert"}
else
	SL_ONLY=${SL_ONLY:-"regress isolation pgtap suites tap security"}
fi
SL_KEEP=${SL_KEEP:-}

SL_SKIP_SUITES=${SL_SKIP_SUITES:-}
SL_TAP_JOBS=${SL_TAP_JOBS:-2}

# clang and its sanitizer and libFuzzer runtimes only when a suite that
# uses them runs (cron-fuzz, and cron-unit's sanitizer build); the package
# names follow the Debian release (libclang-rt-14-dev in Debian 12)
FUZZ_PACKAGES=""
case " $SL_ONLY " in
	*" suites "*)
		case " $SL_SKIP_SUITES " in
			*" cron-fuzz "*" cron-unit "* | *" cron-unit "*" cron-fuzz "*) ;;
			*)
				FUZZ_PACKAGES=$(sl_fuzz_packages)
				[ -z "$FUZZ_PACKAGES" ] &&
					sl_log "this Debian release has no clang package: cron-fuzz and cron-unit will fail"
				;;
		esac
		;;
esac
# Python, Java and Node.js for the samples of README.md and docs/*.md
# (test/suites/readme-samples.sh; it installs the pg module with npm).
# Debian's npm only when no npm is installed: a nodejs package from outside
# Debian (NodeSource's) brings its own npm and conflicts with Debian's
README_PACKAGES=""
case " $SL_ONLY " in
	*" suites "*)
		case " $SL_SKIP_SUITES " in
			*" readme-samples "*) ;;
			*)
				README_PACKAGES="python3 python3-psycopg default-jdk-headless libpostgresql-jdbc-java nodejs"
				command -v npm >/dev/null 2>&1 || README_PACKAGES="$README_PACKAGES npm"
				;;
		esac
		;;
esac
# pg_cron for the import of its jobs (test/t/130_import_pg_cron.pl and
# test/security/207_import_pg_cron.pl), and preloaded beside schedlock in a
# run of make installcheck
PGCRON_PACKAGES=""
case " $SL_ONLY " in
	*" regress "* | *" tap "* | *" security "*) PGCRON_PACKAGES="postgresql-$SL_PGVER-cron" ;;
esac
# PgBouncer, the connection pooler test/t/150_pgbouncer.pl puts in front of
# its node (the test skips itself without it)
POOLER_PACKAGES=""
case " $SL_ONLY " in
	*" tap "*) POOLER_PACKAGES="pgbouncer" ;;
esac
# Patroni and etcd for the ha layer (test/ha/*.pl runs its own etcd and
# Patroni daemons with its own configuration; a service the packages set up
# is not used)
HA_PACKAGES=""
case " $SL_ONLY " in
	*" ha "*) HA_PACKAGES="patroni etcd-server" ;;
esac
# what test/cassert/build.sh needs, installed now: the build runs in the
# background while the other layers run, and should not need apt then
CASSERT_PACKAGES=""
case " $SL_ONLY " in
	*" cassert "*) CASSERT_PACKAGES="gcc make perl bzip2 xz-utils libipc-run-perl zlib1g-dev" ;;
esac
sl_ensure_packages $SL_BASE_PACKAGES $FUZZ_PACKAGES $README_PACKAGES $PGCRON_PACKAGES \
	$POOLER_PACKAGES $HA_PACKAGES $CASSERT_PACKAGES || exit 2
sl_log "building and installing schedlock"
sl_build_install || {
	echo "build failed" >&2
	exit 2
}

WORK=$(sl_mktemp_dir schedlock-test)
sl_log "scratch directory $WORK"
# a copy of the tree the server user may write into (results, diffs, logs)
tar --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . |
	(mkdir -p "$WORK/src" && cd "$WORK/src" && tar -xf -)
[ "$(id -u)" -eq 0 ] && chown -R "$SL_SERVER_USER" "$WORK"
export SRCDIR="$WORK/src"

# appended to every TAP node's postgresql.conf (PostgreSQL::Test::Cluster
# reads TEMP_CONFIG): SQLSTATEs in the log, for check_logs
SL_TEMP_CONFIG="$WORK/temp.conf"
echo "log_line_prefix = '$SL_LOG_LINE_PREFIX'" >"$SL_TEMP_CONFIG"
chmod 644 "$SL_TEMP_CONFIG"

mkdir -p "$WORK/cluster"
[ "$(id -u)" -eq 0 ] && chown "$SL_SERVER_USER" "$WORK/cluster"
sl_log "starting the shared test cluster"
sl_cluster_start "$WORK/cluster" || exit 2

# the cassert layer's PostgreSQL is built meanwhile (see run_cassert); a
# session of its own, so that an early exit stops the whole build
CASSERT_BUILD_PID=""
case " $SL_ONLY " in
	*" cassert "*)
		if [ -z "${SL_CASSERT_PG_CONFIG:-}" ]; then
			sl_log "cassert: building PostgreSQL $SL_PGVER with assertions in the background"
			mkdir -p "$WORK/cassert"
			# its exit status goes to a file: wait cannot be relied on for
			# it (a CI run saw wait return 127 for a build that had succeeded)
			rm -f "$WORK/cassert-build.rc"
			# at the lowest CPU and I/O priority: the layers that run
			# meanwhile check timings (a backend started before its
			# instant), which a compiler at their own priority upsets
			setsid nice -n 19 ionice -t -c 3 \
				bash -c 'bash test/cassert/build.sh "$1"; echo $? >"$1-build.rc"' \
				cassert-build "$WORK/cassert" >"$WORK/cassert-build.log" 2>&1 &
			CASSERT_BUILD_PID=$!
			trap 'kill -- -$CASSERT_BUILD_PID 2>/dev/null; sl_cluster_stop_all' EXIT
		fi
		;;
esac

PGXS_DIR=$(cd "$(dirname "$("$PG_CONFIG" --pgxs)")/../.." && pwd)
TOTAL_PASS=0
TOTAL_FAIL=0
SUMMARY=""

# record SUITE PASSED FAILED [NOTE]
record()
{
	TOTAL_PASS=$((TOTAL_PASS + $2))
	TOTAL_FAIL=$((TOTAL_FAIL + $3))
	SUMMARY="$SUMMARY$(printf '  %-28s %4d passed, %4d failed %s' "$1" "$2" "$3" "${4:-}")
"
	sl_log "$1: $2 passed, $3 failed ${4:-}"
}

# count_pg_regress LOGFILE : "P F" from pg_regress's per-test lines
count_pg_regress()
{
	local p f
	p=$(grep -E -c '^(ok|test|     ).* \.\.\. ok|^ok [0-9]+ ' "$1")
	f=$(grep -E -c '\.\.\. FAILED|^not ok [0-9]+ ' "$1")
	echo "$p $f"
}

# installcheck_once NAME PRELOAD : "make installcheck" as a newcomer runs
# it, on the temporary server it starts (tmp_check/) with
# shared_preload_libraries = PRELOAD; its server log is kept in
# $WORK/NAME/tmp_check/log for check_logs.  Records regress-NAME.
installcheck_once()
{
	local name=$1 preload=$2 out="$WORK/$1" log="$WORK/$1.log" p f rc
	sl_as_server mkdir -p "$out"
	# ISOLATION= and TAP_TESTS= (empty): the isolation and TAP layers below
	# run those suites, with logs kept per file
	sl_as_server make -C "$SRCDIR" --no-print-directory installcheck \
		PG_CONFIG="$PG_CONFIG" REGRESS_PRELOAD="$preload" ISOLATION= TAP_TESTS= \
		EXTRA_REGRESS_OPTS="--temp-config=$SL_TEMP_CONFIG" >"$log" 2>&1
	rc=$?
	cat "$log"
	read -r p f <<<"$(count_pg_regress "$log")"
	[ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
	[ -f "$SRCDIR/regression.diffs" ] && head -200 "$SRCDIR/regression.diffs"
	# pg_regress writes the temporary server's log to log/ and removes
	# tmp_check/ when every test passed
	sl_as_server mkdir -p "$out/tmp_check"
	sl_as_server mv "$SRCDIR/log" "$out/tmp_check/log" 2>/dev/null
	sl_as_server rm -rf "$SRCDIR/tmp_check"
	sl_as_server mv "$SRCDIR/results" "$out/results" 2>/dev/null
	sl_as_server mv "$SRCDIR/regression.diffs" "$out/" 2>/dev/null
	record "regress-$name" "$p" "$f"
}

# the pg_regress suite through "make installcheck": on a server that
# preloads schedlock, and on one that preloads pg_cron too
run_regress()
{
	ls sql/*.sql | grep -q -v '/schedlock--' || return
	installcheck_once installcheck schedlock
	if [ -f "$("$PG_CONFIG" --pkglibdir)/pg_cron.so" ]; then
		installcheck_once installcheck-pg_cron schedlock,pg_cron
	else
		# the cassert layer's PostgreSQL, built here, has no pg_cron
		record regress-installcheck-pg_cron 0 0 "(skipped: no pg_cron for this PostgreSQL)"
	fi
}

# the isolation specs through "make installcheck" on the shared cluster
# (EXISTING_SERVER=1): the Makefile fills in the specs that name the
# workers' own statements (tmp_isolation/) and runs them
run_isolation()
{
	local out="$WORK/isolation" log="$WORK/isolation.log" p f rc
	ls test/isolation/specs/*.spec >/dev/null 2>&1 || return
	sl_as_server make -C "$SRCDIR" --no-print-directory installcheck \
		PG_CONFIG="$PG_CONFIG" EXISTING_SERVER=1 REGRESS= TAP_TESTS= >"$log" 2>&1
	rc=$?
	cat "$log"
	read -r p f <<<"$(count_pg_regress "$log")"
	[ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
	[ -f "$SRCDIR/output_iso/regression.diffs" ] && head -200 "$SRCDIR/output_iso/regression.diffs"
	sl_as_server mkdir -p "$out"
	sl_as_server mv "$SRCDIR/output_iso" "$SRCDIR/tmp_isolation" "$out/" 2>/dev/null
	record isolation "$p" "$f"
}

# count_tap LOGFILE RC : "P F" from a verbose TAP stream; a file that died
# (non-zero exit without a failed assertion) counts as one failure
count_tap()
{
	local p f
	p=$(grep -E -c '^[[:space:]]*ok [0-9]+' "$1")
	f=$(grep -E -c '^[[:space:]]*not ok [0-9]+' "$1")
	if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	echo "$p $f"
}

run_pgtap()
{
	local files fl log rc p f tp=0 tf=0
	files=$(ls test/pgtap/*.sql 2>/dev/null | sort)
	[ -z "$files" ] && return
	sl_as_server psql -X -q -d postgres -v ON_ERROR_STOP=1 \
		-c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS schedlock_tap" -c "CREATE DATABASE schedlock_tap" >/dev/null
	sl_as_server psql -X -q -d schedlock_tap -v ON_ERROR_STOP=1 \
		-c "CREATE EXTENSION pgtap" -c "CREATE EXTENSION schedlock" >/dev/null
	for fl in $files; do
		log="$WORK/pgtap-$(basename "$fl" .sql).log"
		sl_as_server pg_prove --verbose -d schedlock_tap "$SRCDIR/$fl" >"$log" 2>&1
		rc=$?
		read -r p f <<<"$(count_tap "$log" $rc)"
		[ "$f" -ne 0 ] && cat "$log"
		tail -n 3 "$log"
		tp=$((tp + p))
		tf=$((tf + f))
	done
	record pgtap "$tp" "$tf"
}

run_suites()
{
	local s name log rc
	for s in $(ls test/suites/*.sh 2>/dev/null | sort); do
		name=$(basename "$s" .sh)
		case " $SL_SKIP_SUITES " in
			*" $name "*)
				sl_log "suite $name: skipped (SL_SKIP_SUITES)"
				SUMMARY="$SUMMARY$(printf '  %-28s skipped (SL_SKIP_SUITES)' "suite $name")
"
				continue
				;;
		esac
		log="$WORK/suite-$name.log"
		SUITE_TMP=$(sl_mktemp_dir "schedlock-$name")
		sl_log "suite $name"
		(cd "$SRCDIR" && SUITE_TMP=$SUITE_TMP sl_as_server bash "$SRCDIR/test/suites/$name.sh") >"$log" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			tail -n 5 "$log"
			record "suite $name" 1 0
		elif [ $rc -eq 77 ]; then
			# the suite cannot run here and says why (indent: no pgindent)
			tail -n 1 "$log"
			SUMMARY="$SUMMARY$(printf '  %-28s skipped (%s)' "suite $name" "$(tail -n 1 "$log")")
"
		else
			tail -n 60 "$log"
			record "suite $name" 0 1 "(exit $rc)"
		fi
		[ -z "$SL_KEEP" ] && rm -rf "$SUITE_TMP"
	done
}

# tap_file SUITE FILE : one Perl TAP file, with a TESTDIR of its own under
# $WORK (its servers' logs stay there for check_logs); its output goes to
# $WORK/SUITE-NAME.log and its exit status to $WORK/SUITE-NAME.rc
tap_file()
{
	local suite=$1 t=$2 name
	name=$(basename "$t" .pl)
	sl_as_server mkdir -p "$WORK/$suite-$name/tmp_check/log"
	# TESTDIR for PostgreSQL 15 and 16, TESTDATADIR and TESTLOGDIR for 17
	# and later (without them the nodes would live in $SRCDIR); one port
	# directory for the files that run at the same time, so that their
	# servers never pick the same port
	(cd "$SRCDIR" && TESTDIR="$WORK/$suite-$name" \
		TESTDATADIR="$WORK/$suite-$name/tmp_check" \
		TESTLOGDIR="$WORK/$suite-$name/tmp_check/log" \
		PG_TEST_PORT_DIR="$WORK/portlock" \
		PERL5LIB="$PGXS_DIR/src/test/perl:$SRCDIR/test/t" \
		PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
		TEMP_CONFIG="$SL_TEMP_CONFIG" \
		sl_as_server prove -v "$SRCDIR/$t") >"$WORK/$suite-$name.log" 2>&1
	echo $? >"$WORK/$suite-$name.rc"
}

# run_tap_dir SUITE DIR JOBS : every DIR/*.pl as a Perl TAP file, JOBS of
# them at a time (each file starts and stops servers of its own and spends
# most of its time waiting for the scheduler's seconds, so two files share
# the 2 cores well); the results are then read in the files' order
run_tap_dir()
{
	local suite=$1 dir=$2 jobs=$3 t name log rc p f l tp=0 tf=0 pid
	local files="" pids=() live failing=""
	[ -n "$(ls "$dir"/*.pl 2>/dev/null)" ] || return
	for t in $(ls "$dir"/*.pl | sort); do
		name=$(basename "$t" .pl)
		[[ "$name" =~ ${SL_TAP_FILTER:-.} ]] || continue
		files="$files $t"
	done
	sl_as_server mkdir -p "$WORK/portlock"
	# the files' own processes only: the cassert build may be running in
	# the background too, so neither "wait -n" nor a bare "wait"
	for t in $files; do
		while :; do
			live=()
			for pid in "${pids[@]}"; do
				kill -0 "$pid" 2>/dev/null && live+=("$pid")
			done
			pids=("${live[@]}")
			[ "${#pids[@]}" -lt "$jobs" ] && break
			sleep 0.5
		done
		sl_log "$suite $(basename "$t" .pl)"
		tap_file "$suite" "$t" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid"
	done
	for t in $files; do
		name=$(basename "$t" .pl)
		log="$WORK/$suite-$name.log"
		rc=$(cat "$WORK/$suite-$name.rc" 2>/dev/null || echo 1)
		read -r p f <<<"$(count_tap "$log" "$rc")"
		echo "--- $suite $name"
		if [ "$f" -ne 0 ]; then
			failing="$failing $name"
			cat "$log"
			for l in "$WORK/$suite-$name"/tmp_check/log/*.log; do
				[ -f "$l" ] && { echo "--- $l"; tail -n 40 "$l"; }
			done
		else
			# the ha layer's measured failover times, also when it passed
			[ "$suite" = ha ] && grep '^# ' "$log"
			tail -n 3 "$log"
		fi
		tp=$((tp + p))
		tf=$((tf + f))
	done
	# the failing files' names stay on the summary line (the matrix's
	# summary repeats it)
	record "$suite" "$tp" "$tf" "${failing:+(${failing# })}"
}

# run_cassert : test/cassert/run.sh in $WORK/cassert (a PostgreSQL built
# with --enable-cassert, then regress, isolation, tap, security and their
# own logcheck against it); its summary lines are recorded as "cassert ..."
run_cassert()
{
	local log="$WORK/cassert.log" rc n p f seen=0 failed=0 config t0
	config=${SL_CASSERT_PG_CONFIG:-}
	if [ -n "$CASSERT_BUILD_PID" ]; then
		t0=$(date +%s)
		sl_log "cassert: waiting for the build of PostgreSQL with assertions"
		wait "$CASSERT_BUILD_PID" 2>/dev/null
		# the status file appears when the build has ended (at most an hour)
		while [ ! -f "$WORK/cassert-build.rc" ] && [ $(($(date +%s) - t0)) -lt 3600 ]; do
			sleep 2
		done
		rc=$(cat "$WORK/cassert-build.rc" 2>/dev/null || echo 1)
		CASSERT_BUILD_PID=""
		sed 's/^/cassert build| /' "$WORK/cassert-build.log"
		sl_log "cassert: waited $(($(date +%s) - t0)) s for the build"
		if [ $rc -ne 0 ]; then
			record cassert 0 1 "(build failed, exit $rc, see $WORK/cassert-build.log)"
			return
		fi
		config=$(tail -n 1 "$WORK/cassert-build.log")
	fi
	sl_log "cassert: the layers against PostgreSQL with assertions"
	SL_CASSERT_PG_CONFIG=$config bash test/cassert/run.sh "$WORK/cassert" >"$log" 2>&1
	rc=$?
	sed 's/^/cassert| /' "$log"
	while read -r n p f note; do
		record "cassert $n" "$p" "$f" "$note"
		seen=1
		failed=$((failed + f))
	done < <(sed -n '/^Summary:$/,$p' "$log" |
		sed -n -E 's/^  ([a-z]+) +([0-9]+) passed, +([0-9]+) failed *(.*)/\1 \2 \3 \4/p')
	if [ $seen -eq 0 ] || { [ $rc -ne 0 ] && [ $failed -eq 0 ]; }; then
		record cassert 0 1 "(exit $rc, see $log)"
	fi
}

# check_logs : one test per server log of the run (the shared cluster's and
# every TAP node's).  A log fails when it shows a crash or an internal error:
#   "terminated by signal N" for any N but 9 (SIGKILL only ever comes from a
#     test that kills a process on purpose, or from the OOM killer),
#   PANIC, TRAP (a failed assertion of a cassert build),
#   SQLSTATE XX000 (every server logs with %e in log_line_prefix).
check_logs()
{
	local l p=0 f=0 bad
	for l in "$WORK"/cluster/server.log "$WORK"/*/tmp_check/log/*.log; do
		[ -f "$l" ] || continue
		case "$l" in
			*/regress_log_*) continue ;;	# TAP's own command log, not a server's
		esac
		bad=$(grep -E -n 'terminated by signal ([0-8]|1[0-9]|[2-9][0-9])\b|PANIC|TRAP:| XX000 ' "$l" | head -n 5)
		if [ -n "$bad" ]; then
			echo "server log $l:"
			echo "$bad"
			f=$((f + 1))
		else
			p=$((p + 1))
		fi
	done
	record logcheck "$p" "$f"
}

for suite in $SL_ONLY; do
	case $suite in
		regress) run_regress ;;
		isolation) run_isolation ;;
		pgtap) run_pgtap ;;
		suites) run_suites ;;
		tap) run_tap_dir tap test/t "$SL_TAP_JOBS" ;;
		security) run_tap_dir security test/security "$SL_TAP_JOBS" ;;
		ha) run_tap_dir ha test/ha 1 ;;
		cassert) run_cassert ;;
		*) echo "unknown suite $suite" >&2 ;;
	esac
done

sl_cluster_stop_all
check_logs
[ -z "$SL_KEEP" ] && [ "$TOTAL_FAIL" -eq 0 ] && rm -rf "$WORK"

echo
echo "Summary:"
printf '%s' "$SUMMARY"
echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
[ "$TOTAL_FAIL" -eq 0 ] && [ "$TOTAL_PASS" -gt 0 ]
