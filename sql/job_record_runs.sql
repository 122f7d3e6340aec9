--
-- job_record_runs: which ended runs schedlock.job_runs keeps.  The setting
-- schedlock.record_runs (server file only) and a job's own record_runs,
-- set by alter_job: 'all', 'failures', or 'default' (the setting).  A bad
-- value is refused with 22023 and nothing is written.  What the job
-- backends do with it is test/t/116_job_record_runs.pl.  The job is far in
-- the future: nothing here waits for a job backend.
--
SET client_min_messages = warning;

SELECT name, setting, boot_val, context, enumvals
  FROM pg_settings WHERE name = 'schedlock.record_runs';
SET schedlock.record_runs = 'failures';

SELECT schedlock.schedule_job('keep_less', '0 3 1 1 *', 'SELECT 1') IS NOT NULL AS scheduled;
CREATE VIEW pg_temp.kept AS
SELECT job_name, record_runs FROM schedlock.jobs WHERE job_name = 'keep_less';
SELECT * FROM pg_temp.kept;

SELECT schedlock.alter_job('keep_less', record_runs => 'failures');
SELECT * FROM pg_temp.kept;
SELECT schedlock.alter_job('keep_less', record_runs => 'all');
SELECT * FROM pg_temp.kept;

-- refused, nothing written (also not the other settings given with it)
\set VERBOSITY sqlstate
SELECT schedlock.alter_job('keep_less', record_runs => 'some', max_attempts => 5);
SELECT schedlock.alter_job('keep_less', record_runs => '');
SELECT schedlock.alter_job('keep_less', record_runs => 'FAILURES');
\set VERBOSITY default
SELECT schedlock.alter_job('keep_less', record_runs => 'none');
SELECT job_name, record_runs, max_attempts FROM schedlock.jobs WHERE job_name = 'keep_less';

SELECT schedlock.alter_job('keep_less', record_runs => 'default');
SELECT * FROM pg_temp.kept;
-- NULL leaves it as it is
SELECT schedlock.alter_job('keep_less', record_runs => 'failures');
SELECT schedlock.alter_job('keep_less', max_attempts => 2);
SELECT * FROM pg_temp.kept;

SELECT schedlock.unschedule_job('keep_less');
