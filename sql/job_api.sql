--
-- job_api: the SQL surface of the job scheduler -- functions and defaults,
-- who may execute them, the upsert, alter_job, run_job, unschedule_job,
-- every input error with its SQLSTATE, run_as rules, the claim/finish
-- protocol of NOTIFY runs (and the claim that returns the payload), and
-- row-level security between roles.  Nothing here waits for a worker: the
-- jobs are scheduled far in the future or disabled, so the output does not
-- depend on timing.
--

-- errors are shown as rows: SQLSTATE, message, detail, hint
\i sql/include/try.sql

-- the API functions, their schemas and their named arguments with defaults:
-- the job functions live in schedlock, the run functions of the listeners in
-- the extension's schema (public here)
SELECT n.nspname, p.proname, pg_get_function_arguments(p.oid) AS args,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname IN ('public', 'schedlock')
   AND p.proname IN ('schedule_job', 'schedule_once', 'unschedule_job',
                     'alter_job', 'run_job',
                     'schedlock_claim_run', 'schedlock_claim_run_payload',
                     'schedlock_finish_run', 'schedlock_pending_runs')
 ORDER BY 1, 2, 3;

-- none of the job functions' names is taken in the extension's schema
SELECT count(*) AS job_functions_in_public
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'public'
   AND p.proname IN ('schedule_job', 'schedule_once', 'unschedule_job',
                     'alter_job', 'run_job');

-- which functions PUBLIC may execute: all of them (1.2); the job functions
-- check the one grant of the job API, INSERT on schedlock.jobs
SELECT n.nspname, p.proname,
       p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
                                    WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
         AS public_may_execute
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname IN ('public', 'schedlock')
   AND p.proname IN ('schedule_job', 'schedule_once', 'unschedule_job', 'alter_job', 'run_job',
                     'schedlock_claim_run', 'schedlock_claim_run_payload',
                     'schedlock_finish_run', 'schedlock_acquire', 'schedlock_release',
                     'schedlock_extend', 'schedlock_assert', 'cron_next', 'cron_next_runs')
 ORDER BY 3, 1, 2;

-- the settings and their defaults
SELECT name, setting, unit, context FROM pg_settings
 WHERE name IN ('schedlock.workers', 'schedlock.enabled', 'schedlock.history_retention',
                'schedlock.runs_per_commit', 'schedlock.run_id',
                'schedlock.scheduled_for')
 ORDER BY 1;

-- schedlock.run_id and schedlock.scheduled_for are the job backend's to
-- set, around a job's command
SELECT * FROM pg_temp.try($$SET schedlock.run_id = '42'$$);
SELECT * FROM pg_temp.try($$SET schedlock.scheduled_for = '2026-01-01'$$);
SELECT current_setting('schedlock.run_id') = '' AS empty_outside_a_run,
       current_setting('schedlock.scheduled_for') = '' AS no_slot_outside_a_run;

-- an SQL job with every default; it fires first on 1 January at midnight
SELECT schedlock.schedule_job('yearly_report', '0 0 1 1 *', 'SELECT 1') AS job_id \gset
SELECT job_name, owner, schedule, command, notify_channel, payload, timezone,
       timeout, max_attempts, retry_delay, misfire, atomic, enabled, run_as,
       next_run_at = cron_next('0 0 1 1 *', now(), 'UTC') AS next_run_is_next_slot,
       consecutive_failures
  FROM schedlock.jobs WHERE job_id = :job_id;

-- the same name again updates the job in place (upsert): same id
SELECT schedlock.schedule_job(job_name => 'yearly_report', schedule => '0 6 1 1 *',
                    command => 'SELECT 2', timezone => 'Europe/Paris',
                    timeout => '5 minutes', max_attempts => 3,
                    retry_delay => '10 seconds', misfire => 'skip') = :job_id AS same_id;
SELECT schedule, command, timezone, timeout, max_attempts, retry_delay, misfire,
       next_run_at = cron_next('0 6 1 1 *', now(), 'Europe/Paris') AS next_run_is_next_slot
  FROM schedlock.jobs WHERE job_id = :job_id;

-- a NOTIFY job with a payload, and an @reboot job (no next run until a start)
SELECT schedlock.schedule_job('mail', '0 0 1 1 *', notify_channel => 'stats_mail',
                    payload => '{"to": "ops"}') IS NOT NULL AS scheduled;
