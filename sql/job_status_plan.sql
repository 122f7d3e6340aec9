--
-- job_status_plan: schedlock.job_status finds each job's last finished run
-- through an index of that job's finished runs (job_runs_last_idx), not
-- by walking the whole history backwards.  The plan is checked for its
-- shape, not timed (test/bench/status_bench.sh times it).  Its late_by
-- column says how late a due job is: jobs that would fall due while the
-- test runs are only written in transactions that roll back, so that no
-- job backend runs them.
--
SET client_min_messages = warning;
SET TIME ZONE 'UTC';

-- the plan of a query: the nodes that scan schedlock.job_runs, one a line
CREATE FUNCTION pg_temp.runs_scans(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'on job_runs|using job_runs' THEN
			RETURN NEXT pg_catalog.regexp_replace(pg_catalog.btrim(line), '^->\s*', '');
		END IF;
	END LOOP;
END
$$;

-- 20 disabled jobs, and a history of 20,000 finished runs of the first
-- ten; the other ten never ran
SELECT count(*) FROM (
	SELECT schedlock.schedule_job('status_' || i, '0 0 1 1 *', 'SELECT 1', enabled => false)
	  FROM generate_series(1, 20) i) s;
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
								started_at, finished_at)
SELECT j.job_id, j.owner, '2030-01-01'::timestamptz + i * interval '1 minute', 1,
	   CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END,
	   '2030-01-01'::timestamptz + i * interval '1 minute',
	   '2030-01-01'::timestamptz + i * interval '1 minute' + interval '1 second'
  FROM schedlock.jobs j, generate_series(1, 2000) i
 WHERE j.job_name IN (SELECT 'status_' || k FROM generate_series(1, 10) k);
ANALYZE schedlock.jobs, schedlock.job_runs;

-- the last finished run of each job comes from job_runs_last_idx, and no
-- node reads the whole of job_runs
SELECT * FROM pg_temp.runs_scans('SELECT * FROM schedlock.job_status');

-- what it finds: the last run of a job that ran, nothing for one that never
-- did
SELECT job_name, last_status, last_scheduled_for, last_finished_at
  FROM schedlock.job_status
 WHERE job_name IN ('status_1', 'status_10', 'status_11')
 ORDER BY job_name;

-- the columns of job_status, in order: those of 1.1 first, then 1.2's
SELECT string_agg(attname, ', ' ORDER BY attnum)
  FROM pg_attribute
 WHERE attrelid = 'schedlock.job_status'::regclass AND attnum > 0;

-- late_by: how late a due job is now; NULL when it is not due
BEGIN;
-- (alter_job takes an instant in the past as now: the row is written here)
UPDATE schedlock.jobs SET enabled = true,
	   next_run_at = now() + CASE job_name WHEN 'status_11' THEN interval '-5 minutes'
										   ELSE interval '5 minutes' END
 WHERE job_name IN ('status_11', 'status_12');
SELECT job_name, late_by, next_run_at <= now() AS due
  FROM schedlock.job_status
 WHERE job_name IN ('status_11', 'status_12', 'status_13')
 ORDER BY job_name;
SELECT count(*) AS late_by_a_minute
  FROM schedlock.job_status WHERE late_by > interval '1 minute';
ROLLBACK;

SELECT count(*) FROM (
	SELECT schedlock.unschedule_job('status_' || i) FROM generate_series(1, 20) i) s;
