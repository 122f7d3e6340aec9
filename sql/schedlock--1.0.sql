/* sql/schedlock--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION schedlock" to load this file. \quit

/*
 * Functions live in the extension's schema (@extschema@, "public" unless
 * CREATE EXTENSION ... SCHEMA says otherwise); tables and views live in the
 * dedicated schema "schedlock".
 */
CREATE SCHEMA IF NOT EXISTS schedlock;
GRANT USAGE ON SCHEMA schedlock TO PUBLIC;

-------------------------------------------------------------------------------
-- Lease locks (src/lock.c)
-------------------------------------------------------------------------------

/*
 * One row per lock name ever acquired.  Rows are never deleted by schedlock:
 * the token column is the per-name fencing counter, and deleting a row would
 * let a token be handed out again.  Nobody but the extension owner may write
 * the table; the lock functions switch to the owner internally.
 */
CREATE TABLE schedlock.lock_state (
	lock_name text COLLATE "C" NOT NULL PRIMARY KEY
		CHECK (pg_catalog.length(lock_name) BETWEEN 1 AND 255),
	token bigint NOT NULL,
	holder text,
	holder_pid integer,
	holder_session_start timestamptz,
	session_bound boolean NOT NULL DEFAULT false,
	locked_at timestamptz NOT NULL,
	lock_until timestamptz NOT NULL,
	min_until timestamptz NOT NULL,
	released_at timestamptz
) WITH (fillfactor = 50);

COMMENT ON TABLE schedlock.lock_state IS
	'Lease state of every schedlock lock name; written only by the schedlock_* functions';
COMMENT ON COLUMN schedlock.lock_state.min_until IS
	'locked_at + lock_at_least_for: a release never sets lock_until below this';

REVOKE ALL ON schedlock.lock_state FROM PUBLIC;

-- keep tokens monotonic across pg_dump / restore
SELECT pg_catalog.pg_extension_config_dump('schedlock.lock_state', '');

CREATE FUNCTION schedlock.session_alive(holder_pid integer, holder_session_start timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_session_alive'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.session_alive(integer, timestamptz) IS
	'internal: whether the session that took a session-bound lock still exists';

CREATE FUNCTION @extschema@.schedlock_acquire(lock_name text,
											  lock_at_most_for interval DEFAULT '10 minutes',
											  lock_at_least_for interval DEFAULT '0',
											  holder text DEFAULT NULL,
											  session_bound boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_acquire'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_acquire(text, interval, interval, text, boolean) IS
	'take the named lease lock without waiting; returns a fencing token, or NULL when someone else holds it';

CREATE FUNCTION @extschema@.schedlock_release(lock_name text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_release'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_release(text, bigint) IS
	'release the lock held with this token (lock_until becomes greatest(now, locked_at + lock_at_least_for)); false for a stale token';

CREATE FUNCTION @extschema@.schedlock_extend(lock_name text, token bigint,
											 lock_at_most_for interval)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_extend'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_extend(text, bigint, interval) IS
	'renew an unexpired lease held with this token to now + lock_at_most_for; false means ownership was lost';

CREATE FUNCTION @extschema@.schedlock_assert(lock_name text, token bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'schedlock_assert'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_assert(text, bigint) IS
	'raise SQLSTATE SL001 unless the token holds an unexpired lease; then keep the lock from being taken over until this transaction ends';

CREATE VIEW schedlock.locks AS
SELECT s.lock_name,
	   (s.lock_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
		AND (NOT s.session_bound
			 OR schedlock.session_alive(s.holder_pid, s.holder_session_start))) AS held,
	   s.holder,
	   s.locked_at,
	   s.lock_until,
	   s.token,
	   s.session_bound,
	   s.holder_pid
  FROM schedlock.lock_state s;

COMMENT ON VIEW schedlock.locks IS
	'one row per lock name; held is true while an acquire would be refused';

GRANT SELECT ON schedlock.locks TO PUBLIC;

-------------------------------------------------------------------------------
-- Cron engine (src/cron_sql.c)
-------------------------------------------------------------------------------

/*
 * Both functions read schedlock.timezone when timezone is NULL, hence
 * STABLE.  They are CALLED ON NULL INPUT so that a NULL schedule, after or
 * count raises an error instead of quietly returning NULL.
 */
CREATE FUNCTION @extschema@.cron_next(schedule text,
									  after timestamptz DEFAULT pg_catalog.now(),
									  timezone text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'schedlock_cron_next'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.cron_next(text, timestamptz, text) IS
	'first time strictly after "after" at which the cron schedule fires in the time zone (NULL: schedlock.timezone); NULL for @reboot';

CREATE FUNCTION @extschema@.cron_next_runs(schedule text,
										   count integer,
										   after timestamptz DEFAULT pg_catalog.now(),
										   timezone text DEFAULT NULL)
RETURNS SETOF timestamptz
AS 'MODULE_PATHNAME', 'schedlock_cron_next_runs'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE ROWS 10;

COMMENT ON FUNCTION @extschema@.cron_next_runs(text, integer, timestamptz, text) IS
	'the next count (0 to 100000) times strictly after "after" at which the cron schedule fires, in order';

-------------------------------------------------------------------------------
-- Job scheduler
-------------------------------------------------------------------------------