SELECT schedlock.schedule_job('warmup', '@reboot', 'SELECT 1') IS NOT NULL AS scheduled;
SELECT job_name, notify_channel, payload, reboot, next_run_at IS NULL AS no_next_run
  FROM schedlock.jobs WHERE job_name IN ('mail', 'warmup') ORDER BY 1;

-- bad input: a clear error, a real SQLSTATE, and nothing written
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '61 * * * *', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', 'every day', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', NULL, 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1', timezone => 'Mars/Olympus')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELEC 1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1; COMMIT')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', '  ')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1', notify_channel => 'ch')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', notify_channel => 'Stats Mail')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', notify_channel => 'select')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', notify_channel => 'ch',
                                                payload => jsonb_build_object('blob', repeat('x', 65536)))$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1', payload => '{}')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1', misfire => 'sometimes')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1', max_attempts => 0)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1', retry_delay => '-1 second')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('bad', '@daily', 'SELECT 1', timeout => '0')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('', '@daily', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job(repeat('n', 256), '@daily', 'SELECT 1')$$);
SELECT count(*) AS bad_jobs_written FROM schedlock.jobs WHERE job_name = 'bad';
-- the payload is not sent in the notification, so it may exceed NOTIFY's
-- 8000 bytes (up to 65536 bytes of JSON text)
SELECT schedlock.schedule_job('big_payload', '0 0 1 1 *', notify_channel => 'ch',
                    payload => jsonb_build_object('blob', repeat('x', 60000))) IS NOT NULL AS scheduled;
SELECT pg_column_size(payload::text) > 60000 AS big_payload_stored
  FROM schedlock.jobs WHERE job_name = 'big_payload';
SELECT schedlock.unschedule_job('big_payload');

-- run_as: superusers only, and the role must exist and be able to log in
CREATE ROLE regress_job_alice LOGIN;
CREATE ROLE regress_job_bob LOGIN;
CREATE ROLE regress_job_nologin NOLOGIN;
GRANT USAGE ON SCHEMA public TO regress_job_alice, regress_job_bob;

-- nothing until granted: an ordinary role gets 42501 from every job
-- function, with the grant as hint; the claim functions find no run of its
SET ROLE regress_job_alice;
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('alice_job', '0 0 1 1 *', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('alice_job', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.unschedule_job('alice_job')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.run_job('alice_job')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock_claim_run(1)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock_claim_run_payload(1)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock_finish_run(1, true)$$);
SELECT cron_next('@daily', '2030-01-01 00:00+00', 'UTC') IS NOT NULL AS cron_next_is_public;
RESET ROLE;
SELECT count(*) AS alice_jobs FROM schedlock.jobs WHERE owner = 'regress_job_alice'::regrole;
-- what the README tells a DBA to grant: the job functions in one statement
GRANT INSERT ON schedlock.jobs TO regress_job_alice, regress_job_bob;
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('as_other', '@daily', 'SELECT 1', run_as => 'regress_job_nobody')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('as_other', '@daily', 'SELECT 1', run_as => 'regress_job_nologin')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('as_other', '@daily', 'SELECT 1', run_as => 'regress_job_alice')$$);
SELECT job_name, run_as FROM schedlock.jobs WHERE job_name = 'as_other';

-- run_as naming the job's owner means "the owner" and is stored as NULL;
-- anyone may give it.  Any other role: superusers only (42501, with a hint)
SET ROLE regress_job_alice;
SELECT schedlock.schedule_job('alice_runas', '0 0 1 1 *', 'SELECT 1', timezone => 'UTC',
                    run_as => 'regress_job_alice') IS NOT NULL AS scheduled;
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', run_as => 'regress_job_bob')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', run_as => 'regress_job_nobody')$$);
RESET ROLE;
SELECT owner, run_as FROM schedlock.jobs WHERE job_name = 'alice_runas';
-- once a superuser made the job run as another role, only a superuser may
-- change what runs: command, schedule, time zone, channel, payload, atomic
SELECT schedlock.alter_job('alice_runas', run_as => 'regress_job_bob');
SET ROLE regress_job_alice;
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', command => 'SELECT 2')$$);
SELECT state, message FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', schedule => '@daily')$$);
SELECT state, message FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', timezone => 'Europe/Paris')$$);
SELECT state, message FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', atomic => false)$$);
SELECT state, message FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', notify_channel => 'alice_due')$$);
SELECT job_name, schedule, command, timezone, atomic, notify_channel, run_as
  FROM schedlock.jobs WHERE job_name = 'alice_runas';
