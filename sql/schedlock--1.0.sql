/* sql/schedlock--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION schedlock" to load this file. \quit

/*
 * Functions live in the extension's schema (@extschema@, "public" unless
 * CREATE EXTENSION ... SCHEMA says otherwise); tables and views live in the
 * dedicated schema "schedlock".
 */
CREATE SCHEMA IF NOT EXISTS schedlock;
GRANT USAGE ON SCHEMA schedlock TO PUBLIC;

-------------------------------------------------------------------------------
-- Lease locks (src/lock.c)
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

CREATE VIEW schedlock.locks AS
SELECT s.lock_name,
	   (s.lock_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
		AND (NOT s.session_bound
			 OR schedlock.session_alive(s.holder_pid, s.holder_session_start))) AS held,
	   s.holder,
	   s.locked_at,
	   s.lock_until,
	   s.token,
	   s.session_bound,
	   s.holder_pid
  FROM schedlock.lock_state s;

COMMENT ON VIEW schedlock.locks IS
	'one row per lock name; held is true while an acquire would be refused';

GRANT SELECT ON schedlock.locks TO PUBLIC;

-------------------------------------------------------------------------------
-- Cron engine (src/cron_sql.c)
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
-- Job scheduler
-------------------------------------------------------------------------------

/*
 * Jobs and their runs.  Both tables are written only by the schedlock
 * functions and workers (which switch to the extension's owner); every role
 * may read them, and row-level security shows each role only the rows of
 * the jobs it owns (superusers and the table owner see all).
 */
CREATE SEQUENCE schedlock.jobs_job_id_seq;
CREATE SEQUENCE schedlock.job_runs_run_id_seq;

CREATE TABLE schedlock.jobs (
	job_id bigint NOT NULL PRIMARY KEY
		DEFAULT pg_catalog.nextval('schedlock.jobs_job_id_seq'),
	job_name text NOT NULL
		CHECK (pg_catalog.length(job_name) BETWEEN 1 AND 255),
	owner pg_catalog.regrole NOT NULL,
	schedule text NOT NULL,
	command text,
	notify_channel text,
	payload jsonb,
	timezone text,
	timeout interval,
	max_attempts integer NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
	retry_delay interval NOT NULL DEFAULT '1 minute',
	misfire text NOT NULL DEFAULT 'run_once'
		CHECK (misfire IN ('run_once', 'skip', 'run_all')),
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
	CHECK ((command IS NULL) <> (notify_channel IS NULL)),
	UNIQUE (owner, job_name)
);

COMMENT ON TABLE schedlock.jobs IS
	'scheduled jobs; written only by schedule_job, alter_job, unschedule_job, run_job and the workers';
COMMENT ON COLUMN schedlock.jobs.next_slot IS
	'next regular slot of the schedule (NULL for @reboot jobs between starts)';
COMMENT ON COLUMN schedlock.jobs.next_run_at IS
	'when a worker next has something to do for the job: least(next_slot, retry_at, now if run_job is pending)';

-- drives the workers' claim query and their sleep: index-only work.  job_id
-- orders jobs due at the same instant, so that a worker can resume its scan
-- after the job it claimed last instead of stepping again over the index
-- entries its earlier claims left behind
CREATE INDEX jobs_due_idx ON schedlock.jobs (next_run_at, job_id) WHERE enabled;

CREATE TABLE schedlock.job_runs (
	run_id bigint NOT NULL PRIMARY KEY
		DEFAULT pg_catalog.nextval('schedlock.job_runs_run_id_seq'),
	job_id bigint NOT NULL REFERENCES schedlock.jobs (job_id) ON DELETE CASCADE,
	owner pg_catalog.regrole NOT NULL,
	scheduled_for timestamptz NOT NULL,
	attempt integer NOT NULL DEFAULT 1,
	manual boolean NOT NULL DEFAULT false,
	status text NOT NULL
		CHECK (status IN ('queued', 'pending', 'running', 'succeeded',
						  'failed', 'timed_out', 'lost', 'skipped')),
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

CREATE FUNCTION schedlock.job_worker_pid(job_id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'schedlock_job_worker_pid'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION schedlock.job_worker_pid(bigint) IS
	'internal: pid of the worker of this database running the job now, or NULL';

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
	   COALESCE(r.worker_pid, schedlock.job_worker_pid(j.job_id)) AS running_pid
  FROM schedlock.jobs j
  LEFT JOIN LATERAL (SELECT x.status, x.scheduled_for, x.finished_at, x.sqlstate, x.message
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status NOT IN ('queued', 'pending', 'running')
					  ORDER BY x.run_id DESC
					  LIMIT 1) l ON true
  LEFT JOIN LATERAL (SELECT x.worker_pid
					   FROM schedlock.job_runs x
					  WHERE x.job_id OPERATOR(pg_catalog.=) j.job_id
						AND x.status OPERATOR(pg_catalog.=) 'running'
					  ORDER BY x.run_id DESC
					  LIMIT 1) r ON true;

COMMENT ON VIEW schedlock.job_status IS
	'per job: schedule, time zone, next run, last finished run and its error, consecutive failures, pid running it now';

GRANT SELECT ON schedlock.job_status TO PUBLIC;

CREATE FUNCTION @extschema@.schedule_job(job_name text,
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

COMMENT ON FUNCTION @extschema@.schedule_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name) IS
	'create the caller''s job of this name, or replace its definition; returns the job id';

CREATE FUNCTION @extschema@.unschedule_job(job_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_unschedule_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.unschedule_job(text) IS
	'delete the caller''s job of this name and its run history; false when there is none';

CREATE FUNCTION @extschema@.alter_job(job_name text,
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
									  run_as name DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'schedlock_alter_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.alter_job(text, text, text, text, jsonb, text, interval, integer, interval, text, boolean, boolean, name) IS
	'change some settings of the caller''s job; NULL leaves a setting unchanged';

CREATE FUNCTION @extschema@.run_job(job_name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'schedlock_run_job'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.run_job(text) IS
	'queue one run of the caller''s job now, outside its schedule; returns the run id';

CREATE FUNCTION @extschema@.schedlock_claim_run(run_id bigint, claimed_by text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_claim_run'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_claim_run(bigint, text) IS
	'take a notified run of a NOTIFY job; true for exactly one caller';

CREATE FUNCTION @extschema@.schedlock_finish_run(run_id bigint, succeeded boolean,
												 message text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'schedlock_finish_run'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.schedlock_finish_run(bigint, boolean, text) IS
	'report the outcome of a claimed run; false when the run is no longer running (finished, timed out)';
