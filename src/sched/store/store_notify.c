/*-------------------------------------------------------------------------
 *
 * store_notify.c
 *	  Runs of NOTIFY jobs claimed and finished by applications
 *	  (notify_api.c).
 *
 * IDENTIFICATION
 *	  src/sched/store/store_notify.c
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
 * schedlock_run_owner
 *		The role that owns a run (its job's owner), or InvalidOid when there
 *		is no such run.
 */
Oid
schedlock_run_owner(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	Oid			owner = InvalidOid;

	if (SPI_execute_with_args("SELECT owner::pg_catalog.oid FROM schedlock.job_runs "
							  "WHERE run_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read run " INT64_FORMAT, run_id);
	if (SPI_processed == 1)
	{
		bool		isnull;

		owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
	}
	return owner;
}

/*
 * schedlock_claim_pending_run
 *		Turn a pending run of a NOTIFY job into running, claimed by
 *		claimed_by (may be NULL) at now by this backend, with its deadline
 *		from the job's timeout (at most SCHEDLOCK_MAX_TIMEOUT_SECS, default
 *		SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT s).  True when this call claimed
 *		it.  When payload is not NULL, the job's payload is copied there (in
 *		the caller's memory context; *payload_null when the job has none or
 *		the claim failed).
 */
bool
schedlock_claim_pending_run(int64 run_id, const char *claimed_by,
							TimestampTz now, Datum *payload,
							bool *payload_null)
{
	Oid			types[4] = {INT8OID, TEXTOID, TIMESTAMPTZOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		claimed;

	values[0] = Int64GetDatum(run_id);
	values[1] = claimed_by ? CStringGetTextDatum(claimed_by) : (Datum) 0;
	if (claimed_by == NULL)
		nulls[1] = 'n';
	values[2] = TimestampTzGetDatum(now);
	values[3] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args("UPDATE schedlock.job_runs r SET status = " SCHEDLOCK_RUN_SQL(RUNNING) ", "
							  "  claimed_by = $2, claimed_at = $3, started_at = $3, "
							  "  worker_pid = $4, "
							  "  deadline = $3 OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => "
							  "    CASE WHEN j.timeout IS NULL THEN "
							  CppAsString2(SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT)
							  "    ELSE LEAST(pg_catalog.date_part('epoch', j.timeout), "
							  CppAsString2(SCHEDLOCK_MAX_TIMEOUT_SECS) ") END) "
							  "FROM schedlock.jobs j "
							  "WHERE r.run_id OPERATOR(pg_catalog.=) $1 "
							  "  AND r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(PENDING) " "
							  "  AND j.job_id OPERATOR(pg_catalog.=) r.job_id "
							  "RETURNING j.payload",
							  4, types, values, nulls, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not claim run " INT64_FORMAT, run_id);
	claimed = (SPI_processed == 1);
	if (payload != NULL)
	{
		*payload_null = true;
		if (claimed)
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1,
										  payload_null);

			/* copied out of SPI memory, into the caller's context */
			if (!*payload_null)
				*payload = SPI_datumTransfer(d, false, -1);
		}
	}
	return claimed;
}

/*
 * job_failures_only
 *		Whether job job_id keeps only its failed runs (record_runs, tables
 *		of release 1.2; the setting's value on older tables).
 */
static bool
job_failures_only(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT record_runs FROM schedlock.jobs "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};
	char	   *value = NULL;

	if (!store_tables_current())
		return schedlock_failures_only(NULL);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	if (SPI_processed == 1)
		value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return schedlock_failures_only(value);
}

/*
 * schedlock_finish_running_run
 *		Close a running run of a NOTIFY job as succeeded or failed at now,
 *		with message (may be NULL), and update its job's statistics,
 *		failure count and retry.  False when the run is not running (any
 *		more).
 */
bool
schedlock_finish_running_run(int64 run_id, bool succeeded,
							 const char *message, TimestampTz now)
{
#define FINISH_RUN_SQL \
	"UPDATE schedlock.job_runs r SET " \
	"  status = CASE WHEN $2 THEN " SCHEDLOCK_RUN_SQL(SUCCEEDED) " ELSE " SCHEDLOCK_RUN_SQL(FAILED) " END, " \
	"  finished_at = $4, deadline = NULL, message = $3 " \
	"  , duration = $4 OPERATOR(pg_catalog.-) r.started_at " \
	"WHERE r.run_id OPERATOR(pg_catalog.=) $1 " \
	"  AND r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(RUNNING) " " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$4")
	Oid			types[4] = {INT8OID, BOOLOID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		finished;

	values[0] = Int64GetDatum(run_id);
	values[1] = BoolGetDatum(succeeded);
	values[2] = message ? CStringGetTextDatum(message) : (Datum) 0;
	if (message == NULL)
		nulls[2] = 'n';
	values[3] = TimestampTzGetDatum(now);
	if (SPI_execute_with_args("WITH e AS (" FINISH_RUN_SQL "), "
							  SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT, 4, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not finish run " INT64_FORMAT, run_id);
	finished = (SPI_processed == 1);
	if (finished)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		job_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		TimestampTz slot = DatumGetTimestampTz(SPI_getbinval(tup, desc, 2, &isnull));
		int32		attempt = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		bool		manual = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));

		schedlock_log_closed_run(SPI_tuptable, 0, 5);

		/* a success was counted by the statement */
		if (succeeded && job_failures_only(job_id))
			schedlock_forget_run(run_id);
		else if (!succeeded)
			schedlock_run_failed(job_id, slot,
								 schedlock_rule_failed_attempt(manual, attempt),
								 now);
	}
	return finished;
}
