/*-------------------------------------------------------------------------
 *
 * store_runs.c
 *	  Recording runs: a claimed job's advanced state, its run, its outcome,
 *	  and a set of NOTIFY runs in one statement.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_runs.c
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

/* The status of a run that ended with error (NULL: it succeeded). */
static inline SchedlockRunStatus
ended_status(const ErrorData *error)
{
	return error != NULL ? SCHEDLOCK_RUN_FAILED : SCHEDLOCK_RUN_SUCCEEDED;
}

/* ... as the text job_runs.status holds */
static inline Datum
ended_status_datum(const ErrorData *error)
{
	return CStringGetTextDatum(schedlock_run_status_name(ended_status(error)));
}

/*
 * The advanced state of a claimed job as six statement parameters, in this
 * order: next_slot, retry_slot, retry_attempt, retry_at, manual_pending,
 * next_run_at (as of now).  Every statement that advances a job takes them
 * so (schedlock_save_job_state, schedlock_record_ended_run,
 * schedlock_publish_notify_runs).
 */
#define JOB_STATE_NPARAMS 6

static void
job_state_params(ClaimedJob *job, TimestampTz now, Datum *values,
				 char *nulls)
{
	TimestampTz next_run_at;

	values[0] = TimestampTzGetDatum(job->next_slot);
	nulls[0] = job->has_next_slot ? ' ' : 'n';
	values[1] = TimestampTzGetDatum(job->retry_slot);
	values[2] = Int32GetDatum(job->retry_attempt);
	values[3] = TimestampTzGetDatum(job->retry_at);
	nulls[1] = nulls[2] = nulls[3] = job->has_retry ? ' ' : 'n';
	values[4] = Int32GetDatum(job->manual_pending);
	nulls[4] = ' ';
	/* the claim found the job enabled, and holds its row */
	nulls[5] = schedlock_rule_next_run_at(true,
										  job->has_next_slot, job->next_slot,
										  job->has_retry, job->retry_at,
										  job->manual_pending, now,
										  &next_run_at) ? ' ' : 'n';
	values[5] = TimestampTzGetDatum(next_run_at);
}

/*
 * The outcome of a run as six statement parameters, in this order:
 * sqlstate, message, detail, hint, result_status, notices.  error: the
 * run's error, or NULL when it succeeded (then the message is
 * default_message, which may be NULL); result_status: the command tag of
 * the last statement ("" or NULL: none); notices: its captured output, or
 * NULL.  *state and *message get the SQLSTATE (NULL on success) and the
 * message, for the log line.
 */
#define RUN_OUTCOME_NPARAMS 6

static void
run_outcome_params(ErrorData *error, const char *default_message,
				   const char *result_status, const char *notices,
				   Datum *values, char *nulls, char **state,
				   const char **message)
{
	memset(nulls, 'n', RUN_OUTCOME_NPARAMS);
	*state = NULL;
	*message = default_message;
	if (error)
	{
		/* unpack_sql_state returns a static buffer that ereport reuses */
		*state = pstrdup(unpack_sql_state(error->sqlerrcode));
		*message = error->message ? error->message : "unknown error";
		values[0] = CStringGetTextDatum(*state);
		nulls[0] = ' ';
		if (error->detail)
		{
			values[2] = CStringGetTextDatum(error->detail);
			nulls[2] = ' ';
		}
		if (error->hint)
		{
			values[3] = CStringGetTextDatum(error->hint);
			nulls[3] = ' ';
		}
	}
	if (*message != NULL)
	{
		values[1] = CStringGetTextDatum(*message);
		nulls[1] = ' ';
	}
	if (result_status != NULL && result_status[0] != '\0')
	{
		values[4] = CStringGetTextDatum(result_status);
		nulls[4] = ' ';
	}
	if (notices != NULL)
	{
		values[5] = CStringGetTextDatum(notices);
		nulls[5] = ' ';
	}
}

/*
 * schedlock_save_job_state
 *		Write the advanced next_slot, retry and queue state of the job and
 *		its next_run_at (schedlock_rule_next_run_at).
 */
void
schedlock_save_job_state(ClaimedJob *job, TimestampTz now)
{
	/* the row this transaction has locked: found by its ctid, no index */
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET next_slot = $2, "
		"  retry_slot = $3, retry_attempt = $4, retry_at = $5, "
		"  manual_pending = $6, next_run_at = $7 "
		"WHERE ctid OPERATOR(pg_catalog.=) $8 "
		"  AND job_id OPERATOR(pg_catalog.=) $1",
		8, {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		INT4OID, TIMESTAMPTZOID, TIDOID}
	};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(job->job_id);
	job_state_params(job, now, &values[1], &nulls[1]);
	values[7] = PointerGetDatum(&job->ctid);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not advance job " INT64_FORMAT, job->job_id);
}

/*
 * schedlock_record_run
 *		Insert the run's row (or turn the queued run_job() row into it) with
 *		the given status.  Returns the run id, or 0 when the slot's attempt
 *		exists already (the unique key refused it).
 */
