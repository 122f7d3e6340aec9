/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The per-database dispatch worker: claims due jobs with SELECT ... FOR
 *	  UPDATE SKIP LOCKED, runs them, records the outcome, and sleeps on its
 *	  latch until the next job falls due.
 *
 * A pass of the loop claims and runs due jobs one at a time (NOTIFY jobs in
 * batches) until none is left, closes NOTIFY runs whose deadline passed, prunes old history
 * (worker 0 only), and then sleeps until the earliest next_run_at or
 * deadline in the future (at most SCHEDLOCK_MAX_SLEEP_MS).  The claim query
 * and the sleep query are both driven by partial indexes, so their cost does
 * not grow with the number of jobs.  schedule_job(), alter_job(), run_job()
 * and a failed schedlock_finish_run() set the workers' latches at commit.
 *
 * Claiming a job: in one transaction, lock the earliest due row of
 * schedlock.jobs that no other worker holds, decide what to do (a queued
 * run_job() call, a due retry, or the next slot under the misfire policy),
 * advance the job, insert the run, and then:
 *	- atomic SQL job: run the command in a subtransaction as the job's user,
 *	  record the outcome, and commit everything together;
 *	- NOTIFY job: pg_notify() the run, marked pending with a deadline, and
 *	  the same for the NOTIFY jobs due with it, then commit: listeners hear
 *	  them only if the claims committed;
 *	- non-atomic SQL job: commit the claim, run the command at top level,
 *	  then record the outcome in a new transaction.
 * A job whose previous run is still pending or running gets its slot
 * recorded as skipped instead (overlap).  The row lock keeps two workers
 * from claiming the same job, and the unique key (job_id, scheduled_for,
 * attempt) of job_runs keeps any slot's attempt from committing twice.
 *
 * A SQL run marked running whose worker is gone (stopped, terminated,
 * crashed, or on a server before a restart or failover) is closed as lost
 * and retried per policy: by every worker at start, and by every idle
 * worker at most LOST_CHECK_MS after the worker ended (see RUNNER_GONE).
 * Worker 0 on the first start of the server's (or promoted standby's)
 * dispatch fires the @reboot jobs.
 *
 * A cancel (pg_cancel_backend, or the job's timeout) cancels the job's
 * statement while one runs, and is ignored otherwise: the worker's own
 * statements are not the user's to cancel (see worker_sigint).
 *
 * An error in the loop (the worker's own bookkeeping, not a job's command)
 * does not end the worker: it is logged, the transaction is aborted, the
 * job being handled is charged with it, and the loop goes on; see
 * quarantine.c.
 *
 * The worker pool (shmem.c): a worker beyond schedlock.workers leaves when
 * it has been idle for a while, and the SQL jobs of a role that has
 * schedlock.max_runs_per_role runs in progress are left due, unclaimed,
 * until one of them ends.
 *
 * The worker's own statements run with search_path pinned to pg_catalog
 * (schedlock_trusted_path_begin, query.c), whatever the database, a role
 * or a job set; a job runs with the session's ordinary search_path, and
 * after every run the session state a job can leave is discarded (exec.c).
 *
 * IDENTIFICATION
 *	  src/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "claim_sql.h"
#include "compat.h"
#include "cron_pg.h"
#include "schedlock.h"
#include "scheduler.h"

/* Longest run of claims in one pass before looking at signals again. */
#define WORKER_MAX_CLAIMS_PER_PASS	1000

/*
 * A worker wakes this long before the next job falls due, claims it, and
 * waits the rest of the time holding it, so that the command starts on the
 * instant instead of after the wakeup and the claim.
 */
#define WORKER_CLAIM_LEAD_MS	10

/*
 * Linux lets a poll/epoll timeout expire late by up to 0.1 % of its length
 * (timer slack, at most 100 ms): a worker sleeping 44 s towards an instant
 * woke 27 ms after it, which WORKER_CLAIM_LEAD_MS cannot absorb.  So a sleep
 * longer than WORKER_SLACK_FREE_MS ends 1/WORKER_SLACK_DIVISOR of its
 * length early (0.4 %, 235 ms of a 60 s sleep) and the worker sleeps the
 * rest again, a sleep whose slack (at most 2 ms) fits in the claim lead.
 */
#define WORKER_SLACK_FREE_MS	2000
#define WORKER_SLACK_DIVISOR	256

/* NOTIFY jobs claimed and notified in one transaction, at most. */
#define WORKER_NOTIFY_BATCH	200

/*
 * Overdue NOTIFY runs closed per transaction, and transactions per pass; a
 * pass that leaves overdue runs behind is followed by another at once.
 */
#define EXPIRE_BATCH_ROWS	100
#define EXPIRE_MAX_BATCHES	10

/* Rows deleted per history pruning batch, and batches per pass. */
#define PRUNE_BATCH_ROWS	1000
#define PRUNE_MAX_BATCHES	10

/* Iterations allowed when counting missed slots for run_all. */
#define MISFIRE_MAX_ITERATIONS	1000000

/*
 * An idle worker looks for lost runs at most this often, and sleeps at most
 * this long while a SQL run of its database is in progress.
 */
#define LOST_CHECK_MS	1000

/*
 * Whether the worker that ran a SQL run marked running (job_runs row r) is
 * gone.  Its worker is the backend of this database ($2) and of the
 * worker's type ($3) with pid r.worker_pid that started no later than the
 * run (r.started_at): a process with the same pid that started after the
 * run began is another one that got the pid again (the worker ended, or the
 * server restarted), and at the instant the run started no other process
 * could have that pid.  A run recorded on another timeline ($4) ran on the
 * server before a failover.  The backends are read from the backend status
 * table (pg_stat_get_activity; the worker's own statements run as a
 * superuser, which sees every field), once per transaction.
 */
#define RUNNER_GONE(r) \
	"(" r ".worker_pid IS NULL OR " r ".started_at IS NULL " \
	" OR COALESCE(" r ".timeline OPERATOR(pg_catalog.<>) $4, true) " \
	" OR NOT EXISTS (SELECT 1 " \
	"   FROM pg_catalog.pg_stat_get_activity(" r ".worker_pid) a " \
	"   WHERE a.datid OPERATOR(pg_catalog.=) $2 " \
	"     AND a.backend_type OPERATOR(pg_catalog.=) $3 " \
	"     AND a.backend_start OPERATOR(pg_catalog.<=) " r ".started_at)) "

/* This worker's slot in shared memory. */
static SchedlockWorkerSlot *MySlot = NULL;

/* Memory for one claim and run; reset after each pass. */
static MemoryContext run_cxt = NULL;

/* Whether a cancel now cancels the job's statement (see worker_sigint). */
static volatile sig_atomic_t job_cancel_allowed = false;

/* A claimed job, copied out of SPI memory into run_cxt. */
typedef struct ClaimedJob
{
	int64		job_id;
	char	   *job_name;
	Oid			owner;
	char	   *schedule;
	char	   *command;		/* NULL for a NOTIFY job */
	char	   *channel;
	char	   *payload;		/* jsonb as text, or NULL */
	char	   *timezone;
	int			timeout_ms;		/* 0: none */
	char	   *misfire;
	bool		atomic;
	Oid			run_as;			/* InvalidOid: owner */
	bool		reboot;
	bool		has_next_slot;
	TimestampTz next_slot;
	bool		has_retry;
	TimestampTz retry_slot;
	int32		retry_attempt;
	TimestampTz retry_at;
	int32		manual_pending;
	ItemPointerData ctid;		/* the locked row version */
	int32		failures;		/* consecutive_failures */
} ClaimedJob;

/* What the claim decided to do with the job. */
typedef enum PlanKind
{
	PLAN_NOTHING,				/* nothing due after all */
	PLAN_RUN,					/* run (scheduled_for, attempt) */
	PLAN_SKIP					/* record (scheduled_for) as skipped */
} PlanKind;

typedef struct ClaimPlan
{
	PlanKind	kind;
	TimestampTz scheduled_for;
	int32		attempt;
	TimestampTz due_at;			/* may not start before: slot or retry_at */
	int64		manual_run_id;	/* the queued run_job() run, or 0 */
	const char *message;		/* why, for catch-up and skipped rows */
} ClaimPlan;

/*
 * worker_detach
 *		before_shmem_exit callback: clear this worker's pid and latch so
 *		that DROP DATABASE and the wakeups stop looking at it.  A worker
 *		that ends in the middle of a job wakes the others of its database,
 *		which then watch for its run to become lost (check_lost_runs).
 */
static void
worker_detach(int code, Datum arg)
{
	bool		was_running = (MySlot->running_job != 0);

	schedlock_worker_detach(MySlot);
	/* the run it leaves is lost: the other workers close it now */
	if (was_running)
		schedlock_wake_database_workers(MyDatabaseId);
}

/*
 * set_running_job
 *		Publish the job this worker runs now (0: none), for job_status and
 *		the worker pool (shmem.c).
 */
static void
set_running_job(int64 job_id)
{
	schedlock_pool_set_running(MySlot, job_id);
}

/*
 * report_job_activity
 *		Show the running job in pg_stat_activity.query: its name in a comment,
 *		then its command (a NOTIFY job: its channel).
 */
static void
report_job_activity(const ClaimedJob *job)
{
	char	   *activity;

	if (job->command != NULL)
		activity = psprintf("/* schedlock job: %s */ %s",
							job->job_name, job->command);
	else
		activity = psprintf("/* schedlock job: %s */ NOTIFY %s",
							job->job_name, quote_identifier(job->channel));
	pgstat_report_activity(STATE_RUNNING, activity);
	pfree(activity);
}

/*
 * worker_sigint
 *		SIGINT handler (pg_cancel_backend, and the statement timeout that
 *		bounds a job): cancels the job's statement while one runs, as
 *		StatementCancelHandler does; otherwise does nothing.  A cancel
 *		processed in the worker's own statements would end the worker.
 */
static void
worker_sigint(SIGNAL_ARGS)
{
	if (job_cancel_allowed)
		StatementCancelHandler(postgres_signal_arg);
}

/*
 * job_cancel_begin / job_cancel_end
 *		Bracket the running of a job's command: a cancel in between cancels
 *		it.  job_cancel_end drops a cancel that arrived too late to act.
 */
static void
job_cancel_begin(void)
{
	QueryCancelPending = false;
	job_cancel_allowed = true;
}

static void
job_cancel_end(void)
{
	job_cancel_allowed = false;
	QueryCancelPending = false;
}

/*
 * begin_tx / end_tx
 *		Open a transaction with SPI and a snapshot, and commit it and report
 *		its statistics, in the worker_spi order.
 */
static void
begin_tx(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

static void
end_tx(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(run_cxt);
	/* at most once a second; the main loop flushes the rest before sleeping */
	pgstat_report_stat(false);
}

/*
 * extension_present
 *		Whether the extension exists in this database (own transaction).
 */
static bool
extension_present(void)
{
	bool		present;

	StartTransactionCommand();
	present = OidIsValid(get_extension_oid("schedlock", true));
	CommitTransactionCommand();
	MemoryContextSwitchTo(run_cxt);
	return present;
}

/*
 * close_runs_failed
 *		For every row returned by the last SPI statement (job_id,
 *		scheduled_for, attempt-or-0), count a failure and schedule its
 *		retry.  Inside a transaction, connected to SPI.
 */
static void
close_runs_failed(TimestampTz now)
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

		schedlock_run_failed(job_id, slot, attempt, now);
	}
}

