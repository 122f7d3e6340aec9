--
-- lock_behaviour.sql: behaviour tables for the lease locks, seen from two
-- application servers A and B (two dblink sessions, each call autocommitted,
-- as an application's calls would be).  The test session only orchestrates.
--
--   expiry           a running lease keeps B out; an expired one lets B in
--   lock_at_least_for an early release still keeps B out for the window
--   extend           renews only an unexpired, unreleased, current lease
--   session_bound    the lease ends with the holder's session
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;

SELECT plan(35);

-- two "application servers", connected over the server's own Unix socket
CREATE FUNCTION pg_temp.connect(conn text) RETURNS void LANGUAGE sql AS $$
	SELECT dblink_connect(conn, format('host=%s port=%s dbname=%s application_name=%s',
									   split_part(current_setting('unix_socket_directories'), ',', 1),
									   current_setting('port'), current_database(), conn));
$$;
CREATE FUNCTION pg_temp.disconnect(conn text) RETURNS void LANGUAGE sql AS $$
	SELECT dblink_disconnect(conn);
$$;
-- wait up to 5 s for a backend to exit
CREATE FUNCTION pg_temp.wait_gone(p integer) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..100 LOOP
		-- the backend status is a snapshot kept until the transaction ends
		PERFORM pg_stat_clear_snapshot();
		IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = p) THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END;
$$;
DO $$ BEGIN PERFORM pg_temp.connect('a'); PERFORM pg_temp.connect('b'); END $$;

CREATE FUNCTION pg_temp.acq(conn text, name text, most interval,
							at_least interval DEFAULT '0', bound boolean DEFAULT false)
RETURNS bigint LANGUAGE sql AS $$
	SELECT t FROM dblink(conn, format('SELECT schedlock_acquire(%L, %L, %L, %L, %L)',
									  name, most, at_least, conn, bound)) AS r(t bigint)
$$;
CREATE FUNCTION pg_temp.rel(conn text, name text, token bigint)
RETURNS boolean LANGUAGE sql AS $$
	SELECT ok FROM dblink(conn, format('SELECT schedlock_release(%L, %s)', name, token)) AS r(ok boolean)
$$;
CREATE FUNCTION pg_temp.ext(conn text, name text, token bigint, most interval)
RETURNS boolean LANGUAGE sql AS $$
	SELECT ok FROM dblink(conn, format('SELECT schedlock_extend(%L, %s, %L)', name, token, most)) AS r(ok boolean)
$$;
CREATE FUNCTION pg_temp.backend_pid(conn text)
RETURNS integer LANGUAGE sql AS $$
	SELECT p FROM dblink(conn, 'SELECT pg_backend_pid()') AS r(p integer)
$$;

-------------------------------------------------------------------------------
-- expiry and lock_at_least_for: A acquires (lease, at-least), optionally
-- releases at once, the clock moves on by "wait"; does B get the lock?
-------------------------------------------------------------------------------
CREATE TEMP TABLE lease_cases (
	id serial, description text, lease interval, at_least interval,
	a_releases boolean, wait float8, b_gets_lock boolean
);
INSERT INTO lease_cases (description, lease, at_least, a_releases, wait, b_gets_lock) VALUES
	('expiry: while A''s lease runs, B is refused',                      '1 hour',        '0',             false, 0,   false),
	('expiry: once A''s lease has expired, B takes over',                '300 ms',        '0',             false, 0.5, true),
	('expiry: an expired lease is taken over even with an at-least window', '300 ms',     '200 ms',        false, 0.5, true),
	('release: without lock_at_least_for, B gets the lock at once',      '1 hour',        '0',             true,  0,   true),
	('lock_at_least_for: an early release keeps B out for the window',   '1 hour',        '2 seconds',     true,  0,   false),
	('lock_at_least_for: a five-second-late server is still kept out',   '50 minutes',    '55 seconds',    true,  0,   false),
	('lock_at_least_for: after the window B gets the lock',              '1 hour',        '300 ms',        true,  0.5, true),
	('lock_at_least_for: equal to the lease, released at once: B refused', '2 seconds',   '2 seconds',     true,  0,   false);

CREATE FUNCTION pg_temp.run_lease_case(c lease_cases) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	name text := 'lease-case-' || c.id;
	ta bigint;
	tb bigint;
BEGIN
	ta := pg_temp.acq('a', name, c.lease, c.at_least);
	IF ta IS NULL THEN
		RAISE EXCEPTION 'A could not acquire %', name;
	END IF;
	IF c.a_releases AND NOT pg_temp.rel('a', name, ta) THEN
		RAISE EXCEPTION 'A could not release %', name;
	END IF;
	PERFORM pg_sleep(c.wait);
	tb := pg_temp.acq('b', name, '1 hour');
	IF tb IS NOT NULL AND tb <= ta THEN
		RAISE EXCEPTION 'B got token % not above A''s %', tb, ta;
	END IF;
	RETURN tb IS NOT NULL;
END;
$$;

SELECT is(pg_temp.run_lease_case(c), c.b_gets_lock, c.description)
  FROM lease_cases c ORDER BY c.id;

-------------------------------------------------------------------------------
-- extend
-------------------------------------------------------------------------------
SELECT pg_temp.acq('a', 'ext-1', '500 ms') AS t \gset
SELECT ok(pg_temp.ext('a', 'ext-1', :t, '1 hour'), 'extend: an unexpired lease is renewed');
DO $$ BEGIN PERFORM pg_sleep(0.7); END $$;
SELECT is(pg_temp.acq('b', 'ext-1', '1 hour'), NULL,
		  'extend: B is refused after the original lease would have ended');