int64
schedlock_record_run(ClaimedJob *job, ClaimPlan *plan,
					 SchedlockRunStatus status, TimestampTz now, TimestampTz deadline, bool has_deadline)
{
	static SchedlockQuery update_queued = {
		"UPDATE schedlock.job_runs SET status = $5, "
		"  started_at = CASE WHEN $5 OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SKIPPED) " "
		"    THEN NULL ELSE $6 END, "
		"  finished_at = CASE WHEN $5 OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SKIPPED) " "
		"    THEN $6 END, "
		"  worker_pid = $7, timeline = $8, message = $9, deadline = $10 "
		"WHERE run_id OPERATOR(pg_catalog.=) $1 "
		"  AND status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(QUEUED) " "
		"RETURNING run_id",
		10, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID}
	};

	/* the tables of 1.1 have no job_runs.job_name ($11 unused) */
	static SchedlockQuery insert_1_1 = {
		"INSERT INTO schedlock.job_runs (job_id, owner, "
		"  scheduled_for, attempt, status, started_at, "
		"  finished_at, worker_pid, timeline, message, deadline) "
		"VALUES ($1, $2, $3, $4, $5, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SKIPPED) " THEN NULL ELSE $6 END, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SKIPPED) " THEN $6 END, "
		"  $7, $8, $9, $10) "
		"ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"RETURNING run_id",
		11, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID}
	};
	static SchedlockQuery insert = {
		"INSERT INTO schedlock.job_runs (job_id, owner, "
		"  scheduled_for, attempt, status, started_at, "
		"  finished_at, worker_pid, timeline, message, deadline, job_name) "
		"VALUES ($1, $2, $3, $4, $5, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SKIPPED) " THEN NULL ELSE $6 END, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SKIPPED) " THEN $6 END, "
		"  $7, $8, $9, $10, $11) "
		"ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"RETURNING run_id",
		11, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID}
	};
	Datum		values[11];
	char		nulls[11];
	bool		isnull;
	bool		finished = (status == SCHEDLOCK_RUN_SKIPPED);
	int			rc;
	int64		run_id;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(plan->manual_run_id ? plan->manual_run_id : job->job_id);
	values[1] = ObjectIdGetDatum(job->owner);
	values[2] = TimestampTzGetDatum(plan->scheduled_for);
	values[3] = Int32GetDatum(plan->attempt);
	values[4] = CStringGetTextDatum(schedlock_run_status_name(status));
	values[5] = TimestampTzGetDatum(now);
	values[6] = Int32GetDatum(finished ? 0 : MyProcPid);
	nulls[6] = finished ? 'n' : ' ';
	values[7] = Int32GetDatum((int32) GetWALInsertionTimeLine());
	values[8] = plan->message ? CStringGetTextDatum(plan->message) : (Datum) 0;
	nulls[8] = plan->message ? ' ' : 'n';
	values[9] = TimestampTzGetDatum(deadline);
	nulls[9] = has_deadline ? ' ' : 'n';
	values[10] = CStringGetTextDatum(job->job_name);

	rc = schedlock_query_run(plan->manual_run_id ? &update_queued :
							 store_tables_current() ? &insert : &insert_1_1,
							 values, nulls, false, 0);
	if (rc != SPI_OK_INSERT_RETURNING && rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not record a run of job " INT64_FORMAT, job->job_id);
	if (SPI_processed != 1)
		return 0;
	run_id = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return run_id;
}

/*
 * alloc_columns
 *		The columns of a statement that takes one array per column
 *		(array_of): ncols arrays of n elements, none of them NULL yet.
 */
static void
alloc_columns(Datum **elems, bool **elnulls, int ncols, int n)
{
	for (int c = 0; c < ncols; c++)
	{
		elems[c] = palloc(sizeof(Datum) * n);
		elnulls[c] = palloc0(sizeof(bool) * n);
	}
}

/*
 * put_outcome
 *		What run_outcome_params makes of the ended run r, as element i of
 *		the RUN_OUTCOME_NPARAMS columns from first on (alloc_columns).
 */
static void
put_outcome(const SchedlockEndedRun *r, const char *default_message,
			Datum **elems, bool **elnulls, int first, int i, char **state,
			const char **message)
{
	Datum		outcome[RUN_OUTCOME_NPARAMS];
	char		outcome_nulls[RUN_OUTCOME_NPARAMS];

	run_outcome_params(r->error, default_message, r->result_status,
					   r->notices, outcome, outcome_nulls, state, message);
	for (int c = 0; c < RUN_OUTCOME_NPARAMS; c++)
	{
		elems[first + c][i] = outcome[c];
		elnulls[first + c][i] = (outcome_nulls[c] == 'n');
	}
}

/*
 * run_row_kept
 *		Whether a run of job that ended with error (NULL: it succeeded)
 *		keeps its row in job_runs: a failure always, a success unless the
 *		job keeps only its failures (record_runs = failures).
 */
static inline bool
run_row_kept(const ClaimedJob *job, const ErrorData *error)
{
	return error != NULL || !job->failures_only;
}

/*
 * read_set_durations
 *		After a statement over n runs that returns each run's ordinal
 *		(1 to n) and duration: durations[i - 1] gets run i's (NULL when it
 *		returned none for it).  Frees the result.
 */
