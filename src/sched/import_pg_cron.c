/*-------------------------------------------------------------------------
 *
 * import_pg_cron.c
 *	  schedlock_import_pg_cron(): pg_cron's jobs become schedlock jobs.
 *
 * The function reads cron.job of the pg_cron extension installed in the
 * current database (pg_cron keeps every job of the cluster there, with the
 * database each runs in) and creates one schedlock job per pg_cron job of
 * this database: same name (unnamed jobs get "pg_cron_<jobid>"), schedule
 * and command, owned by the job's username, enabled when the pg_cron job is
 * active, in the zone pg_cron reads schedules in (cron.timezone; GMT before
 * pg_cron 1.5).  Commands that must run outside a transaction block (VACUUM,
 * CREATE INDEX CONCURRENTLY, ...) or may commit (CALL, DO) become non-atomic
 * jobs.  It returns a row per pg_cron job: what it created, or why it did
 * not, and what the caller still has to do so that pg_cron and schedlock do
 * not both run the job.  With deactivate => true it sets the pg_cron job
 * inactive in the same transaction; with dry_run => true (the default) it
 * does everything in subtransactions it rolls back, so the plan is exactly
 * what a real import would do.
 *
 * Jobs that cannot be created here are reported, not imported: jobs of
 * other databases (a schedlock job runs in the database it is scheduled in;
 * the row gives the schedule_job call to make there), jobs that connect to
 * another server, jobs of roles that do not exist, schedules and commands
 * schedlock refuses, and names an unrelated schedlock job already has.
 * Where pg_cron read a schedule differently (wrap-around ranges, @yearly in
 * 1.6: see schedlock_cron_parse_dialect) the job is imported disabled, with
 * both meanings in the row.
 *
 * Who may call it: EXECUTE is not granted to PUBLIC.  A superuser imports
 * every job it can see; the job is created as its owner (the user id is
 * switched to that role around schedule_job, with the security-restricted
 * flag), as a superuser may do with schedule_job's run_as.  Any other role
 * granted EXECUTE imports only its own jobs (pg_cron's row-level security
 * shows it no others) and must itself be allowed to call schedule_job; to
 * deactivate, it needs EXECUTE on cron.alter_job.  The function runs as the
 * caller (not SECURITY DEFINER); its own statements run with search_path
 * pinned to pg_catalog, pg_temp and name every operator
 * OPERATOR(pg_catalog.x).  It never runs a job's command.
 *
 * IDENTIFICATION
 *	  src/sched/import_pg_cron.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "base/kept_query.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "postmaster/postmaster.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/primary.h"
#include "base/subxact.h"
#include "cron/cron.h"
#include "job_api.h"
#include "job_def.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"

PG_FUNCTION_INFO_V1(schedlock_import_pg_cron);

PGDLLEXPORT Datum schedlock_import_pg_cron(PG_FUNCTION_ARGS);

/* Columns of the result. */
enum
{
	COL_CRON_JOBID = 0,
	COL_CRON_JOBNAME,
	COL_USERNAME,
	COL_DATABASE,
	COL_SCHEDULE,
	COL_ACTION,
	COL_JOB_NAME,
	COL_JOB_ID,
	COL_ATOMIC,
	COL_ENABLED,
	COL_TIMEZONE,
	COL_DETAIL,
	COL_TODO,
	NUM_COLS
};

/* A row of cron.job. */
typedef struct PgCronJob
{
	int64		jobid;
	char	   *jobname;		/* NULL: unnamed */
	char	   *schedule;
	char	   *command;
	char	   *nodename;
	int32		nodeport;
	char	   *database;
	char	   *username;
	bool		active;
} PgCronJob;

/* What the import needs to know once, for every job. */
typedef struct ImportContext
{
	bool		dry_run;
	bool		deactivate;
	bool		is_superuser;
	SchedlockCronDialect dialect;	/* how this pg_cron reads schedules */
	const char *pg_cron_version;	/* extversion of pg_cron */
	const char *timezone;		/* the zone pg_cron reads schedules in */
	const char *database;		/* the current database */
	Oid			schedule_job_oid;	/* schedlock's schedule_job() */
	FmgrInfo	schedule_job;
	int			nargs;			/* its arguments, by name */
	char	  **argnames;
} ImportContext;

