--
-- lock_api: the SQL surface of the lease locks -- functions, defaults,
-- return values, the schedlock.locks view, every input error, and who may
-- write what.  Races are in test/isolation, timing in test/pgtap.
--
-- Raw tokens depend on the server's timeline and WAL position, so this
-- file shows how a token is made up, and comparisons, instead.
--

-- errors are shown as rows: SQLSTATE, message, detail, hint
\i sql/include/try.sql

-- the lock functions live in the extension schema, the lock table and view in "schedlock"
SELECT p.proname, n.nspname, pg_get_function_arguments(p.oid) AS args,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE p.proname IN ('schedlock_acquire', 'schedlock_release', 'schedlock_extend', 'schedlock_assert')
 ORDER BY 1;
SELECT c.relname, c.relkind, n.nspname
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'schedlock' AND c.relname IN ('lock_state', 'locks')
 ORDER BY 1;

-- a new name: the caller gets a token; everybody else gets NULL
SELECT schedlock_acquire('report') AS t1 \gset
-- timeline * 2^52 + WAL insert position / 32 (README "Fencing tokens")
SELECT :t1 >> 52 = (SELECT timeline_id FROM pg_control_checkpoint()) AS timeline_in_high_bits,
       (:t1 & ((1::bigint << 52) - 1)) * 32
         <= pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') AS wal_position_below;
SELECT schedlock_acquire('report') IS NULL AS second_caller_refused;

-- defaults: ten-minute lease, no minimum, not session-bound, no holder text
SELECT lock_name, held, holder, lock_until - locked_at AS lease, token = :t1 AS same_token,
       session_bound, holder_pid = pg_backend_pid() AS my_pid
  FROM schedlock.locks WHERE lock_name = 'report';

-- times are the server clock at the call, not the transaction start
BEGIN;
SELECT pg_sleep(0.05);
SELECT schedlock_acquire('clock') IS NOT NULL AS acquired;
SELECT locked_at > now() + interval '40 milliseconds' AS stamped_at_call_time
  FROM schedlock.locks WHERE lock_name = 'clock';
COMMIT;

-- release with the current token works once; a wrong token changes nothing
SELECT schedlock_release('report', :t1 + 1) AS wrong_token;
SELECT schedlock_release('report', :t1) AS released;
SELECT schedlock_release('report', :t1) AS released_twice;
SELECT schedlock_release('never-acquired', 42) AS unknown_name;
SELECT held FROM schedlock.locks WHERE lock_name = 'report';

-- with no lock_at_least_for the name is free at once, with a larger token
SELECT schedlock_acquire('report', '1 hour') AS t2 \gset
SELECT :t2 > :t1 AS token_increased;
SELECT lock_until - locked_at AS lease FROM schedlock.locks WHERE lock_name = 'report';

-- lock_at_least_for keeps the name taken after an early release
SELECT schedlock_acquire('mail', '50 minutes', '55 minutes') AS bad_window;
SELECT schedlock_acquire('mail', '55 minutes', '50 minutes', 'app-1') AS t3 \gset
SELECT schedlock_release('mail', :t3) AS released;
SELECT held, holder, lock_until - locked_at AS kept_for
  FROM schedlock.locks WHERE lock_name = 'mail';
SELECT schedlock_acquire('mail') IS NULL AS still_refused;

-- extend renews an unexpired lease for its token only
SELECT schedlock_extend('report', :t2, '2 hours') AS extended;
SELECT lock_until - clock_timestamp() > interval '119 minutes' AS renewed
  FROM schedlock.locks WHERE lock_name = 'report';
SELECT schedlock_extend('report', :t1, '2 hours') AS stale_token;
SELECT schedlock_extend('mail', :t3, '2 hours') AS after_release;

-- assert passes for the holder and fails with SQLSTATE SL001 otherwise
SELECT schedlock_assert('report', :t2);
-- (raw token values depend on the timeline and WAL position and are masked)
SELECT state, regexp_replace(message, '[0-9]{6,}', '<token>') AS message,
       regexp_replace(detail, '[0-9]{6,}', '<token>') AS detail
  FROM pg_temp.try('SELECT schedlock_assert(''report'', ' || :t1 || ')');
SELECT state, regexp_replace(message, '[0-9]{6,}', '<token>') AS message, detail
  FROM pg_temp.try('SELECT schedlock_assert(''mail'', ' || :t3 || ')');
SELECT state, message, detail FROM pg_temp.try('SELECT schedlock_assert(''nobody'', 1)');

-- an acquire that rolls back was never taken
BEGIN;
SELECT schedlock_acquire('rolled-back') IS NOT NULL AS acquired_in_txn;
ROLLBACK;
SELECT count(*) AS rows_left FROM schedlock.locks WHERE lock_name = 'rolled-back';

