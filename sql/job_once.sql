--
-- job_once: one-off jobs (schedule_once) and schedlock.alter_job(..., next_run_at).
-- Every refused input leaves the job as it was.  Instants that would fall
-- due while the test runs are only written in transactions that roll back,
-- so that no worker runs them.
--
SET client_min_messages = warning;
SET TIME ZONE 'UTC';

-- the SQLSTATE and message a statement fails with, or 'ok'
\i sql/include/try.sql

CREATE VIEW pg_temp.j AS
SELECT job_name, schedule, misfire, enabled, next_slot, next_run_at, retry_at
  FROM schedlock.jobs WHERE job_name LIKE 'once%' ORDER BY job_name;

-- a one-off SQL job and a one-off NOTIFY job
SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 1') > 0 AS scheduled;
SELECT schedlock.schedule_once(job_name => 'once_notify', run_at => '2030-06-01 12:00:30+02',
					 notify_channel => 'reminders', payload => '{"to": "ops"}',
					 max_attempts => 3, retry_delay => '10 seconds') > 0 AS scheduled;
SELECT * FROM pg_temp.j;
SELECT job_name, schedule, next_run_at FROM schedlock.job_status
 WHERE job_name LIKE 'once%' ORDER BY job_name;

-- refused inputs: a real SQLSTATE, nothing written
SELECT s AS statement, t.state, t.message
  FROM unnest(ARRAY[
	$$SELECT schedlock.schedule_once('once_sql', NULL, command => 'SELECT 2')$$,
	$$SELECT schedlock.schedule_once('once_sql', 'infinity', command => 'SELECT 2')$$,
	$$SELECT schedlock.schedule_once('once_sql', '-infinity', command => 'SELECT 2')$$,
	$$SELECT schedlock.schedule_once('once_sql', now() + interval '101 years', command => 'SELECT 2')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 2', notify_channel => 'c')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELEC 2')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'COMMIT')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 2', max_attempts => 0)$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 2', max_attempts => NULL)$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 2', retry_delay => '-1 second')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 2', atomic => NULL)$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 2', timeout => '0')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', notify_channel => 'Bad Channel')$$,
	$$SELECT schedlock.schedule_once('once_sql', '2030-06-01 12:00+00', command => 'SELECT 2', payload => '{}')$$,
	$$SELECT schedlock.schedule_once('', '2030-06-01 12:00+00', command => 'SELECT 2')$$,
	$$SELECT schedlock.schedule_job('once_x', '@once', 'SELECT 2')$$,
	$$SELECT schedlock.schedule_job('once_x', '@ONCE', 'SELECT 2')$$,
	$$SELECT cron_next('@once', now())$$
  ]) AS s, pg_temp.try(s) AS t;
SELECT * FROM pg_temp.j;

-- an instant in the past means now
BEGIN;
SELECT schedlock.schedule_once('once_past', '2001-01-01 00:00+00', command => 'SELECT 1') > 0 AS scheduled;
SELECT next_slot >= now() AND next_slot <= clock_timestamp() AS due_now,
	   next_run_at = next_slot AS next_run_at_is_the_slot
  FROM schedlock.jobs WHERE job_name = 'once_past';
ROLLBACK;

-- the upsert: a recurring job of that name becomes a one-off job, and back
SELECT schedlock.schedule_job('once_upsert', '0 3 * * *', 'SELECT 1', timezone => 'UTC',
					misfire => 'skip', max_attempts => 2) > 0 AS scheduled;
SELECT schedlock.schedule_once('once_upsert', '2031-01-01 00:00+00', command => 'SELECT 2') > 0 AS replaced;
SELECT * FROM pg_temp.j WHERE job_name = 'once_upsert';
SELECT schedlock.schedule_job('once_upsert', '0 3 * * *', 'SELECT 1', timezone => 'UTC') > 0 AS replaced;
SELECT schedule, next_slot > now() AND next_slot <= now() + interval '1 day' AS next_slot_from_schedule
  FROM schedlock.jobs WHERE job_name = 'once_upsert';

-- schedlock.alter_job(next_run_at): moves the next slot of a recurring job
SELECT schedlock.alter_job('once_upsert', next_run_at => '2030-01-01 10:17+00');
SELECT * FROM pg_temp.j WHERE job_name = 'once_upsert';
-- NULL leaves it alone
SELECT schedlock.alter_job('once_upsert', next_run_at => NULL, max_attempts => 3);
SELECT * FROM pg_temp.j WHERE job_name = 'once_upsert';
-- ... and of a one-off job: the one instant moves
SELECT schedlock.alter_job('once_sql', next_run_at => '2030-07-01 08:00+00');
SELECT * FROM pg_temp.j WHERE job_name = 'once_sql';
-- past means due now
BEGIN;
SELECT schedlock.alter_job('once_upsert', next_run_at => '2000-01-01 00:00+00');
SELECT next_slot >= now() AND next_slot <= clock_timestamp() AS due_now
  FROM schedlock.jobs WHERE job_name = 'once_upsert';