-- the same values again, and the settings that do not change what runs,
-- stay the owner's
SELECT schedlock.alter_job('alice_runas', command => 'SELECT 1', schedule => '0 0 1 1 *',
                 enabled => false, max_attempts => 2, timeout => '1 minute',
                 retry_delay => '5 seconds', misfire => 'skip');
SELECT command, enabled, max_attempts, timeout, retry_delay, misfire, run_as
  FROM schedlock.jobs WHERE job_name = 'alice_runas';
-- a change that also clears run_as is the owner's own business
SELECT schedlock.alter_job('alice_runas', command => 'SELECT 2', run_as => 'regress_job_alice');
SELECT command, run_as FROM schedlock.jobs WHERE job_name = 'alice_runas';
RESET ROLE;
-- a NOTIFY job: its payload is guarded the same way
SELECT schedlock.alter_job('alice_runas', notify_channel => 'alice_due', payload => '{"n": 1}',
                 run_as => 'regress_job_bob');
SET ROLE regress_job_alice;
SELECT state, message FROM pg_temp.try($$SELECT schedlock.alter_job('alice_runas', payload => '{"n": 2}')$$);
SELECT schedlock.alter_job('alice_runas', payload => '{"n": 1}');
-- schedule_job by the owner replaces the whole definition, run_as included
SELECT schedlock.schedule_job('alice_runas', '0 0 1 1 *', 'SELECT 3') IS NOT NULL AS replaced;
SELECT j.command, j.notify_channel, p.payload, j.run_as
  FROM schedlock.jobs j JOIN schedlock.job_payloads p USING (job_id)
 WHERE j.job_name = 'alice_runas';
SELECT schedlock.unschedule_job('alice_runas');
-- a payload is its owner's to read, through schedlock.job_payloads only
SELECT schedlock.schedule_job('alice_mail', '0 0 1 1 *', notify_channel => 'alice_mail',
                              payload => '{"password": "alice-secret"}') IS NOT NULL AS scheduled;
SELECT job_name, payload FROM schedlock.job_payloads;
SELECT state, message FROM pg_temp.try($$SELECT payload FROM schedlock.jobs$$);
SELECT state, message FROM pg_temp.try($$SELECT * FROM schedlock.jobs$$);
SET ROLE regress_job_bob;
SELECT count(*) AS alices_payloads_seen_by_bob FROM schedlock.job_payloads WHERE job_name = 'alice_mail';
SET ROLE regress_job_alice;
SELECT schedlock.unschedule_job('alice_mail');
RESET ROLE;

-- alter_job: NULL leaves a setting unchanged; the result is checked whole
SELECT schedlock.alter_job('yearly_report', max_attempts => 5, enabled => false);
SELECT schedule, command, max_attempts, misfire, enabled FROM schedlock.jobs WHERE job_id = :job_id;
SELECT schedlock.alter_job('yearly_report', schedule => '0 7 1 1 *', enabled => true);
SELECT schedule, enabled,
       next_run_at = cron_next('0 7 1 1 *', now(), 'Europe/Paris') AS next_run_is_next_slot
  FROM schedlock.jobs WHERE job_id = :job_id;
-- giving notify_channel turns an SQL job into a NOTIFY job, and back
SELECT schedlock.alter_job('as_other', notify_channel => 'as_other_due');
SELECT command, notify_channel, payload FROM schedlock.jobs WHERE job_name = 'as_other';
SELECT schedlock.alter_job('as_other', command => 'SELECT 3');
SELECT command, notify_channel, payload FROM schedlock.jobs WHERE job_name = 'as_other';
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('yearly_report', schedule => '* * *')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('yearly_report', misfire => 'never')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('yearly_report', command => 'SELECT 1', notify_channel => 'ch')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('no_such_job', enabled => false)$$);
SELECT schedule, misfire FROM schedlock.jobs WHERE job_id = :job_id;

-- run_job queues a run now, outside the schedule (seen before commit here)
BEGIN;
SELECT schedlock.run_job('yearly_report') AS run_id \gset
SELECT status, manual, attempt, scheduled_for <= clock_timestamp() AS now_or_before
  FROM schedlock.job_runs WHERE run_id = :run_id;