/* One result row being built. */
typedef struct ImportRow
{
	const char *action;			/* create, created, exists, skip */
	char	   *job_name;
	int64		job_id;			/* 0: none */
	bool		has_def;		/* atomic, enabled, timezone are set */
	bool		atomic;
	bool		enabled;
	StringInfoData detail;
	StringInfoData todo;
} ImportRow;

/*
 * format_mask
 *		Append the values of a mask (bits min..max) as "0-6,13-15", or
 *		"none".
 */
static void
format_mask(StringInfo buf, uint64 mask, int min, int max)
{
	int			v = min;
	bool		any = false;

	while (v <= max)
	{
		int			end;

		if (!(mask & (UINT64CONST(1) << v)))
		{
			v++;
			continue;
		}
		end = v;
		while (end + 1 <= max && (mask & (UINT64CONST(1) << (end + 1))))
			end++;
		appendStringInfo(buf, "%s%d", any ? "," : "", v);
		if (end > v)
			appendStringInfo(buf, "-%d", end);
		any = true;
		v = end + 1;
	}
	if (!any)
		appendStringInfoString(buf, "none");
}

/*
 * compare_with_pg_cron
 *		Whether pg_cron read the schedule as schedlock does.  When not, the
 *		difference goes to detail (field by field) and false is returned.
 *		A schedule schedlock refuses counts as the same here (schedule_job
 *		reports it).
 */
static bool
compare_with_pg_cron(const ImportContext *ic, const char *schedule,
					 StringInfo detail)
{
	SchedlockCronSchedule mine;
	SchedlockCronSchedule theirs;
	int64		next;
	bool		never;
	static const struct
	{
		const char *name;
		int			min;
		int			max;
	}			fields[5] = {
		{"minutes", 0, 59}, {"hours", 0, 23}, {"days of the month", 1, 31},
		{"months", 1, 12}, {"days of the week", 0, 6}
	};
	uint64		a[5];
	uint64		b[5];
	int			i;

	if (!schedlock_cron_parse(schedule, &mine, NULL) ||
		!schedlock_cron_parse_dialect(schedule, ic->dialect, &theirs))
		return true;
	a[0] = mine.minutes;
	a[1] = mine.hours;
	a[2] = mine.days;
	a[3] = mine.months;
	a[4] = mine.weekdays;
	b[0] = theirs.minutes;
	b[1] = theirs.hours;
	b[2] = theirs.days;
	b[3] = theirs.months;
	b[4] = theirs.weekdays;
	if (memcmp(a, b, sizeof(a)) == 0)
		return true;

	never = !schedlock_cron_next_utc(&theirs, (int64) time(NULL), &next);
	appendStringInfo(detail, "pg_cron %s %s this schedule:", ic->pg_cron_version,
					 never ? "never ran" : "ran only part of");
	for (i = 0; i < 5; i++)
	{
		if (a[i] == b[i])
			continue;
		appendStringInfo(detail, " %s ", fields[i].name);
		format_mask(detail, b[i], fields[i].min, fields[i].max);
		appendStringInfoString(detail, " there, ");
		format_mask(detail, a[i], fields[i].min, fields[i].max);
		appendStringInfoString(detail, " in schedlock;");
	}
	appendStringInfoString(detail,
						   " imported disabled: check the times with cron_next_runs() and enable the job with schedlock.alter_job(..., enabled => true).");
	return false;
}

/*
 * is_interval
 *		Whether a schedule is of the "N seconds" form.
 */
static bool
is_interval(const char *schedule)
{
	SchedlockCronSchedule s;

	return schedlock_cron_parse(schedule, &s, NULL) &&
		(s.flags & SCHEDLOCK_CRON_INTERVAL) != 0;
}

/*
 * node_is_local
 *		Whether pg_cron runs the job in this server: with background workers
 *		it ignores nodename and nodeport; over libpq it connects to them.
 */
