/* sql/schedlock--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION schedlock UPDATE TO '1.2'" to load this file. \quit

/*
 * Release 1.2.  Every statement here runs with search_path set to what
 * CREATE/ALTER EXTENSION sets (the extension's schema, then pg_temp); they
 * name pg_catalog's objects and operators anyway.
 */

-------------------------------------------------------------------------------
-- Jobs run in backends of their own role
-------------------------------------------------------------------------------

/*
 * A job's search_path is its own: the scheduling session's, fixed when the
 * job is scheduled (as CREATE FUNCTION ... SET search_path FROM CURRENT
 * does), changed by alter_job(..., search_path => ...).  A database's or a
 * role's settings cannot change what an unqualified name in another role's
 * job means.  Jobs scheduled before 1.2 get PostgreSQL's default.
 */
ALTER TABLE schedlock.jobs ADD COLUMN search_path text;
UPDATE schedlock.jobs SET search_path = '"$user", public';

COMMENT ON COLUMN schedlock.jobs.search_path IS
	'search_path the job runs with: the scheduling session''s, or alter_job''s search_path';

-- the claim and the next due time of one role's jobs (src/sched/claim_sql.h).
-- job_id orders jobs due at the same instant, so that a backend can resume
-- its scan after the job it claimed last instead of stepping again over the
-- index entries its earlier claims left behind
CREATE INDEX jobs_role_due_idx ON schedlock.jobs
	((COALESCE(run_as, owner)::pg_catalog.oid), next_run_at, job_id)
	WHERE enabled;
-- every claim and wakeup is a role's now: the index of all roles' due jobs
-- would be one more entry to write at every run (a job's update moves
-- next_run_at, so it is never a HOT update)
DROP INDEX schedlock.jobs_due_idx;

CREATE FUNCTION schedlock.job_wait_reason(role pg_catalog.regrole)
RETURNS text
AS 'MODULE_PATHNAME', 'schedlock_job_wait_reason'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.job_wait_reason(pg_catalog.regrole) IS
	'internal: why the due jobs of the role wait for a job backend, or NULL';

-------------------------------------------------------------------------------
-- Run history: how far behind its pruning is
-------------------------------------------------------------------------------

/*
 * The housekeeper deletes the runs that finished more than
 * schedlock.history_retention ago.  This says how far behind it is, in the
 * rows the caller may see (row-level security: a superuser sees every
 * role's runs, another role its own): the retention (NULL when 0, which
 * keeps every run), the oldest finished run, by how much it is older than
 * the retention (0 when nothing is), and how many finished runs are (an
 * exact count, read from the index on finished_at).
 */
CREATE FUNCTION schedlock.history_backlog(OUT retention interval,
										  OUT oldest_finished_at timestamptz,
										  OUT behind interval,
										  OUT expired_runs bigint)
RETURNS record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH s AS (
		SELECT NULLIF(pg_catalog.make_interval(mins => setting::pg_catalog.int4),
					  '0'::pg_catalog.interval) AS retention
		  FROM pg_catalog.pg_settings
		 WHERE name OPERATOR(pg_catalog.=) 'schedlock.history_retention'),
	o AS (
		SELECT pg_catalog.min(finished_at) AS oldest
		  FROM schedlock.job_runs
		 WHERE finished_at IS NOT NULL)
	SELECT s.retention,
		   o.oldest,
		   CASE WHEN s.retention IS NULL OR o.oldest IS NULL THEN '0'::pg_catalog.interval
				ELSE GREATEST((pg_catalog.now() OPERATOR(pg_catalog.-) s.retention)
								OPERATOR(pg_catalog.-) o.oldest,
							  '0'::pg_catalog.interval)
		   END,
		   CASE WHEN s.retention IS NULL THEN 0
				ELSE (SELECT pg_catalog.count(*) FROM schedlock.job_runs r
					   WHERE r.finished_at OPERATOR(pg_catalog.<)
							 (pg_catalog.now() OPERATOR(pg_catalog.-) s.retention))
		   END
	  FROM s, o
$$;

COMMENT ON FUNCTION schedlock.history_backlog() IS
	'run history past schedlock.history_retention not yet pruned, in the rows the caller may see: the retention, the oldest finished run, how far it is past the retention, and how many runs are';

REVOKE ALL ON FUNCTION schedlock.history_backlog() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION schedlock.history_backlog() TO PUBLIC;

