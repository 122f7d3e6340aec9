/*-------------------------------------------------------------------------
 *
 * store_quarantine.c
 *	  Dispatch errors and the quarantine (quarantine.c).
 *
 * IDENTIFICATION
 *	  src/sched/store/store_quarantine.c
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
 * schedlock_fail_dispatch_runs
 *		Close the SQL runs this worker left running (a dispatch that failed
 *		in the worker's own bookkeeping) as failed at now, with the error's
 *		SQLSTATE and message, and count them in their jobs' statistics.
 */
void
schedlock_fail_dispatch_runs(TimestampTz now, const char *state,
							 const char *message)
{
#define FAIL_DISPATCH_SQL \
	"UPDATE schedlock.job_runs r SET status = " SCHEDLOCK_RUN_SQL(FAILED) ", " \
	"  finished_at = $1, sqlstate = $2, message = $3, " \
	"  deadline = NULL, duration = $1 OPERATOR(pg_catalog.-) r.started_at " \
	"WHERE r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(RUNNING) " " \
	"  AND r.worker_pid OPERATOR(pg_catalog.=) $4 " \
	"  AND r.claimed_at IS NULL " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$1")
	Oid			types[4] = {TIMESTAMPTZOID, TEXTOID, TEXTOID, INT4OID};
	Datum		values[4];
	uint64		i;

	values[0] = TimestampTzGetDatum(now);
	values[1] = CStringGetTextDatum(state);
	values[2] = CStringGetTextDatum(message);
	values[3] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args("WITH e AS (" FAIL_DISPATCH_SQL "), "
							  SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT, 4, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not close the runs of a failed dispatch");
	for (i = 0; i < SPI_processed; i++)
		schedlock_log_closed_run(SPI_tuptable, i, 5);
}

/* The columns schedlock_read_dispatch_errors reads, in this order. */
typedef enum DispatchErrorColumn
{
	DE_RUN_SINCE = 1,
	DE_ERRORS,
	DE_JOB_NAME,
	DE_QUARANTINED,
	DE_NEXT_RUN_AT,
	DE_ROLE_NAME,
	DE_ENABLED
} DispatchErrorColumn;

/*
 * schedlock_read_dispatch_errors
 *		Lock the job's row and read into *de its dispatch errors in a row,
 *		whether a run of it was recorded, or succeeded, since the last one
 *		(run_since: a succeeded run is not kept under record_runs =
 *		failures, but its time is in jobs.last_success_at), its name and
 *		the role it runs as (palloc'd), whether it is enabled, and its
 *		next_run_at.  False when the job does not exist or is quarantined
 *		already.
 */
bool
schedlock_read_dispatch_errors(int64 job_id, DispatchErrors *de)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	if (SPI_execute_with_args("SELECT EXISTS ("
							  "    SELECT 1 FROM schedlock.job_runs r "
							  "    WHERE r.job_id OPERATOR(pg_catalog.=) j.job_id "
							  "      AND GREATEST(r.started_at, r.finished_at) "
							  "          OPERATOR(pg_catalog.>) j.dispatch_error_at) "
							  "  OR COALESCE(j.last_success_at OPERATOR(pg_catalog.>) j.dispatch_error_at, false), "
							  "  j.dispatch_errors, "
							  "  j.job_name, j.quarantine_reason IS NOT NULL, "
							  "  j.next_run_at, "
							  "  pg_catalog.pg_get_userbyid(COALESCE(j.run_as, j.owner)::pg_catalog.oid), "
							  "  j.enabled "
							  "FROM schedlock.jobs j "
							  "WHERE j.job_id OPERATOR(pg_catalog.=) $1 FOR UPDATE OF j",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	if (SPI_processed != 1)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	if (DatumGetBool(col(tup, desc, DE_QUARANTINED, &isnull)))
		return false;
	de->run_since = DatumGetBool(col(tup, desc, DE_RUN_SINCE, &isnull));
	de->errors = DatumGetInt32(col(tup, desc, DE_ERRORS, &isnull));
	de->job_name = SPI_getvalue(tup, desc, DE_JOB_NAME);
	d = col(tup, desc, DE_NEXT_RUN_AT, &isnull);
	de->has_next_run_at = !isnull;
	de->next_run_at = isnull ? 0 : DatumGetTimestampTz(d);
	de->role_name = SPI_getvalue(tup, desc, DE_ROLE_NAME);
	de->enabled = DatumGetBool(col(tup, desc, DE_ENABLED, &isnull));
	return true;
}

/*
 * schedlock_save_dispatch_error
 *		Record the job's breaks-th dispatch error in a row, at now, with its
 *		next_run_at (none when !has_next); when reason is not NULL,
 *		quarantine it (disabled, with the reason).
 */
void
schedlock_save_dispatch_error(int64 job_id, int breaks, TimestampTz now,
							  bool has_next, TimestampTz next_run_at,
							  const char *reason)
{
	Oid			types[5] = {INT8OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(job_id);
	values[1] = Int32GetDatum(breaks);
	values[2] = TimestampTzGetDatum(now);
	values[3] = TimestampTzGetDatum(next_run_at);
	nulls[3] = has_next ? ' ' : 'n';
	if (reason != NULL)
		values[4] = CStringGetTextDatum(reason);
	else
		nulls[4] = 'n';
	if (SPI_execute_with_args("UPDATE schedlock.jobs SET dispatch_errors = $2, "
							  "  dispatch_error_at = $3, "
							  "  enabled = enabled AND $5 IS NULL, "
							  "  quarantine_reason = $5, "
							  "  next_run_at = $4 "
							  "WHERE job_id OPERATOR(pg_catalog.=) $1",
							  5, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record a dispatch error of job " INT64_FORMAT, job_id);
}