static bool
node_is_local(const PgCronJob *job)
{
	const char *bgw = GetConfigOption("cron.use_background_workers", true, false);
	const char *host = GetConfigOption("cron.host", true, false);

	if (bgw != NULL && strcmp(bgw, "on") == 0)
		return true;
	if (job->nodeport != PostPortNumber)
		return false;
	if (job->nodename == NULL || job->nodename[0] == '\0' ||
		job->nodename[0] == '/' ||
		pg_strcasecmp(job->nodename, "localhost") == 0 ||
		strcmp(job->nodename, "127.0.0.1") == 0 ||
		strcmp(job->nodename, "::1") == 0)
		return true;
	return host != NULL && strcmp(host, job->nodename) == 0;
}

/*
 * find_schedule_job
 *		Look up the extension's schedule_job() (in schedlock since 1.2, in
 *		the extension's schema before) and the names of its arguments, so
 *		that it can be called as another role without that role's EXECUTE
 *		privilege (see the file header).
 */
static void
find_schedule_job(ImportContext *ic, Oid extension)
{
	CatCList   *list;
	int			i;
	HeapTuple	tup;
	Oid		   *types;
	char		modes_dummy;
	char	   *modes = &modes_dummy;

	ic->schedule_job_oid = InvalidOid;
	list = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum("schedule_job"));
	for (i = 0; i < list->n_members; i++)
	{
		HeapTuple	ptup = &list->members[i]->tuple;
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(ptup);
		bool		isnull;
		Datum		src;

		if (proc->prolang != ClanguageId ||
			getExtensionOfObject(ProcedureRelationId, proc->oid) != extension)
			continue;
		src = SysCacheGetAttr(PROCNAMEARGSNSP, ptup, Anum_pg_proc_prosrc, &isnull);
		if (!isnull && strcmp(TextDatumGetCString(src), "schedlock_schedule_job") == 0)
			ic->schedule_job_oid = proc->oid;
	}
	ReleaseSysCacheList(list);
	if (!OidIsValid(ic->schedule_job_oid))
		elog(ERROR, "function schedule_job of extension schedlock not found");

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(ic->schedule_job_oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", ic->schedule_job_oid);
	ic->nargs = get_func_arg_info(tup, &types, &ic->argnames, &modes);
	ReleaseSysCache(tup);
	if (ic->argnames == NULL)
		elog(ERROR, "function schedule_job has no argument names");
	fmgr_info(ic->schedule_job_oid, &ic->schedule_job);
}

/*
 * set_arg
 *		Set the argument of schedule_job of that name.
 */
static void
set_arg(const ImportContext *ic, FunctionCallInfo fcinfo, const char *name,
		Datum value)
{
	int			i;

	for (i = 0; i < ic->nargs; i++)
	{
		if (ic->argnames[i] != NULL && strcmp(ic->argnames[i], name) == 0)
		{
			fcinfo->args[i].value = value;
			fcinfo->args[i].isnull = false;
			return;
		}
	}
	elog(ERROR, "function schedule_job has no argument \"%s\"", name);
}

/*
 * create_job
 *		Call schedule_job() as role owner for the job; returns the job id.
 *		The user id is switched with the security-restricted flag:
 *		schedule_job runs no code of the role, and nothing may escape the
 *		switch.
 */
