/*-------------------------------------------------------------------------
 *
 * job_def.c
 *	  A job's definition checked before anything is written: the schedule
 *	  by the cron engine, the time zone, the SQL command by the parser
 *	  (syntax only: the tables it names may not exist yet), the NOTIFY
 *	  channel and payload, the timeout, retry and misfire settings, run_as,
 *	  an atomic job's command, the first slot, a one-off job's instant.
 *	  And the rules every row of schedlock.jobs keeps, whoever writes it
 *	  (schedlock_jobs_check_values), and the statuses a row of
 *	  schedlock.job_runs may have (schedlock_job_run_status_valid).
 *
 * Bad input raises an error with a real SQLSTATE and changes nothing; the
 * job API (job_api.c) and the pg_cron import call these checks before they
 * write.
 *
 * IDENTIFICATION
 *	  src/sched/job_def.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
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
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/args.h"
#include "base/owner.h"
#include "base/settings.h"
#include "cron/cron_pg.h"
#include "job_def.h"
#include "rules.h"
#include "sched/store/jobstore.h"

/*
 * schedlock_check_command
 *		Parse-check a job's SQL command (syntax only) and refuse what a job
 *		cannot run: an empty command and transaction control.
 */
void
schedlock_check_command(const char *command)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	List	   *parsetrees = NIL;
	ListCell   *lc;

	PG_TRY();
	{
		parsetrees = raw_parser(command, RAW_PARSE_DEFAULT);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("job command is not valid SQL: %s", edata->message),
				 edata->cursorpos > 0 ?
				 errdetail("The error is at character %d of the command.",
						   edata->cursorpos) : 0));
	}
	PG_END_TRY();

	if (parsetrees == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job command must contain at least one SQL statement")));
	foreach(lc, parsetrees)
	{
		RawStmt    *raw = lfirst_node(RawStmt, lc);

		if (IsA(raw->stmt, TransactionStmt))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("job command must not contain transaction control statements"),
					 errdetail("An atomic job runs in the transaction that claims it; a job with atomic => false runs each statement in a transaction of its own."),
					 errhint("Remove BEGIN, COMMIT, ROLLBACK and the like; a procedure called with CALL may commit when atomic => false.")));
	}
}

/*
 * schedlock_top_level_reason
 *		Why a command must run outside a transaction block, that is in a
 *		non-atomic job, or NULL when it may run in the claiming transaction.
 *		with_commits: also name CALL and DO, which may commit (pg_cron runs
 *		them at top level; an atomic job runs them where they cannot).  The
 *		command has passed schedlock_check_command, so it parses.
 */
const char *
schedlock_top_level_reason(const char *command, bool with_commits)
{
	List	   *parsetrees = raw_parser(command, RAW_PARSE_DEFAULT);
	ListCell   *lc;

	foreach(lc, parsetrees)
	{
		Node	   *stmt = lfirst_node(RawStmt, lc)->stmt;

		switch (nodeTag(stmt))
		{
			case T_VacuumStmt:
				if (((VacuumStmt *) stmt)->is_vacuumcmd)
					return "VACUUM cannot run inside a transaction block";
				break;
			case T_CallStmt:
				if (with_commits)
					return "a procedure called with CALL may commit";
				break;
			case T_DoStmt:
				if (with_commits)
					return "a DO block may commit";
				break;
			case T_IndexStmt:
				if (((IndexStmt *) stmt)->concurrent)
					return "CREATE INDEX CONCURRENTLY cannot run inside a transaction block";
				break;
			case T_ReindexStmt:
				{
					ReindexStmt *r = (ReindexStmt *) stmt;
					ListCell   *pc;

					if (r->kind == REINDEX_OBJECT_SYSTEM ||
						r->kind == REINDEX_OBJECT_DATABASE)
						return "REINDEX SYSTEM and REINDEX DATABASE cannot run inside a transaction block";
					foreach(pc, r->params)
					{
						DefElem    *opt = (DefElem *) lfirst(pc);

						if (strcmp(opt->defname, "concurrently") == 0)
							return "REINDEX CONCURRENTLY cannot run inside a transaction block";
					}
				}
				break;
			case T_DropStmt:
				if (((DropStmt *) stmt)->concurrent)
					return "DROP INDEX CONCURRENTLY cannot run inside a transaction block";
				break;
			case T_ClusterStmt:
				if (((ClusterStmt *) stmt)->relation == NULL)
					return "CLUSTER without a table cannot run inside a transaction block";
				break;
			case T_CreatedbStmt:
			case T_DropdbStmt:
				return "CREATE DATABASE and DROP DATABASE cannot run inside a transaction block";
			case T_CreateTableSpaceStmt:
			case T_DropTableSpaceStmt:
				return "CREATE TABLESPACE and DROP TABLESPACE cannot run inside a transaction block";
			case T_AlterSystemStmt:
				return "ALTER SYSTEM cannot run inside a transaction block";
			case T_CreateSubscriptionStmt:
			case T_AlterSubscriptionStmt:
			case T_DropSubscriptionStmt:
				return "subscription commands may not run inside a transaction block";
			default:
				break;
		}
	}
	return NULL;
}

