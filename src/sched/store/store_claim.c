/*-------------------------------------------------------------------------
 *
 * store_claim.c
 *	  Claiming due jobs: the job backends' claim statements and the
 *	  questions asked before a claimed job runs.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_claim.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/kept_query.h"
#include "base/settings.h"
#include "jobstore.h"
#include "sched/claim_sql.h"
#include "sched/rules.h"
#include "sched/runlog.h"
#include "sched/sched_shmem.h"
#include "store_int.h"

/*
 * read_claimed_job
 *		Copy row number row of a claim statement of the tables of release
 *		1.1 out of SPI memory, into cxt, with the name of the role the job
 *		runs as.
 */
static void
read_claimed_job(ClaimedJob *job, uint64 row, MemoryContext cxt)
{
	HeapTuple	tup = SPI_tuptable->vals[row];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	Datum		d;

	job->job_id = DatumGetInt64(col(tup, desc, 1, &isnull));
	job->job_name = col_text(tup, desc, 2, cxt);
	job->owner = DatumGetObjectId(col(tup, desc, 3, &isnull));
	job->schedule = col_text(tup, desc, 4, cxt);
	job->command = col_text(tup, desc, 5, cxt);
	job->channel = col_text(tup, desc, 6, cxt);
	job->payload = col_text(tup, desc, 7, cxt);
	job->timezone = col_text(tup, desc, 8, cxt);
	d = col(tup, desc, 9, &isnull);
	/* whole milliseconds, rounded up: a timeout never becomes "none" */
	job->timeout_ms = isnull ? 0 : (int) Min(ceil(DatumGetFloat8(d)), (double) INT_MAX);
	job->misfire = col_text(tup, desc, 10, cxt);
	job->atomic = DatumGetBool(col(tup, desc, 11, &isnull));
	d = col(tup, desc, 12, &isnull);
	job->run_as = isnull ? InvalidOid : DatumGetObjectId(d);
	job->reboot = DatumGetBool(col(tup, desc, 13, &isnull));
	d = col(tup, desc, 14, &isnull);
	job->has_next_slot = !isnull;
	job->next_slot = isnull ? 0 : DatumGetTimestampTz(d);
	d = col(tup, desc, 15, &isnull);
	job->has_retry = !isnull;
	job->retry_slot = isnull ? 0 : DatumGetTimestampTz(d);
	d = col(tup, desc, 16, &isnull);
	job->retry_attempt = isnull ? 1 : DatumGetInt32(d);
	d = col(tup, desc, 17, &isnull);
	job->retry_at = isnull ? 0 : DatumGetTimestampTz(d);
	job->manual_pending = DatumGetInt32(col(tup, desc, 18, &isnull));
	/* 19: next_run_at, read by schedlock_claim_job */
	ItemPointerCopy((ItemPointer) DatumGetPointer(col(tup, desc, 20, &isnull)), &job->ctid);
	job->failures = DatumGetInt32(col(tup, desc, 21, &isnull));
	job->search_path = col_text(tup, desc, 22, cxt);
	job->failures_only = schedlock_failures_only(col_text(tup, desc, 23, cxt));
	job->role_name = schedlock_claimed_role_name(job, cxt);
	job->runs_seen = false;
}

/* The claim statements of the tables of release 1.1: see claim_sql.h. */
static SchedlockQuery claim_query_1_1 = {
	SCHEDLOCK_CLAIM_SQL_1_1,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID}
};
static SchedlockQuery claim_notify_query_1_1 = {
	SCHEDLOCK_CLAIM_NOTIFY_SQL_1_1,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID}
};

/*
 * schedlock_claim_job
 *		Claim one due job of the given kind for role from position *pos as of
 *		now; on success read the claimed job into *job (its strings in cxt),
 *		move *pos to it and return true.  On the tables of release 1.2 the
 *		claim is schedlock_claim_scan (store_claim_scan.c), which also says
 *		what it saw of the job's runs (a general claim); on those of 1.1 a
 *		statement of claim_sql.h.  In a transaction, connected to SPI.
 */
