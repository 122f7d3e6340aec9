/*-------------------------------------------------------------------------
 *
 * run.c
 *	  Run bookkeeping shared by the workers and the SQL API, and the SQL
 *	  functions applications use for NOTIFY jobs: schedlock_claim_run and
 *	  schedlock_finish_run.
 *
 * A run row moves through these states (docs/scheduler.md draws them):
 *
 *	queued	  run_job() asked for it; a worker will take it
 *	pending	  NOTIFY sent; waiting for schedlock_claim_run
 *	running	  a worker (SQL job) or a claimer (NOTIFY job) is at it
 *	succeeded, failed, timed_out, lost, skipped: final
 *
 * The functions here that take no fcinfo expect the caller to be connected
 * to SPI, in a transaction, with a user that may write the scheduler's
 * tables (the extension owner or the bootstrap superuser of a worker).
 *
 * Name resolution: the SQL-callable functions switch to the extension owner
 * with schedlock_begin_as_owner, which also pins search_path to
 * "pg_catalog, pg_temp" until schedlock_end_as_owner.  Every statement here
 * names its tables with their schema and its operators and casts as
 * OPERATOR(pg_catalog.x) and ::pg_catalog.type besides, so that neither the
 * caller's search_path nor a plan kept from an earlier call can make the
 * owner (or a worker) run a function some role put on a path.  Mind that
 * all OPERATOR(...) forms share one precedence: parenthesise arithmetic.
 *
 * IDENTIFICATION
 *	  src/run.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "schedlock.h"
#include "scheduler.h"

PG_FUNCTION_INFO_V1(schedlock_claim_run);
PG_FUNCTION_INFO_V1(schedlock_claim_run_payload);
PG_FUNCTION_INFO_V1(schedlock_finish_run);
PG_FUNCTION_INFO_V1(schedlock_job_worker_pid);

PGDLLEXPORT Datum schedlock_claim_run(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_claim_run_payload(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_finish_run(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_job_worker_pid(PG_FUNCTION_ARGS);

/*
 * read_job_timing
 *		Read and lock (FOR NO KEY UPDATE, as an UPDATE of the row would) the
 *		job's max_attempts, retry_delay in seconds (as EXTRACT(epoch FROM
 *		...)), next slot, pending retry time and count of queued run_job()
 *		calls, into SPI_tuptable (columns 1 to 5).  False when the job does
 *		not exist (any more).  Caller is connected to SPI.
 */
static bool
read_job_timing(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT max_attempts, "
		"  pg_catalog.date_part('epoch', retry_delay)::pg_catalog.float8, "
		"  next_slot, retry_at, manual_pending "
		"FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"FOR NO KEY UPDATE",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	return SPI_processed == 1;
}

/*
 * timing_column
 *		Column n of the row read_job_timing read; *isnull says if NULL.
 */
static Datum
timing_column(int n, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, n, isnull);
}

/*
 * timing_next_run_at
 *		The next_run_at of the row read_job_timing read, with its pending
 *		retry replaced by the given one when has_retry is not -1 (0: none,
 *		1: retry_at), by schedlock_rule_next_run_at.  False when it has none
 *		(NULL).
 */
static bool
timing_next_run_at(int has_retry, TimestampTz retry_at, TimestampTz now,
				   TimestampTz *next_run_at)
{
	bool		slot_null;
	bool		retry_null;
	bool		manual_null;
	Datum		slot = timing_column(3, &slot_null);
	Datum		old_retry = timing_column(4, &retry_null);
	Datum		manual = timing_column(5, &manual_null);

	if (has_retry < 0)
	{
		has_retry = !retry_null;
		retry_at = retry_null ? 0 : DatumGetTimestampTz(old_retry);
	}
	return schedlock_rule_next_run_at(!slot_null,
									  slot_null ? 0 : DatumGetTimestampTz(slot),
									  has_retry != 0, retry_at,
									  manual_null ? 0 : DatumGetInt32(manual),
									  now, next_run_at);
}