-- within one transaction the lock is not re-entrant
BEGIN;
SELECT schedlock_acquire('reentrant') IS NOT NULL AS first;
SELECT schedlock_acquire('reentrant') IS NULL AS second_refused;
COMMIT;

-- session-bound: holder pid recorded; kept in shared memory, so no identity
-- advisory lock is taken (issue 14; only a lease kept in the table needs one)
SELECT schedlock_acquire('bound', '1 hour', '0', 'worker-7', true) AS t4 \gset
SELECT held, holder, session_bound, holder_pid = pg_backend_pid() AS my_pid
  FROM schedlock.locks WHERE lock_name = 'bound';
SELECT count(*) AS identity_locks FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 21331 AND pid = pg_backend_pid();
SELECT schedlock_acquire('bound', session_bound => true) IS NULL AS not_reentrant;
SELECT schedlock_release('bound', :t4) AS released;
SELECT count(*) AS identity_locks FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 21331 AND pid = pg_backend_pid();
SELECT held, session_bound FROM schedlock.locks WHERE lock_name = 'bound';

-- a session-bound acquire that rolls back leaves no identity lock behind
BEGIN;
SELECT schedlock_acquire('bound-rb', session_bound => true) IS NOT NULL AS acquired;
ROLLBACK;
SELECT count(*) AS identity_locks FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 21331 AND pid = pg_backend_pid();

-- ... and one inside a rolled-back savepoint neither
BEGIN;
SAVEPOINT s;
SELECT schedlock_acquire('bound-sp', session_bound => true) IS NOT NULL AS acquired;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT count(*) AS identity_locks FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 21331 AND pid = pg_backend_pid();
SELECT count(*) AS rows_left FROM schedlock.locks WHERE lock_name = 'bound-sp';

-- a session-bound lock cannot ride along into a prepared transaction
BEGIN;
SELECT schedlock_acquire('bound-2pc', session_bound => true) IS NOT NULL AS acquired;
PREPARE TRANSACTION 'p';
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT count(*) AS rows_left FROM schedlock.locks WHERE lock_name = 'bound-2pc';

-- names: any text up to 255 characters, counted in characters
SELECT schedlock_acquire(repeat('x', 255)) IS NOT NULL AS max_length_ok;
SELECT schedlock_acquire(repeat('é', 255)) IS NOT NULL AS multibyte_ok;

-- bad input: a clear error with a real SQLSTATE, and nothing written
SELECT count(*) AS rows_before FROM schedlock.locks \gset
SELECT t.query, r.*
  FROM (VALUES
    ($q$SELECT schedlock_acquire(NULL)$q$),
    ($q$SELECT schedlock_acquire('')$q$),
    ($q$SELECT schedlock_acquire(repeat('x', 256))$q$),
    ($q$SELECT schedlock_acquire('bad', NULL)$q$),
    ($q$SELECT schedlock_acquire('bad', '0')$q$),
    ($q$SELECT schedlock_acquire('bad', '-5 minutes')$q$),
    ($q$SELECT schedlock_acquire('bad', '1 minute', NULL)$q$),
    ($q$SELECT schedlock_acquire('bad', '1 minute', '-1 second')$q$),
    ($q$SELECT schedlock_acquire('bad', '1 minute', '2 minutes')$q$),
    ($q$SELECT schedlock_acquire('bad', holder => repeat('h', 1025))$q$),
    ($q$SELECT schedlock_acquire('bad', session_bound => NULL)$q$),
    ($q$SELECT schedlock_release(NULL, 1)$q$),
    ($q$SELECT schedlock_release('', 1)$q$),
    ($q$SELECT schedlock_release('bad', NULL)$q$),
    ($q$SELECT schedlock_extend('bad', NULL, '1 minute')$q$),
    ($q$SELECT schedlock_extend('bad', 1, NULL)$q$),
    ($q$SELECT schedlock_extend('bad', 1, '0')$q$),
    ($q$SELECT schedlock_assert('bad', NULL)$q$),
    ($q$SELECT schedlock_assert(NULL, 1)$q$)) AS t(query), pg_temp.try(t.query) AS r;
SELECT count(*) = :rows_before AS nothing_written FROM schedlock.locks;