SELECT manual_pending, next_run_at <= clock_timestamp() AS due_now
  FROM schedlock.jobs WHERE job_id = :job_id;
ROLLBACK;
SELECT * FROM pg_temp.try($$SELECT schedlock.run_job('no_such_job')$$);
SELECT schedlock.alter_job('warmup', enabled => false);
SELECT * FROM pg_temp.try($$SELECT schedlock.run_job('warmup')$$);

-- claim and finish a notified run: exactly one claim, one finish
INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status, deadline)
SELECT job_id, owner, '2030-01-01 00:00+00', 1, 'pending', now() + interval '1 hour'
  FROM schedlock.jobs WHERE job_name = 'mail'
RETURNING run_id AS mail_run \gset
-- the claim that returns the payload (the notification does not carry it)
SELECT * FROM schedlock_claim_run_payload(:mail_run, 'app-1');
SELECT schedlock_claim_run(:mail_run, 'app-2') AS second_claim;
SELECT * FROM schedlock_claim_run_payload(:mail_run, 'app-3');
SELECT status, claimed_by, worker_pid = pg_backend_pid() AS claimer_pid
  FROM schedlock.job_runs WHERE run_id = :mail_run;
SELECT schedlock_finish_run(:mail_run, true, 'sent') AS finished;
SELECT schedlock_finish_run(:mail_run, false) AS finished_again;
SELECT status, message, finished_at IS NOT NULL AS has_finish_time
  FROM schedlock.job_runs WHERE run_id = :mail_run;
SELECT * FROM pg_temp.try($$SELECT schedlock_claim_run(-1)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock_claim_run_payload(-1)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock_claim_run_payload(NULL, 'app-1')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock_finish_run(NULL, true)$$);

-- ordinary roles cannot write the tables directly
SET ROLE regress_job_alice;
SELECT * FROM pg_temp.try($$UPDATE schedlock.jobs SET run_as = 'postgres'$$);
SELECT * FROM pg_temp.try($$INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, status) VALUES (1, 'regress_job_alice', now(), 'queued')$$);

-- each role sees and changes only its own jobs and runs
SELECT schedlock.schedule_job('alice_job', '0 0 1 1 *', 'SELECT 1') IS NOT NULL AS alice_scheduled;
SELECT * FROM pg_temp.try($$SELECT schedlock.schedule_job('alice_job', '@daily', 'SELECT 1', run_as => 'regress_job_bob')$$);
SELECT job_name, owner FROM schedlock.jobs ORDER BY 1;
SELECT job_name FROM schedlock.job_status ORDER BY 1;
SELECT count(*) AS runs_visible FROM schedlock.job_runs;
RESET ROLE;
SET ROLE regress_job_bob;
SELECT job_name, owner FROM schedlock.jobs ORDER BY 1;
SELECT count(*) AS runs_visible FROM schedlock.job_runs;
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('alice_job', enabled => false)$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.run_job('alice_job')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.unschedule_job('alice_job')$$);
SELECT schedlock.unschedule_job('alice_job', if_exists => true) AS bob_unscheduled;
SELECT state, replace(message, :'mail_run', 'N') AS message
  FROM pg_temp.try(format('SELECT schedlock_claim_run(%s)', :mail_run));
SELECT state, replace(message, :'mail_run', 'N') AS message
  FROM pg_temp.try(format('SELECT schedlock_claim_run_payload(%s)', :mail_run));
-- bob may have a job of the same name
SELECT schedlock.schedule_job('alice_job', '0 0 1 1 *', 'SELECT 1') IS NOT NULL AS bob_scheduled;
SELECT job_name, owner FROM schedlock.jobs ORDER BY 1;
RESET ROLE;
SELECT job_name, owner, enabled FROM schedlock.jobs WHERE job_name = 'alice_job' ORDER BY 2;
-- a superuser naming a job two roles have must say whose
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('alice_job', enabled => false)$$);

-- unschedule_job: true once, then an error, or false with if_exists; the
-- job's history stays, with the job's name: the schedlock.run_job() run that had not
-- started is closed as skipped
-- (in one transaction: no job backend sees the queued run)
BEGIN;
SELECT schedlock.run_job('yearly_report') AS run_id \gset
SELECT schedlock.unschedule_job('yearly_report') AS removed;
SELECT job_name, status, finished_at IS NOT NULL AS finished, message
  FROM schedlock.job_runs WHERE run_id = :run_id;
