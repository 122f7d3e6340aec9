/* sql/schedlock--1.2.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION schedlock" to load this file. \quit

/*
 * Release 1.2, installed in one script.  A database of an earlier release
 * gets the same objects from the update scripts (schedlock--1.0--1.1.sql,
 * schedlock--1.1--1.2.sql); test/t/006_upgrade.pl checks that the two end
 * up identical.  Columns that later releases added to a table are added
 * here the same way, by ALTER TABLE after the table's first columns, so
 * that both catalogs agree down to the stored defaults of added columns.
 *
 * Tables, views and the job functions live in the schema "schedlock"; the
 * lock functions, the functions of a NOTIFY listener and the cron functions
 * live in the extension's schema (@extschema@, "public" unless CREATE
 * EXTENSION ... SCHEMA says otherwise).  Every statement is schema-qualified.
 */
CREATE SCHEMA IF NOT EXISTS schedlock;
GRANT USAGE ON SCHEMA schedlock TO PUBLIC;

-------------------------------------------------------------------------------
-- Lease locks
-------------------------------------------------------------------------------

/*
 * One row per lock name ever acquired.  Rows are never deleted by schedlock:
 * the token column is the per-name fencing counter, and deleting a row would
 * let a token be handed out again.  Nobody but the extension owner may write
 * the table; the lock functions switch to the owner internally.
 */
CREATE TABLE schedlock.lock_state (
	lock_name text COLLATE "C" NOT NULL PRIMARY KEY
		CHECK (pg_catalog.length(lock_name) BETWEEN 1 AND 255),
	token bigint NOT NULL,
	holder text,
	holder_pid integer,
	holder_session_start timestamptz,
	session_bound boolean NOT NULL DEFAULT false,
	locked_at timestamptz NOT NULL,
	lock_until timestamptz NOT NULL,
	min_until timestamptz NOT NULL,
	released_at timestamptz
) WITH (fillfactor = 50);

COMMENT ON TABLE schedlock.lock_state IS
	'Lease state of every schedlock lock name; written only by the schedlock_* functions';
COMMENT ON COLUMN schedlock.lock_state.min_until IS
	'locked_at + lock_at_least_for: a release never sets lock_until below this';

REVOKE ALL ON schedlock.lock_state FROM PUBLIC;

-- keep tokens monotonic across pg_dump / restore
SELECT pg_catalog.pg_extension_config_dump('schedlock.lock_state', '');

/*
 * The role (current_user) that acquired the current lease.  Only its
 * members and superusers may release, extend or assert the lease, or see
 * its token and holder_pid in schedlock.locks.  NULL for a lease acquired
 * through a release before 1.1, which only a superuser may use until it
 * ends.
 */
ALTER TABLE schedlock.lock_state ADD COLUMN holder_role oid;

COMMENT ON COLUMN schedlock.lock_state.holder_role IS
	'role that acquired the current lease (NULL: acquired before 1.1); only its members and superusers may use the token';

/*
 * pg_dump by a role that is not a superuser (the database owner) reads
 * every configuration table of the extension.  The lock table has row-level
 * security without a policy, so that pg_dump --enable-row-security can read
 * it and no role but its owner sees a row of it (schedlock.locks reads it
 * as its owner).  Only the database owner may read it at all: a role with
 * BYPASSRLS would otherwise read every lease's fencing token.
 */
ALTER TABLE schedlock.lock_state ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON schedlock.lock_state TO pg_database_owner;