/*
 * schedlock_recompute_next_run
 *		Set the job's next_run_at from its next slot, pending retry and
 *		queued run_job() calls (schedlock_rule_next_run_at).  Caller is
 *		connected to SPI.
 */
void
schedlock_recompute_next_run(int64 job_id, TimestampTz now)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET next_run_at = $2 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		2, {INT8OID, TIMESTAMPTZOID}
	};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	TimestampTz next_run_at;

	if (!read_job_timing(job_id))
		return;
	values[0] = Int64GetDatum(job_id);
	nulls[1] = timing_next_run_at(-1, 0, now, &next_run_at) ? ' ' : 'n';
	values[1] = TimestampTzGetDatum(next_run_at);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the next run of job " INT64_FORMAT, job_id);
}

/*
 * schedlock_run_failed
 *		Count a failed (or timed out, or lost) attempt of a slot and, while
 *		attempts are left, schedule the next one after an exponential
 *		backoff (schedlock_rule_retry, rules.c), and set the job's
 *		next_run_at.  attempt 0 means "no retry" (runs asked for with
 *		run_job: schedlock_rule_failed_attempt).  Caller is connected to SPI.
 */
void
schedlock_run_failed(int64 job_id, TimestampTz scheduled_for, int32 attempt,
					 TimestampTz now)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET "
		"  consecutive_failures = consecutive_failures OPERATOR(pg_catalog.+) 1, "
		"  retry_slot = CASE WHEN $2 THEN $3 ELSE retry_slot END, "
		"  retry_attempt = CASE WHEN $2 THEN $4 ELSE retry_attempt END, "
		"  retry_at = CASE WHEN $2 THEN $5 ELSE retry_at END, "
		"  next_run_at = $6 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		6, {INT8OID, BOOLOID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		TIMESTAMPTZOID}
	};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	Datum		d;
	int32		max_attempts;
	double		retry_delay;
	bool		retried;
	int32		next_attempt = 0;
	TimestampTz retry_at = 0;
	TimestampTz next_run_at;

	if (!read_job_timing(job_id))
		return;
	d = timing_column(1, &isnull);
	max_attempts = isnull ? 0 : DatumGetInt32(d);
	d = timing_column(2, &isnull);
	retry_delay = isnull ? 0 : DatumGetFloat8(d);
	retried = schedlock_rule_retry(attempt, max_attempts, retry_delay, now,
								   &next_attempt, &retry_at);

	values[0] = Int64GetDatum(job_id);
	values[1] = BoolGetDatum(retried);
	values[2] = TimestampTzGetDatum(scheduled_for);
	values[3] = Int32GetDatum(next_attempt);
	values[4] = TimestampTzGetDatum(retry_at);
	nulls[5] = timing_next_run_at(retried ? 1 : -1, retry_at, now,
								  &next_run_at) ? ' ' : 'n';
	values[5] = TimestampTzGetDatum(next_run_at);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record a failure of job " INT64_FORMAT, job_id);
}

/*
 * schedlock_run_succeeded
 *		Reset the job's count of consecutive failures.  Caller is connected
 *		to SPI.
 */
void
schedlock_run_succeeded(int64 job_id)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET consecutive_failures = 0 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"  AND consecutive_failures OPERATOR(pg_catalog.<>) 0",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record a success of job " INT64_FORMAT, job_id);
}

/*
 * schedlock_extension_owner
 *		The role that owns the extension (and so the scheduler's tables),
 *		read from pg_extension through its name index: no SQL, so nothing
 *		the caller's search_path or rights could change.
 */
Oid
schedlock_extension_owner(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("schedlock"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"schedlock\" is not installed in this database")));
	return owner;
}

/*
 * check_run_access
 *		Look up a run's owner and make sure the caller acts for that role;
 *		a run the caller may not see is reported as missing.  Caller is
 *		connected to SPI and runs as the extension owner.
 */