static int64
create_job(const ImportContext *ic, Oid owner, const char *job_name,
		   const PgCronJob *job, bool atomic, bool enabled)
{
	FunctionCallInfo fcinfo = palloc0(SizeForFunctionCallInfo(ic->nargs));
	FmgrInfo	flinfo = ic->schedule_job;
	Oid			save_uid;
	int			save_sec;
	Datum		result;
	int			i;

	InitFunctionCallInfoData(*fcinfo, &flinfo, ic->nargs, InvalidOid, NULL, NULL);
	for (i = 0; i < ic->nargs; i++)
		fcinfo->args[i].isnull = true;
	set_arg(ic, fcinfo, "job_name", CStringGetTextDatum(job_name));
	set_arg(ic, fcinfo, "schedule", CStringGetTextDatum(job->schedule));
	set_arg(ic, fcinfo, "command", CStringGetTextDatum(job->command));
	set_arg(ic, fcinfo, "timezone", CStringGetTextDatum(ic->timezone));
	set_arg(ic, fcinfo, "max_attempts", Int32GetDatum(1));
	set_arg(ic, fcinfo, "retry_delay",
			DirectFunctionCall3(interval_in, CStringGetDatum("1 minute"),
								ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
	set_arg(ic, fcinfo, "misfire", CStringGetTextDatum("run_once"));
	set_arg(ic, fcinfo, "atomic", BoolGetDatum(atomic));
	set_arg(ic, fcinfo, "enabled", BoolGetDatum(enabled));

	GetUserIdAndSecContext(&save_uid, &save_sec);
	SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	result = FunctionCallInvoke(fcinfo);
	SetUserIdAndSecContext(save_uid, save_sec);
	if (fcinfo->isnull)
		elog(ERROR, "schedule_job returned NULL");
	return DatumGetInt64(result);
}

/*
 * existing_job
 *		The schedlock job of owner named job_name (0: none), and whether it
 *		has the schedule, command and zone the import would give it
 *		(schedlock_find_job_like).  Caller is connected to SPI.
 */
static int64
existing_job(const ImportContext *ic, Oid owner, const char *job_name,
			 const PgCronJob *job, bool *same)
{
	return schedlock_find_job_like(owner, job_name, job->schedule,
								   job->command, ic->timezone, same);
}

/*
 * deactivate_pg_cron_job
 *		Set the pg_cron job inactive: a superuser updates cron.job (pg_cron's
 *		trigger on it refreshes its scheduler), any other role goes through
 *		cron.alter_job, which checks that the job is its own.  Caller is
 *		connected to SPI.
 */
static void
deactivate_pg_cron_job(const ImportContext *ic, int64 jobid)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1];
	int			nestlevel;
	int			rc;

	values[0] = Int64GetDatum(jobid);
	nestlevel = schedlock_trusted_path_begin();
	if (ic->is_superuser)
		rc = SPI_execute_with_args("UPDATE cron.job SET active = false "
								   "WHERE jobid OPERATOR(pg_catalog.=) $1",
								   1, types, values, NULL, false, 0);
	else
		rc = SPI_execute_with_args("SELECT cron.alter_job(job_id => $1, active => false)",
								   1, types, values, NULL, false, 0);
	if (rc < 0)
		elog(ERROR, "could not deactivate pg_cron job " INT64_FORMAT, jobid);
	schedlock_trusted_path_end(nestlevel);
}

/*
 * schedule_job_call
 *		Append the schedule_job() call that creates the job by hand.
 */
static void
schedule_job_call(StringInfo buf, const ImportContext *ic, const char *job_name,
				  const PgCronJob *job, bool atomic, bool enabled)
{
	appendStringInfo(buf, "SELECT %s.schedule_job(job_name => %s, schedule => %s, command => %s, timezone => %s",
					 quote_identifier(get_namespace_name(get_func_namespace(ic->schedule_job_oid))),
					 quote_literal_cstr(job_name), quote_literal_cstr(job->schedule),
					 quote_literal_cstr(job->command), quote_literal_cstr(ic->timezone));
	if (!atomic)
		appendStringInfoString(buf, ", atomic => false");
	if (!enabled)
		appendStringInfoString(buf, ", enabled => false");
	appendStringInfoString(buf, ");");
}

/*
 * report_raced
 *		The row of a pg_cron job whose name another session gave a
 *		schedlock job while import_one was creating it (see created_here);
 *		import_one's subtransaction has been rolled back, so that job is as
 *		that session left it.  Looked up again: the same definition (another
 *		import) is reported as existing, another one as skipped.
 */
