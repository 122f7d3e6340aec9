--
-- job_habits: what the job API says to habits brought from pg_cron and from
-- interval literals, and to commands an atomic job cannot run.
--   * pg_cron's two-argument cron.schedule(schedule, command) order;
--   * a schedule written as an interval ("1 minute", "90 seconds");
--   * VACUUM and the like, which cannot run inside a transaction block:
--     the job becomes non-atomic (NOTICE), or atomic => true is refused;
--   * numeric time zones, which PostgreSQL reads with the POSIX sign;
--   * unschedule_job of an unknown name or id, and by id.
-- The jobs are disabled or far from due: nothing here waits for a worker.
--

\i sql/include/try.sql

-- pg_cron's two-argument order: the schedule lands in job_name
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('*/5 * * * *', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('@daily', 'VACUUM')$$);
-- a name that merely looks odd is a name
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('nightly', '@daily')$$);
SELECT count(*) AS jobs FROM schedlock.jobs WHERE job_name IN ('*/5 * * * *', '@daily', 'nightly');

-- intervals: seconds from 1 to 59 are a schedule, the rest say what to write
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('h1', '1 minute', 'SELECT 1', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('h1', '10 minutes', 'SELECT 1', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('h1', '2 hours', 'SELECT 1', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('h1', '1 day', 'SELECT 1', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('h1', '90 seconds', 'SELECT 1', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('h1', '120 seconds', 'SELECT 1', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('h1', schedule => '5 minutes')$$);
SELECT message FROM pg_temp.try($$SELECT cron_next('1 hour')$$);

-- VACUUM: the job becomes non-atomic, with a NOTICE
SELECT schedlock.schedule_job('vac', '0 3 * * *', 'VACUUM ANALYZE pg_class', enabled => false) > 0 AS scheduled;
SELECT job_name, atomic FROM schedlock.jobs WHERE job_name = 'vac';
-- several statements: one that needs the top level is enough
SELECT schedlock.schedule_job('idx', '0 3 * * *',
					'SELECT 1; CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a)',
					enabled => false) > 0 AS scheduled;
SELECT schedlock.schedule_once('vac_once', '2099-01-01 00:00+00', 'VACUUM pg_class', enabled => false) > 0 AS scheduled;
SELECT job_name, atomic FROM schedlock.jobs WHERE job_name IN ('idx', 'vac_once') ORDER BY 1;
-- ANALYZE, CALL and DO may run in a transaction block: they stay atomic
SELECT schedlock.schedule_job('ana', '0 3 * * *', 'ANALYZE pg_class; DO $d$BEGIN END$d$', enabled => false) > 0 AS scheduled;
SELECT job_name, atomic FROM schedlock.jobs WHERE job_name = 'ana';
-- alter_job: a new command makes an atomic job non-atomic ...
SELECT schedlock.alter_job('ana', command => 'REINDEX TABLE CONCURRENTLY pg_class');
SELECT job_name, atomic FROM schedlock.jobs WHERE job_name = 'ana';
-- ... and atomic => true, asked for in so many words, is refused
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('vac', atomic => true)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('ana', command => 'VACUUM pg_class', atomic => true)$$);
SELECT job_name, command, atomic FROM schedlock.jobs WHERE job_name IN ('vac', 'ana') ORDER BY 1;
-- a command that may run in a transaction block may be atomic again
SELECT schedlock.alter_job('ana', command => 'ANALYZE pg_class', atomic => true);
SELECT job_name, atomic FROM schedlock.jobs WHERE job_name = 'ana';

-- numeric time zones: POSIX sign, a WARNING spells out the reading
SELECT schedlock.schedule_job('tz1', '0 9 * * *', 'SELECT 1', timezone => '+02:00', enabled => false) > 0 AS scheduled;
SELECT schedlock.schedule_job('tz2', '0 9 * * *', 'SELECT 1', timezone => 'UTC+2', enabled => false) > 0 AS scheduled;
SELECT schedlock.schedule_job('tz3', '0 9 * * *', 'SELECT 1', timezone => '-5:30', enabled => false) > 0 AS scheduled;
SELECT schedlock.alter_job('tz1', timezone => 'GMT-14');
-- names, and numeric zones of offset zero, say nothing
SELECT schedlock.schedule_job('tz4', '0 9 * * *', 'SELECT 1', timezone => 'Europe/Prague', enabled => false) > 0 AS scheduled;
SELECT schedlock.schedule_job('tz5', '0 9 * * *', 'SELECT 1', timezone => 'UTC+0', enabled => false) > 0 AS scheduled;
SELECT schedlock.schedule_job('tz6', '0 9 * * *', 'SELECT 1', timezone => 'EST5EDT', enabled => false) > 0 AS scheduled;
-- the next run shows the POSIX reading: 09:00 at UTC-02:00 is 11:00 UTC
SELECT cron_next('0 9 * * *', '2030-01-01 00:00+00', '+02:00') AT TIME ZONE 'UTC' AS next_utc;

-- unschedule_job: an unknown name or id is an error, or false with if_exists
SELECT * FROM pg_temp.try($$SELECT schedlock.unschedule_job('no_such_job')$$);
SELECT schedlock.unschedule_job('no_such_job', if_exists => true) AS unscheduled;
SELECT * FROM pg_temp.try($$SELECT schedlock.unschedule_job(-1)$$);
SELECT schedlock.unschedule_job(-1, if_exists => true) AS unscheduled;
SELECT * FROM pg_temp.try($$SELECT schedlock.unschedule_job(NULL::bigint)$$);
-- by id, as pg_cron's cron.unschedule(jobid)
SELECT schedlock.unschedule_job(job_id) AS unscheduled FROM schedlock.jobs WHERE job_name = 'tz6';
SELECT schedlock.unschedule_job('tz5') AS unscheduled;
SELECT count(*) AS left_of_tz56 FROM schedlock.jobs WHERE job_name IN ('tz5', 'tz6');
-- another role's job is unknown to an ordinary role, by name and by id
CREATE ROLE regress_habits_eve;
GRANT INSERT ON schedlock.jobs TO regress_habits_eve;
SELECT job_id AS vac_id FROM schedlock.jobs WHERE job_name = 'vac' \gset
SET ROLE regress_habits_eve;
SELECT state, message FROM pg_temp.try($$SELECT schedlock.unschedule_job('vac')$$);
SELECT state, replace(message, :'vac_id', 'N') AS message
  FROM pg_temp.try(format('SELECT schedlock.unschedule_job(%s)', :vac_id));
RESET ROLE;
SELECT count(*) AS vac_left FROM schedlock.jobs WHERE job_name = 'vac';

-- job_summary: one short line per job
SELECT schedlock.schedule_job('long', '*/10 * * * *',
					$$INSERT INTO   audit_log (happened_at, what)
					  SELECT now(), 'a line far longer than forty characters'$$,
					enabled => false) > 0 AS scheduled;
SELECT schedlock.schedule_job('told', '0 18 * * *', notify_channel => 'stats_mail',
					enabled => false) > 0 AS scheduled;
SELECT * FROM schedlock.job_summary WHERE job_name IN ('vac', 'long', 'told');
SELECT string_agg(attname, ', ' ORDER BY attnum) AS job_summary_columns
  FROM pg_attribute WHERE attrelid = 'schedlock.job_summary'::regclass AND attnum > 0;

SELECT count(*) AS cleaned
  FROM (SELECT schedlock.unschedule_job(job_id) FROM schedlock.jobs
         WHERE job_name IN ('vac', 'idx', 'vac_once', 'ana', 'tz1', 'tz2', 'tz3', 'tz4',
                            'long', 'told')) s;
REVOKE INSERT ON schedlock.jobs FROM regress_habits_eve;
DROP ROLE regress_habits_eve;
