--
-- job_inputs: inputs schedule_job and alter_job accept must never break a
-- worker later.  Every value a worker could not handle is refused up front
-- with a 22023-class error, and nothing is written.
--
SET client_min_messages = warning;

-- the SQLSTATE a statement fails with, or 'ok'
CREATE FUNCTION pg_temp.sqlstate_of(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
	RETURN state;
END
$$;

-- a POSIX zone with offsets of 99 hours made every worker of the database
-- fail with XX000 "could not map wall-clock time" when the job fell due
SELECT schedlock.schedule_job('zone_99h', '0 2 * * *', 'SELECT 1',
					timezone => 'AAA+99BBB-99,M3.2.0,M11.1.0');
SELECT schedlock.schedule_job('zone_ok', '0 2 * * *', 'SELECT 1', timezone => 'UTC') > 0 AS scheduled;
SELECT schedlock.alter_job('zone_ok', timezone => 'AAA+99BBB-99,J60/0,J365/0');
SELECT s AS statement, pg_temp.sqlstate_of(s) AS sqlstate
  FROM unnest(ARRAY[
	$$SELECT schedlock.schedule_job('zone_99h', '0 2 * * *', 'SELECT 1', timezone => 'AAA+99BBB-99,M3.2.0,M11.1.0')$$,
	$$SELECT schedlock.schedule_job('zone_julian', '0 2 * * *', 'SELECT 1', timezone => 'AAA+99BBB-99,J60/0,J365/0')$$,
	$$SELECT schedlock.alter_job('zone_ok', timezone => 'AAA-25')$$]) AS s;
-- nothing was written
SELECT job_name, timezone FROM schedlock.jobs WHERE job_name LIKE 'zone%' ORDER BY job_name;
SELECT schedlock.unschedule_job('zone_ok');

-- the exact zone of issue 11: a Julian-day rule for today, a minute ahead
SELECT pg_temp.sqlstate_of(format(
	$$SELECT schedlock.schedule_job('zone_today', '* * * * *', 'SELECT 1', timezone => 'AAA+99BBB-99,J%s/%s,J365/0')$$,
	least(extract(doy FROM now())::int, 365),
	to_char(now() + interval '1 minute', 'HH24:MI'))) AS zone_today;
-- cron_next_runs with the same zone is a 22023 error too, never XX000
SELECT cron_next_runs('0 2 * * *', 20, '2026-03-01', 'AAA+99BBB-99,M3.2.0,M11.1.0');

--
-- retry_delay and timeout are bounded, so that no retry time or deadline
-- computed from them can leave the range of timestamptz: a failing job
-- with retry_delay '1000000 years' ended its worker with "timestamp out of
-- range", and a NOTIFY job with timeout '1000000 years' made
-- schedlock_claim_run fail with 22008.  A timeout of 0.5 ms meant no
-- timeout at all.
--
SELECT schedlock.schedule_job('in_retry', '0 2 * * *', 'SELECT 1/0',
					max_attempts => 3, retry_delay => '1000000 years');
SELECT schedlock.schedule_job('in_retry', '0 2 * * *', 'SELECT 1/0',
					max_attempts => 3, retry_delay => '1 day 1 second');
-- a month counts as 30 days
SELECT schedlock.schedule_job('in_retry', '0 2 * * *', 'SELECT 1/0',
					max_attempts => 3, retry_delay => '1 mon');
SELECT schedlock.schedule_job('in_timeout', '0 2 * * *', 'SELECT pg_sleep(1)',
					timeout => '0.5 milliseconds');
SELECT schedlock.schedule_job('in_timeout', '0 2 * * *', notify_channel => 'work',
					timeout => '1000000 years');
SELECT schedlock.schedule_job('in_timeout', '0 2 * * *', 'SELECT 1',
					timeout => '24 days 0.001 seconds');
-- the bounds themselves are accepted
SELECT schedlock.schedule_job('in_bounds', '0 2 * * *', 'SELECT 1', timeout => '24 days',
					retry_delay => '1 day') > 0 AS scheduled;
SELECT schedlock.schedule_job('in_small', '0 2 * * *', 'SELECT 1', timeout => '1 millisecond',
					retry_delay => '0') > 0 AS scheduled;
-- alter_job refuses the same values and changes nothing
SELECT schedlock.alter_job('in_bounds', retry_delay => '1000000 years');
SELECT schedlock.alter_job('in_bounds', timeout => '0.5 milliseconds');
SELECT schedlock.alter_job('in_bounds', notify_channel => 'work', timeout => '1000000 years');
SELECT job_name, timeout, retry_delay, command, notify_channel
  FROM schedlock.jobs WHERE job_name LIKE 'in\_%' ORDER BY job_name;

--
-- A 255-character chr(1) name and a 7200-byte payload: the notification
-- carries the name (JSON-escaped, at most 255 * 6 bytes) and no payload,
-- so it stays far below NOTIFY's 8000-byte limit; the job is accepted.
--
SELECT schedlock.schedule_job(repeat(chr(1), 255), '0 2 * * *', notify_channel => 'work',
					payload => jsonb_build_object('x', repeat('x', 7200))) > 0 AS scheduled;
SELECT schedlock.unschedule_job(repeat(chr(1), 255));
SELECT schedlock.unschedule_job('in_bounds'), schedlock.unschedule_job('in_small');

--
-- A job row written directly (here by a superuser) keeps the same rules:
-- each refused write fails with 23514 and changes nothing.  Writing other
-- columns does not look at them (the scheduler's own updates at every run).
--
SELECT schedlock.schedule_job('in_direct', '0 2 * * *', 'SELECT 1') > 0 AS scheduled;
\set VERBOSITY default
\set SHOW_CONTEXT never
UPDATE schedlock.jobs SET job_name = '' WHERE job_name = 'in_direct';
UPDATE schedlock.jobs SET job_name = repeat('x', 256) WHERE job_name = 'in_direct';
UPDATE schedlock.jobs SET max_attempts = 0 WHERE job_name = 'in_direct';
UPDATE schedlock.jobs SET misfire = 'sometimes' WHERE job_name = 'in_direct';
UPDATE schedlock.jobs SET record_runs = 'some' WHERE job_name = 'in_direct';
UPDATE schedlock.jobs SET notify_channel = 'work' WHERE job_name = 'in_direct';
UPDATE schedlock.jobs SET command = NULL WHERE job_name = 'in_direct';
\set VERBOSITY sqlstate
UPDATE schedlock.jobs SET misfire = 'never' WHERE job_name = 'in_direct';
\set VERBOSITY default
SELECT job_name, max_attempts, misfire, record_runs, command, notify_channel
  FROM schedlock.jobs WHERE job_name = 'in_direct';
UPDATE schedlock.jobs SET job_name = repeat('x', 255), misfire = 'skip',
	record_runs = 'failures', max_attempts = 2
 WHERE job_name = 'in_direct'
 RETURNING length(job_name), misfire, record_runs, max_attempts;
UPDATE schedlock.jobs SET total_runs = total_runs + 1
 WHERE job_name = repeat('x', 255) RETURNING total_runs;
SELECT schedlock.unschedule_job(repeat('x', 255));

--
-- A run row keeps one of the eight statuses (job_runs_status_check), also
-- written directly; a refused write changes nothing.
--
SELECT schedlock.schedule_job('in_status', '0 2 * * *', 'SELECT 1') > 0 AS scheduled;
\set VERBOSITY terse
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, status)
SELECT job_id, owner, '2030-01-01 02:00+00', 'done' FROM schedlock.jobs
 WHERE job_name = 'in_status';
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, status)
SELECT job_id, owner, '2030-01-01 02:00+00', 'queued' FROM schedlock.jobs
 WHERE job_name = 'in_status';
UPDATE schedlock.job_runs SET status = 'Succeeded'
 WHERE job_id = (SELECT job_id FROM schedlock.jobs WHERE job_name = 'in_status');
UPDATE schedlock.job_runs SET status = ''
 WHERE job_id = (SELECT job_id FROM schedlock.jobs WHERE job_name = 'in_status');
\set VERBOSITY default
SELECT status FROM schedlock.job_runs
 WHERE job_id = (SELECT job_id FROM schedlock.jobs WHERE job_name = 'in_status');
SELECT s, schedlock.job_run_status_valid(s) AS valid
  FROM unnest('{queued,pending,running,succeeded,failed,timed_out,lost,skipped,runnin,runningx,SKIPPED,""}'::text[]) s;
DELETE FROM schedlock.job_runs
 WHERE job_id = (SELECT job_id FROM schedlock.jobs WHERE job_name = 'in_status');
SELECT schedlock.unschedule_job('in_status');
