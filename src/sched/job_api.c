/*-------------------------------------------------------------------------
 *
 * job_api.c
 *	  The job API: schedule_job, schedule_once, alter_job, unschedule_job
 *	  and run_job.
 *
 * Everything the caller gives is checked before anything is written
 * (job_def.c); bad input raises an error with a real SQLSTATE.
 *
 * A job belongs to the role that scheduled it (GetUserId() at the call).
 * The tables are written as the extension owner, so ordinary roles need
 * (and have) no write privilege on them; every lookup is restricted to the
 * caller's own jobs.  A superuser may name another role's job when the name
 * is unambiguous.  The functions wake this database's workers when the
 * transaction commits.  They live in the schema schedlock and are
 * executable by PUBLIC, but each first checks the one grant of the job API,
 * INSERT on schedlock.jobs (schedlock_check_job_api), which a DBA gives to
 * the roles that may occupy the job backends; on the tables of 1.1, where
 * the EXECUTE privilege is the grant, the check lets every caller through.
 *
 * The statements on the scheduler's tables are src/sched/store's; the rules for
 * a job's next_run_at are rules.c's.
 *
 * While they act as the extension owner, search_path is pinned (see
 * schedlock_begin_as_owner) and every operator is written
 * OPERATOR(pg_catalog.x); the checks made before the switch look nothing up
 * through the caller's search_path (the parser, the cron engine, catalog
 * caches).
 *
 * run_as: only a superuser may make a job run as a role other than its
 * owner.  What runs as that role is what the superuser approved: while
 * run_as names another role, only a superuser may change the job's command,
 * schedule, time zone, notify_channel, payload or atomic.  Anyone may give
 * run_as => <the job's owner>, which clears run_as (stored as NULL), and
 * schedule_job's upsert replaces the definition, run_as included.
 *
 * One-off jobs (schedule_once) are stored with the schedule
 * "@once" and their instant as next_slot; the workers run that slot and
 * leave next_slot NULL (claim_plan.c, plan_slot).  alter_job's next_run_at
 * moves the next slot of any job.  See the section "One-off jobs and
 * next_run_at" in job_def.c.
 *
 * IDENTIFICATION
 *	  src/sched/job_api.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/args.h"
#include "base/owner.h"
#include "base/primary.h"
#include "base/settings.h"
#include "cron/cron_pg.h"
#include "job_api.h"
#include "job_def.h"
#include "rules.h"
#include "sched_shmem.h"
#include "sched/store/jobstore.h"

PG_FUNCTION_INFO_V1(schedlock_schedule_job);
PG_FUNCTION_INFO_V1(schedlock_alter_job);
PG_FUNCTION_INFO_V1(schedlock_unschedule_job);
PG_FUNCTION_INFO_V1(schedlock_unschedule_job_id);
PG_FUNCTION_INFO_V1(schedlock_run_job);
PG_FUNCTION_INFO_V1(schedlock_schedule_once);
PG_FUNCTION_INFO_V1(schedlock_delete_runs);

PGDLLEXPORT Datum schedlock_schedule_job(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_alter_job(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_unschedule_job(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_run_job(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_schedule_once(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_delete_runs(PG_FUNCTION_ARGS);

/* Argument positions shared by schedule_job and alter_job. */
enum
{
	ARG_NAME = 0,
	ARG_SCHEDULE,
	ARG_COMMAND,
	ARG_CHANNEL,
	ARG_PAYLOAD,
	ARG_TIMEZONE,
	ARG_TIMEOUT,
	ARG_MAX_ATTEMPTS,
	ARG_RETRY_DELAY,
	ARG_MISFIRE,
	ARG_ATOMIC,
	ARG_ENABLED,
	ARG_RUN_AS,
	ARG_NEXT_RUN_AT,			/* alter_job only, release 1.1 */
	ARG_SEARCH_PATH,			/* alter_job only, release 1.2 */
	ARG_RECORD_RUNS				/* alter_job only, release 1.2 */
};

/*
 * schedlock_job_api_allowed
 *		Whether role may use the job functions: a superuser, or a role with
 *		INSERT on schedlock.jobs, the one grant of the job API (release
 *		1.2; the functions are executable by PUBLIC, and a direct INSERT is
 *		refused by row-level security and schedlock.jobs_api_only).  On
 *		the tables of 1.1, before ALTER EXTENSION UPDATE, EXECUTE on each
 *		function was the grant, and PostgreSQL has checked it.  In a
 *		transaction.
 */
