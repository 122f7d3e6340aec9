/*-------------------------------------------------------------------------
 *
 * copies.c
 *	  Where a database's jobs belong: copies of a database do not run them
 *	  until they are adopted.
 *
 * A database copied with CREATE DATABASE ... TEMPLATE, or restored from a
 * dump, holds the jobs of the original, and a staging copy must not send
 * production's mails.  So the jobs of a database run only in the database
 * they were scheduled in:
 *
 *	- schedlock.home (one row, never dumped) holds a random home_id, made by
 *	  CREATE EXTENSION, and the OID of the database it was made in;
 *	- every job records the home_id it was scheduled under (jobs.home_id,
 *	  dumped with the job);
 *	- a TEMPLATE copy keeps the home row with the old database's OID: the
 *	  OID no longer matches;
 *	- a restore makes a new home row (its own CREATE EXTENSION) and then
 *	  loads jobs of the old home_id: the trigger jobs_check_home() makes
 *	  each such row not due (next_run_at NULL) and raises
 *	  home.restored_jobs, in the same transaction as the rows, so that no
 *	  worker can claim one even in the middle of a pass;
 *	- pg_upgrade keeps database OIDs and copies the table files, and a
 *	  promoted standby is the same database: neither is a copy.
 *
 * The workers look at the home row at the start of each pass (one row, so
 * the check is cheap) and run nothing while the jobs are paused; worker 0
 * says so once with a WARNING, and at start-up it also looks for job rows
 * of another home that arrived without the trigger.  A copy without any job
 * simply takes a home of its own.  schedlock_adopt_jobs(), by the database
 * owner or a superuser, makes the database the jobs' home: a new home_id
 * and this database's OID, each job going on from its next slot after now.
 *
 * IDENTIFICATION
 *	  src/sched/copies.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "base/kept_query.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "base/compat.h"
#include "base/owner.h"
#include "base/primary.h"
#include "base/settings.h"
#include "copies.h"
#include "cron/cron_pg.h"
#include "job_def.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"

PG_FUNCTION_INFO_V1(schedlock_jobs_check_home);
PG_FUNCTION_INFO_V1(schedlock_adopt_jobs);

PGDLLEXPORT Datum schedlock_jobs_check_home(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_adopt_jobs(PG_FUNCTION_ARGS);


/* Why the jobs of this database are paused. */
typedef enum HomeState
{
	HOME_HERE,					/* the jobs belong here: they run */
	HOME_COPY,					/* a TEMPLATE copy of another database */
	HOME_RESTORED				/* jobs of another home were loaded */
} HomeState;

/*
 * look_at_home
 *		Read the home row and decide whether the jobs run here.  A copy
 *		without any job takes a home of its own; a restored_jobs mark with no
 *		job of another home left is dropped.  at_start: also look for job
 *		rows of another home that arrived without the trigger (one scan of
 *		schedlock.jobs).  *datoid gets the database the home names.  In a
 *		transaction, connected to SPI, as a role that may write the tables.
 */
static HomeState
look_at_home(bool at_start, Oid *datoid)
{
	bool		restored;
	Datum		home_id;

	if (!schedlock_home_read(&home_id, datoid, &restored))
		return HOME_HERE;

	if (*datoid != MyDatabaseId)
	{
		/* a copy: with jobs it waits for adoption, without it moves in */
		if (schedlock_jobs_exist())
			return HOME_COPY;
		schedlock_home_move_in();
		*datoid = MyDatabaseId;
		return HOME_HERE;
	}

	if (at_start && !restored)
	{
		/* job rows of another home that came without the trigger */
		restored = schedlock_pause_foreign_jobs(home_id) > 0;
		if (restored)
			schedlock_home_mark_restored();
	}
	else if (restored)
	{
		/*
		 * Lock the row first: a restore still loading jobs holds it (the
		 * trigger wrote it), and the jobs it loaded are seen only once it has
		 * committed.
		 */
		schedlock_home_lock();
		if (!schedlock_foreign_jobs_exist(home_id))
		{
			/* the restored jobs are gone (unscheduled): nothing to protect */
			schedlock_home_clear_restored();
			restored = false;
		}
	}
	return restored ? HOME_RESTORED : HOME_HERE;
}

/*
 * warn_paused
 *		Say in the server log why the jobs of this database do not run.
 */
static void
warn_paused(HomeState state, Oid datoid)
{
	char	   *dbname = get_database_name(MyDatabaseId);

	if (state == HOME_COPY)
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("jobs of database \"%s\" are paused: they were scheduled in another database",
						dbname ? dbname : "?"),
				 errdetail("The database is a copy (CREATE DATABASE ... TEMPLATE) of the database with OID %u; the jobs do not run in both.",
						   datoid),
				 errhint("To run them here, call SELECT schedlock_adopt_jobs(); in this database as its owner or a superuser.")));
	else
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("jobs of database \"%s\" are paused: they were scheduled in another database",
						dbname ? dbname : "?"),
				 errdetail("Jobs restored from a dump of another database are in this database; they do not run in both."),
				 errhint("To run them here, call SELECT schedlock_adopt_jobs(); in this database as its owner or a superuser.")));
}

/*
 * schedlock_jobs_paused
 *		Worker: whether the jobs of this database are paused because it is
 *		a copy.  at_start: the worker is starting (see look_at_home).  warn:
 *		log a WARNING when the jobs are paused (the housekeeper asks when
 *		the database was not known to be paused).  Runs its
 *		own transaction; called outside one, returns in the memory context
 *		it was called in.
 */