static void
report_raced(const ImportContext *ic, const PgCronJob *job, Oid owner,
			 ImportRow *row)
{
	bool		same = false;
	int64		found;

	SPI_connect();
	found = existing_job(ic, owner, row->job_name, job, &same);
	SPI_finish();
	resetStringInfo(&row->detail);
	resetStringInfo(&row->todo);
	if (found != 0 && same)
	{
		row->action = "exists";
		row->job_id = found;
		appendStringInfoString(&row->detail,
							   "An identical schedlock job was created by another session (another import) meanwhile; nothing created.");
		appendStringInfo(&row->todo,
						 "SELECT cron.unschedule(" INT64_FORMAT ");%s", job->jobid,
						 job->active ? " -- until then pg_cron runs the job too" : "");
		return;
	}
	row->action = "skip";
	row->job_id = 0;
	appendStringInfo(&row->detail,
					 "Another session scheduled a schedlock job named \"%s\" for role \"%s\" during the import, with another schedule, command or time zone; it was left as it is.",
					 row->job_name, job->username);
	appendStringInfo(&row->todo,
					 "Rename the pg_cron job (cron.alter_job cannot; unschedule it and schedule it again under another name) or unschedule the schedlock job, and import again.");
}

/*
 * import_one
 *		Import (or plan) one pg_cron job into *row.  Errors of the job's
 *		own (a schedule or command schedlock refuses, a failed deactivation)
 *		are caught in a subtransaction and reported in the row; dry runs
 *		roll the subtransaction back.
 */
