--
-- job_watch: what a DBA sees of a job that will not run (issue 13).
-- next_run_at is NULL while a job is disabled (alter_job, schedule_job,
-- schedule_once, quarantine) and is computed again when it is enabled; a
-- one-off job keeps its instant in next_slot meanwhile.  job_status's
-- stopped_reason says why a job will not run.  The instants lie years
-- ahead, or are written in transactions that roll back, so that no worker
-- runs anything.  (schedlock.enabled = off is in test/t/141_job_stats.pl:
-- the setting is the server's.)
--
SET client_min_messages = warning;
SET TIME ZONE 'UTC';

CREATE VIEW pg_temp.w AS
SELECT j.job_name, j.enabled, j.next_slot, j.next_run_at, j.retry_at,
	   s.stopped_reason
  FROM schedlock.jobs j JOIN schedlock.job_status s USING (job_id)
 WHERE j.job_name LIKE 'w\_%' ORDER BY j.job_name;

-- a recurring job: enabled it has a next run and no stopped_reason
SELECT schedlock.schedule_job('w_cron', '0 3 * * *', 'SELECT 1', timezone => 'UTC') > 0 AS scheduled;
SELECT job_name, enabled, next_run_at = next_slot AS next_run_at_is_slot,
	   next_slot = cron_next('0 3 * * *', now(), 'UTC') AS slot_is_next_3am,
	   stopped_reason
  FROM pg_temp.w;

-- disabled: no next run; the slot stays where it was
SELECT schedlock.alter_job('w_cron', enabled => false);
SELECT job_name, enabled, next_run_at, next_slot = cron_next('0 3 * * *', now(), 'UTC') AS slot_kept,
	   stopped_reason
  FROM pg_temp.w;
-- changing something else of a disabled job leaves it without a next run
SELECT schedlock.alter_job('w_cron', schedule => '0 4 * * *');
SELECT job_name, enabled, next_run_at, stopped_reason FROM pg_temp.w;

-- enabled again: the next run is computed afresh from now
SELECT schedlock.alter_job('w_cron', enabled => true);
SELECT job_name, enabled, next_run_at = cron_next('0 4 * * *', now(), 'UTC') AS next_run_at_recomputed,
	   next_run_at = next_slot AS next_run_at_is_slot, stopped_reason
  FROM pg_temp.w;

-- a pending retry of a disabled job does not give it a next run
BEGIN;
UPDATE schedlock.jobs SET retry_slot = next_slot, retry_attempt = 2,
	   retry_at = '2029-12-31 03:01+00', next_run_at = '2029-12-31 03:01+00'
 WHERE job_name = 'w_cron';
SELECT schedlock.alter_job('w_cron', enabled => false);
SELECT job_name, enabled, next_run_at, retry_at, stopped_reason FROM pg_temp.w;
ROLLBACK;

-- schedlock.schedule_job(..., enabled => false): created without a next run, and a
-- definition replaced disabled loses its next run
SELECT schedlock.schedule_job('w_off', '*/5 * * * *', 'SELECT 1', enabled => false) > 0 AS scheduled;
SELECT schedlock.schedule_job('w_cron', '0 4 * * *', 'SELECT 1', timezone => 'UTC', enabled => false) > 0 AS replaced;
SELECT job_name, enabled, next_run_at, next_slot IS NOT NULL AS has_slot, stopped_reason
  FROM pg_temp.w;
SELECT schedlock.schedule_job('w_cron', '0 4 * * *', 'SELECT 1', timezone => 'UTC') > 0 AS replaced;
SELECT job_name, enabled, next_run_at = next_slot AS next_run_at_is_slot, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_cron';

-- a one-off job keeps its instant while disabled, and runs at it when
-- enabled again before it
SELECT schedlock.schedule_once('w_once', '2030-06-01 12:00+00', 'SELECT 1') > 0 AS scheduled;
SELECT schedlock.alter_job('w_once', enabled => false);
SELECT job_name, enabled, next_slot, next_run_at, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_once';
SELECT schedlock.alter_job('w_once', enabled => true);
SELECT job_name, enabled, next_slot, next_run_at, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_once';
-- schedlock.schedule_once(..., enabled => false): the instant, no next run
SELECT schedlock.schedule_once('w_once_off', '2030-07-01 08:00+00', 'SELECT 1', enabled => false) > 0 AS scheduled;
SELECT job_name, enabled, next_slot, next_run_at, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_once_off';
SELECT schedlock.alter_job('w_once_off', enabled => true);
SELECT job_name, enabled, next_slot, next_run_at, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_once_off';

-- enabled after its instant passed: due at once (misfire run_once runs it
-- late, as before)
BEGIN;
SELECT schedlock.alter_job('w_once', enabled => false);
UPDATE schedlock.jobs SET next_slot = '2020-01-01 00:00+00' WHERE job_name = 'w_once';
SELECT schedlock.alter_job('w_once', enabled => true);
SELECT job_name, enabled, next_slot, next_run_at, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_once';
ROLLBACK;

-- an ended one-off job (its run is over: no next slot) will not run ...
BEGIN;
UPDATE schedlock.jobs SET next_slot = NULL, next_run_at = NULL WHERE job_name = 'w_once';
SELECT job_name, enabled, next_slot, next_run_at, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_once';
-- ... until a schedlock.run_job() call is queued
SELECT schedlock.run_job('w_once') > 0 AS queued;
SELECT job_name, next_run_at IS NOT NULL AS has_next_run, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_once';
ROLLBACK;

-- a quarantined job: its quarantine_reason (the workers disable it; here
-- written as they would)
BEGIN;
UPDATE schedlock.jobs SET enabled = false, next_run_at = NULL,
	   quarantine_reason = 'quarantined: dispatch of the job failed 3 times in a row'
 WHERE job_name = 'w_cron';
SELECT job_name, enabled, next_run_at, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_cron';
-- enabling it releases it, with a next run again
SELECT schedlock.alter_job('w_cron', enabled => true);
SELECT job_name, enabled, next_run_at = next_slot AS next_run_at_is_slot, stopped_reason
  FROM pg_temp.w WHERE job_name = 'w_cron';
ROLLBACK;

-- no enabled job is without a next run but an ended one-off one, and no
-- disabled job has one
SELECT count(*) FILTER (WHERE enabled AND next_run_at IS NULL) AS enabled_not_due,
	   count(*) FILTER (WHERE NOT enabled AND next_run_at IS NOT NULL) AS disabled_due
  FROM pg_temp.w;

SELECT schedlock.unschedule_job(n) FROM unnest(ARRAY['w_cron', 'w_off', 'w_once', 'w_once_off']) AS n;
