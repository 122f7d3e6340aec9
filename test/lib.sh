# test/lib.sh - shared shell functions for test/demo.sh, test/run-all.sh and
# the benchmark scripts.  Source it; do not run it.
#
# What it gives:
#   sl_ensure_packages PKG...   apt-get install what is missing (root only;
#                               never the recommended extras)
#   sl_fuzz_packages            the clang and libFuzzer runtime packages of
#                               this Debian release
#   sl_build_install            make && make install against PostgreSQL $SL_PGVER
#   sl_as_server CMD...         run CMD as the unprivileged server user
#   sl_cluster_start DIR [CONF] initdb + start a throwaway cluster in DIR
#   sl_cluster_stop DIR         stop it (also registered for EXIT)
#   sl_bench_cluster NAME [CONF] a throwaway durable cluster in a scratch
#                               directory of its own (SL_BENCH_DIR), both
#                               removed on exit; sl_psql DB ARGS... on it
#
# Clusters listen only on a Unix socket inside their own directory
# (listen_addresses = ''), on a port picked here, so they never collide with
# a system server or with each other.

set -u

SL_PGVER=${SL_PGVER:-15}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/$SL_PGVER/bin}
PG_CONFIG=${PG_CONFIG:-$PG_BINDIR/pg_config}
SL_SRCDIR=${SL_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

# Debian packages every part of the project needs.  libkrb5-dev: the GSSAPI
# headers that the server's libpq/libpq-be.h includes, so that job backends
# can fill %d, %u and %a of log_line_prefix (src/base/logident.c).
SL_BASE_PACKAGES="postgresql-$SL_PGVER postgresql-server-dev-$SL_PGVER postgresql-$SL_PGVER-pgtap \
libtap-parser-sourcehandler-pgtap-perl libipc-run-perl libkrb5-dev make gcc"

sl_log()
{
	printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"
}

# sl_ensure_packages PKG... : install the packages that are not installed yet,
# without the packages they merely recommend (Debian's postgresql-NN would
# otherwise pull in a mail server, cron and more).
sl_ensure_packages()
{
	local missing="" p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			sl_log "installing:$missing (sudo)"
			sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
				sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
					--no-install-recommends $missing
			return
		fi
		echo "missing Debian packages:$missing (run as root, or install them)" >&2
		return 1
	fi
	sl_log "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$missing >/dev/null
}

# sl_fuzz_packages : "clang libclang-rt-N-dev" for the clang this Debian
# release ships (14 in Debian 12, 19 in Debian 13, newer in sid): libFuzzer
# and the sanitizer runtimes come in the versioned package.  Prints nothing
# when the release's clang cannot be found.
sl_fuzz_packages()
{
	local v
	v=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' | head -n 1)
	if [ -z "$v" ]; then
		v=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
	fi
	if [ -z "$v" ] && [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1
		v=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
	fi
	[ -n "$v" ] && echo "clang libclang-rt-$v-dev"
}

# sl_build_install : compile the extension and install it into PostgreSQL.
sl_build_install()
{
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	(cd "$SL_SRCDIR" && make -s PG_CONFIG="$PG_CONFIG" >/dev/null &&
		$sudo make -s PG_CONFIG="$PG_CONFIG" install >/dev/null)
}

# The user the server side runs as: initdb and the TAP framework refuse root.
if [ "$(id -u)" -eq 0 ]; then
	SL_SERVER_USER=${SL_SERVER_USER:-postgres}
else
	SL_SERVER_USER=$(id -un)
fi

# sl_as_server CMD... : run a command as the server user, keeping the
# environment variables the tests rely on.
sl_as_server()
{
	local vars=() v
	for v in PGHOST PGPORT PGUSER PGDATABASE SRCDIR SUITE_TMP PG_REGRESS \
		PERL5LIB TESTDIR TESTDATADIR TESTLOGDIR TEMP_CONFIG PG_TEST_EXTRA \
		SL_STRESS_SECONDS SL_STRESS_CLIENTS PG_TEST_TIMEOUT_DEFAULT; do
		[ -n "${!v:-}" ] && vars+=("$v=${!v}")
	done
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$SL_SERVER_USER" -- env PATH="$PG_BINDIR:$PATH" \
			PG_BINDIR="$PG_BINDIR" HOME="${SUITE_TMP:-/tmp}" "${vars[@]}" "$@"
	else
		env PATH="$PG_BINDIR:$PATH" PG_BINDIR="$PG_BINDIR" "$@"
	fi
}

# sl_mktemp_dir PREFIX : a scratch directory owned by the server user, in
# $SL_TMPDIR (default /tmp).
sl_mktemp_dir()
{
	local d
	d=$(mktemp -d "${SL_TMPDIR:-/tmp}/$1.XXXXXX")
	chmod 755 "$d"
	[ "$(id -u)" -eq 0 ] && chown "$SL_SERVER_USER" "$d"
	echo "$d"
}

# sl_free_port : a TCP port number nobody listens on (the socket file name
# is what matters for Unix-socket clusters, but keep ports distinct anyway).
sl_free_port()
{
	local port
	for _ in $(seq 1 200); do
		port=$((20000 + RANDOM % 20000))
		if ! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null &&
			[ ! -e "/tmp/.s.PGSQL.$port" ]; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

SL_CLUSTERS=""

# Every test server logs the SQLSTATE of each message (%e), so that
# test/run-all.sh can look for internal errors (XX000) in the logs.
SL_LOG_LINE_PREFIX='%m [%p] %e %q%a '

# sl_cluster_start DIR [EXTRA_CONF_LINES] : initdb DIR/data and start it.
# Sets PGHOST (=DIR), PGPORT, PGUSER for the caller.
sl_cluster_start()
{
	local dir=$1 extra=${2:-} port
	port=$(sl_free_port)
	sl_as_server "$PG_BINDIR/initdb" -D "$dir/data" -A trust -U postgres \
		--no-sync >"$dir/initdb.log" 2>&1 || {
		cat "$dir/initdb.log" >&2
		return 1
	}
	cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
shared_preload_libraries = 'schedlock'
max_connections = 120
max_worker_processes = 32
fsync = off
log_line_prefix = '$SL_LOG_LINE_PREFIX'
$extra
EOF
	sl_as_server "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
		-t 60 start >/dev/null || {
		cat "$dir/server.log" >&2
		return 1
	}
	SL_CLUSTERS="$SL_CLUSTERS $dir"
	trap sl_cluster_stop_all EXIT
	export PGHOST=$dir PGPORT=$port PGUSER=postgres
}

# sl_cluster_stop DIR : stop the cluster in DIR if it runs.
sl_cluster_stop()
{
	local dir=$1
	if [ -f "$dir/data/postmaster.pid" ]; then
		sl_as_server "$PG_BINDIR/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 ||
			sl_as_server "$PG_BINDIR/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
	fi
	SL_CLUSTERS=$(echo "$SL_CLUSTERS" | tr ' ' '\n' | grep -v -x -F "$dir" | tr '\n' ' ')
}

sl_cluster_stop_all()
{
	local d
	for d in $SL_CLUSTERS; do
		sl_cluster_stop "$d"
	done
}

# Durable settings for the benchmarks: every commit waits for its WAL
# flush, as on a production server; checkpoints stay out of a trial.
SL_DURABLE_CONF="fsync = on
synchronous_commit = on
shared_buffers = '256MB'
max_wal_size = '8GB'
checkpoint_timeout = '30min'"

# sl_bench_cluster NAME [EXTRA_CONF_LINES] : a scratch directory
# /tmp/NAME.XXXXXX (SL_BENCH_DIR) with a cluster in it, started with the
# durable settings and EXTRA_CONF_LINES (later lines win); on exit the
# cluster stops and the directory goes.  Sets PGHOST, PGPORT and PGUSER as
# sl_cluster_start does.
sl_bench_cluster()
{
	SL_BENCH_DIR=$(sl_mktemp_dir "$1") || return 1
	sl_cluster_start "$SL_BENCH_DIR" "log_min_messages = warning
$SL_DURABLE_CONF
${2:-}" || return 1
	trap 'sl_cluster_stop_all; rm -rf "$SL_BENCH_DIR"' EXIT
}

# sl_psql DB ARGS... : psql on the cluster of PGHOST and PGPORT, as the
# server user, unaligned and quiet, stopping at the first error
sl_psql()
{
	local db=$1
	shift
	sl_as_server psql -XAtq -v ON_ERROR_STOP=1 -d "$db" "$@"
}
