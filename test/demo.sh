#!/usr/bin/env bash
# test/demo.sh - the quick-start demo: build, install, start a throwaway
# cluster, CREATE EXTENSION schedlock in an application database, and show
# what schedlock does for an application that runs on several servers.
# Stops the cluster at the end.
#
#   bash test/demo.sh          (as root, or a user with sudo)

set -u
cd "$(dirname "$0")/.." || exit 2
source test/lib.sh

sl_ensure_packages $SL_BASE_PACKAGES || exit 2
sl_log "building and installing schedlock"
sl_build_install || exit 2

DEMO=$(sl_mktemp_dir schedlock-demo)
sl_log "starting a throwaway cluster in $DEMO (Unix socket only)"
sl_cluster_start "$DEMO" "schedlock.timezone = 'UTC'" || exit 2

# app NAME SQL... : run statements as one of the "application servers";
# :'app' in the SQL is NAME
app()
{
	local name=$1
	shift
	printf '%s\n' "$@" | sl_as_server psql -X -q -A -t -v ON_ERROR_STOP=1 \
		-d "dbname=appdb application_name=$name" -v app="$name" -f -
}

sl_as_server psql -X -q -d postgres -c "CREATE DATABASE appdb" || exit 1
sl_as_server psql -X -q -d appdb -c "CREATE EXTENSION schedlock" || exit 1

cat <<'EOF'

== The problem ==
Three application servers share one timer: "send the statistics mail at
18:00".  Each server, at 18:00, asks the database for the lock first:

    SELECT schedlock_acquire('send_statistics',
                             lock_at_most_for  => '55 minutes',
                             lock_at_least_for => '50 minutes',
                             holder            => 'app-server-N');

== 1. Three servers fire at the same instant ==
EOF

# all three wait for the same instant, then race
START=$(sl_as_server psql -X -q -A -t -d appdb -c "SELECT clock_timestamp() + interval '1 second'")
for n in 1 2 3; do
	app "app-server-$n" "DO \$\$ BEGIN PERFORM pg_sleep_until('$START'); END \$\$;" \
		"SELECT format('%-13s got %s', :'app', coalesce('token ' || schedlock_acquire('send_statistics', lock_at_most_for => '55 minutes', lock_at_least_for => '50 minutes', holder => :'app'), 'NULL -> skip, another server runs it'));" \
		>"$DEMO/race-$n.out" 2>&1 &
done
wait
cat "$DEMO"/race-*.out | sort
WINNERS=$(cat "$DEMO"/race-*.out | grep -c "got token")
echo "-> $WINNERS of 3 servers got the lock"

cat <<'EOF'

== 2. The mail is sent in 2 seconds and the winner releases ==
EOF
app demo "SELECT format('release by %s -> %s', holder, schedlock_release('send_statistics', token))
               FROM schedlock.locks WHERE lock_name = 'send_statistics';"
cat <<'EOF'

== 3. A server whose clock runs 5 seconds late fires "18:00" again ==
lock_at_least_for keeps the name taken for 50 minutes after the start,
measured on the database's clock, so the late server is refused:
EOF
app app-server-late "SELECT format('%s got %s', :'app', coalesce('token ' || schedlock_acquire('send_statistics', '55 minutes', '50 minutes', :'app'), 'NULL -> skip'));"
app demo "SELECT format('lock %s: held=%s holder=%s free again at locked_at + 50 min (%s)', lock_name, held, holder, to_char(lock_until, 'HH24:MI:SS'))
               FROM schedlock.locks WHERE lock_name = 'send_statistics';"

cat <<'EOF'

== 4. A crashed holder does not block the job forever ==
app-server-1 takes a short lease (2 s here) and "crashes" without releasing:
EOF
app app-server-1 "SELECT format('%s got token %s', :'app', schedlock_acquire('nightly_cleanup', '2 seconds', holder => :'app'));"
app app-server-2 "SELECT format('%s right away: %s', :'app', coalesce('token ' || schedlock_acquire('nightly_cleanup', '1 hour', holder => :'app'), 'NULL (lease still running)'));"
sleep 2.2
app app-server-2 "SELECT format('%s after the lease expired: token %s (higher: a fencing token)', :'app', schedlock_acquire('nightly_cleanup', '1 hour', holder => :'app'));"

cat <<'EOF'

== 5. Session-bound: the lock ends with the holder's session ==
EOF
app app-server-1 "SELECT format('%s (pid %s) got session-bound token %s, then its connection dies',
                       :'app', pg_backend_pid(), schedlock_acquire('importer', '1 hour', holder => :'app', session_bound => true));"
sleep 0.3
app app-server-2 "SELECT format('%s: token %s at once, 1 hour before the lease would end', :'app', schedlock_acquire('importer', '1 hour', holder => :'app', session_bound => true));"

cat <<'EOF'

== The lock table (schedlock.locks) ==
EOF
sl_as_server psql -X -q -d appdb -c "SELECT lock_name, held, holder, lock_until - locked_at AS lease, token, session_bound FROM schedlock.locks ORDER BY 1"

sl_cluster_stop_all
rm -rf "$DEMO"
sl_log "cluster stopped; demo finished"
[ "$WINNERS" -eq 1 ]
