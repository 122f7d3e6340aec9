-- test/pgtap/job_stats_behaviour.sql
--
-- Behaviour table for the run statistics of a job (issue 13): after each
-- step, what schedlock.jobs and schedlock.job_status count for the job.
-- The steps end runs of a NOTIFY job the way applications do
-- (schedlock_claim_run, then schedlock_finish_run), with their
-- scheduled_for and started_at set to known instants, so that the start lag
-- is exact; the duration is the time from started_at to the finish.  The
-- workers' own ways of ending a run (an outcome, an expired NOTIFY run, a
-- lost run) are in test/t/140_job_stats.pl.  Everything runs in one
-- transaction that rolls back: no worker sees it.

BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';

SELECT plan(14);

-- a NOTIFY job whose slots lie far ahead: nothing of it falls due
SELECT schedlock.schedule_job('stats_job', '0 3 1 1 *', notify_channel => 'stats_channel',
					timezone => 'UTC', max_attempts => 1) IS NOT NULL AS scheduled \gset

-- run: a pending run of the job, claimed now, that was scheduled lag_s
-- seconds before it started, and started dur_s seconds ago; then finished
-- as succeeded or not.  Returns schedlock_finish_run's answer.
CREATE FUNCTION pg_temp.run(succeeded boolean, lag_s int, dur_s int) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	rid bigint;
	started timestamptz := clock_timestamp() - make_interval(secs => dur_s);
BEGIN
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
									started_at, deadline)
	SELECT job_id, owner, started - make_interval(secs => lag_s),
		   1 + (SELECT count(*) FROM schedlock.job_runs r WHERE r.job_id = j.job_id),
		   'pending', started, now() + interval '1 hour'
	  FROM schedlock.jobs j WHERE job_name = 'stats_job'
	RETURNING run_id INTO rid;
	PERFORM schedlock_claim_run(rid, 'pgtap');
	UPDATE schedlock.job_runs SET started_at = started WHERE run_id = rid;
	RETURN schedlock_finish_run(rid, succeeded, CASE WHEN NOT succeeded THEN 'broke' END);
END
$$;

-- the job's statistics as one line: total/succeeded/failed, consecutive
-- failures, last start lag, whether last_success_at is the finish of the
-- last succeeded run, whether the durations add up to those of its runs
CREATE FUNCTION pg_temp.stats() RETURNS text
LANGUAGE sql AS $$
SELECT format('%s/%s/%s cf=%s lag=%s success_at=%s durations=%s average=%s',
			  s.total_runs, s.succeeded_runs, s.failed_runs, s.consecutive_failures,
			  coalesce(s.last_start_lag::text, 'NULL'),
			  CASE WHEN s.last_success_at IS NULL THEN 'NULL'
				   WHEN s.last_success_at = (SELECT max(finished_at) FROM schedlock.job_runs r
											  WHERE r.job_id = s.job_id AND r.status = 'succeeded')
				   THEN 'last success' ELSE 'wrong ' || s.last_success_at END,
			  CASE WHEN j.total_duration = coalesce((SELECT sum(finished_at - started_at) FROM schedlock.job_runs r
													  WHERE r.job_id = s.job_id
														AND r.status IN ('succeeded', 'failed', 'timed_out', 'lost')), '0')
					AND s.last_duration IS NOT DISTINCT FROM
						(SELECT finished_at - started_at FROM schedlock.job_runs r
						  WHERE r.job_id = s.job_id AND r.finished_at IS NOT NULL
						  ORDER BY finished_at DESC, run_id DESC LIMIT 1)
				   THEN 'match' ELSE 'differ' END,
			  CASE WHEN s.average_duration IS NOT DISTINCT FROM j.total_duration / nullif(s.total_runs, 0)
				   THEN 'total/runs' ELSE 'wrong' END)
  FROM schedlock.job_status s JOIN schedlock.jobs j USING (job_id)
 WHERE s.job_name = 'stats_job'
$$;

CREATE TEMP TABLE behaviour (
	id serial PRIMARY KEY,
	step text NOT NULL,			-- SQL, run for its effect
	expected text NOT NULL,		-- pg_temp.stats() after it
	what text NOT NULL
) ON COMMIT DROP;