static void
read_set_durations(Interval **durations, int n)
{
	for (uint64 k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		int64		i = DatumGetInt64(col(SPI_tuptable->vals[k],
										  SPI_tuptable->tupdesc, 1, &isnull));
		Datum		d = SPI_getbinval(SPI_tuptable->vals[k],
									  SPI_tuptable->tupdesc, 2, &isnull);

		if (i < 1 || i > n)
			elog(ERROR, "could not record runs");
		durations[i - 1] = isnull ? NULL : DatumGetIntervalP(d);
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_publish_notify_runs
 *		For n claimed NOTIFY jobs whose plan is to run their slot (no queued
 *		run_job() row, no run in progress: see dispatch_notify_batch in
 *		notify_dispatch.c), in one statement: write each job's advanced state as of
 *		horizon (schedlock_save_job_state), record its run as pending since
 *		now with its claim deadline (schedlock_record_run), and queue its
 *		notification (delivered when the transaction commits), in the order
 *		of the jobs.  A slot's attempt that has a row already is neither
 *		recorded nor notified, as with schedlock_record_run.  Tables of
 *		release 1.2, connected to SPI, in a transaction.
 */
void
schedlock_publish_notify_runs(ClaimedJob *jobs, ClaimPlan *plans,
							  TimestampTz *deadlines, int n,
							  TimestampTz now, TimestampTz horizon)
{
	/* the second column counts the notifications, which makes them happen */
	static SchedlockQuery q = {
		"WITH u AS MATERIALIZED (SELECT * FROM ROWS FROM ("
		"    pg_catalog.unnest($1), pg_catalog.unnest($2), "
		"    pg_catalog.unnest($3), pg_catalog.unnest($4), "
		"    pg_catalog.unnest($5), pg_catalog.unnest($6), "
		"    pg_catalog.unnest($7), pg_catalog.unnest($8), "
		"    pg_catalog.unnest($9), pg_catalog.unnest($10), "
		"    pg_catalog.unnest($11), pg_catalog.unnest($12), "
		"    pg_catalog.unnest($13), pg_catalog.unnest($14), "
		"    pg_catalog.unnest($15)) "
		"  WITH ORDINALITY AS u(job_id, tid, next_slot, retry_slot, "
		"    retry_attempt, retry_at, manual_pending, next_run_at, owner, "
		"    scheduled_for, attempt, message, deadline, job_name, channel, i)), "
		"j AS (UPDATE schedlock.jobs t SET next_slot = u.next_slot, "
		"    retry_slot = u.retry_slot, retry_attempt = u.retry_attempt, "
		"    retry_at = u.retry_at, manual_pending = u.manual_pending, "
		"    next_run_at = u.next_run_at "
		"  FROM u WHERE t.ctid OPERATOR(pg_catalog.=) u.tid "
		"    AND t.job_id OPERATOR(pg_catalog.=) u.job_id "
		"  RETURNING t.job_id), "
		"r AS (INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, "
		"    attempt, status, started_at, worker_pid, timeline, message, "
		"    deadline, job_name) "
		"  SELECT u.job_id, u.owner::pg_catalog.regrole, u.scheduled_for, "
		"    u.attempt, " SCHEDLOCK_RUN_SQL(PENDING) ", $16, $17, $18, u.message, u.deadline, "
		"    u.job_name FROM u ORDER BY u.i "
		"  ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"  RETURNING run_id, job_id, scheduled_for, attempt) "
		"SELECT (SELECT pg_catalog.count(*) FROM j), "
		"  (SELECT pg_catalog.count(*) FROM (SELECT "
		SCHEDLOCK_NOTIFY_RUN_SQL("u.channel", "u.job_name", "r.job_id",
								 "r.run_id", "r.scheduled_for", "r.attempt")
		"    FROM r JOIN u USING (job_id) ORDER BY u.i) s)",
		18, {INT8ARRAYOID, TIDARRAYOID, TIMESTAMPTZARRAYOID,
			TIMESTAMPTZARRAYOID, INT4ARRAYOID, TIMESTAMPTZARRAYOID,
			INT4ARRAYOID, TIMESTAMPTZARRAYOID, OIDARRAYOID,
			TIMESTAMPTZARRAYOID, INT4ARRAYOID, TEXTARRAYOID,
			TIMESTAMPTZARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
		TIMESTAMPTZOID, INT4OID, INT4OID}
	};

	/* the columns of u, $1 to $15 */
	enum
	{
		U_JOB_ID, U_TID, U_NEXT_SLOT, U_RETRY_SLOT, U_RETRY_ATTEMPT,
		U_RETRY_AT, U_MANUAL_PENDING, U_NEXT_RUN_AT, U_OWNER,
		U_SCHEDULED_FOR, U_ATTEMPT, U_MESSAGE, U_DEADLINE, U_JOB_NAME,
		U_CHANNEL, U_NCOLS
	};
	static const Oid elemtypes[U_NCOLS] = {
		INT8OID, TIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID,
		TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, OIDOID, TIMESTAMPTZOID,
		INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID
	};
	Datum	   *elems[U_NCOLS];
	bool	   *elnulls[U_NCOLS];
	Datum		values[18];
	bool		isnull;
	int64		advanced;

	Assert(n > 0);
	alloc_columns(elems, elnulls, U_NCOLS, n);
	for (int i = 0; i < n; i++)
	{
		ClaimedJob *job = &jobs[i];
		ClaimPlan  *plan = &plans[i];
		Datum		state[JOB_STATE_NPARAMS];
		char		state_nulls[JOB_STATE_NPARAMS];

		Assert(plan->kind == PLAN_RUN && plan->manual_run_id == 0);
		elems[U_JOB_ID][i] = Int64GetDatum(job->job_id);
		elems[U_TID][i] = PointerGetDatum(&job->ctid);
		/* U_NEXT_SLOT to U_NEXT_RUN_AT, in job_state_params' order */
		job_state_params(job, horizon, state, state_nulls);
		for (int c = 0; c < JOB_STATE_NPARAMS; c++)
		{
			elems[U_NEXT_SLOT + c][i] = state[c];
			elnulls[U_NEXT_SLOT + c][i] = (state_nulls[c] == 'n');
		}
		elems[U_OWNER][i] = ObjectIdGetDatum(job->owner);
		elems[U_SCHEDULED_FOR][i] = TimestampTzGetDatum(plan->scheduled_for);
		elems[U_ATTEMPT][i] = Int32GetDatum(plan->attempt);
		elems[U_MESSAGE][i] = plan->message ?
			CStringGetTextDatum(plan->message) : (Datum) 0;
		elnulls[U_MESSAGE][i] = plan->message == NULL;
		elems[U_DEADLINE][i] = TimestampTzGetDatum(deadlines[i]);
		elems[U_JOB_NAME][i] = CStringGetTextDatum(job->job_name);
		elems[U_CHANNEL][i] = CStringGetTextDatum(job->channel);
	}
	for (int c = 0; c < U_NCOLS; c++)
		values[c] = array_of(elems[c], elnulls[c], n, elemtypes[c]);
	values[15] = TimestampTzGetDatum(now);
	values[16] = Int32GetDatum(MyProcPid);
	values[17] = Int32GetDatum((int32) GetWALInsertionTimeLine());

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not publish NOTIFY runs");
	advanced = DatumGetInt64(col(SPI_tuptable->vals[0],
								 SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (advanced != n)
		elog(ERROR, "could not advance %d jobs (advanced " INT64_FORMAT ")",
			 n, advanced);
}

/*
 * schedlock_record_outcome
 *		Close a run as succeeded or failed (error), with what the run said:
 *		the error's SQLSTATE, message, detail and hint, its duration, the
 *		command tag of its last statement (result_status, may be NULL or
 *		"") and its captured output (notices, may be NULL), and count it in
 *		the job's statistics, all in one statement; log it per
 *		schedlock.log_runs, and update the job's failure count and retry
 *		(a success resets the count in that statement).  Connected to SPI,
 *		in a transaction.
 */
void
schedlock_record_outcome(ClaimedJob *job, ClaimPlan *plan, int64 run_id,
						 ErrorData *error, const char *result_status,
						 const char *notices)
{
	static SchedlockQuery q = {
		"WITH e AS ("
		"UPDATE schedlock.job_runs r SET status = $2, "
		"  finished_at = $3, sqlstate = $4, "
		"  message = COALESCE($5, message), detail = $6, hint = $7, "
		"  duration = $3 OPERATOR(pg_catalog.-) started_at, "
		"  result_status = $8, notices = $9 "
		"WHERE run_id OPERATOR(pg_catalog.=) $1 "
		"RETURNING " ENDED_RUN_COLUMNS("r", "$3") "), "
		SCHEDLOCK_RUN_STATS_ONE_CTE "SELECT e.duration FROM e",
		9, {INT8OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID, TEXTOID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	char	   *state;
	const char *message;
	Datum		duration = (Datum) 0;
	bool		isnull = true;

	values[0] = Int64GetDatum(run_id);
	values[1] = ended_status_datum(error);
	values[2] = TimestampTzGetDatum(now);
	/* $4 to $9; a success keeps the message the run's row has */
	run_outcome_params(error, NULL, result_status, notices, &values[3],
					   &nulls[3], &state, &message);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the outcome of run " INT64_FORMAT, run_id);
	if (SPI_processed == 1)
		duration = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								 1, &isnull);
	schedlock_log_run_end(job->job_name, job->role_name, run_id,
						  ended_status(error), state, message,
						  isnull ? NULL : DatumGetIntervalP(duration));
	if (error)
	{
		schedlock_run_failed(job->job_id, plan->scheduled_for,
							 schedlock_rule_failed_attempt(plan->manual_run_id != 0,
														   plan->attempt),
							 now);
	}
	if (!run_row_kept(job, error))
		schedlock_forget_run(run_id);
}

/*
 * schedlock_record_ended_run
 *		Record a run that has ended in the claiming transaction, and the
 *		job's advanced state with it (plan->deferred: schedlock_save_job_state
 *		was not called), in one statement: the run's row is inserted as it
 *		ended, and the job's row gets its next slot, retry and next_run_at as
 *		of the claim's horizon, and the run counted in its statistics.  A
 *		command that changed its own job's row (schedlock.alter_job of its
 *		own job: the row is no longer the version claimed, at plan's ctid)
 *		keeps what it wrote there, as it would have had the job been
 *		advanced before it ran; a slot it left due is found recorded when it
 *		is claimed again, and is not run twice.  The rest is as
 *		schedlock_record_outcome: the log line, and a failure's count and
 *		retry.  Returns the run id.  A row of the slot's attempt that
 *		appeared meanwhile (schedlock_run_may_defer found none) is an error
 *		(on job_runs' unique key): the run's effects must not commit beside
 *		it.  A job its own command deleted has its run recorded all the same.
 *		A job that keeps only its failures (record_runs = failures) writes
 *		no row for a run that succeeded: the job's advanced state marks the
 *		slot as run.  Its row is written all the same when the command
 *		changed or deleted the job's row, which then holds no such state.
 */
int64
schedlock_record_ended_run(ClaimedJob *job, ClaimPlan *plan,
						   TimestampTz started_at,
						   ErrorData *error, const char *result_status,
						   const char *notices)
{
	static SchedlockQuery q = {
		"WITH r AS ("
		"INSERT INTO schedlock.job_runs (run_id, job_id, owner, "
		"  scheduled_for, attempt, status, started_at, finished_at, "
		"  worker_pid, timeline, message, sqlstate, detail, hint, duration, "
		"  result_status, notices, job_name) "
		"SELECT $24, $1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $10, $12, $13, "
		"  $7 OPERATOR(pg_catalog.-) $6, $14, $15, $16 "
		"WHERE $25 OR NOT EXISTS (SELECT FROM schedlock.jobs x "
		"  WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"    AND x.ctid OPERATOR(pg_catalog.=) $23)) "
		"UPDATE schedlock.jobs j SET "
		"  next_slot = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $17 ELSE j.next_slot END, "
		"  retry_slot = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $18 ELSE j.retry_slot END, "
		"  retry_attempt = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $19 ELSE j.retry_attempt END, "
		"  retry_at = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $20 ELSE j.retry_at END, "
		"  manual_pending = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $21 ELSE j.manual_pending END, "
		"  next_run_at = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $22 ELSE j.next_run_at END, "
		SCHEDLOCK_RUN_STATS_ONE_SET
		"FROM (SELECT $5 AS status, $6 AS started_at, $7 AS finished_at, "
		"  $3 AS scheduled_for) e "
		"WHERE j.job_id OPERATOR(pg_catalog.=) $1",
		25, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
			TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID,
			TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
			TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		INT4OID, TIMESTAMPTZOID, TIDOID, INT8OID, BOOLOID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[25];
	char		nulls[25];
	char	   *state;
	const char *message;

	Assert(plan->deferred && plan->manual_run_id == 0 && plan->run_id != 0);
	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(job->job_id);
	values[1] = ObjectIdGetDatum(job->owner);
	values[2] = TimestampTzGetDatum(plan->scheduled_for);
	values[3] = Int32GetDatum(plan->attempt);
	values[4] = ended_status_datum(error);
	values[5] = TimestampTzGetDatum(started_at);
	values[6] = TimestampTzGetDatum(now);
	values[7] = Int32GetDatum(MyProcPid);
	values[8] = Int32GetDatum((int32) GetWALInsertionTimeLine());
	/* $10 to $15; a success keeps the slot's note (catch-up) */
	run_outcome_params(error, plan->message, result_status, notices,
					   &values[9], &nulls[9], &state, &message);
	values[15] = CStringGetTextDatum(job->job_name);
	/* $17 to $22: the job's state, as schedlock_save_job_state writes it */
	job_state_params(job, plan->horizon, &values[16], &nulls[16]);
	values[22] = PointerGetDatum(&job->ctid);
	values[23] = Int64GetDatum(plan->run_id);
	/* $25: whether the run's row is kept whatever became of its job */
	values[24] = BoolGetDatum(run_row_kept(job, error));

	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record a run of job " INT64_FORMAT, job->job_id);
	schedlock_log_run_end(job->job_name, job->role_name, plan->run_id,
						  ended_status(error), state,
						  error ? message : NULL,
						  DatumGetIntervalP(DirectFunctionCall2(timestamp_mi,
																values[6],
																values[5])));

	/*
	 * No row updated: the job is gone.  The backend holds the job's row lock
	 * since the claim, so only the run's own command can have deleted it
	 * (unschedule_job of itself); the run's row is written all the same (the
	 * INSERT of r always runs to its end), and there is no job left to count
	 * a failure or retry on.
	 */
	if (error && SPI_processed > 0)
		schedlock_run_failed(job->job_id, plan->scheduled_for,
							 schedlock_rule_failed_attempt(false, plan->attempt),
							 now);
	return plan->run_id;
}

/*
 * schedlock_record_ended_runs
 *		schedlock_record_ended_run for n runs of n different jobs at once,
 *		in one statement: each run's row inserted as it ended (not one
 *		that succeeded of a job that keeps only its failures, as there),
 *		each job's row advanced (where it is still the version claimed)
 *		and the run counted in its statistics; then the log lines, and
 *		each failure's count and retry.  Returns false, having logged
 *		nothing, when not every job was found (a job its own command
 *		deleted), and fails on job_runs' unique key when a row of a slot's
 *		attempt appeared meanwhile (no ON CONFLICT: its speculative
 *		insertion cost about a tenth of the statement, for a case the
 *		caller handles anyway): the caller then rolls the statement back
 *		and records the runs one at a time, where each such run gets the
 *		error it gets there.
 */
bool
schedlock_record_ended_runs(SchedlockEndedRun *runs, int n)
{
	static SchedlockQuery q = {
		"WITH u AS MATERIALIZED (SELECT * FROM ROWS FROM ("
		"    pg_catalog.unnest($1), pg_catalog.unnest($2), "
		"    pg_catalog.unnest($3), pg_catalog.unnest($4), "
		"    pg_catalog.unnest($5), pg_catalog.unnest($6), "
		"    pg_catalog.unnest($7), pg_catalog.unnest($8), "
		"    pg_catalog.unnest($9), pg_catalog.unnest($10), "
		"    pg_catalog.unnest($11), pg_catalog.unnest($12), "
		"    pg_catalog.unnest($13), pg_catalog.unnest($14), "
		"    pg_catalog.unnest($15), pg_catalog.unnest($16), "
		"    pg_catalog.unnest($17), pg_catalog.unnest($18), "
		"    pg_catalog.unnest($19), pg_catalog.unnest($20), "
		"    pg_catalog.unnest($21), pg_catalog.unnest($22), "
		"    pg_catalog.unnest($23)) "
		"  WITH ORDINALITY AS u(run_id, job_id, owner, scheduled_for, "
		"    attempt, status, started_at, finished_at, sqlstate, message, "
		"    detail, hint, result_status, notices, job_name, tid, "
		"    next_slot, retry_slot, retry_attempt, retry_at, manual_pending, "
		"    next_run_at, keep, i)), "
		"r AS (INSERT INTO schedlock.job_runs (run_id, job_id, owner, "
		"    scheduled_for, attempt, status, started_at, finished_at, "
		"    worker_pid, timeline, message, sqlstate, detail, hint, duration, "
		"    result_status, notices, job_name) "
		"  SELECT u.run_id, u.job_id, u.owner::pg_catalog.regrole, "
		"    u.scheduled_for, u.attempt, u.status, u.started_at, "
		"    u.finished_at, $24, $25, u.message, u.sqlstate, u.detail, "
		"    u.hint, u.finished_at OPERATOR(pg_catalog.-) u.started_at, "
		"    u.result_status, u.notices, u.job_name FROM u "
		"  WHERE u.keep OR NOT EXISTS (SELECT FROM schedlock.jobs x "
		"    WHERE x.job_id OPERATOR(pg_catalog.=) u.job_id "
		"      AND x.ctid OPERATOR(pg_catalog.=) u.tid) "
		"  ORDER BY u.i) "
		"UPDATE schedlock.jobs j SET "
		"  next_slot = CASE WHEN j.ctid OPERATOR(pg_catalog.=) e.tid "
		"    THEN e.next_slot ELSE j.next_slot END, "
		"  retry_slot = CASE WHEN j.ctid OPERATOR(pg_catalog.=) e.tid "
		"    THEN e.retry_slot ELSE j.retry_slot END, "
		"  retry_attempt = CASE WHEN j.ctid OPERATOR(pg_catalog.=) e.tid "
		"    THEN e.retry_attempt ELSE j.retry_attempt END, "
		"  retry_at = CASE WHEN j.ctid OPERATOR(pg_catalog.=) e.tid "
		"    THEN e.retry_at ELSE j.retry_at END, "
		"  manual_pending = CASE WHEN j.ctid OPERATOR(pg_catalog.=) e.tid "
		"    THEN e.manual_pending ELSE j.manual_pending END, "
		"  next_run_at = CASE WHEN j.ctid OPERATOR(pg_catalog.=) e.tid "
		"    THEN e.next_run_at ELSE j.next_run_at END, "
		SCHEDLOCK_RUN_STATS_ONE_SET
		"FROM u e "
		"WHERE j.job_id OPERATOR(pg_catalog.=) e.job_id "
		"RETURNING e.i, e.finished_at OPERATOR(pg_catalog.-) e.started_at",
		25, {INT8ARRAYOID, INT8ARRAYOID, OIDARRAYOID, TIMESTAMPTZARRAYOID,
			INT4ARRAYOID, TEXTARRAYOID, TIMESTAMPTZARRAYOID,
			TIMESTAMPTZARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
			TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
			TIDARRAYOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID,
			INT4ARRAYOID, TIMESTAMPTZARRAYOID, INT4ARRAYOID,
		TIMESTAMPTZARRAYOID, BOOLARRAYOID, INT4OID, INT4OID}
	};

	/* the columns of u, $1 to $23 */
	enum
	{
		U_RUN_ID, U_JOB_ID, U_OWNER, U_SCHEDULED_FOR, U_ATTEMPT, U_STATUS,
		U_STARTED_AT, U_FINISHED_AT, U_SQLSTATE, U_MESSAGE, U_DETAIL,
		U_HINT, U_RESULT_STATUS, U_NOTICES, U_JOB_NAME, U_TID,
		U_NEXT_SLOT, U_RETRY_SLOT, U_RETRY_ATTEMPT, U_RETRY_AT,
		U_MANUAL_PENDING, U_NEXT_RUN_AT, U_KEEP, U_NCOLS
	};
	static const Oid elemtypes[U_NCOLS] = {
		INT8OID, INT8OID, OIDOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID, TEXTOID, TIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
		INT4OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, BOOLOID
	};
	Datum	   *elems[U_NCOLS];
	bool	   *elnulls[U_NCOLS];
	Datum		values[U_NCOLS + 2];
	char	  **states = palloc0(sizeof(char *) * n);
	const char **messages = palloc0(sizeof(char *) * n);
	Interval  **durations = palloc0(sizeof(Interval *) * n);

	Assert(n > 0);
	alloc_columns(elems, elnulls, U_NCOLS, n);
	for (int i = 0; i < n; i++)
	{
		SchedlockEndedRun *r = &runs[i];
		Datum		state[JOB_STATE_NPARAMS];
		char		state_nulls[JOB_STATE_NPARAMS];

		Assert(r->plan->deferred && r->plan->manual_run_id == 0 &&
			   r->plan->run_id != 0);
		elems[U_RUN_ID][i] = Int64GetDatum(r->plan->run_id);
		elems[U_JOB_ID][i] = Int64GetDatum(r->job->job_id);
		elems[U_OWNER][i] = ObjectIdGetDatum(r->job->owner);
		elems[U_SCHEDULED_FOR][i] = TimestampTzGetDatum(r->plan->scheduled_for);
		elems[U_ATTEMPT][i] = Int32GetDatum(r->plan->attempt);
		elems[U_STATUS][i] = ended_status_datum(r->error);
		elems[U_STARTED_AT][i] = TimestampTzGetDatum(r->started_at);
		elems[U_FINISHED_AT][i] = TimestampTzGetDatum(r->finished_at);
		/* U_SQLSTATE to U_NOTICES, in run_outcome_params' order */
		put_outcome(r, r->plan->message, elems, elnulls, U_SQLSTATE, i,
					&states[i], &messages[i]);
		elems[U_JOB_NAME][i] = CStringGetTextDatum(r->job->job_name);
		elems[U_TID][i] = PointerGetDatum(&r->job->ctid);
		/* U_NEXT_SLOT to U_NEXT_RUN_AT, in job_state_params' order */
		job_state_params(r->job, r->plan->horizon, state, state_nulls);
		for (int c = 0; c < JOB_STATE_NPARAMS; c++)
		{
			elems[U_NEXT_SLOT + c][i] = state[c];
			elnulls[U_NEXT_SLOT + c][i] = (state_nulls[c] == 'n');
		}
		elems[U_KEEP][i] = BoolGetDatum(run_row_kept(r->job, r->error));
	}
	for (int c = 0; c < U_NCOLS; c++)
		values[c] = array_of(elems[c], elnulls[c], n, elemtypes[c]);
	values[U_NCOLS] = Int32GetDatum(MyProcPid);
	values[U_NCOLS + 1] = Int32GetDatum((int32) GetWALInsertionTimeLine());

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not record runs");
	if (SPI_processed != (uint64) n)
	{
		SPI_freetuptable(SPI_tuptable);
		return false;
	}
	read_set_durations(durations, n);
	for (int i = 0; i < n; i++)
	{
		SchedlockEndedRun *r = &runs[i];

		schedlock_log_run_end(r->job->job_name, r->job->role_name,
							  r->plan->run_id,
							  ended_status(r->error), states[i],
							  r->error ? messages[i] : NULL, durations[i]);
	}
	for (int i = 0; i < n; i++)
		if (runs[i].error)
			schedlock_run_failed(runs[i].job->job_id,
								 runs[i].plan->scheduled_for,
								 schedlock_rule_failed_attempt(false,
															   runs[i].plan->attempt),
								 runs[i].finished_at);
	return true;
}

/*
 * schedlock_record_outcomes
 *		schedlock_record_outcome for n runs of n different jobs whose rows
 *		say running (runs claimed before their instant, see dispatch.c), in
 *		one statement: each run's row gets its outcome, and each job's row
 *		counts it in its statistics (a job its own command deleted has its
 *		run recorded all the same).  Then, one run at a time, what
 *		schedlock_record_outcome does after its statement: the log line, a
 *		failure's count and retry, and a succeeded run that need not be
 *		kept forgotten.  run_ids[i] is the id of runs[i]; started_at and
 *		finished_at are when its command started and ended (the row says
 *		the instant it was claimed for until then).  Returns true (the
 *		shape of schedlock_record_ended_runs, see dispatch.c).
 */
bool
schedlock_record_outcomes(SchedlockEndedRun *runs, const int64 *run_ids,
						  int n)
{
	static SchedlockQuery q = {
		"WITH u AS MATERIALIZED (SELECT * FROM ROWS FROM ("
		"    pg_catalog.unnest($1), pg_catalog.unnest($2), "
		"    pg_catalog.unnest($3), pg_catalog.unnest($4), "
		"    pg_catalog.unnest($5), pg_catalog.unnest($6), "
		"    pg_catalog.unnest($7), pg_catalog.unnest($8), "
		"    pg_catalog.unnest($9), pg_catalog.unnest($10)) "
		"  WITH ORDINALITY AS u(run_id, status, started_at, finished_at, "
		"    sqlstate, message, detail, hint, result_status, notices, i)), "
		"e AS (UPDATE schedlock.job_runs r SET status = u.status, "
		"    started_at = u.started_at, "
		"    finished_at = u.finished_at, sqlstate = u.sqlstate, "
		"    message = COALESCE(u.message, r.message), detail = u.detail, "
		"    hint = u.hint, "
		"    duration = u.finished_at OPERATOR(pg_catalog.-) u.started_at, "
		"    result_status = u.result_status, notices = u.notices "
		"  FROM u WHERE r.run_id OPERATOR(pg_catalog.=) u.run_id "
		"  RETURNING r.job_id, r.status, r.started_at, r.finished_at, "
		"    r.scheduled_for, r.duration, u.i), "
		SCHEDLOCK_RUN_STATS_ONE_CTE
		"SELECT e.i, e.duration FROM e",
		10, {INT8ARRAYOID, TEXTARRAYOID, TIMESTAMPTZARRAYOID,
			TIMESTAMPTZARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
		TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID}
	};

	/* the columns of u, $1 to $10 */
	enum
	{
		O_RUN_ID, O_STATUS, O_STARTED_AT, O_FINISHED_AT, O_SQLSTATE, O_MESSAGE, O_DETAIL,
		O_HINT, O_RESULT_STATUS, O_NOTICES, O_NCOLS
	};
	static const Oid elemtypes[O_NCOLS] = {
		INT8OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID, TEXTOID, TEXTOID
	};
	Datum	   *elems[O_NCOLS];
	bool	   *elnulls[O_NCOLS];
	Datum		values[O_NCOLS];
	char	  **states = palloc0(sizeof(char *) * n);
	const char **messages = palloc0(sizeof(char *) * n);
	Interval  **durations = palloc0(sizeof(Interval *) * n);

	Assert(n > 0);
	alloc_columns(elems, elnulls, O_NCOLS, n);
	for (int i = 0; i < n; i++)
	{
		SchedlockEndedRun *r = &runs[i];

		elems[O_RUN_ID][i] = Int64GetDatum(run_ids[i]);
		elems[O_STATUS][i] = ended_status_datum(r->error);
		elems[O_STARTED_AT][i] = TimestampTzGetDatum(r->started_at);
		elems[O_FINISHED_AT][i] = TimestampTzGetDatum(r->finished_at);
		/* O_SQLSTATE to O_NOTICES, in run_outcome_params' order */
		put_outcome(r, NULL, elems, elnulls, O_SQLSTATE, i, &states[i],
					&messages[i]);
	}
	for (int c = 0; c < O_NCOLS; c++)
		values[c] = array_of(elems[c], elnulls[c], n, elemtypes[c]);

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the outcomes of runs");
	read_set_durations(durations, n);
	for (int i = 0; i < n; i++)
	{
		SchedlockEndedRun *r = &runs[i];
		bool		manual = (r->plan->manual_run_id != 0);

		schedlock_log_run_end(r->job->job_name, r->job->role_name,
							  run_ids[i], ended_status(r->error),
							  states[i], messages[i], durations[i]);
		if (r->error)
			schedlock_run_failed(r->job->job_id, r->plan->scheduled_for,
								 schedlock_rule_failed_attempt(manual,
															   r->plan->attempt),
								 r->finished_at);
		else if (!run_row_kept(r->job, r->error))
			schedlock_forget_run(run_ids[i]);
	}
	return true;
}

/*
 * schedlock_skip_unscheduled_runs
 *		At the instant of n runs whose claims committed before it (claimed
 *		ahead, or a job run outside its claim's transaction): the runs whose
 *		job was unscheduled or disabled since are closed as skipped, in one
 *		statement, and skipped[i] is set for them (the others are cleared).
 *		job_ids[i] and run_ids[i] name run i.  A run still to run is decided
 *		here: an unschedule_job or alter_job(enabled => false) that commits
 *		before this statement stops it, one that commits after finds it
 *		started.  Returns how many were skipped.  Connected to SPI, in a
 *		transaction; a job's own command is not running.
 */
int
schedlock_skip_unscheduled_runs(const int64 *job_ids, const int64 *run_ids,
								int n, bool *skipped)
{
	static SchedlockQuery q = {
		"WITH g AS ("
		"  SELECT u.i, u.run_id, j.job_id IS NOT NULL AS disabled "
		"    FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) "
		"      WITH ORDINALITY AS u(job_id, run_id, i) "
		"    LEFT JOIN schedlock.jobs j ON j.job_id OPERATOR(pg_catalog.=) u.job_id "
		"   WHERE j.job_id IS NULL OR NOT j.enabled), "
		"s AS (UPDATE schedlock.job_runs r SET status = " SCHEDLOCK_RUN_SQL(SKIPPED) ", "
		"  finished_at = $3, "
		"  message = CASE WHEN g.disabled "
		"    THEN 'the job was disabled before the run started' "
		"    ELSE 'the job was unscheduled before the run started' END "
		"  FROM g WHERE r.run_id OPERATOR(pg_catalog.=) g.run_id "
		"    AND r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(RUNNING) " "
		"  RETURNING r.run_id) "
		"SELECT g.i FROM g",
		3, {INT8ARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID}
	};
	Datum		values[3];
	Datum	   *elems;
	int			k = 0;

	elems = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum(job_ids[i]);
	values[0] = array_of(elems, NULL, n, INT8OID);
	elems = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum(run_ids[i]);
	values[1] = array_of(elems, NULL, n, INT8OID);
	values[2] = TimestampTzGetDatum(GetCurrentTimestamp());
	memset(skipped, 0, sizeof(bool) * n);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not look for unscheduled jobs");
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		int64		i = DatumGetInt64(col(SPI_tuptable->vals[r],
										  SPI_tuptable->tupdesc, 1, &isnull));

		if (i < 1 || i > n)
			elog(ERROR, "could not look for unscheduled jobs");
		skipped[i - 1] = true;
		k++;
	}
	SPI_freetuptable(SPI_tuptable);
	return k;
}

/*
 * schedlock_forget_run
 *		Delete the record of a run that need not be kept (record_runs =
 *		failures: a succeeded run, once its statistics are counted).
 */
void
schedlock_forget_run(int64 run_id)
{
	static SchedlockQuery q = {
		"DELETE FROM schedlock.job_runs WHERE run_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(run_id)};

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete run " INT64_FORMAT, run_id);
}

/*
 * schedlock_notify_run
 *		Send the NOTIFY of a run; it is delivered when the claim commits.
 *		Any role may LISTEN on any channel, so the message carries no
 *		payload: the claimer gets it from schedlock_claim_run_payload.
 */
void
schedlock_notify_run(ClaimedJob *job, ClaimPlan *plan, int64 run_id)
{
	static SchedlockQuery q = {
		"SELECT " SCHEDLOCK_NOTIFY_RUN_SQL("$1", "$2", "$3", "$4", "$5", "$6"),
		6, {TEXTOID, TEXTOID, INT8OID, INT8OID, TIMESTAMPTZOID, INT4OID}
	};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(job->channel);
	values[1] = CStringGetTextDatum(job->job_name);
	values[2] = Int64GetDatum(job->job_id);
	values[3] = Int64GetDatum(run_id);
	values[4] = TimestampTzGetDatum(plan->scheduled_for);
	values[5] = Int32GetDatum(plan->attempt);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not notify run " INT64_FORMAT, run_id);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_delete_ended_runs
 *		Delete role owner's runs that have ended (not queued, pending or
 *		running, which the scheduler still needs): of job job_name only
 *		when it is not NULL (the runs recorded under that name, and those of
 *		owner's job of that name now), and only those that finished (a skipped slot:
 *		whose instant was) more than older_than before now when that is
 *		not NULL.  Returns how many it deleted.  As the extension owner,
 *		connected to SPI.
 */
uint64
schedlock_delete_ended_runs(Oid owner, const char *job_name,
							Interval *older_than, TimestampTz now)
{
	static SchedlockQuery q = {
		"DELETE FROM schedlock.job_runs "
		" WHERE owner OPERATOR(pg_catalog.=) $1 "
		"   AND status OPERATOR(pg_catalog.<>) ALL "
		"       (" SCHEDLOCK_RUN_OPEN_SQL "::pg_catalog.text[]) "
		"   AND ($2::pg_catalog.text IS NULL "
		"        OR job_name OPERATOR(pg_catalog.=) $2 "
		"        OR job_id OPERATOR(pg_catalog.=) ANY ("
		"          SELECT j.job_id FROM schedlock.jobs j "
		"           WHERE j.owner OPERATOR(pg_catalog.=) $1 "
		"             AND j.job_name OPERATOR(pg_catalog.=) $2)) "
		"   AND ($3::pg_catalog.interval IS NULL "
		"        OR COALESCE(finished_at, scheduled_for) OPERATOR(pg_catalog.<) "
		"           ($4 OPERATOR(pg_catalog.-) $3))",
		4, {REGROLEOID, TEXTOID, INTERVALOID, TIMESTAMPTZOID}
	};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = ObjectIdGetDatum(owner);
	values[1] = job_name ? CStringGetTextDatum(job_name) : (Datum) 0;
	nulls[1] = job_name ? ' ' : 'n';
	values[2] = older_than ? IntervalPGetDatum(older_than) : (Datum) 0;
	nulls[2] = older_than ? ' ' : 'n';
	values[3] = TimestampTzGetDatum(now);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete runs");
	return SPI_processed;
}