/*
 * schedlock_resolve_run_as
 *		Check a run_as role name for a job of role owner.  The owner's own
 *		name means "run as the owner" and gives InvalidOid (run_as cleared);
 *		any other role may be given by superusers only, and must exist and
 *		be able to log in.
 */
Oid
schedlock_resolve_run_as(const char *rolename, Oid owner)
{
	HeapTuple	tup;
	Oid			roleid;
	bool		canlogin;

	roleid = get_role_oid(rolename, true);
	if (OidIsValid(roleid) && roleid == owner)
		return InvalidOid;
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to set run_as"),
				 errdetail("Only superusers may make a job run as another role; a job runs as the role that scheduled it."),
				 errhint("run_as => '%s' (the job's owner) clears run_as.",
						 GetUserNameFromId(owner, false))));
	if (!OidIsValid(roleid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" does not exist", rolename)));
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(roleid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for role %u", roleid);
	canlogin = ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin;
	ReleaseSysCache(tup);
	if (!canlogin)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("role \"%s\" cannot be used for run_as", rolename),
				 errdetail("The role does not have the LOGIN attribute.")));
	return roleid;
}

/*
 * interval_seconds
 *		An interval's length in seconds as EXTRACT(epoch FROM ...) counts it
 *		(a month is 30 days), the measure the workers and notify_api.c apply to
 *		timeout and retry_delay.
 */
static double
interval_seconds(Interval *iv)
{
	return DatumGetFloat8(DirectFunctionCall2(interval_part,
											  CStringGetTextDatum("epoch"),
											  IntervalPGetDatum(iv)));
}

/*
 * check_timing
 *		Refuse a timeout or retry_delay that a worker could not use: a
 *		timeout is at least 1 ms (the workers count whole milliseconds) and
 *		at most SCHEDLOCK_MAX_TIMEOUT_SECS; a retry_delay is not negative
 *		and at most SCHEDLOCK_MAX_RETRY_DELAY_SECS.  So no deadline or retry
 *		time computed from them can leave the range of timestamptz.
 */
static void
check_timing(const JobDef *def)
{
	if (def->timeout != NULL)
	{
		double		secs = interval_seconds(def->timeout);

		if (schedlock_interval_sign(def->timeout) <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("timeout must be greater than zero")));
		if (!(secs >= 0.001))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("timeout must be at least 1 millisecond"),
					 errdetail("Job timeouts are counted in whole milliseconds.")));
		if (!(secs <= SCHEDLOCK_MAX_TIMEOUT_SECS))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("timeout must be at most %d days",
							SCHEDLOCK_MAX_TIMEOUT_SECS / 86400),
					 errhint("Leave timeout out (NULL) for a job that may run as long as it takes.")));
	}
	if (def->retry_delay == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("retry_delay must not be null")));
	if (schedlock_interval_sign(def->retry_delay) < 0 ||
		interval_seconds(def->retry_delay) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retry_delay must not be negative")));
	if (!(interval_seconds(def->retry_delay) <= SCHEDLOCK_MAX_RETRY_DELAY_SECS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retry_delay must be at most 1 day"),
				 errdetail("Retry n of a slot waits retry_delay * 2^(n - 1), at least 1 second * 2^(n - 1) and at most 1 day.")));
}