-- intervals are judged by the time they give, now + interval, not by
-- interval comparison (which counts a month as 30 days): '-1 year +361 days'
-- compares as positive but ends 4 or 5 days before now.  Intervals that
-- could take the clock out of range are refused as too large, never with
-- 22008.  The limit is 1000 years.
SELECT regexp_replace(t.query, '[0-9]{12,}', '<token>') AS query, r.*
  FROM (VALUES
    ($q$SELECT schedlock_acquire('bad', '-1 year +361 days')$q$),
    ($q$SELECT schedlock_acquire('bad', '1 hour', '-1 year +361 days')$q$),
    ($q$SELECT schedlock_acquire('bad', '1000000 years')$q$),
    ($q$SELECT schedlock_acquire('bad', '-100000 years +36500000 days')$q$),
    ($q$SELECT schedlock_acquire('bad', '1 hour', '1000000 years')$q$),
    ($q$SELECT schedlock_acquire('bad', '1001 years')$q$),
    ($q$SELECT schedlock_acquire('bad', '100 years 400000 days')$q$),
    ($q$SELECT schedlock_acquire('bad', '1 hour', '2 years -361 days')$q$),
    ($q$SELECT schedlock_extend('report', $q$ || :t2 || $q$, '-1 year +361 days')$q$),
    ($q$SELECT schedlock_extend('report', $q$ || :t2 || $q$, '1000000 years')$q$),
    ($q$SELECT schedlock_extend('report', $q$ || :t2 || $q$, '2562047788 hours')$q$)) AS t(query),
       pg_temp.try(t.query) AS r;
SELECT count(*) = :rows_before AS nothing_written FROM schedlock.locks;
SELECT lock_until - clock_timestamp() BETWEEN interval '100 minutes' AND interval '2 hours' AS report_unchanged
  FROM schedlock.locks WHERE lock_name = 'report';
-- the limit itself is accepted
SELECT schedlock_acquire('long-lease', '1000 years') IS NOT NULL AS thousand_years_ok;
SELECT lock_until > clock_timestamp() + interval '999 years' AS ends_in_1000_years
  FROM schedlock.locks WHERE lock_name = 'long-lease';

-- acquire, release and extend write: a read-only transaction refuses them
-- with 25006 (like any write) and nothing is written; assert writes nothing
-- and works there
SELECT schedlock_acquire('read-only', '1 hour') AS t6 \gset
SELECT count(*) AS rows_before FROM schedlock.locks \gset
BEGIN READ ONLY;
SELECT regexp_replace(t.query, '[0-9]{12,}', '<token>') AS query, r.state, r.message
  FROM (VALUES
    ($q$SELECT schedlock_acquire('read-only-new')$q$),
    ($q$SELECT schedlock_acquire('read-only-new', session_bound => true)$q$),
    ($q$SELECT schedlock_release('read-only', $q$ || :t6 || $q$)$q$),
    ($q$SELECT schedlock_extend('read-only', $q$ || :t6 || $q$, '2 hours')$q$)) AS t(query),
       pg_temp.try(t.query) AS r;
SELECT schedlock_assert('read-only', :t6);
COMMIT;
SELECT (SELECT count(*) FROM schedlock.locks) = :rows_before AS nothing_written,
       released_at IS NULL AS still_held,
       lock_until - locked_at = interval '1 hour' AS not_extended
  FROM schedlock.lock_state WHERE lock_name = 'read-only';
SELECT count(*) AS identity_locks FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 21331 AND pid = pg_backend_pid();

-- a lease belongs to the role that acquired it: other roles see its name
-- and state but not its token or holder_pid, and their release, extend and
-- assert fail with 42501 whatever token they pass; members of the role may
-- use it; unknown names answer as before (false / SL001); bad input is
-- bad input (22023) for anybody
CREATE ROLE lock_tenant_a;
CREATE ROLE lock_tenant_b;
CREATE ROLE lock_tenant_a_ops IN ROLE lock_tenant_a;
SET ROLE lock_tenant_a;
SELECT schedlock_acquire('tenant-a', '1 hour', '0', 'a-host') AS ta \gset
SELECT lock_name, held, holder, token = :ta AS own_token, holder_pid = pg_backend_pid() AS own_pid,
       holder_role
  FROM schedlock.locks WHERE lock_name = 'tenant-a';
RESET ROLE;
SELECT to_jsonb(s) AS row_before FROM schedlock.lock_state s WHERE lock_name = 'tenant-a' \gset
SET ROLE lock_tenant_b;
SELECT lock_name, held, holder, lock_until IS NOT NULL AS lock_until_shown, token, session_bound,
       holder_pid, holder_role
  FROM schedlock.locks WHERE lock_name = 'tenant-a';
