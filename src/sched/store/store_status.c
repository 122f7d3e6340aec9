/*-------------------------------------------------------------------------
 *
 * store_status.c
 *	  What the housekeeper and the launcher read: roles' due times, overdue
 *	  jobs, counts, the next deadline and the oldest finished run.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_status.c
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
 * first_timestamp
 *		Run the read-only query q (one timestamptz column) with values and
 *		put its first row's value into *at; false when it returned no row.
 *		what names the query in the error raised when it fails.
 */
static bool
first_timestamp(SchedlockQuery *q, Datum *values, TimestampTz *at,
				const char *what)
{
	bool		isnull;
	bool		found;

	if (schedlock_query_run(q, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not %s", what);
	found = SPI_processed > 0;
	if (found)
		*at = DatumGetTimestampTz(col(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * schedlock_next_role_wakeup
 *		The earliest next_run_at of the enabled jobs of role (the role they
 *		run as), into *next; false when it has none.  On the tables of
 *		release 1.2 a walk of jobs_role_due_idx (store_claim_scan.c).
 */
bool
schedlock_next_role_wakeup(Oid role, TimestampTz *next)
{
	static SchedlockQuery q = {
		"SELECT next_run_at FROM schedlock.jobs "
		"WHERE enabled AND next_run_at IS NOT NULL "
		"  AND (COALESCE(run_as, owner)::pg_catalog.oid) OPERATOR(pg_catalog.=) $1 "
		"ORDER BY next_run_at LIMIT 1",
		1, {OIDOID}
	};
	Datum		values[1] = {ObjectIdGetDatum(role)};

	if (store_tables_current())
		return schedlock_role_next_due(role, next);
	return first_timestamp(&q, values, next, "compute the next wakeup");
}

/*
 * schedlock_jobs_due_at
 *		How many of the first max enabled jobs of role (the role they run
 *		as) are due at exactly the instant at, and in *notify how many of
 *		those are NOTIFY jobs: it reads at most max of them.  On the tables
 *		of release 1.2 a walk of jobs_role_due_idx (store_claim_scan.c).
 */
int
schedlock_jobs_due_at(Oid role, TimestampTz at, int max, int *notify)
{
	static SchedlockQuery q = {
		"SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE s.notify) "
		"FROM (SELECT notify_channel IS NOT NULL AS notify "
		"  FROM schedlock.jobs "
		"  WHERE enabled "
		"    AND (COALESCE(run_as, owner)::pg_catalog.oid) OPERATOR(pg_catalog.=) $1 "
		"    AND next_run_at OPERATOR(pg_catalog.=) $2 "
		"  LIMIT $3) s",
		3, {OIDOID, TIMESTAMPTZOID, INT4OID}
	};
	Datum		values[3];
	bool		isnull;
	int64		n;
	int64		nnotify;

	if (store_tables_current())
		return schedlock_role_due_at(role, at, max, notify);
	values[0] = ObjectIdGetDatum(role);
	values[1] = TimestampTzGetDatum(at);
	values[2] = Int32GetDatum(max);
	if (schedlock_query_run(&q, values, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the jobs due");
	n = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
						  &isnull));
	nnotify = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								2, &isnull));
	SPI_freetuptable(SPI_tuptable);
	*notify = (int) Min(nnotify, (int64) max);
	return (int) Min(n, (int64) max);
}

/*
 * schedlock_roles_due
 *		Every role with enabled jobs and its earliest next_run_at; *n gets
 *		their number, the array is made in cxt.
 */
SchedlockRoleDue *
schedlock_roles_due(int *n, MemoryContext cxt)
{
	static SchedlockQuery q = {
		"SELECT (COALESCE(run_as, owner)::pg_catalog.oid), "
		"  pg_catalog.min(next_run_at) "
		"FROM schedlock.jobs WHERE enabled AND next_run_at IS NOT NULL "
		"GROUP BY 1",
		0, {InvalidOid}
	};
	SchedlockRoleDue *dues;
	uint64		i;

	if (schedlock_query_run(&q, NULL, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the roles' next runs");
	dues = MemoryContextAlloc(cxt, sizeof(SchedlockRoleDue) *
							  Max(SPI_processed, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		dues[i].role = DatumGetObjectId(col(SPI_tuptable->vals[i],
											SPI_tuptable->tupdesc, 1,
											&isnull));
		dues[i].due_at = DatumGetTimestampTz(col(SPI_tuptable->vals[i],
												 SPI_tuptable->tupdesc, 2,
												 &isnull));
	}
	*n = (int) SPI_processed;
	SPI_freetuptable(SPI_tuptable);
	return dues;
}

/*
 * schedlock_overdue_jobs
 *		The enabled jobs of role (the role they run as) whose next_run_at is
 *		at or before 'before' and whose row another transaction holds
 *		locked now (a lock this statement could not take: it takes and
 *		keeps, until its transaction ends, that of every other such job),
 *		earliest first, at most max of them, into jobs (names in cxt).
 *		Returns how many.
 */
int
schedlock_overdue_jobs(Oid role, TimestampTz before,
					   SchedlockOverdueJob *jobs, int max, MemoryContext cxt)
{
	static SchedlockQuery q = {
		"SELECT j.job_id, j.job_name, j.next_run_at FROM schedlock.jobs j "
		"WHERE j.enabled "
		"  AND (COALESCE(j.run_as, j.owner)::pg_catalog.oid) OPERATOR(pg_catalog.=) $1 "
		"  AND j.next_run_at OPERATOR(pg_catalog.<=) $2 "
		"  AND NOT EXISTS (SELECT 1 FROM schedlock.jobs l "
		"    WHERE l.job_id OPERATOR(pg_catalog.=) j.job_id "
		"    FOR UPDATE SKIP LOCKED) "
		"ORDER BY j.next_run_at, j.job_id LIMIT $3",
		3, {OIDOID, TIMESTAMPTZOID, INT4OID}
	};
	Datum		values[3];
	uint64		i;
	int			n;

	values[0] = ObjectIdGetDatum(role);
	values[1] = TimestampTzGetDatum(before);
	values[2] = Int32GetDatum(max);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read overdue jobs");
	n = (int) Min(SPI_processed, (uint64) max);
	for (i = 0; i < (uint64) n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		jobs[i].job_id = DatumGetInt64(col(tup, desc, 1, &isnull));
		jobs[i].job_name = col_text(tup, desc, 2, cxt);
		jobs[i].next_run_at = DatumGetTimestampTz(col(tup, desc, 3, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * schedlock_count_jobs
 *		Count the database's jobs: all, enabled, those whose last run failed
 *		(consecutive_failures above 0) and the quarantined ones.
 */
void
schedlock_count_jobs(SchedlockJobCounts *counts)
{
	static SchedlockQuery q = {
		"SELECT pg_catalog.count(*)::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE enabled))::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE consecutive_failures "
		"    OPERATOR(pg_catalog.>) 0))::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE quarantine_reason IS NOT NULL))::pg_catalog.int4 "
		"FROM schedlock.jobs",
		0, {InvalidOid}
	};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	if (schedlock_query_run(&q, NULL, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the jobs");
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	counts->njobs = DatumGetInt32(col(tup, desc, 1, &isnull));
	counts->nenabled = DatumGetInt32(col(tup, desc, 2, &isnull));
	counts->nfailing = DatumGetInt32(col(tup, desc, 3, &isnull));
	counts->nquarantined = DatumGetInt32(col(tup, desc, 4, &isnull));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_next_deadline
 *		The earliest deadline of a NOTIFY run still open, into *next; false
 *		when there is none.
 */
bool
schedlock_next_deadline(TimestampTz *next)
{
	static SchedlockQuery q = {
		"SELECT deadline FROM schedlock.job_runs "
		"WHERE deadline IS NOT NULL "
		"  AND status OPERATOR(pg_catalog.=) ANY (" SCHEDLOCK_RUN_IN_PROGRESS_SQL ") "
		"ORDER BY deadline LIMIT 1",
		0, {InvalidOid}
	};

	return first_timestamp(&q, NULL, next, "find the next deadline");
}

/*
 * schedlock_oldest_finished_run
 *		finished_at of the oldest finished run in the history, into *at;
 *		false when there is none.
 */
bool
schedlock_oldest_finished_run(TimestampTz *at)
{
	static SchedlockQuery q = {
		"SELECT finished_at FROM schedlock.job_runs "
		"WHERE finished_at IS NOT NULL ORDER BY finished_at LIMIT 1",
		0, {InvalidOid}
	};

	return first_timestamp(&q, NULL, at, "look at the run history");
}