/*
 * schedlock_settle_atomic
 *		An atomic job whose command cannot run inside a transaction block
 *		(VACUUM, CREATE INDEX CONCURRENTLY, ...) would fail every run.  When
 *		the caller asked for atomic => true in so many words (alter_job), it
 *		is refused; otherwise the job becomes non-atomic, with a NOTICE.
 */
void
schedlock_settle_atomic(const char *job_name, JobDef *def, bool atomic_given)
{
	const char *why;

	if (def->command == NULL || !def->atomic)
		return;
	schedlock_check_command(def->command);
	why = schedlock_top_level_reason(def->command, false);
	if (why == NULL)
		return;
	if (atomic_given)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job \"%s\" cannot be atomic", job_name),
				 errdetail("%s, and an atomic job runs its command in the transaction that claims the run.",
						   why),
				 errhint("Give atomic => false: each statement of the command then runs in a transaction of its own.")));
	def->atomic = false;
	ereport(NOTICE,
			(errmsg("job \"%s\" runs with atomic => false", job_name),
			 errdetail("%s; each statement of the command runs in a transaction of its own.",
					   why)));
}

/*
 * schedlock_refuse_schedule_as_name
 *		schedule_job(schedule, command) is pg_cron's two-argument
 *		cron.schedule; here it gives the schedule as the job's name and the
 *		command as its schedule.  Say so rather than complain about the
 *		schedule.  Called when neither command nor notify_channel is given.
 */
void
schedlock_refuse_schedule_as_name(const char *job_name, const char *schedule)
{
	SchedlockCronSchedule sched;

	if (!schedlock_cron_parse(job_name, &sched, NULL))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("job name \"%s\" is a cron schedule", job_name),
			 errdetail("schedule_job takes the job's name first, then its schedule and its command; pg_cron's two-argument cron.schedule(schedule, command) has no name."),
			 errhint("Name the job: schedlock.schedule_job('my_job', %s, %s).",
					 quote_literal_cstr(job_name),
					 quote_literal_cstr(schedule))));
}

/*
 * schedlock_validate_job
 *		Check a complete definition; parse its schedule into *sched.
 */
void
schedlock_validate_job(const char *job_name, JobDef *def, SchedlockCronSchedule *sched)
{
	SchedlockMisfire misfire;

	if (def->schedule == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("schedule must not be null")));
	/* a one-off job has no cron schedule: see schedlock_schedule_is_once */
	if (schedlock_schedule_is_once(def->schedule))
		memset(sched, 0, sizeof(*sched));
	else
		schedlock_cron_parse_or_error(def->schedule, sched);
	(void) schedlock_cron_lookup_timezone(def->timezone);

	if ((def->command == NULL) == (def->channel == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a job needs exactly one of command and notify_channel"),
				 errhint("Give command for a job that runs SQL, or notify_channel for a job that notifies listening applications.")));

	if (def->command != NULL)
	{
		if (def->has_payload)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("payload is only allowed with notify_channel")));
		schedlock_check_command(def->command);
	}
	else
	{
		const char *quoted = quote_identifier(def->channel);

		if (def->channel[0] == '\0' || strlen(def->channel) >= NAMEDATALEN ||
			strcmp(quoted, def->channel) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("notify_channel \"%s\" is not a valid channel name",
							def->channel),
					 errhint("Use a lower-case identifier that LISTEN accepts without quotes, shorter than %d bytes.",
							 NAMEDATALEN)));

		/*
		 * The notification the workers send is the JSON text of the job's
		 * name (a character takes at most 6 bytes escaped, as \u0001), ids,
		 * slot and attempt, never the payload: it always fits in NOTIFY's
		 * limit (BLCKSZ - NAMEDATALEN - 128 bytes in async.c), and the
		 * payload's size does not matter to it.
		 */
		StaticAssertStmt(SCHEDLOCK_MAX_NAME_LENGTH * 6 + 256 < BLCKSZ - NAMEDATALEN - 128,
						 "a job's notification must fit in NOTIFY's payload limit");
		if (def->has_payload)
		{
			char	   *json = DatumGetCString(DirectFunctionCall1(jsonb_out,
																   def->payload));
			size_t		len = strlen(json);

			if (len > SCHEDLOCK_MAX_PAYLOAD_LENGTH)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("payload is too large"),
						 errdetail("The payload takes %zu bytes as JSON text; a job's payload may take at most %d.",
								   len, SCHEDLOCK_MAX_PAYLOAD_LENGTH),
						 errhint("Store large data in a table of your own and put its key in the payload.")));
		}
	}

	if (def->max_attempts < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_attempts must be at least 1")));
	check_timing(def);
	if (!schedlock_misfire_parse(def->misfire, &misfire))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("misfire must be one of run_once, skip and run_all"),
				 errdetail("run_once makes one catch-up run, skip goes on with the next future slot, run_all runs every missed slot (at most %d).",
						   SCHEDLOCK_RUN_ALL_LIMIT)));
	if (schedlock_schedule_is_once(def->schedule) &&
		strcmp(def->misfire, "run_once") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("misfire of a one-off job must be run_once"),
				 errdetail("A one-off job runs once, as soon as a worker can after its instant, however late.")));
}