CREATE FUNCTION schedlock.session_alive(holder_pid integer, holder_session_start timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_session_alive'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.session_alive(integer, timestamptz) IS
	'internal: whether the session that took a session-bound lock still exists';

CREATE FUNCTION @extschema@.schedlock_acquire(lock_name text,
											  lock_at_most_for interval DEFAULT '10 minutes',
											  lock_at_least_for interval DEFAULT '0',
											  holder text DEFAULT NULL,
											  session_bound boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_acquire'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_acquire(text, interval, interval, text, boolean) IS
	'take the named lease lock without waiting; returns a fencing token, or NULL when someone else holds it';

CREATE FUNCTION @extschema@.schedlock_release(lock_name text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_release'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_release(text, bigint) IS
	'release the lock held with this token (lock_until becomes greatest(now, locked_at + lock_at_least_for)); false for a stale token';

CREATE FUNCTION @extschema@.schedlock_extend(lock_name text, token bigint,
											 lock_at_most_for interval)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_extend'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_extend(text, bigint, interval) IS
	'renew an unexpired lease held with this token to now + lock_at_most_for; false means ownership was lost';

CREATE FUNCTION @extschema@.schedlock_assert(lock_name text, token bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'schedlock_assert'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_assert(text, bigint) IS
	'raise SQLSTATE SL001 unless the token holds an unexpired lease; then keep the lock from being taken over until this transaction ends';

CREATE FUNCTION schedlock.lease_visible(holder_role oid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_lease_visible'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION schedlock.lease_visible(oid) IS
	'internal: whether the current user may see and use the token of a lease acquired by this role';

/*
 * Session-bound leases are kept in shared memory (src/lock/lease_shmem.c),
 * not in schedlock.lock_state, while schedlock.max_session_locks leaves
 * room.  The function lists those of this database; it shows the token and
 * holder_pid only to members of the holding role and superusers (it runs as
 * its caller, so it masks them itself).  Where a name has an entry there,
 * the entry is its current state and the table's row is older: the view
 * shows the entry.
 */
CREATE FUNCTION schedlock.session_leases(
	OUT lock_name text, OUT held boolean, OUT holder text,
	OUT locked_at timestamptz, OUT lock_until timestamptz, OUT token bigint,
	OUT session_bound boolean, OUT holder_pid integer, OUT holder_role oid,
	OUT released_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'schedlock_session_leases'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.session_leases() IS
	'internal: the session-bound leases of this database kept in shared memory (token and holder_pid only for the holding role''s members and superusers)';

GRANT EXECUTE ON FUNCTION schedlock.session_leases() TO PUBLIC;

/*
 * One row per lock name: the shared-memory entry of a session-bound lease
 * where there is one, else the table's row.  token and holder_pid only for
 * the holding role's members and superusers.
 */
CREATE VIEW schedlock.locks AS
WITH m AS MATERIALIZED (SELECT * FROM schedlock.session_leases())
SELECT m.lock_name COLLATE "C" AS lock_name,
	   m.held,
	   m.holder,
	   m.locked_at,
	   m.lock_until,
	   m.token,
	   m.session_bound,
	   m.holder_pid,
	   m.holder_role::pg_catalog.regrole AS holder_role
  FROM m
UNION ALL
SELECT s.lock_name,
	   (s.lock_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
		AND (NOT s.session_bound
			 OR schedlock.session_alive(s.holder_pid, s.holder_session_start))) AS held,
	   s.holder,
	   s.locked_at,
	   s.lock_until,
	   CASE WHEN schedlock.lease_visible(s.holder_role) THEN s.token END AS token,
	   s.session_bound,
	   CASE WHEN schedlock.lease_visible(s.holder_role) THEN s.holder_pid END AS holder_pid,
	   s.holder_role::pg_catalog.regrole AS holder_role
  FROM schedlock.lock_state s
 WHERE NOT EXISTS (SELECT 1 FROM m
					WHERE m.lock_name OPERATOR(pg_catalog.=) s.lock_name);

COMMENT ON VIEW schedlock.locks IS
	'one row per lock name; held is true while an acquire would be refused';

GRANT SELECT ON schedlock.locks TO PUBLIC;

-------------------------------------------------------------------------------
-- Cron engine
-------------------------------------------------------------------------------

/*
 * Both functions read schedlock.timezone when timezone is NULL, hence
 * STABLE.  They are CALLED ON NULL INPUT so that a NULL schedule, after or
 * count raises an error instead of quietly returning NULL.
 */
CREATE FUNCTION @extschema@.cron_next(schedule text,
									  after timestamptz DEFAULT pg_catalog.now(),
									  timezone text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'schedlock_cron_next'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.cron_next(text, timestamptz, text) IS
	'first time strictly after "after" at which the cron schedule fires in the time zone (NULL: schedlock.timezone); NULL for @reboot';

CREATE FUNCTION @extschema@.cron_next_runs(schedule text,
										   count integer,
										   after timestamptz DEFAULT pg_catalog.now(),
										   timezone text DEFAULT NULL)
RETURNS SETOF timestamptz
AS 'MODULE_PATHNAME', 'schedlock_cron_next_runs'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE ROWS 10;

COMMENT ON FUNCTION @extschema@.cron_next_runs(text, integer, timestamptz, text) IS
	'the next count (0 to 100000) times strictly after "after" at which the cron schedule fires, in order';

-------------------------------------------------------------------------------
-- Job scheduler: tables
-------------------------------------------------------------------------------

/*
 * Jobs and their runs.  Both tables are written only by the schedlock
 * functions and workers (which switch to the extension's owner); every role
 * may read them, and row-level security shows each role only the rows of
 * the jobs it owns (superusers and the table owner see all).
 */
CREATE SEQUENCE schedlock.jobs_job_id_seq;
CREATE SEQUENCE schedlock.job_runs_run_id_seq;

/*
 * The statuses a run may have, the rule of job_runs_status_check: a C
 * function rather than a list in the constraint, because PostgreSQL reads
 * a CHECK constraint back from its text and prepares it again for every
 * statement that writes the table, and every run writes job_runs.  Pure:
 * anyone may call it (a CHECK constraint's function needs EXECUTE by the
 * role that writes the row).
 */
CREATE FUNCTION schedlock.job_run_status_valid(status text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_job_run_status_valid'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION schedlock.job_run_status_valid(text) IS
	'internal: whether a text is a run status (queued, pending, running, succeeded, failed, timed_out, lost, skipped)';

CREATE TABLE schedlock.jobs (
	job_id bigint NOT NULL PRIMARY KEY
		DEFAULT pg_catalog.nextval('schedlock.jobs_job_id_seq'),
	job_name text NOT NULL,
	owner pg_catalog.regrole NOT NULL,
	schedule text NOT NULL,
	command text,
	notify_channel text,
	payload jsonb,
	timezone text,
	timeout interval,
	max_attempts integer NOT NULL DEFAULT 1,
	retry_delay interval NOT NULL DEFAULT '1 minute',
	misfire text NOT NULL DEFAULT 'run_once',
	atomic boolean NOT NULL DEFAULT true,
	enabled boolean NOT NULL DEFAULT true,
	run_as pg_catalog.regrole,
	reboot boolean NOT NULL DEFAULT false,
	next_slot timestamptz,
	retry_slot timestamptz,
	retry_attempt integer,
	retry_at timestamptz,
	manual_pending integer NOT NULL DEFAULT 0,
	next_run_at timestamptz,
	consecutive_failures integer NOT NULL DEFAULT 0,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	UNIQUE (owner, job_name)
);

COMMENT ON TABLE schedlock.jobs IS
	'scheduled jobs; written only by schedule_job, alter_job, unschedule_job, run_job and the workers';
COMMENT ON COLUMN schedlock.jobs.next_slot IS
	'next regular slot of the schedule (NULL for @reboot jobs between starts)';

CREATE TABLE schedlock.job_runs (
	run_id bigint NOT NULL PRIMARY KEY
		DEFAULT pg_catalog.nextval('schedlock.job_runs_run_id_seq'),
	job_id bigint NOT NULL,
	owner pg_catalog.regrole NOT NULL,
	scheduled_for timestamptz NOT NULL,
	attempt integer NOT NULL DEFAULT 1,
	manual boolean NOT NULL DEFAULT false,
	status text NOT NULL
		CHECK (schedlock.job_run_status_valid(status)),
	started_at timestamptz,
	finished_at timestamptz,
	deadline timestamptz,
	worker_pid integer,
	timeline integer,
	claimed_by text,
	claimed_at timestamptz,
	sqlstate text,
	message text,
	-- a slot's attempt is taken, and so can commit, at most once
	UNIQUE (job_id, scheduled_for, attempt)
);

COMMENT ON TABLE schedlock.job_runs IS
	'one row per run, skipped slot or queued run_job() call; pruned after schedlock.history_retention';

-- a job's open runs (queued, overlap).  The NOTIFY deadline index below is
-- partial on "deadline IS NOT NULL" rather than on the status, so that it
-- never looks like the better way to a job's open runs when the statistics
-- of job_runs are stale
CREATE INDEX job_runs_open_idx ON schedlock.job_runs (job_id)
	WHERE status IN ('queued', 'pending', 'running');
-- a deadline is set while a NOTIFY run is pending or claimed, else NULL
CREATE INDEX job_runs_deadline_idx ON schedlock.job_runs (deadline)
	WHERE deadline IS NOT NULL;
-- history pruning; runs still open are not in it
CREATE INDEX job_runs_finished_idx ON schedlock.job_runs (finished_at)
	WHERE finished_at IS NOT NULL;

REVOKE ALL ON schedlock.jobs, schedlock.job_runs FROM PUBLIC;
REVOKE ALL ON SEQUENCE schedlock.jobs_job_id_seq, schedlock.job_runs_run_id_seq FROM PUBLIC;
GRANT SELECT ON schedlock.jobs, schedlock.job_runs TO PUBLIC;

ALTER TABLE schedlock.jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE schedlock.job_runs ENABLE ROW LEVEL SECURITY;

CREATE POLICY jobs_owner ON schedlock.jobs FOR SELECT
	USING (owner OPERATOR(pg_catalog.=)
		   (SELECT r.oid FROM pg_catalog.pg_roles r
			 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER));
CREATE POLICY job_runs_owner ON schedlock.job_runs FOR SELECT
	USING (owner OPERATOR(pg_catalog.=)
		   (SELECT r.oid FROM pg_catalog.pg_roles r
			 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER));

SELECT pg_catalog.pg_extension_config_dump('schedlock.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('schedlock.job_runs', '');
SELECT pg_catalog.pg_extension_config_dump('schedlock.jobs_job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('schedlock.job_runs_run_id_seq', '');
GRANT SELECT ON SEQUENCE schedlock.jobs_job_id_seq, schedlock.job_runs_run_id_seq TO PUBLIC;

/*
 * Where the jobs of this database belong (src/sched/copies.c).  schedlock.home has
 * one row: a random home_id made here by CREATE EXTENSION (or by
 * schedlock_adopt_jobs) and the OID of the database it was made in.  It is
 * not a configuration table, so pg_dump never dumps it: a restored database
 * gets a home of its own from its CREATE EXTENSION.  CREATE DATABASE ...
 * TEMPLATE copies it with the OID of the old database; pg_upgrade (which
 * keeps database OIDs and copies the table's files) and physical replication
 * keep it as it is.  Every job records the home_id it was scheduled under;
 * that column travels with the job in a dump.  The workers run the jobs of
 * a database only while its home names it and no job of another home has
 * arrived (restored_jobs, raised by the trigger below).
 */
CREATE TABLE schedlock.home (
	one boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (one),
	home_id uuid NOT NULL,
	datoid oid NOT NULL,
	restored_jobs boolean NOT NULL DEFAULT false,
	since timestamptz NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE schedlock.home IS
	'where the jobs of this database belong: its home id and database OID; never dumped';
COMMENT ON COLUMN schedlock.home.restored_jobs IS
	'jobs of another home (a restored dump) arrived: the jobs are paused until schedlock_adopt_jobs()';

REVOKE ALL ON schedlock.home FROM PUBLIC;

INSERT INTO schedlock.home (home_id, datoid)
SELECT pg_catalog.gen_random_uuid(), d.oid
  FROM pg_catalog.pg_database d
 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database();

CREATE FUNCTION schedlock.home_id()
RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT h.home_id FROM schedlock.home h $$;

COMMENT ON FUNCTION schedlock.home_id() IS
	'internal: the home id of this database (default of schedlock.jobs.home_id)';

REVOKE ALL ON FUNCTION schedlock.home_id() FROM PUBLIC;

-- the column is added without a default and then given one: a default that
-- is not volatile would be kept in the catalog as the column's missing
-- value, which an installation updated from a release without the column
-- cannot have
ALTER TABLE schedlock.jobs ADD COLUMN home_id uuid;
ALTER TABLE schedlock.jobs
	ALTER COLUMN home_id SET DEFAULT schedlock.home_id(),
	ALTER COLUMN home_id SET NOT NULL;

COMMENT ON COLUMN schedlock.jobs.home_id IS
	'home (schedlock.home) of the database the job was scheduled in; dumped with the job';

/*
 * An error in a worker's bookkeeping of a job (not in the job's command) is
 * logged and the worker goes on (src/sched/quarantine.c).  dispatch_errors counts
 * such errors of the job in a row, the last at dispatch_error_at; a run of
 * the job recorded after that starts the count again.  At 3 the job is
 * disabled and quarantine_reason says why; alter_job(..., enabled => true)
 * or schedule_job clears all three.
 */
ALTER TABLE schedlock.jobs
	ADD COLUMN dispatch_errors integer NOT NULL DEFAULT 0,
	ADD COLUMN dispatch_error_at timestamptz,
	ADD COLUMN quarantine_reason text;

COMMENT ON COLUMN schedlock.jobs.dispatch_errors IS
	'errors in a row of the workers'' own bookkeeping of the job; at 3 the job is quarantined';
COMMENT ON COLUMN schedlock.jobs.dispatch_error_at IS
	'when the last of those errors happened; a run recorded later starts the count again';
COMMENT ON COLUMN schedlock.jobs.quarantine_reason IS
	'why the workers disabled the job (quarantine), or NULL; alter_job(..., enabled => true) clears it';

/*
 * Every run that ends (succeeded, failed, timed_out, lost; a skipped slot is
 * no run) counts once on its job's row, in the statement that ends it
 * (SCHEDLOCK_RUN_STATS_CTE in src/sched/store/jobstore.h).  schedule_job and
 * schedule_once replacing a definition keep the counts; a new job starts at
 * 0.
 */
ALTER TABLE schedlock.jobs
	ADD COLUMN total_runs bigint NOT NULL DEFAULT 0,
	ADD COLUMN succeeded_runs bigint NOT NULL DEFAULT 0,
	ADD COLUMN failed_runs bigint NOT NULL DEFAULT 0,
	ADD COLUMN total_duration interval NOT NULL DEFAULT '0',
	ADD COLUMN last_duration interval,
	ADD COLUMN last_success_at timestamptz,
	ADD COLUMN last_start_lag interval;

COMMENT ON COLUMN schedlock.jobs.total_runs IS
	'runs of the job that ended (succeeded, failed, timed_out or lost; skipped slots are not runs)';
COMMENT ON COLUMN schedlock.jobs.succeeded_runs IS
	'runs of the job that ended succeeded';
COMMENT ON COLUMN schedlock.jobs.failed_runs IS
	'runs of the job that ended failed, timed_out or lost';
COMMENT ON COLUMN schedlock.jobs.total_duration IS
	'sum of finished_at - started_at of the runs counted in total_runs';
COMMENT ON COLUMN schedlock.jobs.last_duration IS
	'finished_at - started_at of the run that ended last';
COMMENT ON COLUMN schedlock.jobs.last_success_at IS
	'finished_at of the last run that succeeded';
COMMENT ON COLUMN schedlock.jobs.last_start_lag IS
	'started_at - scheduled_for of the run that ended last (for a NOTIFY job: until an application claimed it)';

COMMENT ON COLUMN schedlock.jobs.next_run_at IS
	'when a worker next has something to do for the job: least(next_slot, retry_at, now if run_job is pending); NULL while the job is disabled';

/*
 * A job's search_path is its own: the scheduling session's, fixed when the
 * job is scheduled (as CREATE FUNCTION ... SET search_path FROM CURRENT
 * does), changed by alter_job(..., search_path => ...).  A database's or a
 * role's settings cannot change what an unqualified name in another role's
 * job means.  Jobs scheduled before 1.2 get PostgreSQL's default.
 */
ALTER TABLE schedlock.jobs ADD COLUMN search_path text;

COMMENT ON COLUMN schedlock.jobs.search_path IS
	'search_path the job runs with: the scheduling session''s, or alter_job''s search_path';

/*
 * Which ended runs of the job schedlock.job_runs keeps: 'all', 'failures'
 * (failed, timed-out and lost runs; a succeeded run is counted in the
 * job's statistics and its row deleted, a skipped slot not recorded), or
 * NULL for the setting schedlock.record_runs.
 */
ALTER TABLE schedlock.jobs ADD COLUMN record_runs text;

COMMENT ON COLUMN schedlock.jobs.record_runs IS
	'which ended runs job_runs keeps: all, failures, or NULL for schedlock.record_runs';

-- what each run said, written by the UPDATE that records its outcome
ALTER TABLE schedlock.job_runs
	ADD COLUMN detail text,
	ADD COLUMN hint text,
	ADD COLUMN duration interval,
	ADD COLUMN result_status text,
	ADD COLUMN notices text;

COMMENT ON COLUMN schedlock.job_runs.detail IS
	'DETAIL of the error of a failed run';
COMMENT ON COLUMN schedlock.job_runs.hint IS
	'HINT of the error of a failed run';
COMMENT ON COLUMN schedlock.job_runs.duration IS
	'finished_at - started_at, once a run that started has ended';
COMMENT ON COLUMN schedlock.job_runs.result_status IS
	'command tag of the last statement of a succeeded SQL run, as psql prints it (INSERT 0 5)';
COMMENT ON COLUMN schedlock.job_runs.notices IS
	'NOTICE, INFO and WARNING output of a SQL run, at most schedlock.max_notice_bytes and a marker when cut';

/*
 * A job's history outlives the job: unschedule_job keeps its runs (pruned
 * by schedlock.history_retention like every run), so job_runs does not
 * reference jobs and carries the job's name.
 */
ALTER TABLE schedlock.job_runs ADD COLUMN job_name text;

COMMENT ON COLUMN schedlock.job_runs.job_name IS
	'name of the run''s job when the run was recorded; kept when the job is unscheduled';

-- the claim and the next due time of one role's jobs (src/sched/claim_sql.h).
-- job_id orders jobs due at the same instant, so that a backend can resume
-- its scan after the job it claimed last instead of stepping again over the
-- index entries its earlier claims left behind
CREATE INDEX jobs_role_due_idx ON schedlock.jobs
	((COALESCE(run_as, owner)::pg_catalog.oid), next_run_at, job_id)
	WHERE enabled;

/*
 * Each job's last finished run, for schedlock.job_status: the first entry
 * of the job in this index.  The view orders a job's runs by their negated
 * run_id, an order only this index gives: ordered by run_id, the planner
 * may walk job_runs_pkey backwards over every role's history until it
 * meets one of the job's runs, which its statistics cannot tell from a
 * short walk and which reads the whole history for a job that never ran.
 * The predicate is the view's, word for word, so that the planner can
 * prove the index covers it.
 */
CREATE INDEX job_runs_last_idx ON schedlock.job_runs
	(job_id, (OPERATOR(pg_catalog.-) run_id))
	WHERE status NOT IN ('queued', 'pending', 'running');

/*
 * A job's owner deletes the runs of its jobs that have ended (to keep less
 * than schedlock.history_retention, say) with delete_runs, and nothing
 * else: not another role's runs, and not a run that is queued, pending or
 * running, which the scheduler still needs.  No role but the extension
 * owner writes or locks the table directly (src/base/table_guard.c), so
 * no privilege to delete rows is granted.
 */
CREATE FUNCTION schedlock.delete_runs(job_name text DEFAULT NULL,
									  older_than interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_delete_runs'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.delete_runs(text, interval) IS
	'delete the caller''s ended runs (of one job; older than older_than); returns how many';

GRANT EXECUTE ON FUNCTION schedlock.delete_runs(text, interval) TO PUBLIC;

-------------------------------------------------------------------------------
-- Job scheduler: triggers on the jobs table
-------------------------------------------------------------------------------

/*
 * A job's roles are recorded in pg_shdepend (see src/sched/job_roles.c), so that DROP
 * ROLE refuses a role that owns jobs, or that jobs run as, from whichever
 * database it runs in.  The trigger keeps the records in step with every
 * change of schedlock.jobs (ENABLE ALWAYS: also when session_replication_role
 * is replica); schedlock.sync_job_roles() rebuilds them from the table at every
 * start of dispatch.
 */
CREATE FUNCTION schedlock.job_roles_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'schedlock_job_roles_trigger'
LANGUAGE C;

COMMENT ON FUNCTION schedlock.job_roles_trigger() IS
	'internal: keeps the records of the jobs'' roles in pg_shdepend in step with schedlock.jobs';

REVOKE ALL ON FUNCTION schedlock.job_roles_trigger() FROM PUBLIC;

CREATE TRIGGER job_roles
	AFTER INSERT OR UPDATE OF owner, run_as ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.job_roles_trigger();
-- deletions are handled per statement, grouped by role
CREATE TRIGGER job_roles_delete
	AFTER DELETE ON schedlock.jobs REFERENCING OLD TABLE AS old_jobs
	FOR EACH STATEMENT EXECUTE FUNCTION schedlock.job_roles_trigger();
CREATE TRIGGER job_roles_truncate
	AFTER TRUNCATE ON schedlock.jobs
	FOR EACH STATEMENT EXECUTE FUNCTION schedlock.job_roles_trigger();
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER job_roles;
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER job_roles_delete;
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER job_roles_truncate;

CREATE FUNCTION schedlock.sync_job_roles()
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_sync_job_roles_sql'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.sync_job_roles() IS
	'rebuild the records of this database''s jobs on their roles in pg_shdepend; returns how many records changed';

REVOKE ALL ON FUNCTION schedlock.sync_job_roles() FROM PUBLIC;

-- a job row of another home (pg_restore, COPY) is never due, and pauses
-- the jobs of the database; ALWAYS: also under session_replication_role
-- replica
CREATE FUNCTION schedlock.jobs_check_home()
RETURNS trigger
AS 'MODULE_PATHNAME', 'schedlock_jobs_check_home'
LANGUAGE C;

COMMENT ON FUNCTION schedlock.jobs_check_home() IS
	'internal: trigger that pauses jobs arriving from another database';

REVOKE ALL ON FUNCTION schedlock.jobs_check_home() FROM PUBLIC;

CREATE TRIGGER jobs_check_home BEFORE INSERT ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.jobs_check_home();
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER jobs_check_home;

/*
 * The rules of a job row (a name of 1 to 255 characters, max_attempts at
 * least 1, a known misfire policy and record_runs, exactly one of command
 * and notify_channel), checked by a trigger when a statement writes one of
 * those columns, rather than by CHECK constraints, which PostgreSQL checks
 * at every update of a row: the scheduler updates a job's row at every run
 * without writing any of them.  ALWAYS: also under session_replication_role
 * replica, as constraints would be.
 */
CREATE FUNCTION schedlock.jobs_check_values()
RETURNS trigger
AS 'MODULE_PATHNAME', 'schedlock_jobs_check_values'
LANGUAGE C;

COMMENT ON FUNCTION schedlock.jobs_check_values() IS
	'internal: trigger that checks the rules of a job row';

REVOKE ALL ON FUNCTION schedlock.jobs_check_values() FROM PUBLIC;

CREATE TRIGGER jobs_check_values
	BEFORE INSERT OR UPDATE OF job_name, max_attempts, misfire, record_runs,
		command, notify_channel
	ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.jobs_check_values();
ALTER TABLE schedlock.jobs ENABLE ALWAYS TRIGGER jobs_check_values;

/*
 * The job API in one grant: GRANT INSERT ON schedlock.jobs TO role.  The
 * job functions become executable by PUBLIC and check the grant themselves
 * (42501 with the statement that grants it as hint); the claim and finish
 * functions act only on the runs of jobs the caller's role owns.  Row-level
 * security has no INSERT policy on schedlock.jobs, so the grant writes no
 * row directly, and schedlock.jobs_api_only refuses a direct INSERT by a
 * role that bypasses row-level security: the rows are written by the job
 * functions, as the extension owner.
 */
CREATE FUNCTION schedlock.jobs_api_only()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT pg_catalog.pg_has_role(CURRENT_USER,
			(SELECT c.relowner FROM pg_catalog.pg_class c
			  WHERE c.oid OPERATOR(pg_catalog.=) TG_RELID), 'USAGE') THEN
		RAISE EXCEPTION 'schedlock.jobs is written by the job functions only'
			USING ERRCODE = '42501',
				  HINT = 'Use schedlock.schedule_job() or schedlock.schedule_once().';
	END IF;
	RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION schedlock.jobs_api_only() FROM PUBLIC;

-- named to fire first (triggers fire in the order of their names): before
-- jobs_check_home, which a role that may not read schedlock.home fails less
-- clearly
CREATE TRIGGER jobs_api_only BEFORE INSERT ON schedlock.jobs
	FOR EACH ROW EXECUTE FUNCTION schedlock.jobs_api_only();

-------------------------------------------------------------------------------
-- Job scheduler: status
-------------------------------------------------------------------------------

CREATE FUNCTION schedlock.paused_reason()
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE
		 WHEN h.datoid OPERATOR(pg_catalog.<>) d.oid
		 THEN 'copy of the database with OID ' OPERATOR(pg_catalog.||) h.datoid::pg_catalog.text
			  OPERATOR(pg_catalog.||) ' (CREATE DATABASE ... TEMPLATE): call schedlock_adopt_jobs() to run the jobs here'
		 WHEN h.restored_jobs
		 THEN 'jobs restored from another database: call schedlock_adopt_jobs() to run the jobs here'
	   END
  FROM schedlock.home h, pg_catalog.pg_database d
 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
$$;

COMMENT ON FUNCTION schedlock.paused_reason() IS
	'internal: why the jobs of this database do not run here, or NULL';

REVOKE ALL ON FUNCTION schedlock.paused_reason() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION schedlock.paused_reason() TO PUBLIC;

CREATE FUNCTION schedlock.job_worker_pid(job_id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'schedlock_job_worker_pid'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.job_worker_pid(bigint) IS
	'internal: pid of the worker of this database running the job now, or NULL';

CREATE FUNCTION schedlock.job_wait_reason(role pg_catalog.regrole)
RETURNS text
AS 'MODULE_PATHNAME', 'schedlock_job_wait_reason'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.job_wait_reason(pg_catalog.regrole) IS
	'internal: why the due jobs of the role wait for a job backend, or NULL';

/*
 * job_status: the last finished run through job_runs_last_idx; and
 * late_by, now() - next_run_at for a job due now (NULL for one that is
 * not), so that "WHERE late_by > interval '1 minute'" finds a job that is
 * stuck, starved of job backends, or waiting for a row lock.
 */
CREATE VIEW schedlock.job_status WITH (security_invoker = true) AS
SELECT j.job_id,
	   j.job_name,
	   j.owner,
	   j.schedule,
	   COALESCE(j.timezone,
						   pg_catalog.current_setting('schedlock.timezone')) AS timezone,
	   j.enabled,
	   j.next_run_at,
	   l.status AS last_status,
	   l.scheduled_for AS last_scheduled_for,
	   l.finished_at AS last_finished_at,
	   l.sqlstate AS last_sqlstate,
	   l.message AS last_message,
	   j.consecutive_failures,
	   COALESCE(r.worker_pid, schedlock.job_worker_pid(j.job_id)) AS running_pid,
	   COALESCE((SELECT schedlock.paused_reason()), j.quarantine_reason) AS paused_reason,
	   j.total_runs,
	   j.succeeded_runs,
	   j.failed_runs,
	   j.last_duration,
	   j.total_duration OPERATOR(pg_catalog./)
		 NULLIF(j.total_runs, 0)::pg_catalog.float8 AS average_duration,
	   j.last_success_at,
	   j.last_start_lag,
	   CASE
		 WHEN pg_catalog.current_setting('schedlock.enabled', true) OPERATOR(pg_catalog.=) 'off'
		 THEN 'schedlock.enabled is off: the workers run no job'
		 ELSE COALESCE((SELECT schedlock.paused_reason()), j.quarantine_reason,
			  CASE
				WHEN NOT j.enabled
				THEN 'disabled: schedlock.alter_job(..., enabled => true) enables the job'
				WHEN j.schedule OPERATOR(pg_catalog.=) '@once' AND j.next_run_at IS NULL
				  AND NOT EXISTS (SELECT 1 FROM schedlock.job_runs x
								   WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
									 AND x.status IN ('queued', 'pending', 'running'))
				THEN 'ended: the one-off job has run; schedlock.alter_job(..., next_run_at => ...) runs it again'
				WHEN j.notify_channel IS NOT NULL
				  AND j.consecutive_failures OPERATOR(pg_catalog.>=) 3
				  AND (SELECT x.message FROM schedlock.job_runs x
						WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						  AND x.status NOT IN ('queued', 'pending', 'running', 'skipped')
						ORDER BY OPERATOR(pg_catalog.-) x.run_id
						LIMIT 1) OPERATOR(pg_catalog.=) 'not claimed within the timeout'
				THEN pg_catalog.format('unheard: no application claimed the last %s runs on channel "%s"; a listener LISTENs, catches up with schedlock_pending_runs() and claims them',
									   j.consecutive_failures, j.notify_channel)
			  END)
	   END AS stopped_reason,
	   CASE WHEN j.next_run_at OPERATOR(pg_catalog.<=) pg_catalog.now()
			THEN schedlock.job_wait_reason(COALESCE(j.run_as, j.owner))
	   END AS waiting_reason,
	   CASE WHEN j.next_run_at OPERATOR(pg_catalog.<=) pg_catalog.now()
			THEN pg_catalog.now() OPERATOR(pg_catalog.-) j.next_run_at
	   END AS late_by
  FROM schedlock.jobs j
  LEFT JOIN LATERAL (SELECT x.status, x.scheduled_for, x.finished_at, x.sqlstate, x.message
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status NOT IN ('queued', 'pending', 'running')
					  ORDER BY OPERATOR(pg_catalog.-) x.run_id
					  LIMIT 1) l ON true
  LEFT JOIN LATERAL (SELECT x.worker_pid
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status OPERATOR(pg_catalog.=) 'running'
					  ORDER BY x.run_id DESC
					  LIMIT 1) r ON true;

COMMENT ON VIEW schedlock.job_status IS
	'per job: schedule, time zone, next run, last finished run and its error, consecutive failures, pid running it now, why it is paused (a copy) or quarantined, run statistics, why it will not run, why a due job waits for a job backend, and how late a due job is';

GRANT SELECT ON schedlock.job_status TO PUBLIC;

/*
 * job_summary: one line per job that fits a terminal, for people; the wide
 * job_status and jobs stay for tools.  last_status is "running" while a run
 * is; command is shortened to 40 characters, blanks folded.
 */
CREATE VIEW schedlock.job_summary WITH (security_invoker = true) AS
SELECT s.job_name,
	   s.schedule,
	   s.next_run_at::pg_catalog.timestamptz(0) AS next_run,
	   CASE WHEN s.running_pid IS NOT NULL THEN 'running'
			ELSE s.last_status
	   END AS last_status,
	   s.last_finished_at::pg_catalog.timestamptz(0) AS last_run,
	   CASE WHEN j.command IS NULL
			THEN 'NOTIFY ' OPERATOR(pg_catalog.||) j.notify_channel
			WHEN pg_catalog.length(c.flat) OPERATOR(pg_catalog.>) 40
			THEN pg_catalog.left(c.flat, 37) OPERATOR(pg_catalog.||) '...'
			ELSE c.flat
	   END AS command
  FROM schedlock.job_status s
  JOIN schedlock.jobs j ON j.job_id OPERATOR(pg_catalog.=) s.job_id
  CROSS JOIN LATERAL
	   (SELECT pg_catalog.btrim(pg_catalog.regexp_replace(j.command, '\s+', ' ', 'g')) AS flat) c
 ORDER BY s.job_name, s.job_id;

COMMENT ON VIEW schedlock.job_summary IS
	'one short line per job for psql: name, schedule, next run, last status, when the last run ended, command shortened';

GRANT SELECT ON schedlock.job_summary TO PUBLIC;

/*
 * The housekeeper deletes the runs that finished more than
 * schedlock.history_retention ago.  This says how far behind it is, in the
 * rows the caller may see (row-level security: a superuser sees every
 * role's runs, another role its own): the retention (NULL when 0, which
 * keeps every run), the oldest finished run, by how much it is older than
 * the retention (0 when nothing is), and how many finished runs are (an
 * exact count, read from the index on finished_at).
 */
CREATE FUNCTION schedlock.history_backlog(OUT retention interval,
										  OUT oldest_finished_at timestamptz,
										  OUT behind interval,
										  OUT expired_runs bigint)
RETURNS record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH s AS (
		SELECT NULLIF(pg_catalog.make_interval(mins => setting::pg_catalog.int4),
					  '0'::pg_catalog.interval) AS retention
		  FROM pg_catalog.pg_settings
		 WHERE name OPERATOR(pg_catalog.=) 'schedlock.history_retention'),
	o AS (
		SELECT pg_catalog.min(finished_at) AS oldest
		  FROM schedlock.job_runs
		 WHERE finished_at IS NOT NULL)
	SELECT s.retention,
		   o.oldest,
		   CASE WHEN s.retention IS NULL OR o.oldest IS NULL THEN '0'::pg_catalog.interval
				ELSE GREATEST((pg_catalog.now() OPERATOR(pg_catalog.-) s.retention)
								OPERATOR(pg_catalog.-) o.oldest,
							  '0'::pg_catalog.interval)
		   END,
		   CASE WHEN s.retention IS NULL THEN 0
				ELSE (SELECT pg_catalog.count(*) FROM schedlock.job_runs r
					   WHERE r.finished_at OPERATOR(pg_catalog.<)
							 (pg_catalog.now() OPERATOR(pg_catalog.-) s.retention))
		   END
	  FROM s, o
$$;

COMMENT ON FUNCTION schedlock.history_backlog() IS
	'run history past schedlock.history_retention not yet pruned, in the rows the caller may see: the retention, the oldest finished run, how far it is past the retention, and how many runs are';

REVOKE ALL ON FUNCTION schedlock.history_backlog() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION schedlock.history_backlog() TO PUBLIC;

/*
 * The scheduler of every database the launcher serves, from any database,
 * read from shared memory (src/sched/cluster_status.c says what is exact and
 * what is as of the last publication).  Superusers and members of
 * pg_monitor only: the function refuses others with 42501.
 */
CREATE FUNCTION schedlock.cluster_status(OUT datname name,
										 OUT has_extension boolean,
										 OUT paused boolean,
										 OUT jobs integer,
										 OUT enabled_jobs integer,
										 OUT failing_jobs integer,
										 OUT quarantined_jobs integer,
										 OUT jobs_counted_at timestamptz,
										 OUT runs_in_progress integer,
										 OUT queues integer,
										 OUT late_queues integer,
										 OUT late_since timestamptz,
										 OUT waiting_queues integer,
										 OUT job_backends integer,
										 OUT housekeepers integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'schedlock_cluster_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.cluster_status() IS
	'per database of the cluster: its jobs (as last counted), runs in progress, late and waiting queues, job backends and housekeepers; superusers and pg_monitor';

REVOKE ALL ON FUNCTION schedlock.cluster_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION schedlock.cluster_status() TO PUBLIC;

CREATE FUNCTION @extschema@.schedlock_adopt_jobs()
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_adopt_jobs'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_adopt_jobs() IS
	'run the jobs of a copied or restored database here: each job goes on from its next slot after now; returns how many jobs were adopted';

-- the database owner (and superusers), nobody else
REVOKE ALL ON FUNCTION @extschema@.schedlock_adopt_jobs() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.schedlock_adopt_jobs() TO pg_database_owner;

-------------------------------------------------------------------------------
-- Job scheduler: the job functions
-------------------------------------------------------------------------------

/*
 * The job functions are executable by PUBLIC and check the one grant of the
 * job API themselves (INSERT on schedlock.jobs, see jobs_api_only above).
 */
CREATE FUNCTION schedlock.schedule_job(job_name text,
									   schedule text,
									   command text DEFAULT NULL,
									   notify_channel text DEFAULT NULL,
									   payload jsonb DEFAULT NULL,
									   timezone text DEFAULT NULL,
									   timeout interval DEFAULT NULL,
									   max_attempts integer DEFAULT 1,
									   retry_delay interval DEFAULT '1 minute',
									   misfire text DEFAULT 'run_once',
									   atomic boolean DEFAULT true,
									   enabled boolean DEFAULT true,
									   run_as name DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_schedule_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.schedule_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name) IS
	'create the caller''s job of this name, or replace its definition; returns the job id';

/*
 * A one-off job runs once, at an instant (src/sched/job_api.c): it is stored with the
 * schedule '@once' and its instant as next_slot, and ends after its run (and
 * retries), staying with its history.  schedule_once creates it, or
 * replaces the definition of the caller's job of that name, like
 * schedule_job.
 */
CREATE FUNCTION schedlock.schedule_once(job_name text,
										run_at timestamptz,
										command text DEFAULT NULL,
										notify_channel text DEFAULT NULL,
										payload jsonb DEFAULT NULL,
										timeout interval DEFAULT NULL,
										max_attempts integer DEFAULT 1,
										retry_delay interval DEFAULT '1 minute',
										atomic boolean DEFAULT true,
										enabled boolean DEFAULT true,
										run_as name DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_schedule_once'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.schedule_once(text, timestamptz, text, text, jsonb, interval, integer, interval, boolean, boolean, name) IS
	'create the caller''s one-off job of this name, run once at run_at (now if it has passed), or replace its definition; returns the job id';

CREATE FUNCTION schedlock.alter_job(job_name text,
									schedule text DEFAULT NULL,
									command text DEFAULT NULL,
									notify_channel text DEFAULT NULL,
									payload jsonb DEFAULT NULL,
									timezone text DEFAULT NULL,
									timeout interval DEFAULT NULL,
									max_attempts integer DEFAULT NULL,
									retry_delay interval DEFAULT NULL,
									misfire text DEFAULT NULL,
									atomic boolean DEFAULT NULL,
									enabled boolean DEFAULT NULL,
									run_as name DEFAULT NULL,
									next_run_at timestamptz DEFAULT NULL,
									search_path text DEFAULT NULL,
									record_runs text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'schedlock_alter_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name, timestamptz, text, text) IS
	'change some settings of the caller''s job; NULL leaves a setting unchanged; next_run_at moves the next run; search_path is the one the job runs with; record_runs says which of its runs are kept (all, failures, default)';

/*
 * unschedule_job: an unknown name is an error (42704), as for alter_job and
 * pg_cron's cron.unschedule, unless if_exists => true, which returns false.
 * A second form takes the job's id, as
 * cron.unschedule(jobid) does.
 */
CREATE FUNCTION schedlock.unschedule_job(job_name text,
										 if_exists boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_unschedule_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.unschedule_job(text, boolean) IS
	'delete the caller''s job of this name (its run history stays); an unknown name is an error, or false with if_exists';

CREATE FUNCTION schedlock.unschedule_job(job_id bigint,
										 if_exists boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_unschedule_job_id'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.unschedule_job(bigint, boolean) IS
	'delete the caller''s job of this id (its run history stays); an unknown id is an error, or false with if_exists';

CREATE FUNCTION schedlock.run_job(job_name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_run_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION schedlock.run_job(text) IS
	'queue one run of the caller''s job now, outside its schedule; returns the run id';

-------------------------------------------------------------------------------
-- Job scheduler: NOTIFY listeners
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.schedlock_claim_run(run_id bigint, claimed_by text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_claim_run'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_claim_run(bigint, text) IS
	'take a notified run of a NOTIFY job; true for exactly one caller';

/*
 * A NOTIFY run's notification carries no payload: any role may LISTEN on
 * any channel.  The role that may claim the run (a member of the job's
 * owner) gets the job's payload in the call that claims it;
 * schedlock_claim_run claims without it.
 */
CREATE FUNCTION @extschema@.schedlock_claim_run_payload(run_id bigint,
														claimed_by text DEFAULT NULL,
														OUT claimed boolean,
														OUT payload jsonb)
RETURNS record
AS 'MODULE_PATHNAME', 'schedlock_claim_run_payload'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_claim_run_payload(bigint, text) IS
	'take a notified run of a NOTIFY job and get the job''s payload; claimed is true (and payload set) for exactly one caller';

CREATE FUNCTION @extschema@.schedlock_finish_run(run_id bigint, succeeded boolean,
												 message text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_finish_run'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_finish_run(bigint, boolean, text) IS
	'report the outcome of a claimed run; false when the run is no longer running (finished, timed out)';

/*
 * schedlock_pending_runs: the catch-up call of a NOTIFY listener, at start
 * and after each reconnect.  The runs of the channel still waiting to be
 * claimed that the caller can see (row-level security: the runs of its own
 * jobs), oldest first.  It reads what the caller may read anyway.
 */
CREATE FUNCTION @extschema@.schedlock_pending_runs(channel text,
												   OUT run_id bigint,
												   OUT job_name text,
												   OUT scheduled_for timestamptz,
												   OUT attempt integer,
												   OUT deadline timestamptz)
RETURNS SETOF record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT r.run_id, j.job_name, r.scheduled_for, r.attempt, r.deadline
	  FROM schedlock.job_runs r
	  JOIN schedlock.jobs j ON j.job_id OPERATOR(pg_catalog.=) r.job_id
	 WHERE j.notify_channel OPERATOR(pg_catalog.=) channel
	   AND r.status OPERATOR(pg_catalog.=) 'pending'
	 ORDER BY r.run_id
$$;

COMMENT ON FUNCTION @extschema@.schedlock_pending_runs(text) IS
	'runs of the NOTIFY channel notified and not yet claimed that the caller can see: what a listener claims at start and after a reconnect';

GRANT EXECUTE ON FUNCTION @extschema@.schedlock_pending_runs(text) TO PUBLIC;

-------------------------------------------------------------------------------
-- Import of pg_cron's jobs
-------------------------------------------------------------------------------

/*
 * Reads cron.job of the pg_cron extension of this database and creates one
 * schedlock job per pg_cron job of this database (src/sched/import_pg_cron.c).  A dry run
 * (the default) returns the plan without writing; deactivate => true sets
 * each imported pg_cron job inactive in the same transaction.  Runs as the
 * caller: a superuser imports every job as its owner, any other role that
 * is granted EXECUTE only its own, through schedule_job's checks.  Not
 * executable by PUBLIC.
 */
CREATE FUNCTION @extschema@.schedlock_import_pg_cron(dry_run boolean DEFAULT true,
													 deactivate boolean DEFAULT false,
													 jobids bigint[] DEFAULT NULL,
													 OUT cron_jobid bigint,
													 OUT cron_jobname text,
													 OUT username text,
													 OUT database text,
													 OUT schedule text,
													 OUT action text,
													 OUT job_name text,
													 OUT job_id bigint,
													 OUT atomic boolean,
													 OUT enabled boolean,
													 OUT timezone text,
													 OUT detail text,
													 OUT todo text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'schedlock_import_pg_cron'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_import_pg_cron(boolean, boolean, bigint[]) IS
	'create a schedlock job for each pg_cron job of this database (dry_run: only say what would be done); a row per pg_cron job says what was done, or why not, and what is left to do';

REVOKE ALL ON FUNCTION @extschema@.schedlock_import_pg_cron(boolean, boolean, bigint[]) FROM PUBLIC;

-------------------------------------------------------------------------------
-- Approvals of jobs that run as another role
-------------------------------------------------------------------------------

/*
 * A job that runs as a role other than its owner (run_as, which only a
 * superuser sets) runs only what a superuser approved.  approved_by is the
 * superuser whose write of the job approved it, approval the digest of
 * what it approved: the owner, run_as and every field that changes what
 * the job does or resolves.  schedule_job, schedule_once and alter_job
 * renew both when a superuser calls them and keep them otherwise (a
 * non-superuser may not change those fields while run_as is set); the job
 * backend compares the digest with the job as claimed before every run
 * (src/sched/job_roles.c), so that a change that took another path (a
 * direct write, a restore) or an approver who is no longer a superuser
 * pauses the job instead of running it as run_as.  Both NULL for a job
 * that runs as its owner.
 */
CREATE FUNCTION schedlock.approval_digest(owner oid, run_as oid, schedule text,
										  timezone text, command text,
										  notify_channel text, payload jsonb,
										  atomic boolean, search_path text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.md5(ROW($1, $2, $3, $4, $5, $6, $7, $8, $9)::pg_catalog.text) $$;

COMMENT ON FUNCTION schedlock.approval_digest(oid, oid, text, text, text, text, jsonb, boolean, text) IS
	'internal: digest of what a superuser approves when a job runs as another role';

REVOKE ALL ON FUNCTION schedlock.approval_digest(oid, oid, text, text, text, text, jsonb, boolean, text) FROM PUBLIC;

ALTER TABLE schedlock.jobs
	ADD COLUMN approved_by pg_catalog.regrole,
	ADD COLUMN approval text;

COMMENT ON COLUMN schedlock.jobs.approved_by IS
	'superuser who approved run_as (NULL when the job runs as its owner)';
COMMENT ON COLUMN schedlock.jobs.approval IS
	'digest of the job as approved_by approved it; a job that no longer matches is paused, not run as run_as';

-------------------------------------------------------------------------------
-- Payloads
-------------------------------------------------------------------------------

/*
 * A job's payload is read by the job's owner, through schedlock.job_payloads,
 * and by the role that claims a run of it (schedlock_claim_run_payload);
 * row-level security alone left every payload to a role with BYPASSRLS.  So
 * PUBLIC may read every column of schedlock.jobs but payload, and the
 * database owner the whole table, as pg_dump needs (row-level security
 * still shows it its own jobs only, unless it has BYPASSRLS).  A column a
 * later release adds to the table is granted to PUBLIC there too.
 */
REVOKE SELECT ON schedlock.jobs FROM PUBLIC;
GRANT SELECT (job_id, job_name, owner, schedule, command, notify_channel,
			  timezone, timeout, max_attempts, retry_delay, misfire, atomic,
			  enabled, run_as, reboot, next_slot, retry_slot, retry_attempt,
			  retry_at, manual_pending, next_run_at, consecutive_failures,
			  created_at, home_id, dispatch_errors, dispatch_error_at,
			  quarantine_reason, total_runs, succeeded_runs, failed_runs,
			  total_duration, last_duration, last_success_at, last_start_lag,
			  search_path, record_runs, approved_by, approval)
	ON schedlock.jobs TO PUBLIC;
GRANT SELECT ON schedlock.jobs TO pg_database_owner;

/*
 * The payloads of the current user's jobs (the rows row-level security shows
 * it in schedlock.jobs).  The view reads the table with its owner's rights
 * and filters on CURRENT_USER, the role that reads the view; security_barrier
 * keeps a caller's function from seeing other rows before the filter.
 */
CREATE VIEW schedlock.job_payloads WITH (security_barrier = true) AS
SELECT j.job_id,
	   j.job_name,
	   j.payload
  FROM schedlock.jobs j
 WHERE j.owner OPERATOR(pg_catalog.=)
	   (SELECT r.oid FROM pg_catalog.pg_roles r
		 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER);

COMMENT ON VIEW schedlock.job_payloads IS
	'the payload of each of the current user''s jobs';

GRANT SELECT ON schedlock.job_payloads TO PUBLIC;