static void
check_run_access(int64 run_id, Oid caller)
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
	if (!OidIsValid(owner) || !has_privs_of_role(caller, owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("job run " INT64_FORMAT " does not exist", run_id),
				 errhint("Runs are visible only to the role that owns their job.")));
}

/*
 * run_id_arg
 *		Fetch a non-null run id argument.
 */
static int64
run_id_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("run_id must not be null")));
	return PG_GETARG_INT64(0);
}

/*
 * schedlock_begin_as_owner / schedlock_end_as_owner
 *		Switch to the extension owner for writing the scheduler's tables,
 *		and back.  In between, search_path is "pg_catalog, pg_temp" (a GUC
 *		nest level of schedlock_trusted_path_begin), whatever the caller
 *		set: the caller chooses nothing but argument values.  An error in
 *		between is undone by the (sub)transaction abort.  Used by run.c and
 *		job.c.
 */
void
schedlock_begin_as_owner(Oid *save_uid, int *save_sec, int *save_nestlevel)
{
	Oid			owner = schedlock_extension_owner();

	GetUserIdAndSecContext(save_uid, save_sec);
	*save_nestlevel = schedlock_trusted_path_begin();
	SetUserIdAndSecContext(owner, *save_sec | SECURITY_LOCAL_USERID_CHANGE);
}

void
schedlock_end_as_owner(Oid save_uid, int save_sec, int save_nestlevel)
{
	SetUserIdAndSecContext(save_uid, save_sec);
	schedlock_trusted_path_end(save_nestlevel);
}

/*
 * claim_run
 *		Take a pending (notified, unclaimed) run of a NOTIFY job: true for
 *		the one caller whose UPDATE turns it from pending to running.
 *		Concurrent callers queue on the row lock and then find it running.
 *		The claimer has the job's timeout (at most
 *		SCHEDLOCK_MAX_TIMEOUT_SECS, default
 *		SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT s) from now to call
 *		schedlock_finish_run.  When payload is not NULL, the job's payload
 *		is copied there (in the caller's memory context; *payload_null
 *		when the job has none or the claim failed).
 */
static bool
claim_run(FunctionCallInfo fcinfo, Datum *payload, bool *payload_null)
{
	int64		run_id = run_id_arg(fcinfo);
	char	   *claimed_by = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			types[4] = {INT8OID, TEXTOID, TIMESTAMPTZOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	bool		claimed;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot claim a job run during recovery"),
				 errhint("Connect to the primary server.")));

	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	check_run_access(run_id, save_uid);
	values[0] = Int64GetDatum(run_id);
	values[1] = claimed_by ? CStringGetTextDatum(claimed_by) : (Datum) 0;
	if (claimed_by == NULL)
		nulls[1] = 'n';
	values[2] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[3] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args("UPDATE schedlock.job_runs r SET status = 'running', "
							  "  claimed_by = $2, claimed_at = $3, started_at = $3, "
							  "  worker_pid = $4, "
							  "  deadline = $3 OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => "
							  "    CASE WHEN j.timeout IS NULL THEN "
							  CppAsString2(SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT)
							  "    ELSE LEAST(pg_catalog.date_part('epoch', j.timeout), "
							  CppAsString2(SCHEDLOCK_MAX_TIMEOUT_SECS) ") END) "
							  "FROM schedlock.jobs j "
							  "WHERE r.run_id OPERATOR(pg_catalog.=) $1 "
							  "  AND r.status OPERATOR(pg_catalog.=) 'pending' "
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
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	return claimed;
}

/*
 * schedlock_claim_run
 *		SQL: schedlock_claim_run(run_id bigint, claimed_by text) -> boolean
 *
 * Claims a notified run (see claim_run).  Kept for applications of release
 * 1.0; schedlock_claim_run_payload also returns the job's payload, which the
 * notification no longer carries.
 */
