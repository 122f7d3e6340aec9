# test/roots.sh - Debian chroots with another PostgreSQL version, shared by
# test/matrix.sh (the tests) and test/bench/matrix.sh (the benchmark).
# Source it from the repository's top directory; do not run it.
#
#   release_of VERSION      the Debian release that ships PostgreSQL VERSION
#                           ("host" for 15: this machine itself)
#   root_pids ROOT          processes running in ROOT
#   in_root ROOT CMD...     run CMD chrooted in ROOT (own mount namespace)
#   prepare_root VERSION    debootstrap $WORK/root-VERSION and install
#                           PostgreSQL VERSION, its -dev, pgtap, pg_cron,
#                           pgbouncer, clang and $SL_ROOT_PACKAGES in it
#   prepare_all VERSION...  prepare_root for each, one after the other
#   roots_ensure_tools      install debootstrap and unshare (util-linux) on
#                           this machine when missing
#   unmount_under DIR       unmount what is still mounted under DIR
#   run_logged LOG SECONDS CMD...
#                           CMD under a timeout, its output shown and kept in
#                           LOG; CHILD names it while it runs
#
# The caller defines log MESSAGE and sets WORK (the scratch directory) and
# SL_MIRROR (the Debian mirror).

# Debian release that ships each version (15: this machine itself)
release_of()
{
	case $1 in
		15) echo host ;;
		17) echo trixie ;;
		18) echo sid ;;
		*) echo none ;;
	esac
}

# roots_ensure_tools : install what building and entering a root needs on
# this machine (debootstrap; unshare, from util-linux) when it is missing.
# Needs root.  Returns apt-get's status.
roots_ensure_tools()
{
	local missing=""
	command -v debootstrap >/dev/null 2>&1 || missing="debootstrap"
	command -v unshare >/dev/null 2>&1 || missing="$missing util-linux"
	[ -n "$missing" ] || return 0
	log "installing $missing"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $missing >/dev/null
}

# root_pids ROOT : processes whose root directory is ROOT (started in it)
root_pids()
{
	find /proc -mindepth 2 -maxdepth 2 -name root -lname "$1" 2>/dev/null | cut -d/ -f3
}

# unmount_under DIR : unmount whatever is still mounted under DIR, deepest
# first (in_root mounts in private namespaces; this catches leftovers)
unmount_under()
{
	local m
	for m in $(awk -v w="$1/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
}

# run_logged LOG SECONDS CMD... : CMD under a timeout of SECONDS, its output
# shown and kept in LOG; returns CMD's status.  Run in the background and
# waited for, so that a signal to the calling script is handled at once:
# CHILD is its pid meanwhile, for the caller's cleanup to end it.
run_logged()
{
	local logf=$1 limit=$2 rc
	shift 2
	(
		set -o pipefail
		timeout --kill-after=60 "$limit" "$@" 2>&1 | tee "$logf"
	) &
	CHILD=$!
	wait "$CHILD"
	rc=$?
	CHILD=""
	return $rc
}

# in_root ROOT CMD... : run CMD chrooted in ROOT, in a mount namespace of its
# own with /proc, /dev (with /dev/pts) and an empty /dev/shm mounted, and
# unmounted again when CMD ends.  A clean environment: only what the tests
# need crosses into the root.
in_root()
{
	local root=$1
	shift
	unshare --mount --propagation private -- /bin/sh -c '
		r=$1; shift
		mount -t proc proc "$r/proc" &&
			mount --rbind /dev "$r/dev" &&
			mount -t tmpfs -o mode=1777,size=1g shm "$r/dev/shm" || exit 99
		chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive CI="${CI:-}" "$@"
		rc=$?
		umount "$r/dev/shm"
		umount -R "$r/dev" || umount -l "$r/dev"
		umount "$r/proc" || umount -l "$r/proc"
		exit $rc
	' in_root "$root" "$@"
}

# prepare_root VERSION : debootstrap the release of VERSION into
# $WORK/root-VERSION and install the packages its tests need.  Writes
# $WORK/root-VERSION.ok on success.
prepare_root()
{
	local v=$1 rel root pkgs
	rel=$(release_of "$v")
	root="$WORK/root-$v"
	log "PostgreSQL $v: debootstrap $rel"
	debootstrap --variant=minbase "$rel" "$root" "$SL_MIRROR" >"$WORK/debootstrap-$v.log" 2>&1 || {
		tail -n 20 "$WORK/debootstrap-$v.log"
		return 1
	}
	# apt: the snapshot's Release files may be past Valid-Until; never
	# start services in the root, and no default cluster on port 5432
	echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/90schedlock"
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	mkdir -p "$root/etc/postgresql-common"
	echo 'create_main_cluster = false' >"$root/etc/postgresql-common/createcluster.conf"
	# what test/run-all.sh would install (with clang and the sanitizer
	# runtime of the release's clang version), plus pg_cron and pgbouncer
	# for the tap layer (installed here, while the roots are built in the
	# background, rather than by run-all.sh on the run's critical path)
	# and SL_ROOT_PACKAGES
	pkgs=$(SL_PGVER=$v bash -c 'source test/lib.sh; echo $SL_BASE_PACKAGES')
	pkgs="$pkgs postgresql-$v-cron pgbouncer ${SL_ROOT_PACKAGES:-}"
	log "PostgreSQL $v: apt-get install in the $rel root"
	in_root "$root" sh -c "apt-get update -qq &&
		cv=\$(apt-cache depends clang | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)\$/\1/p' | head -n 1) &&
		apt-get install -y -qq --no-install-recommends $pkgs clang libclang-rt-\$cv-dev" \
		>"$WORK/apt-$v.log" 2>&1 || {
		tail -n 20 "$WORK/apt-$v.log"
		return 1
	}
	log "PostgreSQL $v: root ready ($(du -sm "$root" | cut -f1) MB)"
	touch "$root.ok"
}

# prepare_all VERSION... : one root after the other
prepare_all()
{
	local v
	for v in "$@"; do
		prepare_root "$v" || log "PostgreSQL $v: preparing the root FAILED"
	done
}

