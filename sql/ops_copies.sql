--
-- ops_copies: the SQL surface of copies and adoption -- schedlock.home,
-- jobs.home_id, the trigger that pauses job rows of another home, the
-- paused_reason column of schedlock.job_status, schedlock_adopt_jobs() and
-- who may call it -- and the grants that let a database owner pg_dump
-- (sequences readable, lock table under row-level security).  The workers
-- are not waited for: every job here lies a day or more ahead.
--

-- errors are shown as rows: SQLSTATE, message, detail, hint
\i sql/include/try.sql

-- one home row, naming this database
SELECT count(*) AS home_rows,
	   bool_and(h.datoid = d.oid) AS names_this_database,
	   bool_and(NOT h.restored_jobs) AS nothing_restored
  FROM schedlock.home h, pg_database d WHERE d.datname = current_database();

-- a job records the home it was scheduled under
SELECT schedlock.schedule_job('ops_local', '0 3 1 1 *', 'SELECT 1') > 0 AS scheduled;
SELECT j.home_id = h.home_id AS local_home
  FROM schedlock.jobs j, schedlock.home h WHERE j.job_name = 'ops_local';

-- nothing to adopt: 0, and nothing is paused
SELECT schedlock_adopt_jobs() AS adopted;
SELECT job_name, paused_reason FROM schedlock.job_status WHERE job_name LIKE 'ops_%';

-- a job row of another home (as pg_restore loads it) is not due, and pauses
-- the jobs of the database
INSERT INTO schedlock.jobs (job_name, owner, schedule, command, timezone,
							next_slot, next_run_at, home_id)
VALUES ('ops_restored', current_user::regrole, '0 4 1 1 *', 'SELECT 1', 'UTC',
		now() - interval '1 hour', now() - interval '1 hour',
		'00000000-0000-0000-0000-000000000001');
SELECT job_name, next_run_at IS NULL AS not_due
  FROM schedlock.jobs WHERE job_name LIKE 'ops_%' ORDER BY 1;
SELECT restored_jobs FROM schedlock.home;
SELECT job_name, paused_reason FROM schedlock.job_status WHERE job_name LIKE 'ops_%' ORDER BY 1;

-- who may adopt: not PUBLIC (EXECUTE goes to pg_database_owner), and a role
-- given EXECUTE without owning the database is still refused
SELECT has_function_privilege('public', 'schedlock_adopt_jobs()', 'EXECUTE') AS public_may,
	   has_function_privilege('pg_database_owner', 'schedlock_adopt_jobs()', 'EXECUTE') AS owner_may;
CREATE ROLE regress_ops_tenant;
SET ROLE regress_ops_tenant;
SELECT * FROM pg_temp.try('SELECT schedlock_adopt_jobs()');
RESET ROLE;
GRANT EXECUTE ON FUNCTION schedlock_adopt_jobs() TO regress_ops_tenant;
SET ROLE regress_ops_tenant;
SELECT * FROM pg_temp.try('SELECT schedlock_adopt_jobs()');
RESET ROLE;
SELECT restored_jobs FROM schedlock.home;

-- the owner (here a superuser) adopts the job of the other home: it goes on
-- from its next slot after now, under this database's home
SELECT schedlock_adopt_jobs() AS adopted;
SELECT j.job_name, j.home_id = h.home_id AS local_home,
	   j.next_run_at > now() AS next_slot_ahead, j.next_run_at = j.next_slot AS from_slot
  FROM schedlock.jobs j, schedlock.home h WHERE j.job_name LIKE 'ops_%' ORDER BY 1;
SELECT restored_jobs FROM schedlock.home;
SELECT job_name, paused_reason FROM schedlock.job_status WHERE job_name LIKE 'ops_%' ORDER BY 1;

-- the home and its functions are not for ordinary roles
SELECT schedlock_acquire('ops-lock', '1 hour') > 0 AS superuser_holds_a_lock;
SET ROLE regress_ops_tenant;
SELECT * FROM pg_temp.try('SELECT * FROM schedlock.home');
SELECT * FROM pg_temp.try('SELECT schedlock.home_id()');
SELECT * FROM pg_temp.try('UPDATE schedlock.jobs SET home_id = home_id');
-- what pg_dump run by another role reads: the sequences; the lock table
-- (fencing tokens) only the database owner may read
SELECT count(*) >= 0 AS reads_sequences
  FROM schedlock.jobs_job_id_seq, schedlock.job_runs_run_id_seq;
SELECT count(*) AS lock_rows_seen FROM schedlock.lock_state;
SELECT * FROM pg_temp.try($$SELECT nextval('schedlock.jobs_job_id_seq')$$);
RESET ROLE;

DELETE FROM schedlock.jobs WHERE job_name = 'ops_restored';
SELECT schedlock.unschedule_job('ops_local');
REVOKE EXECUTE ON FUNCTION schedlock_adopt_jobs() FROM regress_ops_tenant;
DROP ROLE regress_ops_tenant;
