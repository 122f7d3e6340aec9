/* sql/schedlock--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION schedlock UPDATE TO '1.1'" to load this file. \quit

/*
 * Release 1.1.  schedlock ships no separate schedlock--1.1.sql: CREATE
 * EXTENSION schedlock runs schedlock--1.0.sql and then this script, so a
 * fresh 1.1 installation and an upgraded 1.0 one are made by the same
 * statements.  test/t/006_upgrade.pl checks that they end up identical.
 *
 * Every statement is schema-qualified; the script runs with the search_path
 * CREATE/ALTER EXTENSION sets (the extension's schema, then pg_temp).
 */

-------------------------------------------------------------------------------
-- Issues 10 and 11, lease locks (src/lock.c): a lease belongs to the role
-- that acquired it
-------------------------------------------------------------------------------

/*
 * The role (current_user) that acquired the current lease.  Only its
 * members and superusers may release, extend or assert the lease, or see
 * its token and holder_pid in schedlock.locks.  NULL for leases acquired
 * before 1.1: those only a superuser may use, until they end.  The lock
 * functions of 1.1 refuse to run on the table of 1.0 (without this column).
 */
ALTER TABLE schedlock.lock_state ADD COLUMN holder_role oid;

COMMENT ON COLUMN schedlock.lock_state.holder_role IS
	'role that acquired the current lease (NULL: acquired before 1.1); only its members and superusers may use the token';

CREATE FUNCTION schedlock.lease_visible(holder_role oid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_lease_visible'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION schedlock.lease_visible(oid) IS
	'internal: whether the current user may see and use the token of a lease acquired by this role';

-- same columns in the same order; token and holder_pid only for the
-- holding role's members and superusers; holder_role added at the end
CREATE OR REPLACE VIEW schedlock.locks AS
SELECT s.lock_name,
	   (s.lock_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
		AND (NOT s.session_bound
			 OR schedlock.session_alive(s.holder_pid, s.holder_session_start))) AS held,
	   s.holder,
	   s.locked_at,
	   s.lock_until,
	   CASE WHEN schedlock.lease_visible(s.holder_role) THEN s.token END AS token,
	   s.session_bound,
	   CASE WHEN schedlock.lease_visible(s.holder_role) THEN s.holder_pid END AS holder_pid,
	   s.holder_role::pg_catalog.regrole AS holder_role
  FROM schedlock.lock_state s;
