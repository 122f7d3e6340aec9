#!/usr/bin/env bash
# test/demo.sh - the quick-start demo: build, install, start a throwaway
# cluster, CREATE EXTENSION schedlock in an application database, and show
# what schedlock does for an application that runs on several servers:
# its lease locks, and its jobs (an SQL job, and a NOTIFY job that two
# listening "application servers" race to claim).
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

cat <<'EOF'

== 6. Jobs scheduled in the database ==
The same database also runs the timers.  An SQL job every second, run by
schedlock's workers, and a NOTIFY job every 2 seconds that the application
servers (two of them here, listening on "stats_mail") race to claim.  The
application role "mailer" may use the job functions because the DBA granted
them (nobody may until granted):

    GRANT INSERT ON schedlock.jobs TO mailer;

    SELECT schedlock.schedule_job('heartbeat', '1 seconds',
                        command => 'INSERT INTO heartbeat VALUES (clock_timestamp())');
    -- as mailer:
    SELECT schedlock.schedule_job('send_statistics', '2 seconds',
                        notify_channel => 'stats_mail', timeout => '10 seconds',
                        payload => '{"to": "ops@example.com"}');

    -- each server (logged in as mailer), on every notification; the
    -- notification carries no payload (any role may LISTEN), the claim does:
    SELECT claimed, payload
      FROM schedlock_claim_run_payload(run_id, 'app-server-N'); -- claimed for exactly one
    SELECT schedlock_finish_run(run_id, true);                 -- by that one, when done

EOF
gcc -O2 -Wall -I"$("$PG_CONFIG" --includedir)" -o "$DEMO/app_server" test/demo/app_server.c \
	-L"$("$PG_CONFIG" --libdir)" -lpq || exit 1
app demo "CREATE TABLE heartbeat (at timestamptz);" \
	"CREATE ROLE mailer LOGIN;" \
	"GRANT INSERT ON schedlock.jobs TO mailer;"
# the servers listen first, then the jobs are scheduled
for n in 1 2; do
	"$DEMO/app_server" "host=$PGHOST port=$PGPORT user=mailer dbname=appdb" \
		"app-server-$n" stats_mail 10 >"$DEMO/app-$n.out" 2>&1 &
done
sleep 0.5
app demo "SELECT schedlock.schedule_job('heartbeat', '1 seconds', command => 'INSERT INTO heartbeat VALUES (clock_timestamp())') > 0;" \
	"SET ROLE mailer;" \
	"SELECT schedlock.schedule_job('send_statistics', '2 seconds', notify_channel => 'stats_mail', timeout => '10 seconds', payload => '{\"to\": \"ops@example.com\"}') > 0;" >/dev/null
# 8 seconds of jobs; the servers go on listening a little longer
sleep 8
app demo "SELECT schedlock.alter_job('heartbeat', enabled => false);" \
	"SET ROLE mailer;" \
	"SELECT schedlock.alter_job('send_statistics', enabled => false);" >/dev/null
wait
sort "$DEMO"/app-*.out
cat <<'EOF'

Each NOTIFY slot in schedlock.job_runs: claimed by exactly one server.
EOF
sl_as_server psql -X -q -d appdb -c "SELECT to_char(r.scheduled_for, 'HH24:MI:SS') AS slot, r.run_id, r.status, r.claimed_by
                                       FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
                                      WHERE j.job_name = 'send_statistics' ORDER BY r.scheduled_for"
cat <<'EOF'
The every-second SQL job: one run per slot, none twice, none missing.
EOF
sl_as_server psql -X -q -d appdb -c "SELECT count(*) AS runs, count(DISTINCT scheduled_for) AS distinct_slots,
                                            extract(epoch FROM max(scheduled_for) - min(scheduled_for))::int + 1 AS slots_in_span,
                                            (SELECT count(*) FROM heartbeat) AS heartbeat_rows,
                                            (SELECT round(max(extract(epoch FROM at - date_trunc('second', at))) * 1000, 1)
                                               FROM heartbeat) AS max_start_lag_ms
                                       FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
                                      WHERE j.job_name = 'heartbeat' AND r.status = 'succeeded'"
# what the demo shows, checked: every NOTIFY run went to exactly one
# server, and every slot of the SQL job ran once
CLAIMS=$(cat "$DEMO"/app-*.out | grep -c ' claimed run ')
DISTINCT_CLAIMS=$(cat "$DEMO"/app-*.out | grep ' claimed run ' | awk '{print $5}' | sort -u | wc -l)
NOTIFY_OK=$(app demo "SELECT count(*) FILTER (WHERE r.status = 'succeeded' AND r.claimed_by IS NOT NULL) = count(*) AND count(*) >= 3
                        FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'send_statistics';")
SQL_OK=$(app demo "SELECT count(*) = count(DISTINCT scheduled_for) AND count(*) >= 6
                      AND count(*) = (SELECT count(*) FROM heartbeat)
                      AND extract(epoch FROM max(scheduled_for) - min(scheduled_for))::int + 1 = count(*)
                    FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'heartbeat';")
echo "-> $CLAIMS NOTIFY runs claimed, $DISTINCT_CLAIMS distinct runs: each by exactly one server"

sl_cluster_stop_all
rm -rf "$DEMO"
sl_log "cluster stopped; demo finished"
[ "$WINNERS" -eq 1 ] && [ "$CLAIMS" -ge 3 ] && [ "$CLAIMS" -eq "$DISTINCT_CLAIMS" ] &&
	[ "$NOTIFY_OK" = t ] && [ "$SQL_OK" = t ]
