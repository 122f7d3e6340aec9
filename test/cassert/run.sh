#!/usr/bin/env bash
# test/cassert/run.sh - the test layers against PostgreSQL 15 with assertions
#
#   bash test/cassert/run.sh DIR
#
# What the "cassert" layer of test/run-all.sh runs:
#   1. test/cassert/build.sh DIR: PostgreSQL 15 with --enable-cassert from
#      Debian's source package, installed into DIR/pg;
#   2. a copy of this tree in DIR/src (building there leaves the tree the
#      other layers use alone);
#   3. DIR/src/test/run-all.sh with SL_ONLY="regress isolation tap security"
#      and PG_CONFIG/PG_BINDIR of DIR/pg: it builds and installs schedlock
#      against that server, runs those layers with that installation's
#      pg_regress, isolationtester and Perl TAP modules, and ends with its
#      logcheck over every server log of those layers (TRAP: is a failed
#      assertion).  Its scratch directory is made inside DIR (SL_TMPDIR).
# Its output is that run's, summary included; the exit status is that run's.
#
# SL_CASSERT_PG_CONFIG=/path/to/bin/pg_config skips step 1 and uses an
# installation built earlier with --enable-cassert (for working on the
# tests; CI always builds).  SL_CASSERT_ONLY replaces the list of layers.
# pgTAP is not run here: it checks behaviour tables that the normal layers
# already cover, and Debian's pgTAP package installs into the system server.

set -u
cd "$(dirname "$0")/../.." || exit 2
source test/lib.sh

DIR=${1:?usage: run.sh DIR}
mkdir -p "$DIR" && DIR=$(cd "$DIR" && pwd) || exit 2

T0=$(date +%s)
if [ -n "${SL_CASSERT_PG_CONFIG:-}" ]; then
	CONFIG=$SL_CASSERT_PG_CONFIG
	sl_log "cassert: using the installation of $CONFIG"
else
	CONFIG=$(bash test/cassert/build.sh "$DIR" | tail -n 1)
fi
"$CONFIG" --configure 2>/dev/null | grep -q -- --enable-cassert || {
	echo "cassert: no PostgreSQL built with --enable-cassert at '$CONFIG'" >&2
	exit 1
}
T1=$(date +%s)

rm -rf "$DIR/src" && mkdir -p "$DIR/src" "$DIR/tmp" || exit 2
tar --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . |
	(cd "$DIR/src" && tar -xf -) || exit 2
[ "$(id -u)" -eq 0 ] && chown "$SL_SERVER_USER" "$DIR/tmp"

SL_ONLY=${SL_CASSERT_ONLY:-"regress isolation tap security"} \
	PG_CONFIG=$CONFIG PG_BINDIR=$("$CONFIG" --bindir) \
	SL_TMPDIR=$DIR/tmp SL_SRCDIR= \
	bash "$DIR/src/test/run-all.sh"
rc=$?
T2=$(date +%s)
sl_log "cassert: build $((T1 - T0)) s, layers $((T2 - T1)) s"
[ -z "${SL_KEEP:-}" ] && [ $rc -eq 0 ] && rm -rf "$DIR/src"
exit $rc
