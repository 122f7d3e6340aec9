--
-- lock_marks: a session-bound acquire kept in shared memory reads the lock
-- table only for names the marks say may matter (src/lock/lock_marks.c).  Rows
-- that block, or whose token is larger than the tokens still to come, must
-- be honoured however they got into the table: through the lock functions,
-- or by SQL (INSERT, UPDATE, COPY FROM, as a restore writes them), in this
-- transaction or an earlier one.
--

-- a first session-bound acquire loads this database's marks
SELECT schedlock_acquire('m-load', session_bound => true) IS NOT NULL AS acquired;

-- a durable lease blocks a session-bound acquire; so does its
-- lock_at_least_for window after the release
SELECT schedlock_acquire('m-lease', '1 hour', '0', 'host-a') AS t1 \gset
SELECT schedlock_acquire('m-lease', session_bound => true) IS NULL AS refused_while_held;
SELECT schedlock_acquire('m-window', '1 hour', '1 hour', 'host-a') AS t2 \gset
SELECT schedlock_release('m-window', :t2) AS released;
SELECT schedlock_acquire('m-window', session_bound => true) IS NULL AS refused_in_window;
-- once the window is over the name is free, with a larger token
SELECT schedlock_release('m-lease', :t1) AS released;
SELECT schedlock_acquire('m-lease', session_bound => true) > :t1 AS larger_token;

-- rows written by SQL after the marks were loaded
INSERT INTO schedlock.lock_state (lock_name, token, holder, locked_at, lock_until, min_until)
VALUES ('m-insert', 1, 'restored', now(), now() + interval '1 hour', now());
SELECT schedlock_acquire('m-insert', session_bound => true) IS NULL AS refused_inserted;

-- a row that blocks nobody, then made to block by UPDATE
INSERT INTO schedlock.lock_state (lock_name, token, holder, locked_at, lock_until, min_until)
VALUES ('m-update-2', 2, 'old', now() - interval '2 hours', now() - interval '1 hour', now() - interval '2 hours');
SELECT schedlock_acquire('m-load-2', session_bound => true) IS NOT NULL AS marks_loaded_again;
UPDATE schedlock.lock_state SET lock_until = now() + interval '1 hour'
 WHERE lock_name = 'm-update-2';
SELECT schedlock_acquire('m-update-2', session_bound => true) IS NULL AS refused_updated;

COPY schedlock.lock_state (lock_name, token, holder, locked_at, lock_until, min_until) FROM stdin;
m-copy	3	restored	2000-01-01 00:00:00+00	infinity	2000-01-01 00:00:00+00
\.
SELECT schedlock_acquire('m-copy', session_bound => true) IS NULL AS refused_copied;

-- a row written earlier in the same transaction
BEGIN;
INSERT INTO schedlock.lock_state (lock_name, token, holder, locked_at, lock_until, min_until)
VALUES ('m-xact', 4, 'restored', now(), now() + interval '1 hour', now());
SELECT schedlock_acquire('m-xact', session_bound => true) IS NULL AS refused_same_transaction;
COMMIT;

-- a row whose token is larger than any the server would hand out (a dump
-- from a server with more WAL): the next token is still larger
INSERT INTO schedlock.lock_state (lock_name, token, holder, locked_at, lock_until, min_until)
VALUES ('m-token', 9000000000000000000, 'restored', now() - interval '1 hour',
        now() - interval '1 minute', now() - interval '1 hour');
SELECT schedlock_acquire('m-load-3', session_bound => true) IS NOT NULL AS marks_loaded_again;
SELECT schedlock_acquire('m-token', session_bound => true) > 9000000000000000000 AS larger_than_restored;

-- the same after a durable acquire took its token from such a row
INSERT INTO schedlock.lock_state (lock_name, token, holder, locked_at, lock_until, min_until)
VALUES ('m-token-2', 9100000000000000000, 'restored', now() - interval '1 hour',
        now() - interval '1 minute', now() - interval '1 hour');
SELECT schedlock_acquire('m-token-2', '1 second', '0', 'host-a') AS t4 \gset
SELECT schedlock_release('m-token-2', :t4) AS released;
SELECT :t4 > 9100000000000000000 AS durable_larger;
SELECT schedlock_acquire('m-token-2', session_bound => true) > :t4 AS session_larger;

-- what the locks view shows for the names above
SELECT lock_name, held, holder, session_bound
  FROM schedlock.locks
 WHERE lock_name LIKE 'm-%'
 ORDER BY lock_name;
