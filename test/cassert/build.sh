#!/usr/bin/env bash
# test/cassert/build.sh - build PostgreSQL 15 with assertions enabled
#
#   bash test/cassert/build.sh DIR
#
# Builds a PostgreSQL 15 server with --enable-cassert --enable-debug
# --enable-tap-tests from the source of Debian's postgresql-15 package and
# installs it into DIR/pg (prints the path of its pg_config on the last line).
# Everything it downloads, builds or configures stays inside DIR: the source
# comes through deb-src entries written to DIR/apt (derived from the
# machine's own Debian entries, so only Debian's archive is needed), with
# apt lists and cache of their own there too; the system's apt configuration
# is not touched.  Nothing is cached for a later run.
#
# The build is upstream's release tarball as Debian ships it (the .orig
# tarball of the source package).  Debian's packaging patches are not
# applied: they move the install directories to /usr/lib/postgresql/15 and
# /var/run/postgresql, which a private prefix must not use, and change no
# code that assertions check.
#
# Only what the test layers need is built: the server, its loadable modules
# (encoding conversions, snowball, walreceiver, pgoutput), PL/pgSQL, libpq,
# the client programs (src/bin: initdb, pg_ctl, psql, pg_dump, pg_basebackup,
# ...), pg_regress, the isolation tester and the Perl TAP modules, plus the
# headers and PGXS files an extension builds against, contrib/amcheck
# (008_lock_table_guard checks the lock table's indexes with it) and, when
# it builds, contrib/dblink (210_job_dblink_leftover skips without it); no
# other contrib, no ecpg.
#
# Runs as root (or a user with sudo) because it installs missing build
# packages and runs apt-get for the source download.  The installation is
# readable by everyone, so the unprivileged server user runs it.
#
# SL_CASSERT_JOBS (default 2) is make's -j.

set -u
cd "$(dirname "$0")/../.." || exit 2
source test/lib.sh

DIR=${1:?usage: build.sh DIR}
JOBS=${SL_CASSERT_JOBS:-2}
PKG=postgresql-$SL_PGVER

mkdir -p "$DIR" && DIR=$(cd "$DIR" && pwd) || exit 2
PREFIX=$DIR/pg
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

# step NAME CMD... : run CMD, log how long it took, stop the script on failure
step()
{
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	"$@"
	rc=$?
	sl_log "cassert build: $name took $(($(date +%s) - t0)) s (exit $rc)"
	[ $rc -eq 0 ] || exit 1
}

# deb_src_entries : the machine's Debian "deb" entries turned into "deb-src"
# entries, into DIR/apt/sources (one file per source file)
deb_src_entries()
{
	local f n=0
	mkdir -p "$DIR/apt/sources" "$DIR/apt/lists/partial" "$DIR/apt/cache/archives/partial"
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		case $f in
			*.sources)
				sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$DIR/apt/sources/$n.sources"
				;;
			*)
				sed -n -E 's/^deb[[:space:]]/deb-src /p' "$f" >"$DIR/apt/sources/$n.list"
				;;
		esac
	done
	[ "$n" -gt 0 ] || {
		echo "no apt sources found in /etc/apt" >&2
		return 1
	}
}

# private_apt ARGS... : apt-get with DIR/apt as its sources, lists and cache
private_apt()
{
	local cmd=$1
	shift
	$SUDO "$cmd" -q -o Dir::Etc::SourceList=/dev/null \
		-o Dir::Etc::SourceParts="$DIR/apt/sources" \
		-o Dir::State::Lists="$DIR/apt/lists" \
		-o Dir::Cache="$DIR/apt/cache" \
		-o APT::Sandbox::User=root "$@"
}