-------------------------------------------------------------------------------
-- job_status without walking the history, and how late a due job is
-------------------------------------------------------------------------------

/*
 * Each job's last finished run, for schedlock.job_status: the first entry
 * of the job in this index.  The view orders a job's runs by their negated
 * run_id, an order only this index gives: ordered by run_id, the planner
 * may walk job_runs_pkey backwards over every role's history until it
 * meets one of the job's runs, which its statistics cannot tell from a
 * short walk and which reads the whole history for a job that never ran.
 * The predicate is the view's, word for word, so that the planner can
 * prove the index covers it.
 */
CREATE INDEX job_runs_last_idx ON schedlock.job_runs
	(job_id, (OPERATOR(pg_catalog.-) run_id))
	WHERE status NOT IN ('queued', 'pending', 'running');

/*
 * job_status: the last finished run through job_runs_last_idx; and
 * late_by, now() - next_run_at for a job due now (NULL for one that is
 * not), so that "WHERE late_by > interval '1 minute'" finds a job that is
 * stuck, starved of job backends, or waiting for a row lock.  The columns
 * before it are as they were.
 */
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
				THEN 'disabled: schedlock.alter_job(..., enabled => true) enables the job'
				WHEN j.schedule OPERATOR(pg_catalog.=) '@once' AND j.next_run_at IS NULL
				  AND NOT EXISTS (SELECT 1 FROM schedlock.job_runs x
								   WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
									 AND x.status IN ('queued', 'pending', 'running'))
				THEN 'ended: the one-off job has run; schedlock.alter_job(..., next_run_at => ...) runs it again'
				WHEN j.notify_channel IS NOT NULL
				  AND j.consecutive_failures OPERATOR(pg_catalog.>=) 3
				  AND (SELECT x.message FROM schedlock.job_runs x
						WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						  AND x.status NOT IN ('queued', 'pending', 'running', 'skipped')
						ORDER BY OPERATOR(pg_catalog.-) x.run_id
						LIMIT 1) OPERATOR(pg_catalog.=) 'not claimed within the timeout'
				THEN pg_catalog.format('unheard: no application claimed the last %s runs on channel "%s"; a listener LISTENs, catches up with schedlock_pending_runs() and claims them',
									   j.consecutive_failures, j.notify_channel)
			  END)
	   END AS stopped_reason,
	   CASE WHEN j.next_run_at OPERATOR(pg_catalog.<=) pg_catalog.now()
			THEN schedlock.job_wait_reason(COALESCE(j.run_as, j.owner))
	   END AS waiting_reason,
	   CASE WHEN j.next_run_at OPERATOR(pg_catalog.<=) pg_catalog.now()
			THEN pg_catalog.now() OPERATOR(pg_catalog.-) j.next_run_at
	   END AS late_by
  FROM schedlock.jobs j
  LEFT JOIN LATERAL (SELECT x.status, x.scheduled_for, x.finished_at, x.sqlstate, x.message
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status NOT IN ('queued', 'pending', 'running')
					  ORDER BY OPERATOR(pg_catalog.-) x.run_id
					  LIMIT 1) l ON true
  LEFT JOIN LATERAL (SELECT x.worker_pid
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status OPERATOR(pg_catalog.=) 'running'
					  ORDER BY x.run_id DESC
					  LIMIT 1) r ON true;

COMMENT ON VIEW schedlock.job_status IS
	'per job: schedule, time zone, next run, last finished run and its error, consecutive failures, pid running it now, why it is paused (a copy) or quarantined, run statistics, why it will not run, why a due job waits for a job backend, and how late a due job is';

-------------------------------------------------------------------------------
-- Owners delete their own run history
-------------------------------------------------------------------------------

/*
 * A job's owner deletes the runs of its jobs that have ended (to keep less
 * than schedlock.history_retention, say) with delete_runs, and nothing
 * else: not another role's runs, and not a run that is queued, pending or
 * running, which the scheduler still needs.  No role but the extension
 * owner writes or locks the table directly (src/base/table_guard.c), so
 * no privilege to delete rows is granted.
 */