Datum
schedlock_claim_run(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(claim_run(fcinfo, NULL, NULL));
}

/*
 * schedlock_claim_run_payload
 *		SQL: schedlock_claim_run_payload(run_id bigint, claimed_by text,
 *										 OUT claimed boolean,
 *										 OUT payload jsonb) -> record
 *
 * Claims a notified run like schedlock_claim_run and hands the claimer the
 * job's payload (its current definition) in the same call.  The payload
 * goes only to a caller that may claim the run (a member of the role that
 * owns the job): anybody may LISTEN on any channel, so the notification
 * carries no payload.  payload is NULL when the claim failed.
 */
Datum
schedlock_claim_run_payload(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		result[2];
	bool		nulls[2] = {false, true};
	Datum		payload = (Datum) 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	result[0] = BoolGetDatum(claim_run(fcinfo, &payload, &nulls[1]));
	result[1] = payload;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, result, nulls)));
}

/*
 * schedlock_finish_run
 *		SQL: schedlock_finish_run(run_id bigint, succeeded boolean,
 *								  message text) -> boolean
 *
 * Closes a running run of a NOTIFY job as succeeded or failed; a failure
 * is retried per the job's policy (the workers are woken at commit).
 * False when the run is not running any more (finished, or timed out and
 * closed by a worker).
 */
Datum
schedlock_finish_run(PG_FUNCTION_ARGS)
{
	int64		run_id = run_id_arg(fcinfo);
	bool		succeeded;
	char	   *message = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	Oid			types[4] = {INT8OID, BOOLOID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	bool		finished;
	TimestampTz now = GetCurrentTimestamp();

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("succeeded must not be null")));
	succeeded = PG_GETARG_BOOL(1);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot finish a job run during recovery"),
				 errhint("Connect to the primary server.")));

	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	check_run_access(run_id, save_uid);
	values[0] = Int64GetDatum(run_id);
	values[1] = BoolGetDatum(succeeded);
	values[2] = message ? CStringGetTextDatum(message) : (Datum) 0;
	if (message == NULL)
		nulls[2] = 'n';
	values[3] = TimestampTzGetDatum(now);
	if (SPI_execute_with_args("UPDATE schedlock.job_runs SET "
							  "  status = CASE WHEN $2 THEN 'succeeded' ELSE 'failed' END, "
							  "  finished_at = $4, deadline = NULL, message = $3 "
							  "WHERE run_id OPERATOR(pg_catalog.=) $1 "
							  "  AND status OPERATOR(pg_catalog.=) 'running' "
							  "RETURNING job_id, scheduled_for, attempt, manual",
							  4, types, values, nulls, false, 0) != SPI_OK_UPDATE_RETURNING)
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

		if (succeeded)
			schedlock_run_succeeded(job_id);
		else
		{
			schedlock_run_failed(job_id, slot,
								 schedlock_rule_failed_attempt(manual, attempt),
								 now);
			schedlock_wake_workers_at_commit();
		}
	}
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	PG_RETURN_BOOL(finished);
}

/*
 * schedlock_job_worker_pid
 *		SQL: schedlock.job_worker_pid(job_id bigint) -> integer
 *
 * The pid of a worker of this database that is running the job right now
 * (atomic runs are not visible in job_runs until they commit), or NULL.
 */
Datum
schedlock_job_worker_pid(PG_FUNCTION_ARGS)
{
	int64		job_id = PG_GETARG_INT64(0);
	pid_t		pid = 0;
	int			i;

	if (schedlock_shared == NULL)
		PG_RETURN_NULL();
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockWorkerSlot *slot = &schedlock_shared->slots[i];

		if (slot->in_use && slot->dboid == MyDatabaseId && slot->pid != 0 &&
			slot->running_job == job_id)
			pid = slot->pid;
	}
	LWLockRelease(schedlock_shared->lock);
	if (pid == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32((int32) pid);
}
