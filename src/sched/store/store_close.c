/*-------------------------------------------------------------------------
 *
 * store_close.c
 *	  Closing runs nobody will finish (lost with their backend, NOTIFY runs
 *	  past their deadline), firing @reboot jobs, pruning history: the
 *	  housekeeper's statements.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_close.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/kept_query.h"
#include "jobstore.h"
#include "sched/claim_sql.h"
#include "sched/rules.h"
#include "sched/runlog.h"
#include "sched/sched_shmem.h"
#include "store_int.h"

/*
 * close_runs_failed
 *		For every row returned by the last SPI statement (job_id,
 *		scheduled_for, attempt, manual, then the rest of
 *		ENDED_RUNS_SELECT's columns), log it
 *		per schedlock.log_runs, count a failure and schedule its retry.
 *		Inside a transaction, connected to SPI.
 */
static void run_lost_slot_again(int64 job_id, TimestampTz slot, int32 attempt,
								TimestampTz now);

static bool unheard_run(int64 job_id);

static void
close_runs_failed(TimestampTz now, bool lost)
{
	SPITupleTable *tuptable = SPI_tuptable;
	uint64		n = SPI_processed;
	uint64		i;

	for (i = 0; i < n; i++)
	{
		bool		isnull;
		int64		job_id = DatumGetInt64(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 1, &isnull));
		TimestampTz slot = DatumGetTimestampTz(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 2, &isnull));
		int32		attempt = DatumGetInt32(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 3, &isnull));
		bool		manual = DatumGetBool(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 4, &isnull));
		char	   *message = SPI_getvalue(tuptable->vals[i], tuptable->tupdesc, 9);

		/* an unclaimed NOTIFY run past the warning is not logged */
		if (lost || message == NULL ||
			strcmp(message, SCHEDLOCK_UNCLAIMED_MESSAGE) != 0 ||
			!unheard_run(job_id))
			schedlock_log_closed_run(tuptable, i, 5);
		schedlock_run_failed(job_id, slot,
							 schedlock_rule_failed_attempt(manual, attempt), now);
		if (lost && !manual)
			run_lost_slot_again(job_id, slot, attempt, now);
	}
}

/*
 * unheard_run
 *		A run of NOTIFY job job_id expired unclaimed (before its failure is
 *		counted).  When it makes SCHEDLOCK_UNHEARD_RUNS failures in a row,
 *		WARNING that no application claims the job's runs; past that the
 *		streak's runs are not logged one by one: returns true for them.
 *		job_status.stopped_reason says so while the streak lasts.  Caller
 *		is connected to SPI, as the extension owner.
 */
static bool
unheard_run(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT consecutive_failures OPERATOR(pg_catalog.+) 1, job_name, "
		"  notify_channel, "
		"  pg_catalog.pg_get_userbyid(COALESCE(run_as, owner)::pg_catalog.oid), "
		"  timeout::pg_catalog.text "
		"FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};
	SPITupleTable *saved = SPI_tuptable;
	uint64		saved_n = SPI_processed;
	bool		isnull;
	int64		streak = 0;
	bool		quiet = false;

	/* not read-only: the statement that closed the run changed the job */
	if (schedlock_query_run(&q, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		streak = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		if (streak == SCHEDLOCK_UNHEARD_RUNS)
			ereport(WARNING,
					(errmsg("schedlock NOTIFY job \"%s\" of role \"%s\" in database \"%s\": no application claimed its last %d runs",
							SPI_getvalue(tup, desc, 2), SPI_getvalue(tup, desc, 4),
							get_database_name(MyDatabaseId),
							SCHEDLOCK_UNHEARD_RUNS),
					 errdetail("Each run was notified on channel \"%s\" and expired unclaimed after its timeout (%s). Its further unclaimed runs are not logged until one is claimed; schedlock.job_status.stopped_reason says so meanwhile.",
							   SPI_getvalue(tup, desc, 3),
							   SPI_getvalue(tup, desc, 5)),
					 errhint("Start an application that LISTENs on the channel, catches up with schedlock_pending_runs() and claims the runs, or unschedule the job.")));
		quiet = streak > SCHEDLOCK_UNHEARD_RUNS;
	}
	SPI_tuptable = saved;
	SPI_processed = saved_n;
	return quiet;
}

/*
 * run_lost_slot_again
 *		A lost run of an atomic job committed nothing of its command: the
 *		command, its outcome and the run's end commit in one transaction,
 *		and only the claim of a run claimed before its instant commits
 *		before it (dispatch.c, schedlock_commit_early_claim).  So the slot has not run:
 *		have it run again now, as its next attempt (a slot's attempt is
 *		recorded once), whatever max_attempts allows.  Does nothing for a
 *		non-atomic job (its command may have committed work) or a disabled
 *		one.  Caller is connected to SPI.
 */
static void
run_lost_slot_again(int64 job_id, TimestampTz slot, int32 attempt,
					TimestampTz now)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET retry_slot = $2, retry_attempt = $3, "
		"  retry_at = $4, next_run_at = $5 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 AND atomic AND enabled",
		5, {INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		has_next;
	TimestampTz next_run_at;

	/* its retry now replaces the one the failure may have scheduled */
	if (!schedlock_job_next_run_at_after(job_id, NULL, 1, now, now,
										 &has_next, &next_run_at))
		return;
	values[0] = Int64GetDatum(job_id);
	values[1] = TimestampTzGetDatum(slot);
	values[2] = Int32GetDatum(attempt + 1);
	values[3] = TimestampTzGetDatum(now);
	values[4] = TimestampTzGetDatum(next_run_at);
	nulls[4] = has_next ? ' ' : 'n';
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not run a lost slot of job " INT64_FORMAT " again",
			 job_id);
}