bool
schedlock_claim_job(SchedlockClaimKind kind, Oid role, ClaimPosition *pos,
					TimestampTz now, ClaimedJob *job, MemoryContext cxt)
{
	SchedlockQuery *q;
	Datum		values[4];
	bool		isnull;

	if (store_tables_current())
	{
		/* taken before the claim's own: see claimed_runs there */
		Snapshot	before = ActiveSnapshotSet() ? GetActiveSnapshot() : NULL;

		return schedlock_claim_scan(kind, role, pos, now, job, 1, cxt,
									before) == 1;
	}
	if (kind == SCHEDLOCK_CLAIM_ATOMIC)
		return false;
	q = kind == SCHEDLOCK_CLAIM_NOTIFY ? &claim_notify_query_1_1 : &claim_query_1_1;
	values[0] = TimestampTzGetDatum(now);
	values[1] = TimestampTzGetDatum(pos->next_run_at);
	values[2] = Int64GetDatum(pos->job_id);
	values[3] = ObjectIdGetDatum(role);
	if (schedlock_query_run(q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not claim due jobs");
	if (SPI_processed == 0)
		return false;
	read_claimed_job(job, 0, cxt);
	pos->job_id = job->job_id;
	pos->next_run_at = DatumGetTimestampTz(col(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 19,
											   &isnull));
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/*
 * schedlock_claim_jobs
 *		Claim up to max of the role's due jobs of one kind (NOTIFY jobs, or
 *		atomic SQL jobs) as of now from position *pos at once, read them into
 *		jobs[] (strings in cxt), move *pos to the last and return how many.
 *		Tables of release 1.2 only (the caller checks).  In a transaction.
 */
int
schedlock_claim_jobs(SchedlockClaimKind kind, Oid role, ClaimPosition *pos,
					 TimestampTz now, ClaimedJob *jobs, int max,
					 MemoryContext cxt)
{
	Assert(max > 0 && store_tables_current());
	Assert(kind == SCHEDLOCK_CLAIM_NOTIFY || kind == SCHEDLOCK_CLAIM_ATOMIC);
	return schedlock_claim_scan(kind, role, pos, now, jobs, max, cxt, NULL);
}

/*
 * schedlock_run_in_progress
 *		Whether a run of the job is pending or running (overlap); a run
 *		whose job backend is gone is not, and is closed as lost here
 *		(schedlock_close_lost_runs), so that it does not wait for the
 *		database's next housekeeping.
 */
bool
schedlock_run_in_progress(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT COALESCE(pg_catalog.bool_or(NOT s.gone), false), "
		"  COALESCE(pg_catalog.bool_or(s.gone), false) "
		"FROM (SELECT (x.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(RUNNING) " "
		"    AND x.claimed_at IS NULL AND " RUNNER_GONE("x") ") AS gone "
		"  FROM schedlock.job_runs x "
		"  WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"    AND x.status OPERATOR(pg_catalog.=) ANY (" SCHEDLOCK_RUN_IN_PROGRESS_SQL ")) s",
		4, {INT8OID, OIDOID, TEXTOID, INT4OID}
	};
	Datum		values[4];
	bool		isnull;
	bool		live;
	bool		gone;

	values[0] = Int64GetDatum(job_id);
	runner_args(values);

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not look for runs in progress");
	live = DatumGetBool(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
							&isnull));
	gone = DatumGetBool(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
							&isnull));
	SPI_freetuptable(SPI_tuptable);
	if (gone)
		(void) schedlock_close_lost_runs();
	return live;
}

/*
 * schedlock_open_runs_among
 *		For the n claimed jobs of jobs[], whether a run of each is pending
 *		or running (the overlap rule's question, as schedlock_run_in_progress
 *		asks it of one job, which also closes the runs of a backend that is
 *		gone), into open[]; one statement.  It runs after the claim, whose
 *		row locks stand: any run of those jobs was made by a transaction
 *		that held the lock before, and has committed, so this statement's
 *		snapshot sees it (the claim's own snapshot may be older).  A
 *		subquery with LIMIT rather than EXISTS, which the planner may turn
 *		into a hash of every open run (thousands pending after a burst).
 */
void
schedlock_open_runs_among(ClaimedJob *jobs, int n, bool *open)
{
	static SchedlockQuery q = {
		"SELECT (SELECT true FROM schedlock.job_runs x "
		"  WHERE x.job_id OPERATOR(pg_catalog.=) u.job_id "
		"    AND x.status OPERATOR(pg_catalog.=) ANY (" SCHEDLOCK_RUN_IN_PROGRESS_SQL ") "
		"  LIMIT 1) IS NOT NULL "
		"FROM pg_catalog.unnest($1) WITH ORDINALITY AS u(job_id, i) "
		"ORDER BY u.i",
		1, {INT8ARRAYOID}
	};
	Datum	   *ids = palloc(sizeof(Datum) * n);
	Datum		values[1];
	bool		isnull;

	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(jobs[i].job_id);
	values[0] = array_of(ids, NULL, n, INT8OID);
	/* not read-only: a snapshot of its own, taken now */
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != (uint64) n)
		elog(ERROR, "could not look for runs in progress");
	for (int i = 0; i < n; i++)
		open[i] = DatumGetBool(col(SPI_tuptable->vals[i],
								   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_run_may_defer
 *		Whether a run of the job for this slot's attempt can be recorded
 *		only once it has ended, together with the job's advanced state
 *		(schedlock_record_ended_run): no run of the job is pending or
 *		running, none is left by a backend that is gone (closing it changes
 *		the job), and the slot's attempt has no row yet.  If so, returns the
 *		run's id, taken from the sequence now (so that a log line before the
 *		run names it), else 0.  What the claim statement saw answers it for
 *		the job's next slot (job->runs_seen: no run open, and no row of that
 *		slot); otherwise one statement looks at the job's open runs and at
 *		the unique key.
 */