/*
 * runner_args
 *		Fill values[1..3] with the parameters $2..$4 of RUNNER_GONE: this
 *		database, the workers' backend type and the current timeline.
 */
static void
runner_args(Datum *values)
{
	values[1] = ObjectIdGetDatum(MyDatabaseId);
	values[2] = CStringGetTextDatum(MyBgworkerEntry->bgw_type);
	values[3] = Int32GetDatum((int32) GetWALInsertionTimeLine());
}

/*
 * close_lost_runs
 *		Close as lost the SQL runs marked running whose worker is gone (see
 *		RUNNER_GONE), and retry them per policy.  Returns how many it
 *		closed.  In a transaction, connected to SPI.
 */
static uint64
close_lost_runs(void)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.job_runs r SET status = 'lost', "
		"  finished_at = $1, "
		"  message = 'the worker running it ended before the run finished "
		"(it was stopped or terminated, or the server crashed, restarted or failed over)' "
		"WHERE r.run_id OPERATOR(pg_catalog.=) ANY ("
		"    SELECT x.run_id FROM schedlock.job_runs x "
		"    WHERE x.status OPERATOR(pg_catalog.=) 'running' "
		"      AND x.claimed_at IS NULL AND " RUNNER_GONE("x")
		"    FOR UPDATE SKIP LOCKED) "
		"RETURNING r.job_id, r.scheduled_for, "
		"  CASE WHEN r.manual THEN 0 ELSE r.attempt END",
		4, {TIMESTAMPTZOID, OIDOID, TEXTOID, INT4OID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[4];
	uint64		closed;

	values[0] = TimestampTzGetDatum(now);
	runner_args(values);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not close lost runs");
	closed = SPI_processed;
	if (closed > 0)
		ereport(LOG,
				(errmsg("schedlock closed %llu lost job runs",
						(unsigned long long) closed)));
	close_runs_failed(now);
	return closed;
}