bool
schedlock_jobs_paused(bool at_start, bool warn)
{
	MemoryContext cxt = CurrentMemoryContext;
	HomeState	state = HOME_HERE;
	Oid			datoid = MyDatabaseId;
	int			nestlevel;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	nestlevel = schedlock_trusted_path_begin();
	if (schedlock_home_table_exists())
		state = look_at_home(at_start, &datoid);
	schedlock_trusted_path_end(nestlevel);
	if (state != HOME_HERE && warn)
		warn_paused(state, datoid);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);

	return state != HOME_HERE;
}

/*
 * schedlock_jobs_check_home
 *		BEFORE INSERT row trigger on schedlock.jobs: a job of another home
 *		(loaded by pg_restore or COPY) is made not due and pauses the jobs
 *		of the database until schedlock_adopt_jobs(); the workers are woken
 *		at commit to notice.
 */
Datum
schedlock_jobs_check_home(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	HeapTuple	tuple;
	int			att_home;
	int			att_next;
	bool		isnull;
	Datum		job_home;
	Datum		home;
	bool		foreign_job = false;
	int			nestlevel;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "schedlock_jobs_check_home must be a BEFORE INSERT row trigger");

	tuple = trigdata->tg_trigtuple;
	desc = RelationGetDescr(trigdata->tg_relation);
	att_home = SPI_fnumber(desc, "home_id");
	att_next = SPI_fnumber(desc, "next_run_at");
	if (att_home <= 0 || att_next <= 0)
		elog(ERROR, "schedlock.jobs has no column home_id or next_run_at");
	job_home = heap_getattr(tuple, att_home, desc, &isnull);
	if (isnull)
		return PointerGetDatum(tuple);

	SPI_connect();
	nestlevel = schedlock_trusted_path_begin();
	if (schedlock_home_id(&home))
		foreign_job =
			memcmp(DatumGetUUIDP(home), DatumGetUUIDP(job_home), UUID_LEN) != 0;
	if (foreign_job)
		schedlock_home_mark_restored();
	schedlock_trusted_path_end(nestlevel);
	SPI_finish();

	if (foreign_job)
	{
		Datum		value = (Datum) 0;
		bool		null = true;

		tuple = heap_modify_tuple_by_cols(tuple, desc, 1, &att_next, &value, &null);
		schedlock_wake_workers_at_commit();
	}
	return PointerGetDatum(tuple);
}

/*
 * adopt_job
 *		Make one job of this database's home: it goes on from its first slot
 *		after now (none for @reboot jobs: the next start of dispatch; a
 *		one-off job keeps its instant, its next_slot, if that is still
 *		ahead, and has ended otherwise), with no pending retry or run_job()
 *		call; its runs left open in the database it came from are closed.
 *		plans: from schedlock_prepare_adoption.  Connected to SPI, as the
 *		extension owner.
 */
static void
adopt_job(SPIPlanPtr *plans, const JobToAdopt *job, Datum home_id,
		  TimestampTz now)
{
	SchedlockCronSchedule sched;
	TimestampTz slot = 0;
	bool		has_slot = false;
	const char *timezone = job->timezone;

	if (schedlock_schedule_is_once(job->schedule))
	{
		/* a one-off job keeps an instant still ahead; a missed one ended */
		has_slot = job->has_next_slot && job->next_slot > now;
		slot = job->next_slot;
	}
	else
	{
		schedlock_cron_parse_or_error(job->schedule, &sched);
		if (timezone == NULL)
			timezone = schedlock_timezone;
		if (!schedlock_cron_is_reboot(&sched))
			has_slot = schedlock_cron_next_time(&sched, now,
												schedlock_cron_lookup_timezone(timezone),
												&slot);
	}
	schedlock_adopt_job(plans, job, home_id, has_slot, slot, now);
}

/*
 * schedlock_adopt_jobs
 *		SQL: schedlock_adopt_jobs() -> bigint
 *
 * Makes this database the home of the jobs it holds from another database
 * (a TEMPLATE copy: all of them, under a new home_id; a restore: those of
 * another home), so that its workers run them; returns how many jobs were
 * adopted (0 when the jobs already run here).  Only the database owner and
 * superusers may (EXECUTE is granted to pg_database_owner).
 */
Datum
schedlock_adopt_jobs(PG_FUNCTION_ARGS)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		home_id;
	Oid			datoid;
	bool		all;
	int64		adopted = 0;
	SPIPlanPtr	plans[2];
	SchedlockAdoptScan *scan;
	JobToAdopt	job;
	Oid			save_uid;
	int			save_sec;
	int			nestlevel;

	schedlock_require_writable("schedlock_adopt_jobs");
	if (!schedlock_database_ownercheck(MyDatabaseId, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to adopt the jobs of database \"%s\"",
						get_database_name(MyDatabaseId)),
				 errdetail("Only the owner of the database and superusers may adopt its jobs.")));

	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &nestlevel);

	if (!schedlock_home_lock_read(&home_id, &datoid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table schedlock.home does not have its one row"),
				 errhint("Reinstall the schedlock extension.")));

	/* a TEMPLATE copy: a home of its own, and every job moves in */
	all = (datoid != MyDatabaseId);
	if (all)
		home_id = schedlock_home_renew();

	schedlock_prepare_adoption(plans);
	scan = schedlock_adopt_scan_begin(home_id, all);
	while (schedlock_adopt_scan_next(scan, &job))
	{
		adopt_job(plans, &job, home_id, now);
		adopted++;
	}
	schedlock_adopt_scan_end(scan);
	schedlock_home_clear_restored();

	schedlock_end_as_owner(save_uid, save_sec, nestlevel);
	SPI_finish();

	if (adopted > 0)
		ereport(LOG,
				(errmsg("schedlock: %lld jobs of database \"%s\" adopted; they run here from now on",
						(long long) adopted, get_database_name(MyDatabaseId))));
	schedlock_wake_workers_at_commit();
	PG_RETURN_INT64(adopted);
}