bool
schedlock_job_api_allowed(Oid role)
{
	Oid			relid;

	if (superuser_arg(role) || !schedlock_store_caps()->api_grant)
		return true;
	relid = schedlock_table_oid("jobs");
	return OidIsValid(relid) &&
		pg_class_aclcheck(relid, role, ACL_INSERT) == ACLCHECK_OK;
}

/*
 * schedlock_check_job_api
 *		Refuse the caller the job function fname (42501) unless it has been
 *		granted the job API; the hint is the statement that grants it.  On
 *		tables older than the library serves, refuse everyone (55000).
 */
void
schedlock_check_job_api(const char *fname)
{
	Oid			role = GetUserId();
	const char *rolename;

	schedlock_require_served_tables(fname);
	if (schedlock_job_api_allowed(role))
		return;
	rolename = GetUserNameFromId(role, false);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for function %s", fname),
			 errdetail("Role \"%s\" has not been granted the job functions.",
					   rolename),
			 errhint("A superuser grants them with one statement: GRANT INSERT ON schedlock.jobs TO %s;",
					 quote_identifier(rolename))));
}

/*
 * next_slot_rule
 *		alter_job's rule for the next slot, where one-off jobs and
 *		next_run_at decide it.  With next_run_at given (non-NULL), the next
 *		slot becomes that instant (see schedlock_check_instant) and a pending retry is
 *		dropped: *reslot = true, *slot set, returns true.  The job must then
 *		be enabled after the call (55000 otherwise).  Without it, a one-off
 *		job keeps its instant, whatever else changes (enabling it again does
 *		not move it; an ended one stays ended): *reslot = false, returns
 *		false.  Turning a recurring job into a one-off job (schedule =>
 *		'@once') needs next_run_at (22023).  For other jobs returns false
 *		and leaves *reslot alone.
 */
static bool
next_slot_rule(FunctionCallInfo fcinfo, const char *job_name,
			   const JobDef *def, const JobDef *old, TimestampTz now,
			   bool *reslot, TimestampTz *slot)
{
	/* every alter_job the library serves (1.1 on) has next_run_at */
	if (PG_NARGS() > ARG_NEXT_RUN_AT && !PG_ARGISNULL(ARG_NEXT_RUN_AT))
	{
		*slot = schedlock_check_instant(PG_GETARG_TIMESTAMPTZ(ARG_NEXT_RUN_AT), now,
										"next_run_at");
		if (!def->enabled)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("job \"%s\" is disabled", job_name),
					 errdetail("next_run_at moves the next run of an enabled job; enabling a job computes its next run afresh."),
					 errhint("Give enabled => true in the same call: schedlock.alter_job(job_name => %s, enabled => true, next_run_at => ...).",
							 quote_literal_cstr(job_name))));
		*reslot = true;
		return true;
	}
	if (!schedlock_schedule_is_once(def->schedule))
		return false;
	if (!schedlock_schedule_is_once(old->schedule))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("schedule \"%s\" needs next_run_at", def->schedule),
				 errdetail("A one-off job runs once, at an instant."),
				 errhint("Give the instant: schedlock.alter_job(job_name => %s, schedule => '@once', next_run_at => ...).",
						 quote_literal_cstr(job_name))));
	*reslot = false;
	return false;
}

/* Macros to fetch optional arguments. */
#define ARG_TEXT(n)	(PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n)))

/*
 * args_into_def
 *		Overlay the non-null arguments on def, a job of role owner.  Setting
 *		command clears notify_channel and the payload, setting
 *		notify_channel clears command.
 */
