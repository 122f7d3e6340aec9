/*-------------------------------------------------------------------------
 *
 * notify_api.c
 *	  The SQL functions applications use for NOTIFY jobs:
 *	  schedlock_claim_run, schedlock_claim_run_payload and
 *	  schedlock_finish_run.  The run bookkeeping they share
 *	  with the workers (failures, retries, next_run_at) and their
 *	  statements are in src/sched/store (store_notify.c).
 *
 * A run row moves through these states (docs/jobs.md, "A run's life",
 * describes them for users):
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
 *	  src/sched/notify_api.c
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

#include "base/kept_query.h"
#include "base/owner.h"
#include "base/primary.h"
#include "base/settings.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"

PG_FUNCTION_INFO_V1(schedlock_claim_run);
PG_FUNCTION_INFO_V1(schedlock_claim_run_payload);
PG_FUNCTION_INFO_V1(schedlock_finish_run);
PG_FUNCTION_INFO_V1(schedlock_job_worker_pid);
PG_FUNCTION_INFO_V1(schedlock_job_wait_reason);

PGDLLEXPORT Datum schedlock_claim_run(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_claim_run_payload(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_finish_run(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_job_worker_pid(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_job_wait_reason(PG_FUNCTION_ARGS);

/*
 * check_run_access
 *		Look up a run's owner and make sure the caller acts for that role;
 *		a run the caller may not see is reported as missing.  Caller is
 *		connected to SPI and runs as the extension owner.
 */
static void
check_run_access(int64 run_id, Oid caller)
{
	Oid			owner = schedlock_run_owner(run_id);

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
 * claim_run
 *		Take a pending (notified, unclaimed) run of a NOTIFY job: true for
 *		the one caller whose UPDATE turns it from pending to running.
 *		Concurrent callers queue on the row lock and then find it running.
 *		The claimer has the job's timeout (at most
 *		SCHEDLOCK_MAX_TIMEOUT_SECS, default
 *		SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT s) from now to call
 *		schedlock_finish_run.  When payload is not NULL, the job's payload
 *		is copied there (in the caller's memory context; *payload_null
 *		when the job has none or the claim failed).  funcname is the SQL
 *		function called, for the error on a standby.
 */
static bool
claim_run(FunctionCallInfo fcinfo, const char *funcname, Datum *payload,
		  bool *payload_null)
{
	int64		run_id = run_id_arg(fcinfo);
	char	   *claimed_by = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			save_uid;
	int			save_sec;
	int			save_nestlevel;
	bool		claimed;

	schedlock_require_writable(funcname);
	schedlock_require_served_tables(funcname);

	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	check_run_access(run_id, save_uid);
	claimed = schedlock_claim_pending_run(run_id, claimed_by,
										  GetCurrentTimestamp(), payload,
										  payload_null);
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	return claimed;
}

/*
 * schedlock_claim_run
 *		SQL: schedlock_claim_run(run_id bigint, claimed_by text) -> boolean
 *
 * Claims a notified run (see claim_run), without the job's payload;
 * schedlock_claim_run_payload also returns the payload, which the
 * notification does not carry.
 */
Datum
schedlock_claim_run(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(claim_run(fcinfo, "schedlock_claim_run", NULL, NULL));
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
	result[0] = BoolGetDatum(claim_run(fcinfo, "schedlock_claim_run_payload",
									   &payload, &nulls[1]));
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
	schedlock_require_writable("schedlock_finish_run");
	schedlock_require_served_tables("schedlock_finish_run");

	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &save_nestlevel);
	check_run_access(run_id, save_uid);
	finished = schedlock_finish_running_run(run_id, succeeded, message, now);
	/* a failure may be retried: the workers look again at commit */
	if (finished && !succeeded)
		schedlock_wake_workers_at_commit();
	schedlock_end_as_owner(save_uid, save_sec, save_nestlevel);
	SPI_finish();

	PG_RETURN_BOOL(finished);
}

/*
 * schedlock_job_worker_pid
 *		SQL: schedlock.job_worker_pid(job_id bigint) -> integer
 *
 * The pid of the job backend of this database that is running the job
 * right now (atomic runs are not visible in job_runs until they commit),
 * or NULL.  The statements that tell a run in progress from a lost one use
 * it too (RUNNER_GONE, store_int.h).
 */
Datum
schedlock_job_worker_pid(PG_FUNCTION_ARGS)
{
	int			pid = schedlock_running_pid(MyDatabaseId, PG_GETARG_INT64(0));

	if (pid == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32(pid);
}

/*
 * schedlock_job_wait_reason
 *		SQL: schedlock.job_wait_reason(role regrole) -> text
 *
 * Why the due jobs of role (the role they run as) in this database wait
 * for a job backend, or NULL when they do not: the cluster's budget, the
 * database's cap, the role's cap (its backends in every database),
 * max_worker_processes, or a role that cannot log in.
 */
Datum
schedlock_job_wait_reason(PG_FUNCTION_ARGS)
{
	TimestampTz since;
	char		error[256];
	char	   *reason;

	switch (schedlock_queue_wait(MyDatabaseId, PG_GETARG_OID(0), &since,
								 error))
	{
		case SCHEDLOCK_WAIT_BUDGET:
			reason = psprintf("waiting since %s for a job backend: all schedlock.max_job_backends (%d) are in use",
							  timestamptz_to_str(since),
							  schedlock_max_job_backends);
			break;
		case SCHEDLOCK_WAIT_DATABASE_CAP:
			reason = psprintf("waiting since %s for a job backend: the database has schedlock.max_workers (%d)",
							  timestamptz_to_str(since),
							  schedlock_max_workers);
			break;
		case SCHEDLOCK_WAIT_ROLE_CAP:
			reason = psprintf("waiting since %s for a job backend: the role has schedlock.max_runs_per_role (%d) job backends in the cluster",
							  timestamptz_to_str(since),
							  schedlock_max_runs_per_role);
			break;
		case SCHEDLOCK_WAIT_PROCESSES:
			reason = psprintf("waiting since %s for a job backend: no max_worker_processes slot is free",
							  timestamptz_to_str(since));
			break;
		case SCHEDLOCK_WAIT_LOCKED:
			reason = psprintf("waiting since %s: its job backend could not get a lock on schedlock's tables or a job's row within schedlock.bookkeeping_lock_timeout (%d ms), left, and is tried again",
							  timestamptz_to_str(since),
							  schedlock_bookkeeping_lock_timeout);
			break;
		case SCHEDLOCK_WAIT_START_FAILED:
			reason = psprintf("the job backend could not start: %s", error);
			break;
		default:
			PG_RETURN_NULL();
	}
	PG_RETURN_TEXT_P(cstring_to_text(reason));
}