INSERT INTO behaviour (step, expected, what) VALUES
	($$SELECT 1$$, '0/0/0 cf=0 lag=NULL success_at=NULL durations=match average=total/runs', 'a new job starts at 0'),
	($$SELECT pg_temp.run(true, 5, 2)$$, '1/1/0 cf=0 lag=00:00:05 success_at=last success durations=match average=total/runs', 'a success counts once'),
	($$SELECT pg_temp.run(false, 2, 1)$$, '2/1/1 cf=1 lag=00:00:02 success_at=last success durations=match average=total/runs', 'a failure counts, and keeps the last success'),
	($$SELECT pg_temp.run(false, 0, 3)$$, '3/1/2 cf=2 lag=00:00:00 success_at=last success durations=match average=total/runs', 'a second failure in a row'),
	($$SELECT schedlock_finish_run(max(run_id), true) FROM schedlock.job_runs
	   WHERE job_id = (SELECT job_id FROM schedlock.jobs WHERE job_name = 'stats_job')$$, '3/1/2 cf=2 lag=00:00:00 success_at=last success durations=match average=total/runs', 'finishing a finished run again counts nothing'),
	($$SELECT pg_temp.run(true, 7, 1)$$, '4/2/2 cf=0 lag=00:00:07 success_at=last success durations=match average=total/runs', 'a success resets the consecutive failures'),
	($$SELECT schedlock.schedule_job('stats_job', '0 4 1 1 *', notify_channel => 'stats_channel', timezone => 'UTC')$$, '4/2/2 cf=0 lag=00:00:07 success_at=last success durations=match average=total/runs', 'schedule_job replacing the definition keeps the counts'),
	($$SELECT schedlock.alter_job('stats_job', enabled => false)$$, '4/2/2 cf=0 lag=00:00:07 success_at=last success durations=match average=total/runs', 'alter_job keeps the counts'),
	($$SELECT schedlock.alter_job('stats_job', enabled => true)$$, '4/2/2 cf=0 lag=00:00:07 success_at=last success durations=match average=total/runs', 'enabling again keeps the counts'),
	($$INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, status, finished_at, message)
	   SELECT job_id, owner, now() - interval '1 day', 'skipped', now(), 'overlap' FROM schedlock.jobs WHERE job_name = 'stats_job'$$,
	 '4/2/2 cf=0 lag=00:00:07 success_at=last success durations=match average=total/runs', 'a skipped slot is no run'),
	($$SELECT schedlock.unschedule_job('stats_job'); SELECT schedlock.schedule_job('stats_job', '0 3 1 1 *', notify_channel => 'stats_channel', timezone => 'UTC')$$,
	 '0/0/0 cf=0 lag=NULL success_at=NULL durations=match average=total/runs', 'a job scheduled again after unschedule_job starts at 0'),
	($$SELECT pg_temp.run(false, 1, 1)$$, '1/0/1 cf=1 lag=00:00:01 success_at=NULL durations=match average=total/runs', 'a failure first: no last success');

CREATE FUNCTION pg_temp.check_row(b behaviour) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE b.step;
	RETURN pg_temp.stats();
END
$$;

SELECT is(pg_temp.check_row(b), b.expected, format('%s: %s', b.id, b.what))
  FROM behaviour b ORDER BY b.id;

-- the durations are those of the runs: 1 s, within the time the test took
SELECT ok(last_duration >= interval '1 second' AND last_duration < interval '1 minute',
		  'last_duration is finished_at - started_at of the last run')
  FROM schedlock.job_status WHERE job_name = 'stats_job';
-- the columns job_status gained, at its end: the statistics and
-- stopped_reason (release 1.1), waiting_reason and late_by (1.2)
SELECT is((SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute
			WHERE attrelid = 'schedlock.job_status'::regclass AND attnum > 15),
		  ARRAY['total_runs', 'succeeded_runs', 'failed_runs', 'last_duration',
				'average_duration', 'last_success_at', 'last_start_lag', 'stopped_reason',
				'waiting_reason', 'late_by'],
		  'job_status gains its statistics, stopped_reason, waiting_reason and late_by at the end');

SELECT * FROM finish();
ROLLBACK;