# download_source : the newest postgresql-15 source package the archive
# serves (a suite's index can name a version whose files are not served;
# then the next older one is taken)
download_source()
{
	local v
	private_apt apt-get update >"$DIR/apt/update.log" 2>&1 || {
		cat "$DIR/apt/update.log" >&2
		return 1
	}
	mkdir -p "$DIR/download"
	for v in $(private_apt apt-cache showsrc "$PKG" | sed -n 's/^Version: //p' | sort -u -r -V); do
		rm -f "$DIR"/download/*
		if (cd "$DIR/download" && private_apt apt-get source --download-only "$PKG=$v") \
			>"$DIR/download.log" 2>&1 && ls "$DIR"/download/*.orig.tar.* >/dev/null 2>&1; then
			sl_log "cassert build: source package $PKG $v"
			return 0
		fi
		sl_log "cassert build: $PKG $v not downloadable, trying an older version"
	done
	cat "$DIR/download.log" >&2
	return 1
}

unpack()
{
	rm -rf "$DIR/build" && mkdir -p "$DIR/build" &&
		tar -xf "$DIR"/download/*.orig.tar.* -C "$DIR/build" --strip-components=1
}

configure()
{
	(cd "$DIR/build" && ./configure --prefix="$PREFIX" \
		--enable-cassert --enable-debug --enable-tap-tests \
		--without-readline --without-icu --without-llvm) >"$DIR/configure.log" 2>&1 || {
		tail -n 40 "$DIR/configure.log" >&2
		return 1
	}
}

# the directories of src/Makefile's SUBDIRS that the tests need (all of
# "interfaces" and "pl" would add ecpg and nothing the tests use)
BUILD_DIRS="src/common src/port src/timezone src/backend
src/backend/utils/mb/conversion_procs src/backend/snowball src/include
src/interfaces/libpq src/backend/replication/libpqwalreceiver
src/backend/replication/pgoutput src/fe_utils src/bin src/pl/plpgsql
src/makefiles src/test/regress src/test/isolation src/test/perl contrib/amcheck"

compile()
{
	local d
	for d in $BUILD_DIRS; do
		make -s -C "$DIR/build/$d" -j"$JOBS" >>"$DIR/make.log" 2>&1 || {
			tail -n 40 "$DIR/make.log" >&2
			return 1
		}
	done
}

install_all()
{
	local d
	for d in $BUILD_DIRS; do
		make -s -C "$DIR/build/$d" install >>"$DIR/install.log" 2>&1 || {
			tail -n 40 "$DIR/install.log" >&2
			return 1
		}
	done
	# PGXS's Makefile.global, Makefile.port, Makefile.shlib; config/install-sh
	make -s -C "$DIR/build/src" install-local >>"$DIR/install.log" 2>&1 &&
		make -s -C "$DIR/build/config" install >>"$DIR/install.log" 2>&1 &&
		chmod -R a+rX "$PREFIX"
}

T0=$(date +%s)
sl_log "cassert build: into $PREFIX (make -j$JOBS)"
step packages sl_ensure_packages gcc make perl bzip2 xz-utils libipc-run-perl zlib1g-dev
step "apt sources" deb_src_entries
step download download_source
step unpack unpack
step configure configure
step make compile
step install install_all
# optional: a test skips when it is missing
if make -s -C "$DIR/build/contrib/dblink" -j"$JOBS" >>"$DIR/make.log" 2>&1 &&
	make -s -C "$DIR/build/contrib/dblink" install >>"$DIR/install.log" 2>&1; then
	chmod -R a+rX "$PREFIX"
else
	sl_log "cassert build: contrib/dblink did not build (210_job_dblink_leftover skips)"
fi
"$PREFIX/bin/pg_config" --configure | grep -q -- --enable-cassert || {
	echo "cassert build: $PREFIX/bin/pg_config does not report --enable-cassert" >&2
	exit 1
}
[ -z "${SL_KEEP:-}" ] && rm -rf "$DIR/build" "$DIR/download" "$DIR/apt/lists" "$DIR/apt/cache"
sl_log "cassert build: done in $(($(date +%s) - T0)) s"
echo "$PREFIX/bin/pg_config"