SELECT pg_temp.acq('a', 'ext-2', '300 ms') AS t \gset
DO $$ BEGIN PERFORM pg_sleep(0.5); END $$;
SELECT ok(NOT pg_temp.ext('a', 'ext-2', :t, '1 hour'), 'extend: after expiry it returns false');
SELECT isnt(pg_temp.acq('b', 'ext-2', '1 hour'), NULL,
			'extend: a refused extend does not revive the lease, B takes over');

SELECT pg_temp.acq('a', 'ext-3', '300 ms') AS t \gset
DO $$ BEGIN PERFORM pg_sleep(0.5); END $$;
SELECT pg_temp.acq('b', 'ext-3', '1 hour') AS tb \gset
SELECT ok(NOT pg_temp.ext('a', 'ext-3', :t, '1 hour'), 'extend: after a takeover the old token is refused');
SELECT ok(pg_temp.ext('b', 'ext-3', :tb, '2 hours'), 'extend: the new holder can still extend');
SELECT is((SELECT token FROM schedlock.locks WHERE lock_name = 'ext-3'), :tb::bigint,
		  'extend: the refused extend left the new holder in place');

SELECT pg_temp.acq('a', 'ext-4', '1 hour') AS t \gset
SELECT ok(pg_temp.rel('a', 'ext-4', :t), 'extend: release first');
SELECT ok(NOT pg_temp.ext('a', 'ext-4', :t, '1 hour'), 'extend: after a release it returns false');

SELECT pg_temp.acq('a', 'ext-5', '1 hour') AS t \gset
SELECT ok(pg_temp.ext('b', 'ext-5', :t, '2 hours'),
		  'extend: any session of the same role holding the token may extend');
SELECT cmp_ok((SELECT lock_until - clock_timestamp() FROM schedlock.locks WHERE lock_name = 'ext-5'),
			  '>', interval '119 minutes', 'extend: lock_until is now + the new lock_at_most_for');

-------------------------------------------------------------------------------
-- tokens strictly increase per name across takeovers
-------------------------------------------------------------------------------
CREATE TEMP TABLE seen_tokens (n serial, token bigint);
DO $$
BEGIN
	FOR i IN 1..20 LOOP
		INSERT INTO seen_tokens (token)
			SELECT pg_temp.acq(CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, 'tokens', '1 ms');
		PERFORM pg_sleep(0.005);
	END LOOP;
END;
$$;
SELECT is((SELECT count(*)::int FROM seen_tokens WHERE token IS NOT NULL), 20,
		  'tokens: every acquire of an expired lease succeeds');
SELECT is((SELECT count(*)::int FROM seen_tokens s1 JOIN seen_tokens s2 ON s2.n = s1.n + 1
			WHERE s2.token <= s1.token), 0,
		  'tokens: each token is greater than the one before');

-------------------------------------------------------------------------------
-- session_bound
-------------------------------------------------------------------------------
SELECT pg_temp.backend_pid('a') AS apid \gset
SELECT isnt(pg_temp.acq('a', 'bound-1', '1 hour', '0', true), NULL, 'session_bound: A acquires for an hour');
SELECT is(pg_temp.acq('b', 'bound-1', '1 hour'), NULL, 'session_bound: B is refused while A''s session lives');
SELECT is((SELECT holder_pid FROM schedlock.locks WHERE lock_name = 'bound-1'), :apid,
		  'session_bound: the view shows A''s backend pid');
SELECT ok(pg_terminate_backend(:apid), 'session_bound: terminate A''s backend');
SELECT ok(pg_temp.wait_gone(:apid), 'session_bound: A''s backend is gone');
SELECT is((SELECT held FROM schedlock.locks WHERE lock_name = 'bound-1'), false,
		  'session_bound: the view no longer shows the lock as held');
SELECT isnt(pg_temp.acq('b', 'bound-1', '1 hour'), NULL,
			'session_bound: B acquires at once, an hour before the lease would end');
DO $$ BEGIN PERFORM pg_temp.disconnect('a'); PERFORM pg_temp.connect('a'); END $$;

SELECT isnt(pg_temp.acq('a', 'bound-2', '1 hour', '0', true), NULL, 'session_bound: A acquires again');
DO $$ BEGIN PERFORM pg_temp.disconnect('a'); PERFORM pg_sleep(0.3); END $$;
SELECT isnt(pg_temp.acq('b', 'bound-2', '1 hour'), NULL,
			'session_bound: after A disconnects normally, B acquires at once');
DO $$ BEGIN PERFORM pg_temp.connect('a'); END $$;

SELECT pg_temp.backend_pid('a') AS apid \gset
SELECT pg_temp.acq('a', 'bound-3', '1 hour') AS t \gset
SELECT ok(pg_terminate_backend(:apid), 'lease (not session-bound): terminate A''s backend');
DO $$ BEGIN PERFORM pg_sleep(0.3); END $$;
SELECT is(pg_temp.acq('b', 'bound-3', '1 hour'), NULL,
		  'lease (not session-bound): the lease outlives A''s session, B is refused');
DO $$ BEGIN PERFORM pg_temp.disconnect('a'); PERFORM pg_temp.connect('a'); END $$;

SELECT pg_temp.acq('a', 'bound-4', '1 hour', '0', true) AS t \gset
SELECT ok(pg_temp.rel('a', 'bound-4', :t), 'session_bound: A releases');
SELECT is((SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21331
			AND pid = pg_temp.backend_pid('a')), 0,
		  'session_bound: the release freed A''s advisory lock');
SELECT isnt(pg_temp.acq('b', 'bound-4', '1 hour'), NULL, 'session_bound: B acquires after the release');

DO $$ BEGIN PERFORM pg_temp.disconnect('a'); PERFORM pg_temp.disconnect('b'); END $$;
SELECT * FROM finish();