CREATE FUNCTION schedlock.delete_runs(job_name text DEFAULT NULL,
									  older_than interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_delete_runs'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.delete_runs(text, interval) IS
	'delete the caller''s ended runs (of one job; older than older_than); returns how many';

GRANT EXECUTE ON FUNCTION schedlock.delete_runs(text, interval) TO PUBLIC;

/*
 * The lock table is read by the database owner only (pg_dump): a role with
 * BYPASSRLS read every lease's fencing token through the grant to PUBLIC.
 * schedlock.locks reads it as its owner.
 */
REVOKE SELECT ON schedlock.lock_state FROM PUBLIC;
GRANT SELECT ON schedlock.lock_state TO pg_database_owner;

-------------------------------------------------------------------------------
-- One pane for the cluster
-------------------------------------------------------------------------------

/*
 * The scheduler of every database the launcher serves, from any database,
 * read from shared memory (src/sched/cluster_status.c says what is exact and
 * what is as of the last publication).  Superusers and members of
 * pg_monitor only: the function refuses others with 42501.
 */
CREATE FUNCTION schedlock.cluster_status(OUT datname name,
										 OUT has_extension boolean,
										 OUT paused boolean,
										 OUT jobs integer,
										 OUT enabled_jobs integer,
										 OUT failing_jobs integer,
										 OUT quarantined_jobs integer,
										 OUT jobs_counted_at timestamptz,
										 OUT runs_in_progress integer,
										 OUT queues integer,
										 OUT late_queues integer,
										 OUT late_since timestamptz,
										 OUT waiting_queues integer,
										 OUT job_backends integer,
										 OUT housekeepers integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'schedlock_cluster_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.cluster_status() IS
	'per database of the cluster: its jobs (as last counted), runs in progress, late and waiting queues, job backends and housekeepers; superusers and pg_monitor';

REVOKE ALL ON FUNCTION schedlock.cluster_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION schedlock.cluster_status() TO PUBLIC;

-------------------------------------------------------------------------------
-- Record less: keep only failed runs
-------------------------------------------------------------------------------

/*
 * Which ended runs of the job schedlock.job_runs keeps: 'all', 'failures'
 * (failed, timed-out and lost runs; a succeeded run is counted in the
 * job's statistics and its row deleted, a skipped slot not recorded), or
 * NULL for the setting schedlock.record_runs.
 */
ALTER TABLE schedlock.jobs ADD COLUMN record_runs text;

COMMENT ON COLUMN schedlock.jobs.record_runs IS
	'which ended runs job_runs keeps: all, failures, or NULL for schedlock.record_runs';

/*
 * alter_job gains search_path and record_runs ('all', 'failures', or
 * 'default' for the setting).  The function of 1.1 is renamed, the new one
 * created, the grants of the old one are given on the new one, and the old
 * one is dropped.
 */
ALTER FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz)
	RENAME TO alter_job_1_1;

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
									  next_run_at timestamptz DEFAULT NULL,
									  search_path text DEFAULT NULL,
									  record_runs text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'schedlock_alter_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz, text, text) IS
	'change some settings of the caller''s job; NULL leaves a setting unchanged; next_run_at moves the next run; search_path is the one the job runs with; record_runs says which of its runs are kept (all, failures, default)';

REVOKE ALL ON FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz, text, text) FROM PUBLIC;

DO $$
DECLARE
	g record;
BEGIN
	FOR g IN
		SELECT a.grantee::pg_catalog.regrole::pg_catalog.text AS grantee,
			   a.is_grantable
		  FROM pg_catalog.pg_proc p,
			   pg_catalog.aclexplode(p.proacl) a
		 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.alter_job_1_1(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz)'::pg_catalog.regprocedure
		   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
		   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
		   AND a.grantee OPERATOR(pg_catalog.<>) 0
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz, text, text) TO %s%s',
								  g.grantee,
								  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
END
$$;

DROP FUNCTION @extschema@.alter_job_1_1(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz);

/*
 * unschedule_job: an unknown name is an error (42704), as for alter_job and
 * pg_cron's cron.unschedule, unless if_exists => true, which returns false
 * (the answer of 1.1).  A second form takes the job's id, as
 * cron.unschedule(jobid) does.  The function of 1.1 is renamed, the new ones
 * created, the grants of the old one given on both, and the old one dropped.
 */
ALTER FUNCTION @extschema@.unschedule_job(text) RENAME TO unschedule_job_1_1;