/*
 * schedlock_first_slot
 *		The job's first slot strictly after now; false when there is none
 *		(@reboot jobs wait for the next start of dispatch).
 */
bool
schedlock_first_slot(const SchedlockCronSchedule *sched, const char *timezone,
					 TimestampTz now, TimestampTz *slot)
{
	if (schedlock_cron_is_reboot(sched))
		return false;
	return schedlock_cron_next_time(sched, now,
									schedlock_cron_lookup_timezone(timezone),
									slot);
}

/*
 * One-off jobs and next_run_at
 *
 * A one-off job is stored with the schedule SCHEDLOCK_ONCE_SCHEDULE
 * ("@once", which the cron engine does not accept, so no schedule_job call
 * can make one by accident) and its instant as next_slot.  The workers run
 * that slot like any other (retries, overlap, misfire: a late instant runs
 * once, as soon as a worker can) and then leave next_slot NULL: the job has
 * ended, and stays, with its history, until it is unscheduled, scheduled
 * again, or given a next_run_at.  An instant in the past means now.
 */

/*
 * schedlock_schedule_is_once
 *		Whether a job's schedule is that of a one-off job ("@once", in any
 *		case).
 */
bool
schedlock_schedule_is_once(const char *schedule)
{
	return schedule != NULL &&
		pg_strcasecmp(schedule, SCHEDLOCK_ONCE_SCHEDULE) == 0;
}

/*
 * schedlock_check_instant
 *		Check the instant of a one-off job (run_at) or the instant a job's
 *		next run is moved to (next_run_at), named argname, and return the
 *		slot to store: an instant in the past means now.  Refuses (22023)
 *		infinity and instants more than SCHEDLOCK_MAX_AHEAD_DAYS after now.
 *		NULL is the caller's business.
 */
TimestampTz
schedlock_check_instant(TimestampTz t, TimestampTz now, const char *argname)
{
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a finite timestamp", argname),
				 errhint("To keep a job from running, disable it with schedlock.alter_job(..., enabled => false) or remove it with schedlock.unschedule_job().")));
	if (t > now && t - now > (TimestampTz) SCHEDLOCK_MAX_AHEAD_DAYS * USECS_PER_DAY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at most %d years from now",
						argname, SCHEDLOCK_MAX_AHEAD_DAYS / 365),
				 errdetail("%s is %s.", argname, timestamptz_to_str(t))));
	return Max(t, now);
}

/*
 * schedlock_refuse_once_schedule
 *		schedule_job does not make one-off jobs: "@once" needs an instant,
 *		which schedule_once takes.
 */
void
schedlock_refuse_once_schedule(const JobDef *def)
{
	if (schedlock_schedule_is_once(def->schedule))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("schedule \"%s\" needs an instant", def->schedule),
				 errdetail("A one-off job runs once, at an instant."),
				 errhint("Use schedlock.schedule_once(job_name => ..., run_at => ..., command => ...).")));
}

PG_FUNCTION_INFO_V1(schedlock_jobs_check_values);
PGDLLEXPORT Datum schedlock_jobs_check_values(PG_FUNCTION_ARGS);