static void
import_one(const ImportContext *ic, const PgCronJob *job, ImportRow *row)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	SchedlockSubxact sx;
	Oid			owner;
	volatile bool raced = false;
	const char *why_top_level = NULL;
	bool		same_meaning = true;
	StringInfoData meaning;

	row->job_name = job->jobname != NULL ? pstrdup(job->jobname) :
		psprintf("pg_cron_" INT64_FORMAT, job->jobid);
	row->job_id = 0;
	row->has_def = false;
	row->action = "skip";
	initStringInfo(&row->detail);
	initStringInfo(&row->todo);
	initStringInfo(&meaning);

	/* what the job would be, when its command parses */
	PG_TRY();
	{
		schedlock_check_command(job->command);
		why_top_level = schedlock_top_level_reason(job->command, true);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/*
		 * pure parsing, which holds nothing to release: schedule_job reports
		 * the error below, in the subtransaction; a cancel goes on up
		 */
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			PG_RE_THROW();
		FlushErrorState();
		FreeErrorData(edata);
		why_top_level = NULL;
	}
	PG_END_TRY();
	same_meaning = compare_with_pg_cron(ic, job->schedule, &meaning);
	row->atomic = (why_top_level == NULL);
	row->enabled = job->active && same_meaning;
	row->has_def = true;

	if (strcmp(job->database, ic->database) != 0)
	{
		appendStringInfo(&row->detail,
						 "The job runs in database \"%s\"; schedlock runs a job in the database it is scheduled in, and this function creates jobs in this database only.",
						 job->database);
		appendStringInfo(&row->todo, "In database \"%s\" (CREATE EXTENSION schedlock there), as role \"%s\": ",
						 job->database, job->username);
		schedule_job_call(&row->todo, ic, row->job_name, job, row->atomic, row->enabled);
		appendStringInfo(&row->todo, " Then here: SELECT cron.unschedule(" INT64_FORMAT ");",
						 job->jobid);
		return;
	}
	if (!node_is_local(job))
	{
		appendStringInfo(&row->detail,
						 "pg_cron runs the job over a connection to host \"%s\" port %d, which is not this server as far as schedlock can tell.",
						 job->nodename ? job->nodename : "", job->nodeport);
		appendStringInfoString(&row->todo,
							   "Schedule it with schedlock.schedule_job() in the database of the server it runs in, or leave it in pg_cron.");
		return;
	}
	owner = get_role_oid(job->username, true);
	if (!OidIsValid(owner))
	{
		appendStringInfo(&row->detail, "Role \"%s\" does not exist.", job->username);
		appendStringInfo(&row->todo,
						 "Create the role, or give the job another owner with cron.alter_job(" INT64_FORMAT ", username => ...), and import again.",
						 job->jobid);
		return;
	}
	if (!ic->is_superuser && owner != GetUserId())
	{
		appendStringInfo(&row->detail,
						 "The job belongs to role \"%s\"; only a superuser imports the jobs of other roles.",
						 job->username);
		appendStringInfo(&row->todo, "Import it as role \"%s\" or as a superuser.",
						 job->username);
		return;
	}

	schedlock_subxact_begin(&sx);
	PG_TRY();
	{
		bool		same = false;
		int64		found;

		SPI_connect();
		found = existing_job(ic, owner, row->job_name, job, &same);
		if (found != 0 && !same)
		{
			appendStringInfo(&row->detail,
							 "Role \"%s\" already has a schedlock job named \"%s\" (job_id " INT64_FORMAT ") with another schedule, command or time zone.",
							 job->username, row->job_name, found);
			appendStringInfo(&row->todo,
							 "Rename the pg_cron job (cron.alter_job cannot; unschedule it and schedule it again under another name) or unschedule the schedlock job, and import again.");
		}
		else
		{
			if (found != 0)
			{
				row->action = "exists";
				row->job_id = found;
				appendStringInfoString(&row->detail, "An identical schedlock job exists (imported before); nothing created.");
			}
			else
			{
				MemoryContextSwitchTo(oldcxt);
				row->job_id = create_job(ic, owner, row->job_name, job,
										 row->atomic, row->enabled);
				/* another session's job of that name: undone, reported */
				if (!schedlock_job_created_here(row->job_id))
				{
					raced = true;
					ereport(ERROR,
							(errcode(ERRCODE_DUPLICATE_OBJECT),
							 errmsg("job \"%s\" was scheduled by another session during the import",
									row->job_name)));
				}
				row->action = ic->dry_run ? "create" : "created";
			}
			if (job->jobname == NULL)
				appendStringInfo(&row->detail, "%sThe pg_cron job has no name: named \"%s\".",
								 row->detail.len ? " " : "", row->job_name);
			if (why_top_level != NULL)
				appendStringInfo(&row->detail, "%sNon-atomic: %s.",
								 row->detail.len ? " " : "", why_top_level);
			if (meaning.len > 0)
				appendStringInfo(&row->detail, "%s%s", row->detail.len ? " " : "",
								 meaning.data);
			else if (!job->active)
				appendStringInfo(&row->detail, "%sThe pg_cron job is inactive: imported disabled.",
								 row->detail.len ? " " : "");
			if (is_interval(job->schedule))
				appendStringInfo(&row->detail,
								 "%spg_cron ran it N seconds after its previous start; schedlock runs it at the multiples of N seconds since 1970-01-01 00:00 UTC: same period, another phase.",
								 row->detail.len ? " " : "");

			if (ic->deactivate && job->active)
			{
				if (!ic->dry_run)
					deactivate_pg_cron_job(ic, job->jobid);
				appendStringInfo(&row->todo,
								 "None: the pg_cron job %s inactive (SELECT cron.unschedule(" INT64_FORMAT ") removes it).",
								 ic->dry_run ? "would be set" : "is now", job->jobid);
			}
			else if (job->active)
				appendStringInfo(&row->todo,
								 "SELECT cron.unschedule(" INT64_FORMAT "); -- until then pg_cron runs the job too",
								 job->jobid);
			else
				appendStringInfo(&row->todo,
								 "SELECT cron.unschedule(" INT64_FORMAT "); -- optional: the pg_cron job is inactive",
								 job->jobid);
		}
		SPI_finish();
		/* a dry run undoes what it created */
		schedlock_subxact_end(&sx, !ic->dry_run);
		if (ic->dry_run)
			row->job_id = row->action[0] == 'e' ? row->job_id : 0;
	}
	PG_CATCH();
	{
		ErrorData  *edata = schedlock_subxact_abort(&sx);

		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		if (raced)
		{
			report_raced(ic, job, owner, row);
			FreeErrorData(edata);
			return;
		}

		row->action = "skip";
		row->job_id = 0;
		resetStringInfo(&row->detail);
		resetStringInfo(&row->todo);
		appendStringInfo(&row->detail, "%s%s%s", edata->message,
						 edata->detail ? ": " : ".", edata->detail ? edata->detail : "");
		appendStringInfoString(&row->todo,
							   "Change the pg_cron job so that schedlock accepts it (cron.alter_job) and import again, or leave it in pg_cron; nothing was changed for it.");
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * read_pg_cron_jobs
 *		The rows of cron.job the caller may see (pg_cron's row-level
 *		security shows a role that is not a superuser its own jobs), in
 *		jobid order, optionally only those listed.  Fills *njobs.
 */
static PgCronJob *
read_pg_cron_jobs(Datum jobids, bool jobids_null, int *njobs)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];
	char		nulls[1];
	int			nestlevel;
	PgCronJob  *jobs;
	uint64		i;

	values[0] = jobids;
	nulls[0] = jobids_null ? 'n' : ' ';
	SPI_connect();
	nestlevel = schedlock_trusted_path_begin();
	if (SPI_execute_with_args("SELECT j.jobid, j.jobname::pg_catalog.text, j.schedule, "
							  "  j.command, j.nodename, j.nodeport, j.database, "
							  "  j.username, j.active "
							  "FROM cron.job j "
							  "WHERE $1 IS NULL OR j.jobid OPERATOR(pg_catalog.=) ANY ($1) "
							  "ORDER BY j.jobid",
							  1, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read cron.job");
	schedlock_trusted_path_end(nestlevel);

	jobs = MemoryContextAllocZero(cxt, sizeof(PgCronJob) * (SPI_processed + 1));
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *s;

#define COPY_TEXT(n) ((s = SPI_getvalue(tup, desc, (n))) ? MemoryContextStrdup(cxt, s) : NULL)
		jobs[i].jobid = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		jobs[i].jobname = COPY_TEXT(2);
		jobs[i].schedule = COPY_TEXT(3);
		jobs[i].command = COPY_TEXT(4);
		jobs[i].nodename = COPY_TEXT(5);
		jobs[i].nodeport = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
		if (isnull)
			jobs[i].nodeport = PostPortNumber;
		jobs[i].database = COPY_TEXT(7);
		jobs[i].username = COPY_TEXT(8);
		jobs[i].active = DatumGetBool(SPI_getbinval(tup, desc, 9, &isnull));
		if (isnull)
			jobs[i].active = true;
#undef COPY_TEXT
		if (jobs[i].schedule == NULL)
			jobs[i].schedule = MemoryContextStrdup(cxt, "");
		if (jobs[i].command == NULL)
			jobs[i].command = MemoryContextStrdup(cxt, "");
		if (jobs[i].database == NULL)
			jobs[i].database = MemoryContextStrdup(cxt, "");
		if (jobs[i].username == NULL)
			jobs[i].username = MemoryContextStrdup(cxt, "");
	}
	*njobs = (int) SPI_processed;
	SPI_finish();
	return jobs;
}