static void
args_into_def(FunctionCallInfo fcinfo, JobDef *def, Oid owner)
{
	if (!PG_ARGISNULL(ARG_COMMAND) && !PG_ARGISNULL(ARG_CHANNEL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a job needs exactly one of command and notify_channel"),
				 errhint("Give command for a job that runs SQL, or notify_channel for a job that notifies listening applications.")));
	if (!PG_ARGISNULL(ARG_SCHEDULE))
		def->schedule = ARG_TEXT(ARG_SCHEDULE);
	if (!PG_ARGISNULL(ARG_COMMAND))
	{
		def->command = ARG_TEXT(ARG_COMMAND);
		def->channel = NULL;
		def->has_payload = false;
	}
	if (!PG_ARGISNULL(ARG_CHANNEL))
	{
		def->channel = ARG_TEXT(ARG_CHANNEL);
		def->command = NULL;
	}
	if (!PG_ARGISNULL(ARG_PAYLOAD))
	{
		def->payload = PG_GETARG_DATUM(ARG_PAYLOAD);
		def->has_payload = true;
	}
	if (!PG_ARGISNULL(ARG_TIMEZONE))
		def->timezone = ARG_TEXT(ARG_TIMEZONE);
	if (!PG_ARGISNULL(ARG_TIMEOUT))
		def->timeout = PG_GETARG_INTERVAL_P(ARG_TIMEOUT);
	if (!PG_ARGISNULL(ARG_MAX_ATTEMPTS))
		def->max_attempts = PG_GETARG_INT32(ARG_MAX_ATTEMPTS);
	if (!PG_ARGISNULL(ARG_RETRY_DELAY))
		def->retry_delay = PG_GETARG_INTERVAL_P(ARG_RETRY_DELAY);
	if (!PG_ARGISNULL(ARG_MISFIRE))
		def->misfire = ARG_TEXT(ARG_MISFIRE);
	if (!PG_ARGISNULL(ARG_ATOMIC))
		def->atomic = PG_GETARG_BOOL(ARG_ATOMIC);
	if (!PG_ARGISNULL(ARG_ENABLED))
		def->enabled = PG_GETARG_BOOL(ARG_ENABLED);
	if (!PG_ARGISNULL(ARG_RUN_AS))
		def->run_as = schedlock_resolve_run_as(NameStr(*PG_GETARG_NAME(ARG_RUN_AS)),
											   owner);
}

/*
 * approver_of
 *		The role whose write of a job approves what it runs as another role
 *		(schedlock_job_written): the caller when it is a superuser, else
 *		none, and the job keeps the approval it had.
 */
static Oid
approver_of(Oid caller)
{
	return superuser_arg(caller) ? caller : InvalidOid;
}

/*
 * upsert_job
 *		Write the caller's job job_name with the checked definition def:
 *		insert it, or replace the definition of the caller's job of that
 *		name (schedule_job and schedule_once).  The next slot becomes slot
 *		(none when !has_slot); a pending retry and a quarantine are
 *		forgotten, a queued run_job() call is kept.  Returns the job id.
 */
static int64
upsert_job(const char *job_name, Oid caller, const JobDef *def, bool reboot,
		   bool has_slot, TimestampTz slot, TimestampTz now)
{
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	int64		job_id;
	int32		manual_pending;
	TimestampTz next_run_at;
	bool		written;
	bool		has_next;

	/* the job resolves names as the session that schedules it does */
	char	   *search_path = pstrdup(namespace_search_path);

	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	job_id = schedlock_upsert_job(job_name, caller, def, reboot, has_slot,
								  slot, search_path, approver_of(caller),
								  &manual_pending);

	/*
	 * The upsert wrote the slot as next_run_at (none while disabled): right
	 * unless run_job() calls of the job are queued.
	 */
	written = def->enabled && has_slot;
	has_next = schedlock_rule_next_run_at(def->enabled, has_slot, slot, false,
										  0, manual_pending, now,
										  &next_run_at);
	if (has_next != written || (written && next_run_at != slot))
		schedlock_recompute_next_run(job_id, now);

	/*
	 * The role's backend looks at its jobs at once: the transaction may still
	 * change the row, and a backend that finds its next job beyond its idle
	 * time leaves at once.
	 */
	if (has_next)
		schedlock_note_due_at_commit(OidIsValid(def->run_as) ? def->run_as :
									 caller, DT_NOBEGIN);
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	return job_id;
}

/*
 * schedlock_schedule_job
 *		SQL: schedule_job(job_name, schedule, command, notify_channel,
 *		payload, timezone, timeout, max_attempts, retry_delay, misfire,
 *		atomic, enabled, run_as) -> bigint
 *
 * Creates the caller's job of that name, or replaces its definition (an
 * upsert, like cron.schedule): the next slot is computed afresh from now,
 * and a pending retry and a quarantine are forgotten.  Returns the job id.
 */