ROLLBACK;
-- a pending retry is dropped: the moved run replaces it
BEGIN;
UPDATE schedlock.jobs SET retry_slot = '2029-12-31 03:00+00', retry_attempt = 2,
	   retry_at = '2029-12-31 03:01+00', next_run_at = '2029-12-31 03:01+00'
 WHERE job_name = 'once_upsert';
SELECT schedlock.alter_job('once_upsert', next_run_at => '2030-02-01 00:00+00');
SELECT next_slot, next_run_at, retry_slot, retry_at FROM schedlock.jobs
 WHERE job_name = 'once_upsert';
ROLLBACK;

-- refused: nothing changed
SELECT schedlock.alter_job('once_upsert', enabled => false);
SELECT s AS statement, t.state, t.message
  FROM unnest(ARRAY[
	$$SELECT schedlock.alter_job('once_upsert', next_run_at => 'infinity')$$,
	$$SELECT schedlock.alter_job('once_sql', next_run_at => '-infinity')$$,
	$$SELECT schedlock.alter_job('once_sql', next_run_at => now() + interval '101 years')$$,
	$$SELECT schedlock.alter_job('once_upsert', next_run_at => '2030-03-01 00:00+00')$$,
	$$SELECT schedlock.alter_job('once_sql', enabled => false, next_run_at => '2030-03-01 00:00+00')$$,
	$$SELECT schedlock.alter_job('once_upsert', schedule => '@once')$$,
	$$SELECT schedlock.alter_job('once_sql', misfire => 'skip')$$,
	$$SELECT schedlock.alter_job('once_nope', next_run_at => '2030-03-01 00:00+00')$$
  ]) AS s, pg_temp.try(s) AS t;
SELECT * FROM pg_temp.j;
-- a disabled job: enabled => true in the same call
SELECT schedlock.alter_job('once_upsert', enabled => true, next_run_at => '2030-03-01 00:00+00');
SELECT * FROM pg_temp.j WHERE job_name = 'once_upsert';

-- a one-off job disabled and enabled again keeps its instant
SELECT schedlock.alter_job('once_sql', enabled => false);
SELECT schedlock.alter_job('once_sql', enabled => true);
SELECT * FROM pg_temp.j WHERE job_name = 'once_sql';

-- a recurring job becomes a one-off job with next_run_at (misfire too)
SELECT schedlock.alter_job('once_upsert', schedule => '@once', next_run_at => '2030-04-01 00:00+00');
SELECT * FROM pg_temp.j WHERE job_name = 'once_upsert';
-- ... and a recurring job again with a schedule
SELECT schedlock.alter_job('once_upsert', schedule => '*/5 * * * *');
SELECT schedule, next_slot > now() AND next_slot <= now() + interval '5 minutes' AS next_slot_from_schedule
  FROM schedlock.jobs WHERE job_name = 'once_upsert';

-- an ended one-off job (what a worker leaves): no next run; re-armed by
-- next_run_at
BEGIN;
UPDATE schedlock.jobs SET next_slot = NULL, next_run_at = NULL WHERE job_name = 'once_sql';
SELECT schedlock.alter_job('once_sql', enabled => false);
SELECT schedlock.alter_job('once_sql', enabled => true);
SELECT next_slot, next_run_at FROM schedlock.jobs WHERE job_name = 'once_sql';
SELECT schedlock.alter_job('once_sql', next_run_at => '2030-09-01 00:00+00');
SELECT next_slot, next_run_at FROM schedlock.jobs WHERE job_name = 'once_sql';
ROLLBACK;

-- schedlock.run_job() on a one-off job queues a run now and keeps the instant
BEGIN;
SELECT schedlock.run_job('once_sql') > 0 AS queued;
SELECT next_slot, manual_pending, next_run_at < next_slot AS due_now
  FROM schedlock.jobs WHERE job_name = 'once_sql';
ROLLBACK;

-- not executable by PUBLIC; alter_job has next_run_at, and nothing else
-- is left of the alter_job of 1.0
CREATE ROLE regress_once_role;
SET ROLE regress_once_role;
SELECT state, message FROM pg_temp.try($$SELECT schedlock.schedule_once('once_r', now(), 'SELECT 1')$$);
RESET ROLE;
DROP ROLE regress_once_role;
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.proname IN ('alter_job', 'alter_job_1_0', 'schedule_once') ORDER BY p.oid::regprocedure::text;

SELECT schedlock.unschedule_job('once_sql'), schedlock.unschedule_job('once_notify'), schedlock.unschedule_job('once_upsert');