/*
 * schedlock_close_lost_runs
 *		Close as lost the SQL runs marked running whose worker is gone (see
 *		RUNNER_GONE), and retry them per policy.  Returns how many it
 *		closed.  In a transaction, connected to SPI.
 */
#define LOST_RUNS_SQL \
	"UPDATE schedlock.job_runs r SET status = " SCHEDLOCK_RUN_SQL(LOST) ", " \
	"  finished_at = $1, duration = $1 OPERATOR(pg_catalog.-) r.started_at, " \
	"  message = 'the job backend running it ended before the run finished " \
	"(it was stopped or terminated, or the server crashed, restarted or failed over)' " \
	"WHERE r.run_id OPERATOR(pg_catalog.=) ANY (" \
	"    SELECT x.run_id FROM schedlock.job_runs x " \
	"    WHERE x.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(RUNNING) " " \
	"      AND x.claimed_at IS NULL AND " RUNNER_GONE("x") \
	"    FOR UPDATE SKIP LOCKED) " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$1")

uint64
schedlock_close_lost_runs(void)
{
	static SchedlockQuery q = {
		"WITH e AS (" LOST_RUNS_SQL "), "
		SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT,
		4, {TIMESTAMPTZOID, OIDOID, TEXTOID, INT4OID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[4];
	uint64		closed;

	values[0] = TimestampTzGetDatum(now);
	runner_args(values);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not close lost runs");
	closed = SPI_processed;
	/* one line per lost run, by schedlock.log_runs */
	close_runs_failed(now, true);
	return closed;
}

/*
 * schedlock_fire_reboot_jobs
 *		Make every enabled @reboot job due now: its next slot is now, and
 *		its next_run_at what the rules make of that.  In a transaction,
 *		connected to SPI.
 */
void
schedlock_fire_reboot_jobs(TimestampTz now)
{
	static SchedlockQuery list_q = {
		"SELECT job_id FROM schedlock.jobs WHERE reboot AND enabled "
		"ORDER BY job_id",
		0, {InvalidOid}
	};
	static SchedlockQuery fire_q = {
		"UPDATE schedlock.jobs SET next_slot = $2, next_run_at = $3 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		3, {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	};
	int64	   *job_ids;
	uint64		n;

	if (schedlock_query_run(&list_q, NULL, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the @reboot jobs");
	n = SPI_processed;
	job_ids = palloc(sizeof(int64) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		job_ids[i] = DatumGetInt64(col(SPI_tuptable->vals[i],
									   SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	for (uint64 i = 0; i < n; i++)
	{
		Datum		values[3];
		char		nulls[3] = {' ', ' ', ' '};
		bool		has_next;
		TimestampTz next_run_at;

		if (!schedlock_job_next_run_at_after(job_ids[i], &now, -1, 0, now,
											 &has_next, &next_run_at))
			continue;
		values[0] = Int64GetDatum(job_ids[i]);
		values[1] = TimestampTzGetDatum(now);
		values[2] = TimestampTzGetDatum(next_run_at);
		nulls[2] = has_next ? ' ' : 'n';
		if (schedlock_query_run(&fire_q, values, nulls, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not fire @reboot job " INT64_FORMAT, job_ids[i]);
	}
	pfree(job_ids);
}

/*
 * schedlock_expire_runs
 *		Close NOTIFY runs not claimed, or not finished, by their deadline
 *		(at or before now) as timed out, and retry them per policy: at most
 *		EXPIRE_BATCH_ROWS.  Returns how many it closed.  In a transaction,
 *		connected to SPI.
 */
#define EXPIRE_RUNS_SQL \
	"UPDATE schedlock.job_runs r SET status = " SCHEDLOCK_RUN_SQL(TIMED_OUT) ", " \
	"  finished_at = $1, deadline = NULL, " \
	"  duration = $1 OPERATOR(pg_catalog.-) r.started_at, " \
	"  message = CASE WHEN r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(PENDING) " " \
	"    THEN '" SCHEDLOCK_UNCLAIMED_MESSAGE "' " \
	"    ELSE 'not finished within the timeout' END " \
	"WHERE r.run_id OPERATOR(pg_catalog.=) ANY (" \
	"    SELECT x.run_id FROM schedlock.job_runs x " \
	"    WHERE x.status OPERATOR(pg_catalog.=) ANY (" SCHEDLOCK_RUN_IN_PROGRESS_SQL ") " \
	"      AND x.deadline OPERATOR(pg_catalog.<=) $1 " \
	"    ORDER BY x.deadline LIMIT " CppAsString2(EXPIRE_BATCH_ROWS) \
	"    FOR UPDATE SKIP LOCKED) " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$1")

uint64
schedlock_expire_runs(TimestampTz now)
{
	/* a run that was never claimed has no start, and no duration */
	static SchedlockQuery q = {
		"WITH e AS (" EXPIRE_RUNS_SQL "), "
		SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT,
		1, {TIMESTAMPTZOID}
	};
	Datum		values[1] = {TimestampTzGetDatum(now)};
	uint64		closed;

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not close overdue runs");
	closed = SPI_processed;
	close_runs_failed(now, false);
	return closed;
}

/*
 * schedlock_prune_runs
 *		Delete the PRUNE_BATCH_ROWS oldest runs (at most) that finished
 *		more than retention_mins minutes before now, at or after *from;
 *		move *from to the last one deleted (every run that finished before
 *		it is gone: runs finish at the time they are recorded, so none
 *		older arrives later; one loaded by hand is found by the next
 *		housekeeping pass).  Returns how many it deleted.  In a
 *		transaction, connected to SPI.
 */
uint64
schedlock_prune_runs(TimestampTz now, int retention_mins, TimestampTz *from)
{
	static SchedlockQuery q = {
		"WITH d AS (DELETE FROM schedlock.job_runs "
		"  WHERE run_id OPERATOR(pg_catalog.=) ANY ("
		"    SELECT run_id FROM schedlock.job_runs "
		"    WHERE finished_at OPERATOR(pg_catalog.>=) $3 "
		"      AND finished_at OPERATOR(pg_catalog.<) "
		"        ($1 OPERATOR(pg_catalog.-) "
		"         pg_catalog.make_interval(mins => $2)) "
		"    ORDER BY finished_at LIMIT " CppAsString2(PRUNE_BATCH_ROWS) ") "
		"  RETURNING finished_at) "
		"SELECT pg_catalog.count(*), pg_catalog.max(finished_at) FROM d",
		3, {TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID}
	};
	Datum		values[3];
	uint64		deleted;
	bool		isnull;
	Datum		last;

	values[0] = TimestampTzGetDatum(now);
	values[1] = Int32GetDatum(retention_mins);
	values[2] = TimestampTzGetDatum(*from);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not prune run history");
	deleted = (uint64) DatumGetInt64(col(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	last = col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (!isnull)
		*from = DatumGetTimestampTz(last);
	SPI_freetuptable(SPI_tuptable);
	return deleted;
}