Datum
schedlock_schedule_job(PG_FUNCTION_ARGS)
{
	char	   *job_name = schedlock_name_arg(fcinfo, ARG_NAME, "job_name");
	JobDef		def;
	SchedlockCronSchedule sched;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz slot = 0;
	bool		has_slot;
	Oid			caller = GetUserId();
	int64		job_id;

	schedlock_check_job_api("schedlock.schedule_job");
	schedlock_require_writable("schedlock.schedule_job");
	memset(&def, 0, sizeof(def));
	def.max_attempts = 1;
	def.atomic = true;
	def.enabled = true;
	def.misfire = "run_once";
	def.retry_delay = DatumGetIntervalP(DirectFunctionCall3(interval_in,
															CStringGetDatum("1 minute"),
															ObjectIdGetDatum(InvalidOid),
															Int32GetDatum(-1)));
	if (PG_ARGISNULL(ARG_MAX_ATTEMPTS))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("max_attempts must not be null")));
	if (PG_ARGISNULL(ARG_RETRY_DELAY))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("retry_delay must not be null")));
	if (PG_ARGISNULL(ARG_COMMAND) && PG_ARGISNULL(ARG_CHANNEL) &&
		!PG_ARGISNULL(ARG_SCHEDULE))
		schedlock_refuse_schedule_as_name(job_name, ARG_TEXT(ARG_SCHEDULE));
	args_into_def(fcinfo, &def, caller);
	if (def.timezone == NULL)
		def.timezone = pstrdup(schedlock_timezone);
	schedlock_refuse_once_schedule(&def);
	schedlock_validate_job(job_name, &def, &sched);
	schedlock_settle_atomic(job_name, &def, false);
	if (!PG_ARGISNULL(ARG_TIMEZONE))
		schedlock_cron_warn_numeric_timezone(def.timezone);
	has_slot = schedlock_first_slot(&sched, def.timezone, now, &slot);

	job_id = upsert_job(job_name, caller, &def,
						schedlock_cron_is_reboot(&sched), has_slot, slot, now);

	PG_RETURN_INT64(job_id);
}

/*
 * schedlock_schedule_once
 *		SQL: schedule_once(job_name, run_at, command, notify_channel,
 *		payload, timeout, max_attempts, retry_delay, atomic, enabled,
 *		run_as) -> bigint
 *
 * Creates the caller's one-off job of that name, or replaces the
 * definition of the caller's job of that name, recurring or one-off (an
 * upsert, as schedule_job): it runs once at run_at (now, when run_at has
 * passed), with up to max_attempts attempts, and then ends.  The arguments
 * are checked as schedule_job's; run_at must not be NULL (22004), infinite
 * or too far ahead (22023).  Returns the job id.
 */
Datum
schedlock_schedule_once(PG_FUNCTION_ARGS)
{
	char	   *job_name = schedlock_name_arg(fcinfo, 0, "job_name");
	JobDef		def;
	SchedlockCronSchedule sched;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz slot;
	Oid			caller = GetUserId();
	int64		job_id;

	schedlock_check_job_api("schedlock.schedule_once");
	schedlock_require_writable("schedlock.schedule_once");
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("run_at must not be null"),
				 errhint("Give the instant the job runs at; now() runs it at once.")));
	slot = schedlock_check_instant(PG_GETARG_TIMESTAMPTZ(1), now, "run_at");
	if (PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("max_attempts must not be null")));
	if (PG_ARGISNULL(7))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("retry_delay must not be null")));
	if (PG_ARGISNULL(8) || PG_ARGISNULL(9))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", PG_ARGISNULL(8) ? "atomic" : "enabled")));
	if (!PG_ARGISNULL(2) && !PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a job needs exactly one of command and notify_channel"),
				 errhint("Give command for a job that runs SQL, or notify_channel for a job that notifies listening applications.")));

	memset(&def, 0, sizeof(def));
	def.schedule = SCHEDLOCK_ONCE_SCHEDULE;
	def.command = ARG_TEXT(2);
	def.channel = ARG_TEXT(3);
	def.has_payload = !PG_ARGISNULL(4);
	def.payload = def.has_payload ? PG_GETARG_DATUM(4) : (Datum) 0;
	def.timezone = pstrdup(schedlock_timezone);
	def.timeout = PG_ARGISNULL(5) ? NULL : PG_GETARG_INTERVAL_P(5);
	def.max_attempts = PG_GETARG_INT32(6);
	def.retry_delay = PG_GETARG_INTERVAL_P(7);
	def.misfire = "run_once";
	def.atomic = PG_GETARG_BOOL(8);
	def.enabled = PG_GETARG_BOOL(9);
	def.run_as = PG_ARGISNULL(10) ? InvalidOid :
		schedlock_resolve_run_as(NameStr(*PG_GETARG_NAME(10)), caller);
	schedlock_validate_job(job_name, &def, &sched);
	schedlock_settle_atomic(job_name, &def, false);

	job_id = upsert_job(job_name, caller, &def, false, true, slot, now);

	PG_RETURN_INT64(job_id);
}