/*
 * column_number
 *		The number of schedlock.jobs' column name.
 */
static int
column_number(TupleDesc desc, const char *name)
{
	int			attnum = SPI_fnumber(desc, name);

	if (attnum <= 0)
		elog(ERROR, "schedlock.jobs has no column \"%s\"", name);
	return attnum;
}

/*
 * schedlock_jobs_check_values
 *		BEFORE INSERT OR UPDATE OF the columns it reads, on schedlock.jobs:
 *		the rules every job row keeps, also one written by hand.  The job API
 *		checks them first, with its own messages (schedlock_validate_job);
 *		these are for a row written directly.
 *
 * They are a trigger rather than CHECK constraints because PostgreSQL
 * checks every CHECK constraint of a table at every UPDATE of a row,
 * preparing each of them again for every statement, and the scheduler
 * updates a job's row at every run (next slot, statistics) without
 * writing any of these columns (measured in docs/benchmarks.md).  The
 * trigger fires only when a statement writes one of them.
 */
Datum
schedlock_jobs_check_values(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	HeapTuple	tuple;
	int			attnum;
	char	   *value;
	char	   *command;
	char	   *channel;
	bool		isnull;
	Datum		d;
	SchedlockMisfire misfire;
	SchedlockRecordRuns record_runs;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) ||
		TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		elog(ERROR, "schedlock_jobs_check_values must be a BEFORE INSERT OR UPDATE row trigger");

	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;

	attnum = column_number(desc, "job_name");
	value = SPI_getvalue(tuple, desc, attnum);
	if (value != NULL &&
		(value[0] == '\0' ||
		 pg_mbstrlen(value) > SCHEDLOCK_MAX_NAME_LENGTH))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("a job's name must be 1 to %d characters long",
						SCHEDLOCK_MAX_NAME_LENGTH),
				 errtablecol(rel, attnum)));

	attnum = column_number(desc, "max_attempts");
	d = SPI_getbinval(tuple, desc, attnum, &isnull);
	if (!isnull && DatumGetInt32(d) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("max_attempts must be at least 1"),
				 errtablecol(rel, attnum)));

	attnum = column_number(desc, "misfire");
	value = SPI_getvalue(tuple, desc, attnum);
	if (value != NULL && !schedlock_misfire_parse(value, &misfire))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("misfire must be one of run_once, skip and run_all"),
				 errtablecol(rel, attnum)));

	attnum = column_number(desc, "record_runs");
	value = SPI_getvalue(tuple, desc, attnum);
	if (value != NULL && !schedlock_record_runs_parse(value, &record_runs))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("record_runs must be all, failures or null"),
				 errtablecol(rel, attnum)));

	command = SPI_getvalue(tuple, desc, column_number(desc, "command"));
	channel = SPI_getvalue(tuple, desc, column_number(desc, "notify_channel"));
	if ((command == NULL) == (channel == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("a job needs exactly one of command and notify_channel"),
				 errtable(rel)));

	return PointerGetDatum(tuple);
}

PG_FUNCTION_INFO_V1(schedlock_job_run_status_valid);
PGDLLEXPORT Datum schedlock_job_run_status_valid(PG_FUNCTION_ARGS);

/*
 * schedlock_job_run_status_valid
 *		Whether status is one a run may have (run_status.h): the CHECK
 *		constraint job_runs_status_check of schedlock.job_runs calls it.
 *
 * A function rather than "status IN (...)" because PostgreSQL reads a
 * CHECK constraint's expression back from its text and prepares it again
 * for every statement that writes the table, and every run inserts or
 * updates a row of job_runs: a function call is read and prepared in a
 * fraction of the time a list of eight strings takes (measured in
 * docs/benchmarks.md).
 */
Datum
schedlock_job_run_status_valid(PG_FUNCTION_ARGS)
{
	text	   *status = PG_GETARG_TEXT_PP(0);
	SchedlockRunStatus parsed;

	PG_RETURN_BOOL(schedlock_run_status_parse(VARDATA_ANY(status),
											  VARSIZE_ANY_EXHDR(status),
											  &parsed));
}
