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

/*
 * The strongest lock on every table the script changes, first, all at once.
 * The workers may be claiming jobs meanwhile (ALTER EXTENSION schedlock
 * UPDATE does not need them stopped).  Without this, CREATE TRIGGER's lock
 * on schedlock.jobs followed by ALTER TABLE's deadlocked with a worker that
 * had read the table and then wanted to write it.  Waiting for the locks
 * one table after the other would deadlock too (workers lock jobs before
 * job_runs, and job_runs before jobs), so the locks are tried without
 * waiting, all three in a subtransaction that gives them all back when one
 * is not free, every 10 ms for at most a minute: the workers' transactions
 * are short.
 */
DO $$
BEGIN
	FOR i IN 1..6000 LOOP
		BEGIN
			LOCK TABLE schedlock.jobs, schedlock.job_runs, schedlock.lock_state
				IN ACCESS EXCLUSIVE MODE NOWAIT;
			RETURN;
		EXCEPTION WHEN lock_not_available THEN
			PERFORM pg_catalog.pg_sleep(0.01);
		END;
	END LOOP;
	RAISE EXCEPTION 'could not lock the tables of schedlock for the update'
		USING ERRCODE = 'lock_not_available',
			  HINT = 'Retry ALTER EXTENSION schedlock UPDATE, or set schedlock.enabled = off for the update.';
END
$$;

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
-- Issue 11, operations: copies of a database do not run its jobs; database
-- owners can pg_dump
-------------------------------------------------------------------------------

/*
 * Where the jobs of this database belong (src/home.c).  schedlock.home has
 * one row: a random home_id made here by CREATE EXTENSION (or by
 * schedlock_adopt_jobs) and the OID of the database it was made in.  It is
 * not a configuration table, so pg_dump never dumps it: a restored database
 * gets a home of its own from its CREATE EXTENSION.  CREATE DATABASE ...
 * TEMPLATE copies it with the OID of the old database; pg_upgrade (which
 * keeps database OIDs and copies the table's files) and physical replication
 * keep it as it is.  Every job records the home_id it was scheduled under;
 * that column travels with the job in a dump.  The workers run the jobs of
 * a database only while its home names it and no job of another home has
 * arrived (restored_jobs, raised by the trigger below).
 */