/*
 * same_text
 *		Whether two optional strings are equal (both NULL counts as equal).
 */
static bool
same_text(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/*
 * check_run_as_change
 *		Refuse (42501) a change by a non-superuser to what a job runs or
 *		resolves while the job runs as a role other than its owner: its
 *		command, schedule, time zone, notify_channel, payload, atomic or
 *		search_path (search_path_changed).  A superuser approved run_as for
 *		the job as it was; a change that also clears run_as (def->run_as
 *		invalid) is the owner's own business.  The job backend checks the
 *		same before every run (schedlock_check_job_approval), whatever path
 *		the change took.
 */
static void
check_run_as_change(const char *job_name, Oid owner, const JobDef *old,
					const JobDef *def, bool search_path_changed)
{
	bool		changed;
	const char *run_as_name;

	if (!OidIsValid(old->run_as) || old->run_as == owner ||
		!OidIsValid(def->run_as) || superuser())
		return;
	changed = search_path_changed ||
		!same_text(def->command, old->command) ||
		!same_text(def->schedule, old->schedule) ||
		!same_text(def->timezone, old->timezone) ||
		!same_text(def->channel, old->channel) ||
		def->atomic != old->atomic ||
		def->has_payload != old->has_payload ||
		(def->has_payload &&
		 !DatumGetBool(DirectFunctionCall2(jsonb_eq, def->payload, old->payload)));
	if (!changed)
		return;
	run_as_name = GetUserNameFromId(old->run_as, true);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to change job \"%s\"", job_name),
			 errdetail("A superuser made the job run as role \"%s\"; only a superuser may change the command, schedule, time zone, notify_channel, payload, atomic or search_path of a job that runs as another role.",
					   run_as_name ? run_as_name : "?"),
			 errhint("Ask a superuser to make the change, or first clear run_as with schedlock.alter_job(job_name => %s, run_as => %s), after which the job runs as its owner.",
					 quote_literal_cstr(job_name),
					 quote_literal_cstr(GetUserNameFromId(owner, false)))));
}

/*
 * schedlock_alter_job
 *		SQL: alter_job(job_name, schedule, ..., run_as, next_run_at) -> void
 *
 * Changes the settings given as non-null; the result is checked as a
 * whole.  A new schedule or time zone, or enabling a disabled job,
 * computes the next slot afresh from now; enabled => true also releases a
 * job from quarantine (quarantine.c).  next_run_at (release 1.1) moves the
 * next slot, and a one-off job keeps its instant (next_slot_rule).  What a
 * job with run_as runs only a superuser may change (check_run_as_change).
 * search_path and record_runs (release 1.2) set what the job runs with and
 * which of its runs are kept ('default': schedlock.record_runs).
 */