SELECT regexp_replace(t.query, '[0-9]{12,}', '<token>') AS query, r.*
  FROM (VALUES
    ($q$SELECT schedlock_release('tenant-a', $q$ || :ta || $q$)$q$),
    ($q$SELECT schedlock_release('tenant-a', $q$ || :ta + 1 || $q$)$q$),
    ($q$SELECT schedlock_extend('tenant-a', $q$ || :ta || $q$, '999 years')$q$),
    ($q$SELECT schedlock_extend('tenant-a', $q$ || :ta || $q$, '100000 years')$q$),
    ($q$SELECT schedlock_extend('tenant-a', $q$ || :ta || $q$, '1 hour')$q$),
    ($q$SELECT schedlock_assert('tenant-a', $q$ || :ta || $q$)$q$),
    ($q$SELECT schedlock_assert('tenant-a', $q$ || :ta - 1 || $q$)$q$),
    ($q$SELECT schedlock_release('no-such-lock', 1)$q$),
    ($q$SELECT schedlock_assert('no-such-lock', 1)$q$)) AS t(query),
       pg_temp.try(t.query) AS r;
SELECT schedlock_acquire('tenant-a') IS NULL AS b_refused;
RESET ROLE;
SELECT to_jsonb(s) = :'row_before'::jsonb AS unchanged
  FROM schedlock.lock_state s WHERE lock_name = 'tenant-a';
SET ROLE lock_tenant_a_ops;
SELECT token = :ta AS member_sees_token FROM schedlock.locks WHERE lock_name = 'tenant-a';
SELECT schedlock_extend('tenant-a', :ta, '2 hours') AS member_extends;
SELECT schedlock_release('tenant-a', :ta) AS member_releases;
RESET ROLE;
-- the superuser sees and may use every lease
SELECT token = :ta AS superuser_sees_token FROM schedlock.locks WHERE lock_name = 'tenant-a';
DROP ROLE lock_tenant_a_ops;
DROP ROLE lock_tenant_b;
DROP ROLE lock_tenant_a;

-- the same for a session-bound lease kept in shared memory (issue 14): the
-- view, and schedlock.session_leases() called directly, hide its token and
-- holder_pid from other roles, whose release, extend and assert fail with
-- 42501; its owner uses it as any lease
CREATE ROLE lock_tenant_c;
CREATE ROLE lock_tenant_d;
SET ROLE lock_tenant_c;
SELECT schedlock_acquire('tenant-c', '1 hour', '0', 'c-host', true) AS tc \gset
SELECT lock_name, held, holder, token = :tc AS own_token, session_bound,
       holder_pid = pg_backend_pid() AS own_pid, holder_role
  FROM schedlock.locks WHERE lock_name = 'tenant-c';
SET ROLE lock_tenant_d;
SELECT lock_name, held, holder, token, session_bound, holder_pid, holder_role
  FROM schedlock.locks WHERE lock_name = 'tenant-c';
SELECT lock_name, token, holder_pid FROM schedlock.session_leases()
 WHERE lock_name = 'tenant-c';
SELECT regexp_replace(t.query, '[0-9]{12,}', '<token>') AS query, r.*
  FROM (VALUES
    ($q$SELECT schedlock_release('tenant-c', $q$ || :tc || $q$)$q$),
    ($q$SELECT schedlock_extend('tenant-c', $q$ || :tc || $q$, '1 hour')$q$),
    ($q$SELECT schedlock_assert('tenant-c', $q$ || :tc || $q$)$q$)) AS t(query),
       pg_temp.try(t.query) AS r;
SELECT schedlock_acquire('tenant-c') IS NULL AS d_refused,
       schedlock_acquire('tenant-c', session_bound => true) IS NULL AS d_refused_bound;
SET ROLE lock_tenant_c;
SELECT schedlock_extend('tenant-c', :tc, '2 hours') AS owner_extends;
SELECT schedlock_assert('tenant-c', :tc);
SELECT schedlock_release('tenant-c', :tc) AS owner_releases;
SELECT held, session_bound, token = :tc AS same_token
  FROM schedlock.locks WHERE lock_name = 'tenant-c';
RESET ROLE;
DROP ROLE lock_tenant_d;
DROP ROLE lock_tenant_c;

-- ordinary roles call the functions and read the view, but cannot write
-- the lock table or read it directly
CREATE ROLE lock_app LOGIN;
SET ROLE lock_app;
SELECT schedlock_acquire('app-lock') IS NOT NULL AS app_acquired;
SELECT lock_name, held FROM schedlock.locks WHERE lock_name = 'app-lock';
UPDATE schedlock.lock_state SET lock_until = now() WHERE lock_name = 'report';
DELETE FROM schedlock.lock_state;
SELECT count(*) FROM schedlock.lock_state;
-- a hostile search_path does not redirect the functions
CREATE TEMP TABLE lock_state (lock_name text);
SET search_path = pg_temp, public;
SELECT schedlock_acquire('app-lock') IS NULL AS still_held;
RESET search_path;
RESET ROLE;
DROP TABLE IF EXISTS pg_temp.lock_state;

DROP OWNED BY lock_app;
DROP ROLE lock_app;