/*
 * pg_cron_version
 *		extversion of the pg_cron extension of this database ("1.4-1",
 *		"1.5", "1.6").
 */
static char *
pg_cron_version(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *version = NULL;
	int			nestlevel;

	SPI_connect();
	nestlevel = schedlock_trusted_path_begin();
	if (SPI_execute("SELECT e.extversion FROM pg_catalog.pg_extension e "
					"WHERE e.extname OPERATOR(pg_catalog.=) 'pg_cron'",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			version = MemoryContextStrdup(cxt, v);
	}
	schedlock_trusted_path_end(nestlevel);
	SPI_finish();
	return version != NULL ? version : pstrdup("?");
}

/*
 * schedlock_import_pg_cron
 *		SQL: schedlock_import_pg_cron(dry_run boolean DEFAULT true,
 *		deactivate boolean DEFAULT false, jobids bigint[] DEFAULT NULL)
 *		-> SETOF (cron_jobid, cron_jobname, username, database, schedule,
 *		action, job_name, job_id, atomic, enabled, timezone, detail, todo)
 */
Datum
schedlock_import_pg_cron(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ImportContext ic;
	PgCronJob  *jobs;
	int			njobs;
	int			i;
	int			major = 0;
	int			minor = 0;
	const char *zone;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("dry_run and deactivate must not be null")));
	schedlock_require_primary("schedlock_import_pg_cron");
	if (!OidIsValid(get_extension_oid("pg_cron", true)))
	{
		const char *dbname = GetConfigOption("cron.database_name", true, false);

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"pg_cron\" is not installed in this database"),
				 errdetail("pg_cron keeps the jobs of every database in cron.job of the one database it is installed in."),
				 dbname != NULL && dbname[0] != '\0' ?
				 errhint("Call schedlock_import_pg_cron() in database \"%s\" (cron.database_name).",
						 dbname) :
				 errhint("Call schedlock_import_pg_cron() in the database pg_cron is installed in.")));
	}

	memset(&ic, 0, sizeof(ic));
	ic.dry_run = PG_GETARG_BOOL(0);
	ic.deactivate = PG_GETARG_BOOL(1);
	ic.is_superuser = superuser();
	ic.database = get_database_name(MyDatabaseId);
	/* schedule_job of the extension this function belongs to */
	find_schedule_job(&ic, getExtensionOfObject(ProcedureRelationId,
												fcinfo->flinfo->fn_oid));
	if (!ic.is_superuser &&
		(!DatumGetBool(DirectFunctionCall2(has_function_privilege_id,
										   ObjectIdGetDatum(ic.schedule_job_oid),
										   CStringGetTextDatum("EXECUTE"))) ||
		 !schedlock_job_api_allowed(GetUserId())))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to import pg_cron jobs"),
				 errdetail("A role that is not a superuser imports its own pg_cron jobs, and needs the job functions for that."),
				 errhint("A superuser grants them with one statement: GRANT INSERT ON schedlock.jobs TO %s;",
						 quote_identifier(GetUserNameFromId(GetUserId(), false)))));

	ic.pg_cron_version = pg_cron_version();
	if (sscanf(ic.pg_cron_version, "%d.%d", &major, &minor) == 2 &&
		(major > 1 || (major == 1 && minor >= 6)))
		ic.dialect = SCHEDLOCK_CRON_DIALECT_PG_CRON_1_6;
	else
		ic.dialect = SCHEDLOCK_CRON_DIALECT_PG_CRON_1_5;

	/*
	 * pg_cron 1.5 added cron.timezone (default GMT); before, it read every
	 * schedule in GMT, whatever the configuration file says
	 */
	zone = GetConfigOption("cron.timezone", true, false);
	if (major == 1 && minor < 5)
		zone = NULL;
	ic.timezone = (zone != NULL && zone[0] != '\0') ? pstrdup(zone) : "GMT";

	InitMaterializedSRF(fcinfo, 0);
	jobs = read_pg_cron_jobs(PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2),
							 PG_ARGISNULL(2), &njobs);

	for (i = 0; i < njobs; i++)
	{
		ImportRow	row;
		Datum		values[NUM_COLS];
		bool		nulls[NUM_COLS];

		CHECK_FOR_INTERRUPTS();
		import_one(&ic, &jobs[i], &row);

		memset(nulls, false, sizeof(nulls));
		values[COL_CRON_JOBID] = Int64GetDatum(jobs[i].jobid);
		values[COL_CRON_JOBNAME] = jobs[i].jobname ? CStringGetTextDatum(jobs[i].jobname) : (Datum) 0;
		nulls[COL_CRON_JOBNAME] = jobs[i].jobname == NULL;
		values[COL_USERNAME] = CStringGetTextDatum(jobs[i].username);
		values[COL_DATABASE] = CStringGetTextDatum(jobs[i].database);
		values[COL_SCHEDULE] = CStringGetTextDatum(jobs[i].schedule);
		values[COL_ACTION] = CStringGetTextDatum(row.action);
		values[COL_JOB_NAME] = CStringGetTextDatum(row.job_name);
		values[COL_JOB_ID] = Int64GetDatum(row.job_id);
		nulls[COL_JOB_ID] = row.job_id == 0;
		values[COL_ATOMIC] = BoolGetDatum(row.atomic);
		nulls[COL_ATOMIC] = !row.has_def;
		values[COL_ENABLED] = BoolGetDatum(row.enabled);
		nulls[COL_ENABLED] = !row.has_def;
		values[COL_TIMEZONE] = CStringGetTextDatum(ic.timezone);
		values[COL_DETAIL] = CStringGetTextDatum(row.detail.data);
		nulls[COL_DETAIL] = row.detail.len == 0;
		values[COL_TODO] = CStringGetTextDatum(row.todo.data);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (!ic.dry_run)
		schedlock_wake_workers_at_commit();
	return (Datum) 0;
}