int64
schedlock_run_may_defer(const ClaimedJob *job, TimestampTz scheduled_for,
						int32 attempt)
{
	static SchedlockQuery q = {
		"SELECT pg_catalog.nextval('schedlock.job_runs_run_id_seq'::pg_catalog.regclass) "
		"WHERE NOT EXISTS (SELECT FROM schedlock.job_runs x "
		"    WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"      AND x.status OPERATOR(pg_catalog.=) ANY (" SCHEDLOCK_RUN_IN_PROGRESS_SQL ")) "
		"  AND NOT EXISTS (SELECT FROM schedlock.job_runs x "
		"    WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"      AND x.scheduled_for OPERATOR(pg_catalog.=) $2 "
		"      AND x.attempt OPERATOR(pg_catalog.=) $3)",
		3, {INT8OID, TIMESTAMPTZOID, INT4OID}
	};
	Datum		values[3];
	bool		isnull;
	int64		run_id = 0;

	if (job->runs_seen)
	{
		if (job->run_open)
			return 0;
		if (scheduled_for == job->seen_slot && !job->slot_rows)
			return nextval_internal(schedlock_table_oid("job_runs_run_id_seq"),
									false);
	}
	values[0] = Int64GetDatum(job->job_id);
	values[1] = TimestampTzGetDatum(scheduled_for);
	values[2] = Int32GetDatum(attempt);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not look for runs in progress");
	if (SPI_processed == 1)
		run_id = DatumGetInt64(col(SPI_tuptable->vals[0],
								   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return run_id;
}

/*
 * schedlock_runs_may_defer
 *		schedlock_run_may_defer for n runs at once, in one statement: for
 *		each job_ids[i], slots[i], attempts[i], run_ids[i] gets the run's id
 *		taken from the sequence when it may be deferred, else 0.  A subquery
 *		with LIMIT rather than EXISTS (see schedlock_open_runs_among).
 */
void
schedlock_runs_may_defer(const int64 *job_ids, const TimestampTz *slots,
						 const int32 *attempts, int n, int64 *run_ids)
{
	static SchedlockQuery q = {
		"SELECT CASE WHEN (SELECT true FROM schedlock.job_runs x "
		"    WHERE x.job_id OPERATOR(pg_catalog.=) u.job_id "
		"      AND x.status OPERATOR(pg_catalog.=) ANY (" SCHEDLOCK_RUN_IN_PROGRESS_SQL ") "
		"    LIMIT 1) IS NULL "
		"  AND (SELECT true FROM schedlock.job_runs x "
		"    WHERE x.job_id OPERATOR(pg_catalog.=) u.job_id "
		"      AND x.scheduled_for OPERATOR(pg_catalog.=) u.slot "
		"      AND x.attempt OPERATOR(pg_catalog.=) u.attempt "
		"    LIMIT 1) IS NULL "
		"  THEN pg_catalog.nextval('schedlock.job_runs_run_id_seq'::pg_catalog.regclass) "
		"  END "
		"FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), "
		"    pg_catalog.unnest($3)) "
		"  WITH ORDINALITY AS u(job_id, slot, attempt, i) "
		"ORDER BY u.i",
		3, {INT8ARRAYOID, TIMESTAMPTZARRAYOID, INT4ARRAYOID}
	};
	Datum	   *ids = palloc(sizeof(Datum) * n);
	Datum	   *ts = palloc(sizeof(Datum) * n);
	Datum	   *att = palloc(sizeof(Datum) * n);
	Datum		values[3];

	Assert(n > 0);
	for (int i = 0; i < n; i++)
	{
		ids[i] = Int64GetDatum(job_ids[i]);
		ts[i] = TimestampTzGetDatum(slots[i]);
		att[i] = Int32GetDatum(attempts[i]);
	}
	values[0] = array_of(ids, NULL, n, INT8OID);
	values[1] = array_of(ts, NULL, n, TIMESTAMPTZOID);
	values[2] = array_of(att, NULL, n, INT4OID);
	/* not read-only: a snapshot of its own, taken now */
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != (uint64) n)
		elog(ERROR, "could not look for runs in progress");
	for (int i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		d = col(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
							&isnull);

		run_ids[i] = isnull ? 0 : DatumGetInt64(d);
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_next_queued_run
 *		The oldest queued run_job() run of the job: its run id and
 *		scheduled_for.  False when there is none.  In a transaction,
 *		connected to SPI.
 */
bool
schedlock_next_queued_run(int64 job_id, int64 *run_id,
						  TimestampTz *scheduled_for)
{
	static SchedlockQuery q = {
		"SELECT run_id, scheduled_for FROM schedlock.job_runs "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"  AND status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(QUEUED) " "
		"ORDER BY run_id LIMIT 1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read queued runs");
	if (SPI_processed != 1)
		return false;
	*run_id = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*scheduled_for = DatumGetTimestampTz(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	return true;
}