COMMIT;
SELECT * FROM pg_temp.try($$SELECT schedlock.unschedule_job('yearly_report')$$);
SELECT schedlock.unschedule_job('yearly_report', if_exists => true) AS removed_again;
SET ROLE regress_job_alice;
SELECT schedlock.unschedule_job('alice_job') AS alice_removed;
RESET ROLE;
SELECT job_name, owner FROM schedlock.jobs ORDER BY 1, 2;
SELECT count(*) AS mail_runs FROM schedlock.job_runs WHERE run_id = :mail_run;
SELECT schedlock.unschedule_job(job_name) FROM schedlock.jobs WHERE owner = current_user::regrole ORDER BY job_name;
SET ROLE regress_job_bob;
SELECT schedlock.unschedule_job('alice_job') AS bob_removed;
RESET ROLE;
SELECT count(*) AS jobs_left FROM schedlock.jobs;

-- every function that writes jobs or runs refuses a read-only transaction
-- with 25006 before it does anything, naming itself; nothing changes
SELECT schedlock.schedule_job('ro_job', '0 0 1 1 *', 'SELECT 1') > 0 AS scheduled;
SELECT count(*) AS runs_before FROM schedlock.job_runs \gset
BEGIN READ ONLY;
SELECT t.query, r.state, r.message
  FROM (VALUES
    ($q$SELECT schedlock.schedule_job('ro_new', '@daily', 'SELECT 1')$q$),
    ($q$SELECT schedlock.schedule_job('ro_job', '@daily', 'SELECT 2')$q$),
    ($q$SELECT schedlock.schedule_once('ro_new', now() + interval '1 day', 'SELECT 1')$q$),
    ($q$SELECT schedlock.alter_job('ro_job', enabled => false)$q$),
    ($q$SELECT schedlock.run_job('ro_job')$q$),
    ($q$SELECT schedlock.unschedule_job('ro_job')$q$),
    ($q$SELECT schedlock.unschedule_job(0::bigint)$q$),
    ($q$SELECT schedlock.delete_runs('ro_job')$q$),
    ($q$SELECT schedlock.sync_job_roles()$q$),
    ($q$SELECT schedlock_claim_run(0)$q$),
    ($q$SELECT schedlock_claim_run_payload(0)$q$),
    ($q$SELECT schedlock_finish_run(0, true)$q$),
    ($q$SELECT schedlock_adopt_jobs()$q$)) AS t(query),
       pg_temp.try(t.query) AS r;
COMMIT;
SELECT job_name, schedule, command, enabled FROM schedlock.jobs
 WHERE job_name LIKE 'ro\_%' ORDER BY 1;
SELECT count(*) = :runs_before AS no_run_written FROM schedlock.job_runs;
SELECT schedlock.unschedule_job('ro_job');

-- a job's search_path: the scheduling session's, fixed then; alter_job
-- changes it, checked as SET search_path checks it; nothing else changes on
-- a bad value
SET search_path = pg_catalog, public;
SELECT schedlock.schedule_job('path_job', '0 0 1 1 *', 'SELECT 1') > 0 AS scheduled;
RESET search_path;
SELECT search_path FROM schedlock.jobs WHERE job_name = 'path_job';
SELECT schedlock.alter_job('path_job', search_path => 'public, pg_temp');
SELECT search_path FROM schedlock.jobs WHERE job_name = 'path_job';
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('path_job', search_path => '"unterminated')$$);
SELECT * FROM pg_temp.try($$SELECT schedlock.alter_job('path_job', schedule => '0 0 2 1 *', search_path => 'a,,b')$$);
SELECT schedule, search_path FROM schedlock.jobs WHERE job_name = 'path_job';
-- a job that is not due waits for nothing
SELECT waiting_reason FROM schedlock.job_status WHERE job_name = 'path_job';
SELECT schedlock.unschedule_job('path_job');

REVOKE USAGE ON SCHEMA public FROM regress_job_alice, regress_job_bob;
REVOKE INSERT ON schedlock.jobs FROM regress_job_alice, regress_job_bob;
DROP ROLE regress_job_alice, regress_job_bob, regress_job_nologin;