/*
 * check_lost_runs
 *		Between passes, at most once every LOST_CHECK_MS (*last_check):
 *		close lost runs and set *watch to whether a SQL run of the database
 *		is still in progress, in which case the worker sleeps at most
 *		LOST_CHECK_MS, so that it finds the run lost soon after its worker
 *		ends (a worker that ends wakes the others before its backend entry
 *		is gone, so they may need a second look).  A pass too soon after
 *		the last check sets *watch, so that the next one checks.  Called
 *		outside a transaction.
 */
static void
check_lost_runs(TimestampTz *last_check, bool *watch)
{
	static SchedlockQuery q = {
		"SELECT 1 FROM schedlock.job_runs "
		"WHERE status OPERATOR(pg_catalog.=) 'running' AND claimed_at IS NULL "
		"LIMIT 1",
		0, {InvalidOid}
	};
	TimestampTz now = GetCurrentTimestamp();

	/* too soon: the sleep ends in time for the next check */
	if (!TimestampDifferenceExceeds(*last_check, now, LOST_CHECK_MS - 10))
	{
		*watch = true;
		return;
	}
	*last_check = now;
	begin_tx("schedlock: closing lost runs");
	(void) close_lost_runs();
	if (schedlock_query_run(&q, NULL, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look for runs in progress");
	*watch = SPI_processed > 0;
	end_tx();
}

/*
 * startup_work
 *		Close lost runs; on the first start of dispatch, fire @reboot jobs.
 */
static void
startup_work(bool fire_reboot)
{
	TimestampTz now = GetCurrentTimestamp();
	Oid			types[1] = {TIMESTAMPTZOID};
	Datum		values[1];
	int			nestlevel;

	begin_tx("schedlock: closing lost runs");
	(void) close_lost_runs();
	nestlevel = schedlock_trusted_path_begin();
	values[0] = TimestampTzGetDatum(now);
	if (fire_reboot)
	{
		/* after pg_upgrade or a restore the jobs' roles may be unrecorded */
		(void) schedlock_sync_job_roles();
		if (SPI_execute_with_args("UPDATE schedlock.jobs SET next_slot = $1, "
								  "  next_run_at = LEAST($1, next_run_at) "
								  "WHERE reboot AND enabled",
								  1, types, values, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not fire @reboot jobs");
	}
	schedlock_trusted_path_end(nestlevel);
	/* no interrupt between the commit and the record: @reboot fires once */
	HOLD_INTERRUPTS();
	end_tx();
	if (fire_reboot)
		schedlock_reboot_done(MyDatabaseId);
	RESUME_INTERRUPTS();
}

/* Fetchers for the claim query's columns. */
static char *
col_text(HeapTuple tup, TupleDesc desc, int n)
{
	char	   *v = SPI_getvalue(tup, desc, n);

	return v ? MemoryContextStrdup(run_cxt, v) : NULL;
}

static Datum
col(HeapTuple tup, TupleDesc desc, int n, bool *isnull)
{
	return SPI_getbinval(tup, desc, n, isnull);
}

/*
 * read_claimed_job
 *		Copy the claimed row out of SPI memory.
 */
static void
read_claimed_job(ClaimedJob *job)
{
	HeapTuple	tup = SPI_tuptable->vals[0];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	Datum		d;

	job->job_id = DatumGetInt64(col(tup, desc, 1, &isnull));
	job->job_name = col_text(tup, desc, 2);
	job->owner = DatumGetObjectId(col(tup, desc, 3, &isnull));
	job->schedule = col_text(tup, desc, 4);
	job->command = col_text(tup, desc, 5);
	job->channel = col_text(tup, desc, 6);
	job->payload = col_text(tup, desc, 7);
	job->timezone = col_text(tup, desc, 8);
	d = col(tup, desc, 9, &isnull);
	/* whole milliseconds, rounded up: a timeout never becomes "none" */
	job->timeout_ms = isnull ? 0 : (int) Min(ceil(DatumGetFloat8(d)), (double) INT_MAX);
	job->misfire = col_text(tup, desc, 10);
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
	/* 19: next_run_at, read by claim_job */
	ItemPointerCopy((ItemPointer) DatumGetPointer(col(tup, desc, 20, &isnull)), &job->ctid);
	job->failures = DatumGetInt32(col(tup, desc, 21, &isnull));
}

/*
 * plan_slot
 *		Decide what to do about the job's due slot next_slot, under its
 *		misfire policy, and advance next_slot.
 */
static void
plan_slot(ClaimedJob *job, TimestampTz now, ClaimPlan *plan)
{
	SchedlockCronSchedule sched;
	pg_tz	   *tz;
	TimestampTz s = job->next_slot;
	TimestampTz n1;

	plan->kind = PLAN_RUN;
	plan->scheduled_for = s;
	plan->attempt = 1;

	schedlock_cron_parse_or_error(job->schedule, &sched);
	tz = schedlock_cron_lookup_timezone(job->timezone);
	if (job->reboot || schedlock_cron_is_reboot(&sched))
	{
		job->has_next_slot = false;
		return;
	}
	if (!schedlock_cron_next_time(&sched, s, tz, &n1) || n1 > now)
	{
		/* on time: the only due slot */
		job->has_next_slot = schedlock_cron_next_time(&sched, s, tz, &job->next_slot);
		return;
	}

	/* misfire: at least two slots are due */
	if (strcmp(job->misfire, "run_all") == 0)
	{
		TimestampTz ring[SCHEDLOCK_RUN_ALL_LIMIT];
		int			count = 0;
		TimestampTz t = s;
		int			iterations = 0;

		while (t <= now && iterations++ < MISFIRE_MAX_ITERATIONS)
		{
			ring[count % SCHEDLOCK_RUN_ALL_LIMIT] = t;
			count++;
			if (!schedlock_cron_next_time(&sched, t, tz, &t))
				break;
		}
		if (count <= SCHEDLOCK_RUN_ALL_LIMIT)
		{
			job->next_slot = n1;
			return;
		}
		/* too many: drop the oldest, keep the newest LIMIT slots */
		plan->kind = PLAN_SKIP;
		plan->message = psprintf("misfire run_all: %d missed slots, only the latest %d are run",
								 count, SCHEDLOCK_RUN_ALL_LIMIT);
		if (iterations >= MISFIRE_MAX_ITERATIONS)
			job->has_next_slot = schedlock_cron_next_time(&sched, now, tz, &job->next_slot);
		else
			job->next_slot = ring[count % SCHEDLOCK_RUN_ALL_LIMIT];
		return;
	}

	job->has_next_slot = schedlock_cron_next_time(&sched, now, tz, &job->next_slot);
	if (strcmp(job->misfire, "skip") == 0)
	{
		plan->kind = PLAN_SKIP;
		plan->message = "missed slot skipped (misfire skip)";
	}
	else
		plan->message = "catch-up run for missed slots (misfire run_once)";
}

/*
 * plan_claim
 *		Decide what to do with the claimed job: a queued run_job() call
 *		first, then a due retry, then the due slot.
 */
static void
plan_claim(ClaimedJob *job, TimestampTz now, ClaimPlan *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->kind = PLAN_NOTHING;

	if (job->manual_pending > 0)
	{
		static SchedlockQuery q = {
			"SELECT run_id, scheduled_for FROM schedlock.job_runs "
			"WHERE job_id OPERATOR(pg_catalog.=) $1 "
			"  AND status OPERATOR(pg_catalog.=) 'queued' "
			"ORDER BY run_id LIMIT 1",
			1, {INT8OID}
		};
		Datum		values[1] = {Int64GetDatum(job->job_id)};

		if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read queued runs");
		job->manual_pending--;
		if (SPI_processed == 1)
		{
			bool		isnull;

			plan->kind = PLAN_RUN;
			plan->manual_run_id = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
			plan->scheduled_for = DatumGetTimestampTz(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
			plan->attempt = 1;
			return;
		}
		job->manual_pending = 0;
	}
	if (job->has_retry && job->retry_at <= now)
	{
		plan->kind = PLAN_RUN;
		plan->scheduled_for = job->retry_slot;
		plan->due_at = job->retry_at;
		plan->attempt = job->retry_attempt;
		job->has_retry = false;
		return;
	}
	if (job->has_next_slot && job->next_slot <= now)
	{
		plan_slot(job, now, plan);
		plan->due_at = plan->scheduled_for;
	}
}

/*
 * save_job_state
 *		Write the advanced next_slot, retry and queue state of the job and
 *		its next_run_at, computed as schedlock_recompute_next_run() does.
 */
static void
save_job_state(ClaimedJob *job, TimestampTz now)
{
	/* the row this transaction has locked: found by its ctid, no index */
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET next_slot = $2, "
		"  retry_slot = $3, retry_attempt = $4, retry_at = $5, "
		"  manual_pending = $6, "
		"  next_run_at = LEAST($2, $5, "
		"    CASE WHEN $6 OPERATOR(pg_catalog.>) 0 THEN $7 END) "
		"WHERE ctid OPERATOR(pg_catalog.=) $8 "
		"  AND job_id OPERATOR(pg_catalog.=) $1",
		8, {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		INT4OID, TIMESTAMPTZOID, TIDOID}
	};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(job->job_id);
	values[1] = TimestampTzGetDatum(job->next_slot);
	nulls[1] = job->has_next_slot ? ' ' : 'n';
	values[2] = TimestampTzGetDatum(job->retry_slot);
	values[3] = Int32GetDatum(job->retry_attempt);
	values[4] = TimestampTzGetDatum(job->retry_at);
	if (!job->has_retry)
		nulls[2] = nulls[3] = nulls[4] = 'n';
	values[5] = Int32GetDatum(job->manual_pending);
	values[6] = TimestampTzGetDatum(now);
	values[7] = PointerGetDatum(&job->ctid);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not advance job " INT64_FORMAT, job->job_id);
}

/*
 * run_in_progress
 *		Whether a run of the job is pending or running (overlap); a run
 *		whose worker is gone is not (close_lost_runs closes it).
 */
static bool
run_in_progress(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT 1 FROM schedlock.job_runs x "
		"WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"  AND x.status OPERATOR(pg_catalog.=) ANY ('{pending,running}') "
		"  AND NOT (x.status OPERATOR(pg_catalog.=) 'running' "
		"    AND x.claimed_at IS NULL AND " RUNNER_GONE("x") ") "
		"LIMIT 1",
		4, {INT8OID, OIDOID, TEXTOID, INT4OID}
	};
	Datum		values[4];
	bool		found;

	values[0] = Int64GetDatum(job_id);
	runner_args(values);

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not look for runs in progress");
	found = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * record_run
 *		Insert the run's row (or turn the queued run_job() row into it) with
 *		the given status.  Returns the run id, or 0 when the slot's attempt
 *		exists already (the unique key refused it).
 */
static int64
record_run(ClaimedJob *job, ClaimPlan *plan, const char *status,
		   TimestampTz now, TimestampTz deadline, bool has_deadline)
{
	static SchedlockQuery update_queued = {
		"UPDATE schedlock.job_runs SET status = $5, "
		"  started_at = CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' "
		"    THEN NULL ELSE $6 END, "
		"  finished_at = CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' "
		"    THEN $6 END, "
		"  worker_pid = $7, timeline = $8, message = $9, deadline = $10 "
		"WHERE run_id OPERATOR(pg_catalog.=) $1 "
		"  AND status OPERATOR(pg_catalog.=) 'queued' "
		"RETURNING run_id",
		10, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID}
	};
	static SchedlockQuery insert = {
		"INSERT INTO schedlock.job_runs (job_id, owner, "
		"  scheduled_for, attempt, status, started_at, "
		"  finished_at, worker_pid, timeline, message, deadline) "
		"VALUES ($1, $2, $3, $4, $5, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' THEN NULL ELSE $6 END, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' THEN $6 END, "
		"  $7, $8, $9, $10) "
		"ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"RETURNING run_id",
		10, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID}
	};
	Datum		values[10];
	char		nulls[10];
	bool		isnull;
	bool		finished = (strcmp(status, "skipped") == 0);
	int			rc;
	int64		run_id;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(plan->manual_run_id ? plan->manual_run_id : job->job_id);
	values[1] = ObjectIdGetDatum(job->owner);
	values[2] = TimestampTzGetDatum(plan->scheduled_for);
	values[3] = Int32GetDatum(plan->attempt);
	values[4] = CStringGetTextDatum(status);
	values[5] = TimestampTzGetDatum(now);
	values[6] = Int32GetDatum(finished ? 0 : MyProcPid);
	nulls[6] = finished ? 'n' : ' ';
	values[7] = Int32GetDatum((int32) GetWALInsertionTimeLine());
	values[8] = plan->message ? CStringGetTextDatum(plan->message) : (Datum) 0;
	nulls[8] = plan->message ? ' ' : 'n';
	values[9] = TimestampTzGetDatum(deadline);
	nulls[9] = has_deadline ? ' ' : 'n';

	rc = schedlock_query_run(plan->manual_run_id ? &update_queued : &insert,
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
 * record_outcome
 *		Close a run as succeeded or failed and update the job's failure
 *		count and retry.  Connected to SPI, in a transaction.
 */
static void
record_outcome(ClaimedJob *job, ClaimPlan *plan, int64 run_id,
			   ErrorData *error)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.job_runs SET status = $2, "
		"  finished_at = $3, sqlstate = $4, "
		"  message = COALESCE($5, message) "
		"WHERE run_id OPERATOR(pg_catalog.=) $1",
		5, {INT8OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(error ? "failed" : "succeeded");
	values[2] = TimestampTzGetDatum(now);
	if (error)
	{
		values[3] = CStringGetTextDatum(unpack_sql_state(error->sqlerrcode));
		values[4] = CStringGetTextDatum(error->message ? error->message : "unknown error");
	}
	else
		nulls[3] = nulls[4] = 'n';
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the outcome of run " INT64_FORMAT, run_id);
	if (error)
	{
		ereport(LOG,
				(errmsg("schedlock job \"%s\" run " INT64_FORMAT " failed: %s",
						job->job_name, run_id, error->message ? error->message : "")));
		schedlock_run_failed(job->job_id, plan->scheduled_for,
							 plan->manual_run_id ? 0 : plan->attempt, now);
	}
	else if (job->failures != 0)
		schedlock_run_succeeded(job->job_id);
}

/*
 * notify_run
 *		Send the NOTIFY of a run; it is delivered when the claim commits.
 *		Any role may LISTEN on any channel, so the message carries no
 *		payload: the claimer gets it from schedlock_claim_run_payload.
 */
static void
notify_run(ClaimedJob *job, ClaimPlan *plan, int64 run_id)
{
	static SchedlockQuery q = {
		"SELECT pg_catalog.pg_notify($1, "
		"  pg_catalog.json_build_object('job', $2, 'job_id', $3, "
		"    'run_id', $4, 'scheduled_for', $5, 'attempt', $6)::pg_catalog.text)",
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

/* The claim statements: see claim_sql.h. */
static SchedlockQuery claim_query = {
	SCHEDLOCK_CLAIM_SQL,
	3, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID}
};

/* The same, for NOTIFY jobs only: see dispatch_one. */
static SchedlockQuery claim_notify_query = {
	SCHEDLOCK_CLAIM_NOTIFY_SQL,
	3, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID}
};

/*
 * The same, leaving out the SQL jobs of the roles $4 that have
 * schedlock.max_runs_per_role runs in progress: see claim_query_now.
 */
static SchedlockQuery claim_capped_query = {
	SCHEDLOCK_CLAIM_CAPPED_SQL,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDARRAYOID}
};

/* $4 of claim_capped_query, set by claim_query_now. */
static Datum capped_roles;

/* Where a pass's next claim scan starts; see claim_query. */
typedef struct ClaimPosition
{
	TimestampTz next_run_at;
	int64		job_id;
} ClaimPosition;

/*
 * claim_job
 *		Run claim query q from position *pos as of now; on success read the
 *		claimed job into *job, move *pos to it and return true.  In a
 *		transaction, connected to SPI.
 */
static bool
claim_job(SchedlockQuery *q, ClaimPosition *pos, TimestampTz now,
		  ClaimedJob *job)
{
	Datum		values[4];
	bool		isnull;

	values[0] = TimestampTzGetDatum(now);
	values[1] = TimestampTzGetDatum(pos->next_run_at);
	values[2] = Int64GetDatum(pos->job_id);
	values[3] = capped_roles;	/* used by claim_capped_query only */
	schedlock_dispatch_blame(0);
	if (schedlock_query_run(q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not claim due jobs");
	if (SPI_processed == 0)
		return false;
	read_claimed_job(job);
	/* an error from here on is charged to this job (quarantine.c) */
	schedlock_dispatch_blame(job->job_id);
	pos->job_id = job->job_id;
	pos->next_run_at = DatumGetTimestampTz(col(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 19,
											   &isnull));
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/*
 * claim_query_now
 *		The claim query to use now: claim_query, or claim_capped_query when
 *		some roles have schedlock.max_runs_per_role runs in progress (their
 *		SQL jobs stay due, unlocked, for the workers to claim when a place
 *		is free).  Called in run_cxt, outside a transaction.
 */
static SchedlockQuery *
claim_query_now(void)
{
	Oid			roles[SCHEDLOCK_MAX_WORKERS_PER_DB];
	Datum		elems[SCHEDLOCK_MAX_WORKERS_PER_DB];
	int			n;
	int			i;

	n = schedlock_pool_capped_roles(MySlot, roles, lengthof(roles));
	if (n == 0)
		return &claim_query;
	for (i = 0; i < n; i++)
		elems[i] = ObjectIdGetDatum(roles[i]);
	capped_roles = PointerGetDatum(construct_array(elems, n, OIDOID,
												   sizeof(Oid), true,
												   TYPALIGN_INT));
	return &claim_capped_query;
}

/*
 * settle_claim
 *		Decide what to do with a job claimed as of horizon and advance it.
 *		A slot that is not to run (misfire skip, or overlap with a run in
 *		progress) is recorded as skipped here; plan->kind says whether to
 *		run.  Returns when the run is to start: now, or the instant it falls
 *		due (its slot, or its retry time) when that lies ahead, by at most
 *		WORKER_CLAIM_LEAD_MS.
 */
static TimestampTz
settle_claim(ClaimedJob *job, ClaimPlan *plan, TimestampTz horizon)
{
	TimestampTz now;

	plan_claim(job, horizon, plan);
	save_job_state(job, horizon);

	if (plan->kind == PLAN_RUN && run_in_progress(job->job_id))
	{
		plan->kind = PLAN_SKIP;
		plan->message = "the previous run was still in progress (overlap)";
	}
	now = GetCurrentTimestamp();
	if (plan->kind == PLAN_SKIP)
		(void) record_run(job, plan, "skipped", now, 0, false);
	return Max(now, plan->due_at);
}

/*
 * wait_until
 *		Sleep until the instant start, if it has not come yet.  Everything
 *		that can be done for a run before its instant is done before this.
 *		A signal ends pg_usleep early: sleep the rest again.
 */
static void
wait_until(TimestampTz start)
{
	TimestampTz now;

	while (start > (now = GetCurrentTimestamp()))
		pg_usleep((long) Min(start - now,
							 (TimestampTz) WORKER_CLAIM_LEAD_MS * 1000));
}

/*
 * notify_job
 *		Record a NOTIFY job's run as pending, with its claim deadline, and
 *		queue the notification (sent when the transaction commits).
 */
static void
notify_job(ClaimedJob *job, ClaimPlan *plan, TimestampTz now)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(now,
													   job->timeout_ms > 0 ? job->timeout_ms :
													   SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT * 1000);
	ErrorData  *error = schedlock_check_job_role(job->owner, job->run_as, run_cxt);
	int64		run_id;

	/* a job whose role cannot log in is not notified: its run fails */
	if (error != NULL)
	{
		run_id = record_run(job, plan, "running", now, 0, false);
		if (run_id != 0)
			record_outcome(job, plan, run_id, error);
		return;
	}
	run_id = record_run(job, plan, "pending", now, deadline, true);
	if (run_id != 0)
		notify_run(job, plan, run_id);
}

/*
 * dispatch_one
 *		Claim and handle one due job after position *pos, and move *pos to
 *		it.  Returns false when none was due there.  Called outside a
 *		transaction, in run_cxt.
 *
 * A NOTIFY job runs no command, so the NOTIFY jobs due with it are claimed
 * and notified in the same transaction, up to WORKER_NOTIFY_BATCH of them:
 * one commit instead of one each.  They still go out only if the claims
 * commit.  That scan moves a position of its own, so the SQL jobs it steps
 * over are still next for this worker.
 */
static bool
dispatch_one(ClaimPosition *pos)
{
	TimestampTz horizon;
	TimestampTz start;
	ClaimedJob	job;
	ClaimPlan	plan;
	int64		run_id;
	Oid			user;
	ErrorData  *error = NULL;
	SchedlockQuery *q;

	schedlock_pool_release_role(MySlot);
	q = claim_query_now();
	begin_tx("schedlock: claiming due jobs");
	horizon = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										  WORKER_CLAIM_LEAD_MS);
	if (!claim_job(q, pos, horizon, &job))
	{
		end_tx();
		return false;
	}
	/* its role reached schedlock.max_runs_per_role meanwhile: leave it */
	if (job.channel == NULL && !schedlock_pool_take_role(MySlot, job.owner))
	{
		end_tx();
		return true;
	}
	start = settle_claim(&job, &plan, horizon);
	if (plan.kind != PLAN_RUN)
	{
		end_tx();
		return true;
	}
	if (job.channel != NULL)
	{
		ClaimPosition batch = *pos;
		int			n = 1;

		/*
		 * The batch takes only jobs due by the first one's instant: the
		 * notifications all go out at commit, and none may go out early.
		 */
		notify_job(&job, &plan, start);
		while (n++ < WORKER_NOTIFY_BATCH &&
			   claim_job(&claim_notify_query, &batch, start, &job))
		{
			(void) settle_claim(&job, &plan, start);
			if (plan.kind == PLAN_RUN)
				notify_job(&job, &plan, start);
		}
		wait_until(start);
		end_tx();
		return true;
	}

	/* started_at is the instant the command starts, after wait_until */
	run_id = record_run(&job, &plan, "running", start, 0, false);
	if (run_id == 0)
	{
		end_tx();
		return true;
	}
	user = OidIsValid(job.run_as) ? job.run_as : job.owner;
	/* a job whose role cannot log in does not run: its run fails */
	error = schedlock_check_job_role(job.owner, job.run_as, run_cxt);

	if (job.atomic)
	{
		/*
		 * Claimed before its instant: the claim commits first, and the job
		 * runs in a transaction that starts on the instant, so that its now()
		 * is not before its slot.  Only the claim's commit is added, and it
		 * is made while waiting for the instant.
		 */
		if (start > GetCurrentTransactionStartTimestamp())
		{
			end_tx();
			wait_until(start);
			begin_tx("schedlock: running a job");
		}
		else
			wait_until(start);
		set_running_job(job.job_id);
		report_job_activity(&job);
		job_cancel_begin();
		if (error == NULL &&
			!schedlock_exec_atomic(job.command, user, job.timeout_ms, &error))
			MemoryContextSwitchTo(run_cxt);
		job_cancel_end();
		set_running_job(0);
		record_outcome(&job, &plan, run_id, error);
		end_tx();
		schedlock_exec_discard_job_state();
		return true;
	}

	/* non-atomic: the claim commits first, the command runs at top level */
	end_tx();
	wait_until(start);
	set_running_job(job.job_id);
	report_job_activity(&job);
	if (error == NULL)
	{
		job_cancel_begin();
		(void) schedlock_exec_toplevel(job.command, user, job.timeout_ms, &error);
		job_cancel_end();
		schedlock_exec_discard_job_state();
	}
	set_running_job(0);
	begin_tx("schedlock: recording a run");
	record_outcome(&job, &plan, run_id, error);
	end_tx();
	return true;
}

/*
 * expire_runs
 *		Close NOTIFY runs not claimed, or not finished, by their deadline
 *		as timed out, and retry them per policy: at most EXPIRE_BATCH_ROWS
 *		per transaction.  Returns how many it closed.
 */
static uint64
expire_runs(void)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.job_runs r SET status = 'timed_out', "
		"  finished_at = $1, deadline = NULL, "
		"  message = CASE WHEN r.status OPERATOR(pg_catalog.=) 'pending' "
		"    THEN 'not claimed within the timeout' "
		"    ELSE 'not finished within the timeout' END "
		"WHERE r.run_id OPERATOR(pg_catalog.=) ANY ("
		"    SELECT x.run_id FROM schedlock.job_runs x "
		"    WHERE x.status OPERATOR(pg_catalog.=) ANY ('{pending,running}') "
		"      AND x.deadline OPERATOR(pg_catalog.<=) $1 "
		"    ORDER BY x.deadline LIMIT " CppAsString2(EXPIRE_BATCH_ROWS)
		"    FOR UPDATE SKIP LOCKED) "
		"RETURNING r.job_id, r.scheduled_for, "
		"  CASE WHEN r.manual THEN 0 ELSE r.attempt END",
		1, {TIMESTAMPTZOID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[1] = {TimestampTzGetDatum(now)};
	uint64		closed;

	begin_tx("schedlock: closing overdue runs");
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not close overdue runs");
	closed = SPI_processed;
	close_runs_failed(now);
	end_tx();
	return closed;
}

/*
 * prune_history
 *		Delete finished runs older than schedlock.history_retention, in
 *		batches of PRUNE_BATCH_ROWS, at most once a minute.
 */
static void
prune_history(TimestampTz *last_prune)
{
	TimestampTz now = GetCurrentTimestamp();
	Oid			types[2] = {TIMESTAMPTZOID, INT4OID};
	Datum		values[2];
	int			batch;

	if (schedlock_history_retention <= 0 ||
		!TimestampDifferenceExceeds(*last_prune, now, 60 * 1000))
		return;
	*last_prune = now;
	values[0] = TimestampTzGetDatum(now);
	values[1] = Int32GetDatum(schedlock_history_retention);
	for (batch = 0; batch < PRUNE_MAX_BATCHES; batch++)
	{
		uint64		deleted;
		int			nestlevel;

		begin_tx("schedlock: pruning run history");
		nestlevel = schedlock_trusted_path_begin();
		if (SPI_execute_with_args("DELETE FROM schedlock.job_runs "
								  "WHERE run_id OPERATOR(pg_catalog.=) ANY ("
								  "  SELECT run_id FROM schedlock.job_runs "
								  "  WHERE finished_at OPERATOR(pg_catalog.<) "
								  "    ($1 OPERATOR(pg_catalog.-) "
								  "     pg_catalog.make_interval(mins => $2)) "
								  "  ORDER BY finished_at LIMIT "
								  CppAsString2(PRUNE_BATCH_ROWS) ")",
								  2, types, values, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not prune run history");
		deleted = SPI_processed;
		schedlock_trusted_path_end(nestlevel);
		end_tx();
		if (deleted < PRUNE_BATCH_ROWS)
			break;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * sleep_time
 *		Milliseconds until WORKER_CLAIM_LEAD_MS before the earliest future
 *		next_run_at or deadline, capped at SCHEDLOCK_MAX_SLEEP_MS.  When
 *		that is now already but this pass claimed nothing, another worker
 *		holds the job while it waits for its instant: sleep past the
 *		instant instead of spinning.  A long sleep ends early by more than
 *		its timer slack (see WORKER_SLACK_FREE_MS).
 */
static long
sleep_time(bool claimed)
{
	static SchedlockQuery q = {
		"SELECT LEAST("
		"  (SELECT pg_catalog.min(next_run_at) FROM schedlock.jobs "
		"    WHERE enabled AND next_run_at OPERATOR(pg_catalog.>) $1), "
		"  (SELECT pg_catalog.min(deadline) FROM schedlock.job_runs "
		"    WHERE status OPERATOR(pg_catalog.=) ANY ('{pending,running}') "
		"      AND deadline OPERATOR(pg_catalog.>) $1))",
		1, {TIMESTAMPTZOID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[1] = {TimestampTzGetDatum(now)};
	long		ms = SCHEDLOCK_MAX_SLEEP_MS;
	bool		isnull;
	Datum		d;

	begin_tx("schedlock: computing the next wakeup");
	if (schedlock_query_run(&q, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not compute the next wakeup");
	d = col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
	{
		TimestampTz next = DatumGetTimestampTz(d);

		ms = (long) Min((next - now) / 1000 + 1 - WORKER_CLAIM_LEAD_MS,
						(int64) SCHEDLOCK_MAX_SLEEP_MS);
		if (ms <= 0)
			ms = claimed ? 0 : (long) ((next - now) / 1000 + 1);
		else if (ms > WORKER_SLACK_FREE_MS)
			ms -= ms / WORKER_SLACK_DIVISOR + 1;
	}
	end_tx();
	return ms;
}

/*
 * schedlock_worker_main
 *		Entry point of a dispatch worker; bgw_main_arg is its slot number.
 */
void
schedlock_worker_main(Datum arg)
{
	int			slotno = DatumGetInt32(arg);
	Oid			dboid;
	int			index;
	uint64		generation;
	static TimestampTz last_prune = 0;
	static TimestampTz last_lost_check = 0;
	static TimestampTz idle_since = 0;
	static bool watch_runs = false;
	sigjmp_buf	local_sigjmp_buf;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, worker_sigint);
	BackgroundWorkerUnblockSignals();

	/* take the slot first: a launcher that restarts adopts it from there */
	MySlot = &schedlock_shared->slots[slotno];
	memcpy(&generation, MyBgworkerEntry->bgw_extra, sizeof(uint64));
	if (!schedlock_worker_attach(MySlot, generation))
		proc_exit(0);
	before_shmem_exit(worker_detach, (Datum) 0);
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	dboid = MySlot->dboid;
	index = MySlot->worker_index;
	LWLockRelease(schedlock_shared->lock);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	/* identifiable in pg_stat_activity */
	SetConfigOption("application_name", "schedlock worker",
					PGC_USERSET, PGC_S_OVERRIDE);

	run_cxt = AllocSetContextCreate(TopMemoryContext, "schedlock worker",
									ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(run_cxt);

	/* the launcher starts only after recovery; make sure anyway */
	while (RecoveryInProgress())
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}

	if (!extension_present())
	{
		LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
		MySlot->no_extension = true;
		LWLockRelease(schedlock_shared->lock);
		proc_exit(0);
	}

	/* in a copy of the database nothing is touched until adoption (home.c) */
	if (!schedlock_jobs_paused(index == 0, index == 0))
		startup_work(index == 0 && schedlock_reboot_due(dboid));
	if (index == 0)
	{
		LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
		MySlot->ready = true;
		LWLockRelease(schedlock_shared->lock);
		schedlock_wake_launcher();
	}
	ereport(LOG,
			(errmsg("%s started", MyBgworkerEntry->bgw_name)));

	/* an error in the loop is logged and the loop goes on (quarantine.c) */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		schedlock_worker_recover(run_cxt);
		job_cancel_end();
		set_running_job(0);
	}
	PG_exception_stack = &local_sigjmp_buf;

	for (;;)
	{
		long		sleep_ms = SCHEDLOCK_MAX_SLEEP_MS;
		bool		claimed = false;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		if (!extension_present())
		{
			LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
			MySlot->no_extension = true;
			LWLockRelease(schedlock_shared->lock);
			proc_exit(0);
		}

		if (schedlock_enabled && !schedlock_jobs_paused(false, index == 0))
		{
			ClaimPosition pos = {DT_NOBEGIN, 0};
			int			claims = 0;
			int			batches;
			bool		more;

			check_lost_runs(&last_lost_check, &watch_runs);
			for (;;)
			{
				more = dispatch_one(&pos);
				if (!more && pos.next_run_at != DT_NOBEGIN)
				{
					/* end of the range: one scan from its start */
					pos.next_run_at = DT_NOBEGIN;
					pos.job_id = 0;
					more = dispatch_one(&pos);
				}
				if (!more || ++claims >= WORKER_MAX_CLAIMS_PER_PASS)
					break;
				MemoryContextReset(run_cxt);
				CHECK_FOR_INTERRUPTS();
			}
			schedlock_dispatch_blame(0);
			for (batches = 1;; batches++)
			{
				if (expire_runs() < EXPIRE_BATCH_ROWS)
					break;
				if (batches >= EXPIRE_MAX_BATCHES)
				{
					more = true;
					break;
				}
				CHECK_FOR_INTERRUPTS();
			}
			if (index == 0)
				prune_history(&last_prune);
			sleep_ms = more ? 0 : sleep_time(claims > 0);
			if (watch_runs)
				sleep_ms = Min(sleep_ms, LOST_CHECK_MS);
			claimed = claims > 0;
		}
		/* a worker beyond schedlock.workers leaves the pool when idle */
		sleep_ms = schedlock_pool_retire_if_idle(MySlot, claimed, &idle_since,
												 sleep_ms);

		MemoryContextReset(run_cxt);
		/* statistics end_tx held back (at most one report a second) */
		if (sleep_ms != 0)
			pgstat_report_stat(true);
		pgstat_report_activity(STATE_IDLE, NULL);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms,
						 schedlock_wait_event_idle());
		ResetLatch(MyLatch);
	}
}