CREATE FUNCTION @extschema@.unschedule_job(job_name text,
										   if_exists boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_unschedule_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.unschedule_job(text, boolean) IS
	'delete the caller''s job of this name (its run history stays); an unknown name is an error, or false with if_exists';

CREATE FUNCTION @extschema@.unschedule_job(job_id bigint,
										   if_exists boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_unschedule_job_id'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.unschedule_job(bigint, boolean) IS
	'delete the caller''s job of this id (its run history stays); an unknown id is an error, or false with if_exists';

REVOKE ALL ON FUNCTION @extschema@.unschedule_job(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.unschedule_job(bigint, boolean) FROM PUBLIC;

DO $$
DECLARE
	g record;
BEGIN
	FOR g IN
		SELECT a.grantee::pg_catalog.regrole::pg_catalog.text AS grantee,
			   a.is_grantable
		  FROM pg_catalog.pg_proc p,
			   pg_catalog.aclexplode(p.proacl) a
		 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.unschedule_job_1_1(text)'::pg_catalog.regprocedure
		   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
		   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
		   AND a.grantee OPERATOR(pg_catalog.<>) 0
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.unschedule_job(text, boolean), @extschema@.unschedule_job(bigint, boolean) TO %s%s',
								  g.grantee,
								  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
END
$$;

DROP FUNCTION @extschema@.unschedule_job_1_1(text);

/*
 * job_summary: one line per job that fits a terminal, for people; the wide
 * job_status and jobs stay for tools.  last_status is "running" while a run
 * is; command is shortened to 40 characters, blanks folded.
 */
CREATE VIEW schedlock.job_summary WITH (security_invoker = true) AS
SELECT s.job_name,
	   s.schedule,
	   s.next_run_at::pg_catalog.timestamptz(0) AS next_run,
	   CASE WHEN s.running_pid IS NOT NULL THEN 'running'
			ELSE s.last_status
	   END AS last_status,
	   s.last_finished_at::pg_catalog.timestamptz(0) AS last_run,
	   CASE WHEN j.command IS NULL
			THEN 'NOTIFY ' OPERATOR(pg_catalog.||) j.notify_channel
			WHEN pg_catalog.length(c.flat) OPERATOR(pg_catalog.>) 40
			THEN pg_catalog.left(c.flat, 37) OPERATOR(pg_catalog.||) '...'
			ELSE c.flat
	   END AS command
  FROM schedlock.job_status s
  JOIN schedlock.jobs j ON j.job_id OPERATOR(pg_catalog.=) s.job_id
  CROSS JOIN LATERAL
	   (SELECT pg_catalog.btrim(pg_catalog.regexp_replace(j.command, '\s+', ' ', 'g')) AS flat) c
 ORDER BY s.job_name, s.job_id;

COMMENT ON VIEW schedlock.job_summary IS
	'one short line per job for psql: name, schedule, next run, last status, when the last run ended, command shortened';

GRANT SELECT ON schedlock.job_summary TO PUBLIC;

/*
 * schedlock_pending_runs: the catch-up call of a NOTIFY listener, at start
 * and after each reconnect.  The runs of the channel still waiting to be
 * claimed that the caller can see (row-level security: the runs of its own
 * jobs), oldest first.  It reads what the caller may read anyway.
 */
CREATE FUNCTION @extschema@.schedlock_pending_runs(channel text,
												   OUT run_id bigint,
												   OUT job_name text,
												   OUT scheduled_for timestamptz,
												   OUT attempt integer,
												   OUT deadline timestamptz)
RETURNS SETOF record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT r.run_id, j.job_name, r.scheduled_for, r.attempt, r.deadline
	  FROM schedlock.job_runs r
	  JOIN schedlock.jobs j ON j.job_id OPERATOR(pg_catalog.=) r.job_id
	 WHERE j.notify_channel OPERATOR(pg_catalog.=) channel
	   AND r.status OPERATOR(pg_catalog.=) 'pending'
	 ORDER BY r.run_id
$$;

COMMENT ON FUNCTION @extschema@.schedlock_pending_runs(text) IS
	'runs of the NOTIFY channel notified and not yet claimed that the caller can see: what a listener claims at start and after a reconnect';

GRANT EXECUTE ON FUNCTION @extschema@.schedlock_pending_runs(text) TO PUBLIC;

/*
 * A job's history outlives the job: unschedule_job keeps its runs (pruned
 * by schedlock.history_retention like every run), a run in progress
 * finishes and is recorded, and a claimed NOTIFY run can still be
 * finished.  job_runs no longer references jobs, and carries the job's name.
 */
ALTER TABLE schedlock.job_runs DROP CONSTRAINT job_runs_job_id_fkey;
ALTER TABLE schedlock.job_runs ADD COLUMN job_name text;
UPDATE schedlock.job_runs r SET job_name = j.job_name
  FROM schedlock.jobs j
 WHERE j.job_id OPERATOR(pg_catalog.=) r.job_id;

COMMENT ON COLUMN schedlock.job_runs.job_name IS
	'name of the run''s job when the run was recorded; kept when the job is unscheduled';

/*
 * The job API in one grant: GRANT INSERT ON schedlock.jobs TO role.  The
 * job functions become executable by PUBLIC and check the grant themselves
 * (42501 with the statement that grants it as hint); the claim and finish
 * functions act only on the runs of jobs the caller's role owns.  Row-level
 * security has no INSERT policy on schedlock.jobs, so the grant writes no
 * row directly, and schedlock.jobs_api_only refuses a direct INSERT by a
 * role that bypasses row-level security: the rows are written by the job
 * functions, as the extension owner.
 *
 * A role that 1.1 granted EXECUTE on any of the job functions gets the
 * grant (with grant option if it had one), and those per-function grants
 * are revoked.
 */
CREATE FUNCTION schedlock.jobs_api_only()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT pg_catalog.pg_has_role(CURRENT_USER,
			(SELECT c.relowner FROM pg_catalog.pg_class c
			  WHERE c.oid OPERATOR(pg_catalog.=) TG_RELID), 'USAGE') THEN
		RAISE EXCEPTION 'schedlock.jobs is written by the job functions only'
			USING ERRCODE = '42501',
				  HINT = 'Use schedlock.schedule_job() or schedlock.schedule_once().';
	END IF;
	RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION schedlock.jobs_api_only() FROM PUBLIC;

-- named to fire first (triggers fire in the order of their names): before
-- jobs_check_home, which a role that may not read schedlock.home fails less
-- clearly
CREATE TRIGGER jobs_api_only BEFORE INSERT ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.jobs_api_only();

DO $$
DECLARE
	-- the job functions; then the claim and finish functions
	job_fns pg_catalog.oid[] := ARRAY[
		'@extschema@.schedule_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name)'::pg_catalog.regprocedure,
		'@extschema@.schedule_once(text, timestamptz, text, text, jsonb, interval, integer, interval, boolean, boolean, name)'::pg_catalog.regprocedure,
		'@extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz, text, text)'::pg_catalog.regprocedure,
		'@extschema@.unschedule_job(text, boolean)'::pg_catalog.regprocedure,
		'@extschema@.unschedule_job(bigint, boolean)'::pg_catalog.regprocedure,
		'@extschema@.run_job(text)'::pg_catalog.regprocedure];
	run_fns pg_catalog.oid[] := ARRAY[
		'@extschema@.schedlock_claim_run(bigint, text)'::pg_catalog.regprocedure,
		'@extschema@.schedlock_claim_run_payload(bigint, text)'::pg_catalog.regprocedure,
		'@extschema@.schedlock_finish_run(bigint, boolean, text)'::pg_catalog.regprocedure];
	g record;
BEGIN
	-- a role granted any job function gets the one grant
	FOR g IN
		SELECT a.grantee::pg_catalog.regrole::pg_catalog.text AS grantee,
			   pg_catalog.bool_or(a.is_grantable) AS is_grantable
		  FROM pg_catalog.pg_proc p,
			   pg_catalog.aclexplode(p.proacl) a
		 WHERE p.oid OPERATOR(pg_catalog.=) ANY (job_fns)
		   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
		   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
		   AND a.grantee OPERATOR(pg_catalog.<>) 0
		 GROUP BY a.grantee
	LOOP
		EXECUTE pg_catalog.format('GRANT INSERT ON schedlock.jobs TO %s%s',
								  g.grantee,
								  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
	-- the per-function grants go; PUBLIC executes them all
	FOR g IN
		SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text AS fn,
			   a.grantee::pg_catalog.regrole::pg_catalog.text AS grantee
		  FROM pg_catalog.pg_proc p,
			   pg_catalog.aclexplode(p.proacl) a
		 WHERE p.oid OPERATOR(pg_catalog.=) ANY (job_fns OPERATOR(pg_catalog.||) run_fns)
		   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
		   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
		   AND a.grantee OPERATOR(pg_catalog.<>) 0
	LOOP
		EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM %s', g.fn, g.grantee);
	END LOOP;
	FOR g IN
		SELECT f::pg_catalog.regprocedure::pg_catalog.text AS fn
		  FROM pg_catalog.unnest(job_fns OPERATOR(pg_catalog.||) run_fns) f
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', g.fn);
	END LOOP;
END
$$;

/*
 * The job functions live in the schema schedlock, beside the tables and
 * views they work on, and are called as schedlock.schedule_job(...): their
 * short names no longer take names an application may use in the
 * extension's schema (often public).  The lock functions, the run functions
 * of the NOTIFY listeners (schedlock_claim_run, ...) and the cron functions
 * stay in the extension's schema.
 */
ALTER FUNCTION @extschema@.schedule_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name)
	SET SCHEMA schedlock;
ALTER FUNCTION @extschema@.schedule_once(text, timestamptz, text, text, jsonb, interval, integer, interval, boolean, boolean, name)
	SET SCHEMA schedlock;
ALTER FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz, text, text)
	SET SCHEMA schedlock;
ALTER FUNCTION @extschema@.unschedule_job(text, boolean) SET SCHEMA schedlock;
ALTER FUNCTION @extschema@.unschedule_job(bigint, boolean) SET SCHEMA schedlock;
ALTER FUNCTION @extschema@.run_job(text) SET SCHEMA schedlock;

/*
 * The rules of a job row (a name of 1 to 255 characters, max_attempts at
 * least 1, a known misfire policy and record_runs, exactly one of command
 * and notify_channel), checked by a trigger when a statement writes one of
 * those columns, rather than by CHECK constraints, which PostgreSQL checks
 * at every update of a row: the scheduler updates a job's row at every run
 * without writing any of them.  ALWAYS: also under session_replication_role
 * replica, as constraints would be.
 */
CREATE FUNCTION schedlock.jobs_check_values()
RETURNS trigger
AS 'MODULE_PATHNAME', 'schedlock_jobs_check_values'
LANGUAGE C;

COMMENT ON FUNCTION schedlock.jobs_check_values() IS
	'internal: trigger that checks the rules of a job row';

REVOKE ALL ON FUNCTION schedlock.jobs_check_values() FROM PUBLIC;

CREATE TRIGGER jobs_check_values
	BEFORE INSERT OR UPDATE OF job_name, max_attempts, misfire, record_runs,
		command, notify_channel
	ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.jobs_check_values();
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER jobs_check_values;

ALTER TABLE schedlock.jobs
	DROP CONSTRAINT jobs_job_name_check,
	DROP CONSTRAINT jobs_max_attempts_check,
	DROP CONSTRAINT jobs_misfire_check,
	DROP CONSTRAINT jobs_check;

/*
 * The statuses a run may have, the rule of job_runs_status_check: a C
 * function rather than a list in the constraint, because PostgreSQL reads
 * a CHECK constraint back from its text and prepares it again for every
 * statement that writes the table, and every run writes job_runs.  Pure:
 * anyone may call it (a CHECK constraint's function needs EXECUTE by the
 * role that writes the row).
 */
CREATE FUNCTION schedlock.job_run_status_valid(status text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_job_run_status_valid'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION schedlock.job_run_status_valid(text) IS
	'internal: whether a text is a run status (queued, pending, running, succeeded, failed, timed_out, lost, skipped)';

-- checks every row of the history once (ACCESS EXCLUSIVE on job_runs)
ALTER TABLE schedlock.job_runs
	DROP CONSTRAINT job_runs_status_check,
	ADD CONSTRAINT job_runs_status_check
		CHECK (schedlock.job_run_status_valid(status));

-------------------------------------------------------------------------------
-- Approvals of jobs that run as another role
-------------------------------------------------------------------------------

/*
 * A job that runs as a role other than its owner (run_as, which only a
 * superuser sets) runs only what a superuser approved.  approved_by is the
 * superuser whose write of the job approved it, approval the digest of
 * what it approved: the owner, run_as and every field that changes what
 * the job does or resolves.  schedule_job, schedule_once and alter_job
 * renew both when a superuser calls them and keep them otherwise (a
 * non-superuser may not change those fields while run_as is set); the job
 * backend compares the digest with the job as claimed before every run
 * (src/sched/job_roles.c), so that a change that took another path (a
 * direct write, a restore) or an approver who is no longer a superuser
 * pauses the job instead of running it as run_as.  Both NULL for a job
 * that runs as its owner.
 */
CREATE FUNCTION schedlock.approval_digest(owner oid, run_as oid, schedule text,
										  timezone text, command text,
										  notify_channel text, payload jsonb,
										  atomic boolean, search_path text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.md5(ROW($1, $2, $3, $4, $5, $6, $7, $8, $9)::pg_catalog.text) $$;

COMMENT ON FUNCTION schedlock.approval_digest(oid, oid, text, text, text, text, jsonb, boolean, text) IS
	'internal: digest of what a superuser approves when a job runs as another role';

REVOKE ALL ON FUNCTION schedlock.approval_digest(oid, oid, text, text, text, text, jsonb, boolean, text) FROM PUBLIC;

ALTER TABLE schedlock.jobs
	ADD COLUMN approved_by pg_catalog.regrole,
	ADD COLUMN approval text;

COMMENT ON COLUMN schedlock.jobs.approved_by IS
	'superuser who approved run_as (NULL when the job runs as its owner)';
COMMENT ON COLUMN schedlock.jobs.approval IS
	'digest of the job as approved_by approved it; a job that no longer matches is paused, not run as run_as';

-- the run_as of existing jobs, which only a superuser could set, is
-- approved by the role that updates the extension (a superuser)
UPDATE schedlock.jobs j
   SET approved_by = (SELECT r.oid FROM pg_catalog.pg_roles r
					   WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER),
	   approval = schedlock.approval_digest(j.owner::pg_catalog.oid,
					j.run_as::pg_catalog.oid, j.schedule, j.timezone,
					j.command, j.notify_channel, j.payload, j.atomic,
					j.search_path)
 WHERE j.run_as IS NOT NULL
   AND j.run_as OPERATOR(pg_catalog.<>) j.owner;

-------------------------------------------------------------------------------
-- Payloads
-------------------------------------------------------------------------------

/*
 * A job's payload is read by the job's owner, through schedlock.job_payloads,
 * and by the role that claims a run of it (schedlock_claim_run_payload);
 * row-level security alone left every payload to a role with BYPASSRLS.  So
 * PUBLIC may read every column of schedlock.jobs but payload, and the
 * database owner the whole table, as pg_dump needs (row-level security
 * still shows it its own jobs only, unless it has BYPASSRLS).  A column a
 * later release adds to the table is granted to PUBLIC there too.
 */
REVOKE SELECT ON schedlock.jobs FROM PUBLIC;
GRANT SELECT (job_id, job_name, owner, schedule, command, notify_channel,
			  timezone, timeout, max_attempts, retry_delay, misfire, atomic,
			  enabled, run_as, reboot, next_slot, retry_slot, retry_attempt,
			  retry_at, manual_pending, next_run_at, consecutive_failures,
			  created_at, home_id, dispatch_errors, dispatch_error_at,
			  quarantine_reason, total_runs, succeeded_runs, failed_runs,
			  total_duration, last_duration, last_success_at, last_start_lag,
			  search_path, record_runs, approved_by, approval)
	ON schedlock.jobs TO PUBLIC;
GRANT SELECT ON schedlock.jobs TO pg_database_owner;

/*
 * The payloads of the current user's jobs (the rows row-level security shows
 * it in schedlock.jobs).  The view reads the table with its owner's rights
 * and filters on CURRENT_USER, the role that reads the view; security_barrier
 * keeps a caller's function from seeing other rows before the filter.
 */
CREATE VIEW schedlock.job_payloads WITH (security_barrier = true) AS
SELECT j.job_id,
	   j.job_name,
	   j.payload
  FROM schedlock.jobs j
 WHERE j.owner OPERATOR(pg_catalog.=)
	   (SELECT r.oid FROM pg_catalog.pg_roles r
		 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER);

COMMENT ON VIEW schedlock.job_payloads IS
	'the payload of each of the current user''s jobs';

GRANT SELECT ON schedlock.job_payloads TO PUBLIC;
