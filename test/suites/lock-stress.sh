#!/usr/bin/env bash
# lock-stress: SL_STRESS_CLIENTS (default 32) pgbench clients for
# SL_STRESS_SECONDS (default 30) race for 4 lock names.  Each holder logs its
# critical section with its token; the checker asserts zero overlapping
# holders per name, strictly increasing tokens, and that the checker itself
# catches an overlap, a token regression and a reused token planted in a copy
# of the log.  Both ends of a critical section are recorded in a transaction
# that passed schedlock_assert (see test/stress/setup.sql).
set -eu
CLIENTS=${SL_STRESS_CLIENTS:-32}
SECONDS_=${SL_STRESS_SECONDS:-30}
DB=schedlock_stress
DIR=$SRCDIR/test/stress
export PGDATABASE=$DB

psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
	-c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -f "$DIR/setup.sql"

echo "pgbench: $CLIENTS clients, $SECONDS_ s, 4 lock names"
rc=0
"$PG_BINDIR/pgbench" -n -c "$CLIENTS" -j 2 -T "$SECONDS_" \
	-f "$DIR/lease.sql@6" -f "$DIR/session.sql@2" -f "$DIR/extend.sql@1" \
	-f "$DIR/crash.sql@1" >"$SUITE_TMP/pgbench.log" 2>&1 || rc=$?
grep -E "number of (transactions|failed)|tps|aborted" "$SUITE_TMP/pgbench.log" || true
if [ $rc -ne 0 ]; then
	tail -20 "$SUITE_TMP/pgbench.log"
	echo "FAIL: pgbench exited with $rc"
	exit 1
fi

psql -X -q -A -v ON_ERROR_STOP=1 -c "SELECT name, kind, count(*) AS sections FROM crit GROUP BY 1, 2 ORDER BY 1, 2"

# the real log
read -r sections overlaps not_increasing dups < <(psql -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 \
	-c "SELECT * FROM check_log('crit')")
min_per_name=$(psql -X -q -A -t -c "SELECT coalesce(min(c), 0) FROM (SELECT count(*) AS c FROM crit GROUP BY name) x")
names=$(psql -X -q -A -t -c "SELECT count(DISTINCT name) FROM crit")
echo "sections=$sections names=$names min_per_name=$min_per_name overlaps=$overlaps not_increasing=$not_increasing duplicate_tokens=$dups"

# the checker must catch planted faults: a section overlapping another
# holder's, and a token lower than its predecessor's
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE crit_planted AS SELECT * FROM crit;
-- an intruder inside the first complete section of stress-1, with a higher token
INSERT INTO crit_planted (id, name, token, client, kind, entered_at, left_at)
SELECT -1, name, token + 1000000, -1, 'planted', entered_at + (left_at - entered_at) / 2, left_at
  FROM crit WHERE name = 'stress-1' AND left_at IS NOT NULL ORDER BY entered_at LIMIT 1;
-- a later section of stress-2 that went back to an old token
INSERT INTO crit_planted (id, name, token, client, kind, entered_at, left_at)
SELECT -2, name, 1, -1, 'planted', left_at + interval '1 hour', left_at + interval '1 hour 1 ms'
  FROM crit WHERE name = 'stress-2' ORDER BY entered_at DESC LIMIT 1;
-- a second, later section of stress-3 with a token already used
INSERT INTO crit_planted (id, name, token, client, kind, entered_at, left_at)
SELECT -3, name, token, -1, 'planted', left_at + interval '2 hours', left_at + interval '2 hours 1 ms'
  FROM crit WHERE name = 'stress-3' ORDER BY entered_at DESC LIMIT 1;
SQL
read -r _ p_overlaps p_not_increasing p_dups < <(psql -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 \
	-c "SELECT * FROM check_log('crit_planted')")
echo "planted faults found: overlaps=$p_overlaps not_increasing=$p_not_increasing duplicate_tokens=$p_dups"

psql -X -q -d postgres -c "DROP DATABASE $DB"

fail=0
[ "$names" -eq 4 ] || { echo "FAIL: expected 4 names, saw $names"; fail=1; }
[ "$min_per_name" -ge 100 ] || { echo "FAIL: too few sections per name ($min_per_name < 100): the run proves nothing"; fail=1; }
[ "$overlaps" -eq 0 ] || { echo "FAIL: $overlaps overlapping holders"; fail=1; }
[ "$not_increasing" -eq 0 ] || { echo "FAIL: $not_increasing tokens not increasing"; fail=1; }
[ "$dups" -eq 0 ] || { echo "FAIL: $dups duplicate tokens"; fail=1; }
[ "$p_overlaps" -ge 1 ] || { echo "FAIL: the checker missed a planted overlap"; fail=1; }
[ "$p_not_increasing" -ge 1 ] || { echo "FAIL: the checker missed a planted token regression"; fail=1; }
[ "$p_dups" -ge 1 ] || { echo "FAIL: the checker missed a planted duplicate token"; fail=1; }
[ $fail -eq 0 ] && echo "lock-stress: $sections critical sections, 0 overlaps, tokens strictly increasing"
exit $fail
