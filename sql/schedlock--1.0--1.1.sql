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
-- Issue 10: the job API is granted, not public; payloads go to the claimer
-------------------------------------------------------------------------------

/*
 * A NOTIFY run's notification no longer carries the job's payload: any role
 * may LISTEN on any channel.  The role that may claim the run (a member of
 * the job's owner) gets the payload in the call that claims it.
 * schedlock_claim_run(bigint, text) stays, unchanged, for applications of
 * release 1.0.
 */
CREATE FUNCTION @extschema@.schedlock_claim_run_payload(run_id bigint,
														claimed_by text DEFAULT NULL,
														OUT claimed boolean,
														OUT payload jsonb)
RETURNS record
AS 'MODULE_PATHNAME', 'schedlock_claim_run_payload'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_claim_run_payload(bigint, text) IS
	'take a notified run of a NOTIFY job and get the job''s payload; claimed is true (and payload set) for exactly one caller';

/*
 * The job functions make the background workers run SQL and send
 * notifications: like pg_cron, schedlock lets nobody but superusers call
 * them until a DBA grants EXECUTE to the roles that may (README, "Security
 * model").  The lock functions, cron_next and cron_next_runs stay PUBLIC.
 * Jobs scheduled before the upgrade keep running: the workers need no
 * EXECUTE privilege.
 */
REVOKE EXECUTE ON FUNCTION
	@extschema@.schedule_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name),
	@extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name),
	@extschema@.unschedule_job(text),
	@extschema@.run_job(text),
	@extschema@.schedlock_claim_run(bigint, text),
	@extschema@.schedlock_claim_run_payload(bigint, text),
	@extschema@.schedlock_finish_run(bigint, boolean, text)
	FROM PUBLIC;