Datum
schedlock_alter_job(PG_FUNCTION_ARGS)
{
	char	   *job_name = schedlock_name_arg(fcinfo, ARG_NAME, "job_name");
	JobDef		def;
	JobDef		old;
	StoredJob	stored;
	SchedlockCronSchedule sched;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz slot = 0;
	bool		reslot;
	bool		has_slot;
	Oid			caller = GetUserId();
	Oid			owner;
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	int64		job_id;
	char	   *search_path = NULL;
	char	   *old_search_path;
	char	   *record_runs = NULL;

	schedlock_check_job_api("schedlock.alter_job");
	schedlock_require_writable("schedlock.alter_job");
	if (PG_NARGS() > ARG_RECORD_RUNS && !PG_ARGISNULL(ARG_RECORD_RUNS))
	{
		SchedlockRecordRuns parsed;

		record_runs = text_to_cstring(PG_GETARG_TEXT_PP(ARG_RECORD_RUNS));
		if (!schedlock_record_runs_parse(record_runs, &parsed) &&
			strcmp(record_runs, SCHEDLOCK_RECORD_RUNS_DEFAULT_NAME) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid record_runs \"%s\"", record_runs),
					 errhint("Use all (keep every run), failures (keep failed, timed-out and lost runs only) or default (follow schedlock.record_runs).")));
	}
	if (PG_NARGS() > ARG_SEARCH_PATH && !PG_ARGISNULL(ARG_SEARCH_PATH))
	{
		/* checked as SET search_path would check it, and not set */
		search_path = text_to_cstring(PG_GETARG_TEXT_PP(ARG_SEARCH_PATH));
		(void) set_config_option("search_path", search_path, PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SET, false, ERROR,
								 false);
	}
	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	job_id = schedlock_lock_job(job_name, caller, &stored);
	def = stored.def;
	owner = stored.owner;
	old_search_path = stored.search_path;
	old = def;

	/* run_as is checked against the caller, not the extension owner */
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	args_into_def(fcinfo, &def, owner);
	if (def.timezone == NULL)
		def.timezone = pstrdup(schedlock_timezone);
	if (schedlock_schedule_is_once(def.schedule))
	{
		def.schedule = SCHEDLOCK_ONCE_SCHEDULE;
		/* a recurring job turned into a one-off one: its misfire is moot */
		if (PG_ARGISNULL(ARG_MISFIRE))
			def.misfire = "run_once";
	}
	schedlock_settle_atomic(job_name, &def,
							!PG_ARGISNULL(ARG_ATOMIC) && PG_GETARG_BOOL(ARG_ATOMIC));
	check_run_as_change(job_name, owner, &old, &def,
						search_path != NULL &&
						!same_text(search_path, old_search_path));
	schedlock_validate_job(job_name, &def, &sched);
	if (!PG_ARGISNULL(ARG_TIMEZONE))
		schedlock_cron_warn_numeric_timezone(def.timezone);

	/* a row written by hand may have no time zone (the setting's then) */
	reslot = strcmp(def.schedule, old.schedule) != 0 ||
		!same_text(def.timezone, old.timezone) ||
		(def.enabled && !old.enabled);
	has_slot = next_slot_rule(fcinfo, job_name, &def, &old, now, &reslot, &slot);
	if (reslot && !has_slot)
		has_slot = schedlock_first_slot(&sched, def.timezone, now, &slot);
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);

	schedlock_update_job(job_id, job_name, &def,
						 schedlock_cron_is_reboot(&sched), reslot,
						 reslot && has_slot, slot);
	schedlock_recompute_next_run(job_id, now);
	schedlock_job_written(job_id, search_path, approver_of(caller));
	if (record_runs != NULL)
		schedlock_set_record_runs(job_id,
								  strcmp(record_runs,
										 SCHEDLOCK_RECORD_RUNS_DEFAULT_NAME) == 0 ?
								  NULL : record_runs);
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	PG_RETURN_VOID();
}

/*
 * schedlock_unschedule_job
 *		SQL: unschedule_job(job_name, if_exists) -> boolean
 *
 * Deletes the caller's job; its run history stays (store_jobs.c,
 * delete_jobs): a run in progress finishes and is recorded.  A name the
 * caller has no job of is an error (42704), as for alter_job and pg_cron's
 * cron.unschedule, unless if_exists, which returns false instead.  Under
 * the SQL declaration of release 1.1 (no if_exists: the library is newer
 * than the installed extension) an unknown name returns false, and the
 * history goes with the job, as then.
 */
Datum
schedlock_unschedule_job(PG_FUNCTION_ARGS)
{
	char	   *job_name = schedlock_name_arg(fcinfo, ARG_NAME, "job_name");
	bool		if_exists = PG_NARGS() < 2 ||
		(!PG_ARGISNULL(1) && PG_GETARG_BOOL(1));
	Oid			caller = GetUserId();
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	bool		deleted;

	schedlock_check_job_api("schedlock.unschedule_job");
	schedlock_require_writable("schedlock.unschedule_job");
	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	deleted = schedlock_delete_job(job_name, caller);
	if (!deleted && superuser_arg(caller))
	{
		MemoryContext oldcxt = CurrentMemoryContext;

		PG_TRY();
		{
			StoredJob	stored;
			int64		job_id = schedlock_lock_job(job_name, caller, &stored);

			schedlock_delete_job_id(job_id, job_name);
			deleted = true;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			/* not in ErrorContext, which CopyErrorData refuses */
			MemoryContextSwitchTo(oldcxt);
			edata = CopyErrorData();
			if (edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT)
				PG_RE_THROW();
			FlushErrorState();
		}
		PG_END_TRY();
	}
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	if (!deleted && !if_exists)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("job \"%s\" does not exist", job_name),
				 errhint("Jobs are visible only to the role that scheduled them; schedlock.unschedule_job(%s, if_exists => true) returns false for a job that does not exist.",
						 quote_literal_cstr(job_name))));
	PG_RETURN_BOOL(deleted);
}

