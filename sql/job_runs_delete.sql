--
-- job_runs_delete: a job's owner deletes the ended runs of its own jobs
-- from schedlock.job_runs with schedlock.delete_runs, and nothing else:
-- another role's runs and runs still queued, pending or running stay;
-- DELETE, UPDATE and INSERT on the table are refused (42501).  The jobs
-- are far in the future and disabled: nothing here
-- waits for a job backend.  They are NOTIFY jobs, and their running runs
-- ones an application has claimed: the database's housekeeping leaves such
-- a run alone until its deadline (it has none), where it closes a running
-- SQL run without a job backend as lost.  A housekeeping pass is asked for
-- (a reload has every database's housekeeping run) before the runs are
-- deleted.
--
SET client_min_messages = warning;

CREATE ROLE regress_purge_ann LOGIN;
CREATE ROLE regress_purge_ben LOGIN;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public
	TO regress_purge_ann, regress_purge_ben;
GRANT INSERT ON schedlock.jobs TO regress_purge_ann, regress_purge_ben;

SET ROLE regress_purge_ann;
SELECT schedlock.schedule_job('purge_me', '0 3 1 1 *',
		notify_channel => 'regress_purge', enabled => false) IS NOT NULL AS scheduled;
RESET ROLE;
SET ROLE regress_purge_ben;
SELECT schedlock.schedule_job('purge_me', '0 3 1 1 *',
		notify_channel => 'regress_purge', enabled => false) IS NOT NULL AS scheduled;
RESET ROLE;

-- each job: a run of every status, one a day in 2030
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
								started_at, finished_at, claimed_by, claimed_at)
SELECT j.job_id, j.owner, '2030-01-01'::timestamptz + s.n * interval '1 day', 1, s.status,
	   CASE WHEN s.status NOT IN ('queued', 'pending', 'skipped')
			THEN '2030-01-01'::timestamptz + s.n * interval '1 day' END,
	   CASE WHEN s.status NOT IN ('queued', 'pending', 'running')
			THEN '2030-01-01'::timestamptz + s.n * interval '1 day' + interval '1 s' END,
	   CASE WHEN s.status NOT IN ('queued', 'pending', 'skipped')
			THEN 'app-1' END,
	   CASE WHEN s.status NOT IN ('queued', 'pending', 'skipped')
			THEN '2030-01-01'::timestamptz + s.n * interval '1 day' END
  FROM schedlock.jobs j,
	   unnest(ARRAY['queued', 'pending', 'running', 'succeeded', 'failed',
					'timed_out', 'lost', 'skipped']) WITH ORDINALITY s (status, n)
 WHERE j.job_name = 'purge_me';

CREATE VIEW pg_temp.census AS
SELECT owner::text, string_agg(status, ',' ORDER BY status) AS statuses
  FROM schedlock.job_runs
 WHERE job_id IN (SELECT job_id FROM schedlock.jobs WHERE job_name = 'purge_me')
 GROUP BY owner ORDER BY owner::text;
SELECT * FROM pg_temp.census;

-- the housekeeping's pass closes none of them
SELECT pg_reload_conf();
SELECT pg_sleep(1);
SELECT * FROM pg_temp.census;

-- ann deletes "everything": her ended runs go, her open runs and ben's stay
SET ROLE regress_purge_ann;
SELECT schedlock.delete_runs() AS deleted;
SELECT count(*) AS visible_to_ann FROM schedlock.job_runs;
-- writing the table directly is refused, and writes nothing
DELETE FROM schedlock.job_runs WHERE status = 'running';
UPDATE schedlock.job_runs SET status = 'succeeded';
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, status)
SELECT job_id, owner, '2031-01-01', 'succeeded' FROM schedlock.jobs;
RESET ROLE;
SELECT * FROM pg_temp.census;

-- ben: runs that finished less than a day ago (these are in 2030) stay,
-- then those of one job go; a negative age is refused
SET ROLE regress_purge_ben;
SELECT schedlock.delete_runs(older_than => '1 day') AS deleted;
SELECT schedlock.delete_runs(older_than => '-1 day');
SELECT schedlock.delete_runs(job_name => 'no_such_job') AS deleted;
SELECT schedlock.delete_runs(job_name => 'purge_me') AS deleted;
RESET ROLE;
SELECT * FROM pg_temp.census;

SET ROLE regress_purge_ann;
SELECT schedlock.unschedule_job('purge_me');
RESET ROLE;
SET ROLE regress_purge_ben;
SELECT schedlock.unschedule_job('purge_me');
RESET ROLE;
DROP OWNED BY regress_purge_ann, regress_purge_ben;
DROP ROLE regress_purge_ann, regress_purge_ben;