CREATE TABLE schedlock.home (
	one boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (one),
	home_id uuid NOT NULL,
	datoid oid NOT NULL,
	restored_jobs boolean NOT NULL DEFAULT false,
	since timestamptz NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE schedlock.home IS
	'where the jobs of this database belong: its home id and database OID; never dumped';
COMMENT ON COLUMN schedlock.home.restored_jobs IS
	'jobs of another home (a restored dump) arrived: the jobs are paused until schedlock_adopt_jobs()';

REVOKE ALL ON schedlock.home FROM PUBLIC;

INSERT INTO schedlock.home (home_id, datoid)
SELECT pg_catalog.gen_random_uuid(), d.oid
  FROM pg_catalog.pg_database d
 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database();

CREATE FUNCTION schedlock.home_id()
RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT h.home_id FROM schedlock.home h $$;

COMMENT ON FUNCTION schedlock.home_id() IS
	'internal: the home id of this database (default of schedlock.jobs.home_id)';

REVOKE ALL ON FUNCTION schedlock.home_id() FROM PUBLIC;

-- jobs of a 1.0 installation belong to the database they are in now.  The
-- column is filled by an UPDATE rather than by "ADD COLUMN ... DEFAULT":
-- a default that is not volatile would be kept in the catalog as the
-- column's missing value, this database's own home_id, and an upgraded
-- installation would differ from a fresh one (test/t/006_upgrade.pl)
ALTER TABLE schedlock.jobs ADD COLUMN home_id uuid;
UPDATE schedlock.jobs SET home_id = schedlock.home_id();
ALTER TABLE schedlock.jobs
	ALTER COLUMN home_id SET DEFAULT schedlock.home_id(),
	ALTER COLUMN home_id SET NOT NULL;

COMMENT ON COLUMN schedlock.jobs.home_id IS
	'home (schedlock.home) of the database the job was scheduled in; dumped with the job';

-- a job row of another home (pg_restore, COPY) is never due, and pauses
-- the jobs of the database; ALWAYS: also under session_replication_role
-- replica
CREATE FUNCTION schedlock.jobs_check_home()
RETURNS trigger
AS 'MODULE_PATHNAME', 'schedlock_jobs_check_home'
LANGUAGE C;

COMMENT ON FUNCTION schedlock.jobs_check_home() IS
	'internal: trigger that pauses jobs arriving from another database';

REVOKE ALL ON FUNCTION schedlock.jobs_check_home() FROM PUBLIC;

CREATE TRIGGER jobs_check_home BEFORE INSERT ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.jobs_check_home();
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER jobs_check_home;

CREATE FUNCTION schedlock.paused_reason()
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE
		 WHEN h.datoid OPERATOR(pg_catalog.<>) d.oid
		 THEN 'copy of the database with OID ' OPERATOR(pg_catalog.||) h.datoid::pg_catalog.text
			  OPERATOR(pg_catalog.||) ' (CREATE DATABASE ... TEMPLATE): call schedlock_adopt_jobs() to run the jobs here'
		 WHEN h.restored_jobs
		 THEN 'jobs restored from another database: call schedlock_adopt_jobs() to run the jobs here'
	   END
  FROM schedlock.home h, pg_catalog.pg_database d
 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
$$;

COMMENT ON FUNCTION schedlock.paused_reason() IS
	'internal: why the jobs of this database do not run here, or NULL';

REVOKE ALL ON FUNCTION schedlock.paused_reason() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION schedlock.paused_reason() TO PUBLIC;

-- schedlock.job_status shows paused_reason() (and a quarantine): its one
-- definition in 1.1 is in the dispatch section below

CREATE FUNCTION @extschema@.schedlock_adopt_jobs()
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_adopt_jobs'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_adopt_jobs() IS
	'run the jobs of a copied or restored database here: each job goes on from its next slot after now; returns how many jobs were adopted';

-- the database owner (and superusers), nobody else
REVOKE ALL ON FUNCTION @extschema@.schedlock_adopt_jobs() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.schedlock_adopt_jobs() TO pg_database_owner;

/*
 * pg_dump by a role that is not a superuser (the database owner).  pg_dump
 * reads every configuration table and sequence of the extension.  The
 * sequences only count jobs and runs: every role may read them.  The lock
 * table gets row-level security without a policy of its own here, so that
 * pg_dump --enable-row-security can read it and ordinary roles still see no
 * row of it (the schedlock.locks view reads it as its owner).  jobs and
 * job_runs already show each role its own rows.
 */
GRANT SELECT ON SEQUENCE schedlock.jobs_job_id_seq, schedlock.job_runs_run_id_seq TO PUBLIC;
ALTER TABLE schedlock.lock_state ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON schedlock.lock_state TO PUBLIC;
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

-------------------------------------------------------------------------------
-- Issue 13: schedlock_import_pg_cron, pg_cron's jobs become schedlock jobs
-------------------------------------------------------------------------------

/*
 * Reads cron.job of the pg_cron extension of this database and creates one
 * schedlock job per pg_cron job of this database (src/import.c).  A dry run
 * (the default) returns the plan without writing; deactivate => true sets
 * each imported pg_cron job inactive in the same transaction.  Runs as the
 * caller: a superuser imports every job as its owner, any other role that
 * is granted EXECUTE only its own, through schedule_job's checks.  Not
 * executable by PUBLIC.
 */
CREATE FUNCTION @extschema@.schedlock_import_pg_cron(dry_run boolean DEFAULT true,
													 deactivate boolean DEFAULT false,
													 jobids bigint[] DEFAULT NULL,
													 OUT cron_jobid bigint,
													 OUT cron_jobname text,
													 OUT username text,
													 OUT database text,
													 OUT schedule text,
													 OUT action text,
													 OUT job_name text,
													 OUT job_id bigint,
													 OUT atomic boolean,
													 OUT enabled boolean,
													 OUT timezone text,
													 OUT detail text,
													 OUT todo text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'schedlock_import_pg_cron'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_import_pg_cron(boolean, boolean, bigint[]) IS
	'create a schedlock job for each pg_cron job of this database (dry_run: only say what would be done); a row per pg_cron job says what was done, or why not, and what is left to do';

REVOKE ALL ON FUNCTION @extschema@.schedlock_import_pg_cron(boolean, boolean, bigint[]) FROM PUBLIC;

-------------------------------------------------------------------------------
-- Issue 11, dispatch: a job that keeps breaking the workers' own bookkeeping
-- is quarantined
-------------------------------------------------------------------------------

/*
 * An error in a worker's bookkeeping of a job (not in the job's command) is
 * logged and the worker goes on (src/quarantine.c).  dispatch_errors counts
 * such errors of the job in a row, the last at dispatch_error_at; a run of
 * the job recorded after that starts the count again.  At 3 the job is
 * disabled and quarantine_reason says why; alter_job(..., enabled => true)
 * or schedule_job clears all three.
 */
ALTER TABLE schedlock.jobs
	ADD COLUMN dispatch_errors integer NOT NULL DEFAULT 0,
	ADD COLUMN dispatch_error_at timestamptz,
	ADD COLUMN quarantine_reason text;

COMMENT ON COLUMN schedlock.jobs.dispatch_errors IS
	'errors in a row of the workers'' own bookkeeping of the job; at 3 the job is quarantined';
COMMENT ON COLUMN schedlock.jobs.dispatch_error_at IS
	'when the last of those errors happened; a run recorded later starts the count again';
COMMENT ON COLUMN schedlock.jobs.quarantine_reason IS
	'why the workers disabled the job (quarantine), or NULL; alter_job(..., enabled => true) clears it';

-- job_status gains paused_reason: why the jobs of a copy are paused
-- (paused_reason(), above), or why the job is quarantined
CREATE OR REPLACE VIEW schedlock.job_status WITH (security_invoker = true) AS
SELECT j.job_id,
	   j.job_name,
	   j.owner,
	   j.schedule,
	   COALESCE(j.timezone,
						   pg_catalog.current_setting('schedlock.timezone')) AS timezone,
	   j.enabled,
	   j.next_run_at,
	   l.status AS last_status,
	   l.scheduled_for AS last_scheduled_for,
	   l.finished_at AS last_finished_at,
	   l.sqlstate AS last_sqlstate,
	   l.message AS last_message,
	   j.consecutive_failures,
	   COALESCE(r.worker_pid, schedlock.job_worker_pid(j.job_id)) AS running_pid,
	   COALESCE((SELECT schedlock.paused_reason()), j.quarantine_reason) AS paused_reason
  FROM schedlock.jobs j
  LEFT JOIN LATERAL (SELECT x.status, x.scheduled_for, x.finished_at, x.sqlstate, x.message
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status NOT IN ('queued', 'pending', 'running')
					  ORDER BY x.run_id DESC
					  LIMIT 1) l ON true
  LEFT JOIN LATERAL (SELECT x.worker_pid
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status OPERATOR(pg_catalog.=) 'running'
					  ORDER BY x.run_id DESC
					  LIMIT 1) r ON true;

COMMENT ON VIEW schedlock.job_status IS
	'per job: schedule, time zone, next run, last finished run and its error, consecutive failures, pid running it now, why it is paused (a copy) or quarantined';

-------------------------------------------------------------------------------
-- Issue 13: one-off jobs and next_run_at
-------------------------------------------------------------------------------

/*
 * A one-off job runs once, at an instant (src/job.c): it is stored with the
 * schedule '@once' and its instant as next_slot, and ends after its run (and
 * retries), staying with its history.  schedule_once creates it, or
 * replaces the definition of the caller's job of that name, like
 * schedule_job.  Not executable by PUBLIC, like the other job functions.
 */
CREATE FUNCTION @extschema@.schedule_once(job_name text,
										  run_at timestamptz,
										  command text DEFAULT NULL,
										  notify_channel text DEFAULT NULL,
										  payload jsonb DEFAULT NULL,
										  timeout interval DEFAULT NULL,
										  max_attempts integer DEFAULT 1,
										  retry_delay interval DEFAULT '1 minute',
										  atomic boolean DEFAULT true,
										  enabled boolean DEFAULT true,
										  run_as name DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_schedule_once'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedule_once(text, timestamptz, text, text, jsonb, interval, integer, interval, boolean, boolean, name) IS
	'create the caller''s one-off job of this name, run once at run_at (now if it has passed), or replace its definition; returns the job id';

REVOKE ALL ON FUNCTION @extschema@.schedule_once(text, timestamptz, text, text, jsonb, interval, integer, interval, boolean, boolean, name) FROM PUBLIC;

/*
 * alter_job gains next_run_at, the instant of the job's next run (after
 * which the schedule goes on from that instant).  A function's arguments
 * cannot be changed in place, and an overload with one more defaulted
 * argument would make every call ambiguous: the function of 1.0 is renamed,
 * the new one created, the EXECUTE privileges a DBA granted on the old one
 * are granted on the new one, and the old one is dropped.
 */
ALTER FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name)
	RENAME TO alter_job_1_0;

CREATE FUNCTION @extschema@.alter_job(job_name text,
									  schedule text DEFAULT NULL,
									  command text DEFAULT NULL,
									  notify_channel text DEFAULT NULL,
									  payload jsonb DEFAULT NULL,
									  timezone text DEFAULT NULL,
									  timeout interval DEFAULT NULL,
									  max_attempts integer DEFAULT NULL,
									  retry_delay interval DEFAULT NULL,
									  misfire text DEFAULT NULL,
									  atomic boolean DEFAULT NULL,
									  enabled boolean DEFAULT NULL,
									  run_as name DEFAULT NULL,
									  next_run_at timestamptz DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'schedlock_alter_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz) IS
	'change some settings of the caller''s job; NULL leaves a setting unchanged; next_run_at moves the next run';

REVOKE ALL ON FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz) FROM PUBLIC;

DO $$
DECLARE
	g record;
BEGIN
	FOR g IN
		SELECT a.grantee::pg_catalog.regrole::pg_catalog.text AS grantee,
			   a.is_grantable
		  FROM pg_catalog.pg_proc p,
			   pg_catalog.aclexplode(p.proacl) a
		 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.alter_job_1_0(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name)'::pg_catalog.regprocedure
		   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
		   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
		   AND a.grantee OPERATOR(pg_catalog.<>) 0
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz) TO %s%s',
								  g.grantee,
								  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
END
$$;

DROP FUNCTION @extschema@.alter_job_1_0(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name);

-- Issue 14: session-bound leases in shared memory
-------------------------------------------------------------------------------

/*
 * Session-bound leases are kept in shared memory (src/lock_shmem.c), not in
 * schedlock.lock_state, while schedlock.max_session_locks leaves room.  The
 * function lists those of this database; it shows the token and holder_pid
 * only to members of the holding role and superusers (it runs as its caller,
 * so it masks them itself).  Where a name has an entry there, the entry is
 * its current state and the table's row is older: the view shows the entry.
 */
CREATE FUNCTION schedlock.session_leases(
	OUT lock_name text, OUT held boolean, OUT holder text,
	OUT locked_at timestamptz, OUT lock_until timestamptz, OUT token bigint,
	OUT session_bound boolean, OUT holder_pid integer, OUT holder_role oid,
	OUT released_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'schedlock_session_leases'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.session_leases() IS
	'internal: the session-bound leases of this database kept in shared memory (token and holder_pid only for the holding role''s members and superusers)';

GRANT EXECUTE ON FUNCTION schedlock.session_leases() TO PUBLIC;

-- same columns in the same order as before
CREATE OR REPLACE VIEW schedlock.locks AS
WITH m AS MATERIALIZED (SELECT * FROM schedlock.session_leases())
SELECT m.lock_name COLLATE "C" AS lock_name,
	   m.held,
	   m.holder,
	   m.locked_at,
	   m.lock_until,
	   m.token,
	   m.session_bound,
	   m.holder_pid,
	   m.holder_role::pg_catalog.regrole AS holder_role
  FROM m
UNION ALL
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
  FROM schedlock.lock_state s
 WHERE NOT EXISTS (SELECT 1 FROM m
					WHERE m.lock_name OPERATOR(pg_catalog.=) s.lock_name);

-- Issue 13, a scheduler a DBA can watch: what each run said.  Written by
-- the same UPDATE that records a run's outcome (src/jobstore.c).
ALTER TABLE schedlock.job_runs
	ADD COLUMN detail text,
	ADD COLUMN hint text,
	ADD COLUMN duration interval,
	ADD COLUMN result_status text,
	ADD COLUMN notices text;

COMMENT ON COLUMN schedlock.job_runs.detail IS
	'DETAIL of the error of a failed run';
COMMENT ON COLUMN schedlock.job_runs.hint IS
	'HINT of the error of a failed run';
COMMENT ON COLUMN schedlock.job_runs.duration IS
	'finished_at - started_at, once a run that started has ended';
COMMENT ON COLUMN schedlock.job_runs.result_status IS
	'command tag of the last statement of a succeeded SQL run, as psql prints it (INSERT 0 5)';
COMMENT ON COLUMN schedlock.job_runs.notices IS
	'NOTICE, INFO and WARNING output of a SQL run, at most schedlock.max_notice_bytes and a marker when cut';
-------------------------------------------------------------------------------
-- Issue 13: a scheduler a DBA can watch: run statistics per job, no
-- next_run_at while disabled, and why a job will not run
-------------------------------------------------------------------------------

/*
 * Every run that ends (succeeded, failed, timed_out, lost; a skipped slot is
 * no run) counts once on its job's row, in the statement that ends it
 * (SCHEDLOCK_RUN_STATS_CTE in src/jobstore.h).  schedule_job and
 * schedule_once replacing a definition keep the counts; a new job starts at
 * 0, and so do the jobs of 1.0 (their history is not counted again).
 */
ALTER TABLE schedlock.jobs
	ADD COLUMN total_runs bigint NOT NULL DEFAULT 0,
	ADD COLUMN succeeded_runs bigint NOT NULL DEFAULT 0,
	ADD COLUMN failed_runs bigint NOT NULL DEFAULT 0,
	ADD COLUMN total_duration interval NOT NULL DEFAULT '0',
	ADD COLUMN last_duration interval,
	ADD COLUMN last_success_at timestamptz,
	ADD COLUMN last_start_lag interval;

COMMENT ON COLUMN schedlock.jobs.total_runs IS
	'runs of the job that ended (succeeded, failed, timed_out or lost; skipped slots are not runs)';
COMMENT ON COLUMN schedlock.jobs.succeeded_runs IS
	'runs of the job that ended succeeded';
COMMENT ON COLUMN schedlock.jobs.failed_runs IS
	'runs of the job that ended failed, timed_out or lost';
COMMENT ON COLUMN schedlock.jobs.total_duration IS
	'sum of finished_at - started_at of the runs counted in total_runs';
COMMENT ON COLUMN schedlock.jobs.last_duration IS
	'finished_at - started_at of the run that ended last';
COMMENT ON COLUMN schedlock.jobs.last_success_at IS
	'finished_at of the last run that succeeded';
COMMENT ON COLUMN schedlock.jobs.last_start_lag IS
	'started_at - scheduled_for of the run that ended last (for a NOTIFY job: until an application claimed it)';

-- a disabled (or quarantined) job has no next run; its next slot, a
-- one-off job's instant among them, stays in next_slot
UPDATE schedlock.jobs SET next_run_at = NULL
 WHERE NOT enabled AND next_run_at IS NOT NULL;

COMMENT ON COLUMN schedlock.jobs.next_run_at IS
	'when a worker next has something to do for the job: least(next_slot, retry_at, now if run_job is pending); NULL while the job is disabled';

-- job_status gains the statistics and stopped_reason: why the job will not
-- run (NULL when it will)
CREATE OR REPLACE VIEW schedlock.job_status WITH (security_invoker = true) AS
SELECT j.job_id,
	   j.job_name,
	   j.owner,
	   j.schedule,
	   COALESCE(j.timezone,
						   pg_catalog.current_setting('schedlock.timezone')) AS timezone,
	   j.enabled,
	   j.next_run_at,
	   l.status AS last_status,
	   l.scheduled_for AS last_scheduled_for,
	   l.finished_at AS last_finished_at,
	   l.sqlstate AS last_sqlstate,
	   l.message AS last_message,
	   j.consecutive_failures,
	   COALESCE(r.worker_pid, schedlock.job_worker_pid(j.job_id)) AS running_pid,
	   COALESCE((SELECT schedlock.paused_reason()), j.quarantine_reason) AS paused_reason,
	   j.total_runs,
	   j.succeeded_runs,
	   j.failed_runs,
	   j.last_duration,
	   j.total_duration OPERATOR(pg_catalog./)
		 NULLIF(j.total_runs, 0)::pg_catalog.float8 AS average_duration,
	   j.last_success_at,
	   j.last_start_lag,
	   CASE
		 WHEN pg_catalog.current_setting('schedlock.enabled', true) OPERATOR(pg_catalog.=) 'off'
		 THEN 'schedlock.enabled is off: the workers run no job'
		 ELSE COALESCE((SELECT schedlock.paused_reason()), j.quarantine_reason,
			  CASE
				WHEN NOT j.enabled
				THEN 'disabled: alter_job(..., enabled => true) enables the job'
				WHEN j.schedule OPERATOR(pg_catalog.=) '@once' AND j.next_run_at IS NULL
				  AND NOT EXISTS (SELECT 1 FROM schedlock.job_runs x
								   WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
									 AND x.status IN ('queued', 'pending', 'running'))
				THEN 'ended: the one-off job has run; alter_job(..., next_run_at => ...) runs it again'
			  END)
	   END AS stopped_reason
  FROM schedlock.jobs j
  LEFT JOIN LATERAL (SELECT x.status, x.scheduled_for, x.finished_at, x.sqlstate, x.message
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status NOT IN ('queued', 'pending', 'running')
					  ORDER BY x.run_id DESC
					  LIMIT 1) l ON true
  LEFT JOIN LATERAL (SELECT x.worker_pid
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status OPERATOR(pg_catalog.=) 'running'
					  ORDER BY x.run_id DESC
					  LIMIT 1) r ON true;

COMMENT ON VIEW schedlock.job_status IS
	'per job: schedule, time zone, next run, last finished run and its error, consecutive failures, pid running it now, why it is paused (a copy) or quarantined, run statistics, and why it will not run';
