--
-- job_roles: a job's owner and run_as role are dependencies of the job.
-- DROP ROLE refuses them (2BP01, job counts per database), DROP OWNED
-- removes the jobs of the current database, REASSIGN OWNED hands them over
-- (42710 on a job-name clash, nothing changed), and the records in
-- pg_shdepend follow every change of schedlock.jobs.  Nothing here waits
-- for a worker: the jobs are far in the future.
--

CREATE ROLE regress_roles_ann LOGIN;
CREATE ROLE regress_roles_ben LOGIN;
CREATE ROLE regress_roles_cid LOGIN;
-- job functions may not be executable by PUBLIC: grant them
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public
	TO regress_roles_ann, regress_roles_ben, regress_roles_cid;
GRANT INSERT ON schedlock.jobs TO regress_roles_ann, regress_roles_ben, regress_roles_cid;

-- the records of this database's jobs in pg_shdepend, by role and kind
CREATE FUNCTION pg_temp.job_records(OUT role text, OUT kind text, OUT n bigint)
RETURNS SETOF record LANGUAGE sql AS $$
	SELECT d.refobjid::regrole::text,
		   CASE WHEN d.classid = 'pg_extension'::regclass THEN 'owner' ELSE 'run_as' END,
		   count(*)
	  FROM pg_shdepend d
	 WHERE d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	   AND d.refclassid = 'pg_authid'::regclass AND d.deptype = 't'
	   AND ((d.classid = 'pg_extension'::regclass
			 AND d.objid = (SELECT oid FROM pg_extension WHERE extname = 'schedlock'))
			OR (d.classid = 'pg_class'::regclass AND d.objid = 'schedlock.jobs'::regclass))
	 GROUP BY 1, 2 ORDER BY 1, 2
$$;

SET ROLE regress_roles_ann;
SELECT schedlock.schedule_job('nightly', '0 3 1 1 *', 'SELECT 1') IS NOT NULL AS scheduled;
SELECT schedlock.schedule_job('weekly', '0 4 1 1 *', 'SELECT 1') IS NOT NULL AS scheduled;
RESET ROLE;
SET ROLE regress_roles_ben;
SELECT schedlock.schedule_job('nightly', '0 3 1 1 *', 'SELECT 2') IS NOT NULL AS scheduled;
RESET ROLE;
SELECT schedlock.schedule_job('as_cid', '0 5 1 1 *', 'SELECT 3', run_as => 'regress_roles_cid') IS NOT NULL AS scheduled;
SELECT * FROM pg_temp.job_records();

-- DROP ROLE of an owner or of a run_as role fails; nothing is dropped
DROP ROLE regress_roles_ann;
DROP ROLE regress_roles_cid;
DROP ROLE regress_roles_ben, regress_roles_ann;
SELECT rolname FROM pg_roles WHERE rolname LIKE 'regress_roles_%' ORDER BY 1;

-- alter_job changing run_as moves the record
SELECT schedlock.alter_job('as_cid', run_as => 'regress_roles_ben');
SELECT * FROM pg_temp.job_records();
SELECT schedlock.alter_job('as_cid', run_as => 'regress_roles_cid');

-- REASSIGN OWNED onto a role with a job of the same name: nothing changes
REASSIGN OWNED BY regress_roles_ann TO regress_roles_ben;
SELECT job_name, owner FROM schedlock.jobs ORDER BY 1, 2;
-- once the clash is gone, the jobs and the run_as change hands
SET ROLE regress_roles_ben;
SELECT schedlock.unschedule_job('nightly');
RESET ROLE;
REASSIGN OWNED BY regress_roles_ann, regress_roles_cid TO regress_roles_ben;
SELECT job_name, owner, run_as FROM schedlock.jobs ORDER BY 1;
SELECT * FROM pg_temp.job_records();

-- DROP OWNED by a role without the privileges of the role named: refused
SET ROLE regress_roles_ann;
-- terse: PostgreSQL 17 added a DETAIL to this error
\set VERBOSITY terse
DROP OWNED BY regress_roles_ben;
\set VERBOSITY default
RESET ROLE;
SELECT count(*) AS ben_jobs FROM schedlock.jobs WHERE owner = 'regress_roles_ben'::regrole;
-- DROP OWNED removes the owned jobs and the jobs that run as the role
DROP OWNED BY regress_roles_ben;
SELECT job_name, owner, run_as FROM schedlock.jobs ORDER BY 1;
SELECT * FROM pg_temp.job_records();

-- the record follows any writer of the table, also a superuser's UPDATE
SELECT schedlock.schedule_job('direct', '0 6 1 1 *', 'SELECT 4') IS NOT NULL AS scheduled;
UPDATE schedlock.jobs SET owner = 'regress_roles_cid' WHERE job_name = 'direct';
SELECT * FROM pg_temp.job_records();
DELETE FROM schedlock.jobs WHERE job_name = 'direct';
SELECT * FROM pg_temp.job_records();
-- a job's role must exist
INSERT INTO schedlock.jobs (job_name, owner, schedule, command, enabled)
VALUES ('nobody', 4294967295::oid::regrole, '@daily', 'SELECT 1', false);

-- rebuilding the records changes nothing when they are right; only
-- superusers may
SELECT schedlock.sync_job_roles() AS changed;
SET ROLE regress_roles_cid;
SELECT schedlock.sync_job_roles();
RESET ROLE;

-- the trigger function serves schedlock.jobs only
CREATE TABLE regress_roles_other (job_id bigint, job_name text, owner regrole, run_as regrole);
CREATE TRIGGER t AFTER INSERT ON regress_roles_other
	FOR EACH ROW EXECUTE FUNCTION schedlock.job_roles_trigger();
INSERT INTO regress_roles_other VALUES (1, 'x', 'regress_roles_cid', NULL);
DROP TABLE regress_roles_other;
SELECT * FROM pg_temp.job_records();

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public
	FROM regress_roles_ann, regress_roles_ben, regress_roles_cid;
REVOKE INSERT ON schedlock.jobs
	FROM regress_roles_ann, regress_roles_ben, regress_roles_cid;
DROP ROLE regress_roles_ann, regress_roles_ben, regress_roles_cid;
