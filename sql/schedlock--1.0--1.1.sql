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
-- Issue 10: a job's owner and run_as role are dependencies of the job
-------------------------------------------------------------------------------

/*
 * A job's roles are recorded in pg_shdepend (see src/roles.c), so that DROP
 * ROLE refuses a role that owns jobs, or that jobs run as, from whichever
 * database it runs in.  The trigger keeps the records in step with every
 * change of schedlock.jobs (ENABLE ALWAYS: also when session_replication_role
 * is replica); schedlock.sync_job_roles() rebuilds them from the table, here
 * for the jobs of a release 1.0 database, and at every start of dispatch.
 */
CREATE FUNCTION schedlock.job_roles_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'schedlock_job_roles_trigger'
LANGUAGE C;

COMMENT ON FUNCTION schedlock.job_roles_trigger() IS
	'internal: keeps the records of the jobs'' roles in pg_shdepend in step with schedlock.jobs';

REVOKE ALL ON FUNCTION schedlock.job_roles_trigger() FROM PUBLIC;

CREATE TRIGGER job_roles
	AFTER INSERT OR UPDATE OF owner, run_as ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.job_roles_trigger();
-- deletions are handled per statement, grouped by role
CREATE TRIGGER job_roles_delete
	AFTER DELETE ON schedlock.jobs REFERENCING OLD TABLE AS old_jobs
	FOR EACH STATEMENT EXECUTE FUNCTION schedlock.job_roles_trigger();
CREATE TRIGGER job_roles_truncate
	AFTER TRUNCATE ON schedlock.jobs
	FOR EACH STATEMENT EXECUTE FUNCTION schedlock.job_roles_trigger();
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER job_roles;
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER job_roles_delete;
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER job_roles_truncate;

CREATE FUNCTION schedlock.sync_job_roles()
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_sync_job_roles_sql'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.sync_job_roles() IS
	'rebuild the records of this database''s jobs on their roles in pg_shdepend; returns how many records changed';

REVOKE ALL ON FUNCTION schedlock.sync_job_roles() FROM PUBLIC;

SELECT schedlock.sync_job_roles();