/*
 * schedlock_unschedule_job_id
 *		SQL: unschedule_job(job_id, if_exists) -> boolean
 *
 * unschedule_job by the job's id, as pg_cron's cron.unschedule(jobid): the
 * caller's job of that id (a superuser's: any job).  An id the caller has
 * no job of is an error (42704) unless if_exists, which returns false.
 */
Datum
schedlock_unschedule_job_id(PG_FUNCTION_ARGS)
{
	int64		job_id;
	bool		if_exists = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	Oid			caller = GetUserId();
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	bool		deleted;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("job_id must not be null")));
	job_id = PG_GETARG_INT64(0);
	schedlock_check_job_api("schedlock.unschedule_job");
	schedlock_require_writable("schedlock.unschedule_job");
	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	deleted = schedlock_delete_job_by_id(job_id, caller,
										 superuser_arg(caller));
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	if (!deleted && !if_exists)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("job " INT64_FORMAT " does not exist", job_id),
				 errhint("Jobs are visible only to the role that scheduled them; schedlock.jobs lists the caller's jobs and their ids.")));
	PG_RETURN_BOOL(deleted);
}

/*
 * schedlock_run_job
 *		SQL: run_job(job_name) -> bigint
 *
 * Queues one run of the caller's job now, outside its schedule; a worker
 * takes it as soon as the transaction commits.  Returns the run id.  The
 * run is not retried on failure and is skipped when a run of the job is
 * still in progress.
 */
Datum
schedlock_run_job(PG_FUNCTION_ARGS)
{
	char	   *job_name = schedlock_name_arg(fcinfo, ARG_NAME, "job_name");
	Oid			caller = GetUserId();
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	TimestampTz now = GetCurrentTimestamp();
	int64		job_id;
	int64		run_id;
	StoredJob	stored;

	schedlock_check_job_api("schedlock.run_job");
	schedlock_require_writable("schedlock.run_job");
	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	job_id = schedlock_lock_job(job_name, caller, &stored);
	if (!stored.def.enabled)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job \"%s\" is disabled", job_name),
				 errhint("Enable it with schedlock.alter_job(job_name => '%s', enabled => true).",
						 job_name)));
	run_id = schedlock_queue_run(job_id, job_name, now);
	schedlock_recompute_next_run(job_id, now);
	schedlock_job_written(job_id, NULL, InvalidOid);
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	PG_RETURN_INT64(run_id);
}

/*
 * schedlock_delete_runs
 *		SQL: delete_runs(job_name, older_than) -> bigint
 *
 * Deletes the caller's runs that have ended (schedlock.history_retention
 * prunes every role's; this keeps less): of one job when job_name is
 * given, and only those older than older_than when it is given.  Runs
 * still queued, pending or running stay, as the scheduler needs them.
 * Returns how many it deleted.  Any role may call it: it reaches only the
 * caller's own runs, which nothing else lets a role delete (table_guard.c).
 */
Datum
schedlock_delete_runs(PG_FUNCTION_ARGS)
{
	char	   *job_name = PG_ARGISNULL(0) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(0));
	Interval   *older_than = PG_ARGISNULL(1) ? NULL : PG_GETARG_INTERVAL_P(1);
	Oid			caller = GetUserId();
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	uint64		deleted;

	if (older_than != NULL &&
		(older_than->time < 0 || older_than->day < 0 || older_than->month < 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("older_than must not be negative"),
				 errhint("Give how old a run must be to go, such as older_than => '7 days'.")));
	schedlock_require_writable("schedlock.delete_runs");
	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	deleted = schedlock_delete_ended_runs(caller, job_name, older_than,
										  GetCurrentTransactionStartTimestamp());
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();
	PG_RETURN_INT64((int64) deleted);
}
