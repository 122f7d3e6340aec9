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
 *	- non-atomic SQL job: commit the claim, run the command at top level in
 *	  a backend of its own connected as the job's role (jobbackend.c), then
 *	  record the outcome in a new transaction.
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
 * The worker asks the scheduling rules (rules.c) what to do and runs the
 * statements of jobstore.c on the scheduler's tables; it holds neither.
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

#include "compat.h"
#include "cron_pg.h"
#include "jobbackend.h"
#include "jobstore.h"
#include "runlog.h"
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
 * Transactions of overdue NOTIFY runs closed per pass (EXPIRE_BATCH_ROWS
 * each, jobstore.h); a pass that leaves overdue runs behind is followed by
 * another at once.
 */
#define EXPIRE_MAX_BATCHES	10

/* History pruning batches per pass (PRUNE_BATCH_ROWS each, jobstore.h). */
#define PRUNE_MAX_BATCHES	10

/*
 * An idle worker looks for lost runs at most this often, and sleeps at most
 * this long while a SQL run of its database is in progress.
 */
#define LOST_CHECK_MS	1000

/* This worker's slot in shared memory. */
static SchedlockWorkerSlot *MySlot = NULL;

/* Memory for one claim and run; reset after each pass. */
static MemoryContext run_cxt = NULL;

/* Whether a cancel now cancels the job's statement (see worker_sigint). */
static volatile sig_atomic_t job_cancel_allowed = false;

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
 * begin_tx / commit_tx / end_tx
 *		Open a transaction with SPI and a snapshot; commit it; commit it and
 *		report its statistics (in the worker_spi order).
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
commit_tx(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(run_cxt);
}

static void
end_tx(void)
{
	commit_tx();
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
	TimestampTz now = GetCurrentTimestamp();

	/* too soon: the sleep ends in time for the next check */
	if (!TimestampDifferenceExceeds(*last_check, now, LOST_CHECK_MS - 10))
	{
		*watch = true;
		return;
	}
	*last_check = now;
	begin_tx("schedlock: closing lost runs");
	(void) schedlock_close_lost_runs();
	*watch = schedlock_sql_runs_in_progress();
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

	begin_tx("schedlock: closing lost runs");
	(void) schedlock_close_lost_runs();
	if (fire_reboot)
	{
		/* after pg_upgrade or a restore the jobs' roles may be unrecorded */
		(void) schedlock_sync_job_roles();
		schedlock_fire_reboot_jobs(now);
	}
	/* no interrupt between the commit and the record: @reboot fires once */
	HOLD_INTERRUPTS();
	end_tx();
	if (fire_reboot)
		schedlock_reboot_done(MyDatabaseId);
	RESUME_INTERRUPTS();
}

/* A job's schedule and time zone, for job_next_slot. */
typedef struct JobSchedule
{
	SchedlockCronSchedule sched;
	pg_tz	   *tz;
} JobSchedule;

/*
 * job_next_slot
 *		SchedlockNextSlotFn of the slot rule: the next slot of the job's
 *		schedule (a JobSchedule) strictly after an instant, in its time zone,
 *		from the cron engine.
 */
static bool
job_next_slot(const void *arg, SchedlockTime after, SchedlockTime *next)
{
	const JobSchedule *js = arg;

	return schedlock_cron_next_time(&js->sched, after, js->tz, next);
}

/*
 * plan_slot
 *		Decide what to do about the job's due slot next_slot, under its
 *		misfire policy, and advance next_slot (schedlock_rule_due_slot).
 */
static void
plan_slot(ClaimedJob *job, TimestampTz now, ClaimPlan *plan)
{
	JobSchedule js;
	SchedlockMisfire misfire;
	SchedlockSlotPlan slot;

	plan->scheduled_for = job->next_slot;
	plan->attempt = 1;

	/* a one-off job (job.c): its one slot runs, however late, and it ends */
	if (schedlock_schedule_is_once(job->schedule))
	{
		plan->kind = PLAN_RUN;
		job->has_next_slot = false;
		return;
	}
	schedlock_cron_parse_or_error(job->schedule, &js.sched);
	js.tz = schedlock_cron_lookup_timezone(job->timezone);
	/* a misfire policy written by hand that is none of them is run_once */
	(void) schedlock_misfire_parse(job->misfire, &misfire);
	schedlock_rule_due_slot(job->next_slot, now, misfire,
							job->reboot || schedlock_cron_is_reboot(&js.sched),
							job_next_slot, &js, &slot);
	plan->kind = (slot.action == SCHEDLOCK_SLOT_SKIP) ? PLAN_SKIP : PLAN_RUN;
	if (slot.message[0] != '\0')
		plan->message = MemoryContextStrdup(run_cxt, slot.message);
	job->has_next_slot = slot.has_next;
	if (slot.has_next)
		job->next_slot = slot.next;
}

/*
 * plan_claim
 *		Decide what to do with the claimed job (schedlock_rule_claim_serves:
 *		a queued run_job() call first, then a due retry, then the due slot).
 */
static void
plan_claim(ClaimedJob *job, TimestampTz now, ClaimPlan *plan)
{
	SchedlockClaimServes serves;

	memset(plan, 0, sizeof(*plan));
	plan->kind = PLAN_NOTHING;

	serves = schedlock_rule_claim_serves(job->manual_pending, job->has_retry,
										 job->retry_at, job->has_next_slot,
										 job->next_slot, now);
	if (serves == SCHEDLOCK_SERVES_RUN_JOB)
	{
		job->manual_pending--;
		if (schedlock_next_queued_run(job->job_id, &plan->manual_run_id,
									  &plan->scheduled_for))
		{
			plan->kind = PLAN_RUN;
			plan->attempt = 1;
			return;
		}
		/* no queued run is left after all: the count was off */
		job->manual_pending = 0;
		serves = schedlock_rule_claim_serves(0, job->has_retry, job->retry_at,
											 job->has_next_slot,
											 job->next_slot, now);
	}
	if (serves == SCHEDLOCK_SERVES_RETRY)
	{
		plan->kind = PLAN_RUN;
		plan->scheduled_for = job->retry_slot;
		plan->due_at = job->retry_at;
		plan->attempt = job->retry_attempt;
		job->has_retry = false;
		return;
	}
	if (serves == SCHEDLOCK_SERVES_SLOT)
	{
		plan_slot(job, now, plan);
		plan->due_at = plan->scheduled_for;
	}
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

/*
 * claim_query_now
 *		The claim statement to use now: SCHEDLOCK_CLAIM_ANY, or
 *		SCHEDLOCK_CLAIM_CAPPED when some roles have
 *		schedlock.max_runs_per_role runs in progress (their SQL jobs stay
 *		due, unlocked, for the workers to claim when a place is free).
 *		Called in run_cxt, outside a transaction.
 */
static SchedlockClaimKind
claim_query_now(void)
{
	Oid			roles[SCHEDLOCK_MAX_WORKERS_PER_DB];
	int			n;

	n = schedlock_pool_capped_roles(MySlot, roles, lengthof(roles));
	if (n == 0)
		return SCHEDLOCK_CLAIM_ANY;
	schedlock_claim_cap_roles(roles, n);
	return SCHEDLOCK_CLAIM_CAPPED;
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
	schedlock_save_job_state(job, horizon);

	if (plan->kind == PLAN_RUN)
	{
		const char *overlap = schedlock_rule_overlap(schedlock_run_in_progress(job->job_id));

		if (overlap != NULL)
		{
			plan->kind = PLAN_SKIP;
			plan->message = overlap;
		}
	}
	now = GetCurrentTimestamp();
	if (plan->kind == PLAN_SKIP)
		(void) schedlock_record_run(job, plan, "skipped", now, 0, false);
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
 * commit_early_claim
 *		Commit the claim of an atomic job claimed before its instant, which
 *		then runs in a transaction of its own (see dispatch_one), within
 *		the WORKER_CLAIM_LEAD_MS before the instant.  The commit does not
 *		wait for its WAL to reach disk (synchronous_commit off for this
 *		transaction), nor are statistics reported: an fsync slowed by other
 *		writers of the disk, and a statistics flush, made the command start
 *		late (15-30 ms).  Durability is not weakened: the run's transaction
 *		commits synchronously, which flushes the claim's WAL with its own;
 *		if the server stops before that, the job has not run, and its slot
 *		is claimed again after the restart as if it never had been.
 */
static void
commit_early_claim(void)
{
	(void) set_config_option("synchronous_commit", "off", PGC_SUSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	commit_tx();
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
		run_id = schedlock_record_run(job, plan, "running", now, 0, false);
		if (run_id != 0)
			schedlock_record_outcome(job, plan, run_id, error, NULL, NULL);
		return;
	}
	run_id = schedlock_record_run(job, plan, "pending", now, deadline, true);
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
	char		result_status[SCHEDLOCK_RESULT_STATUS_LEN] = "";
	char	   *notices = NULL;
	SchedlockClaimKind q;

	schedlock_pool_release_role(MySlot);
	q = claim_query_now();
	begin_tx("schedlock: claiming due jobs");
	horizon = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										  WORKER_CLAIM_LEAD_MS);
	if (!schedlock_claim_job(q, pos, horizon, &job, run_cxt))
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
			   schedlock_claim_job(SCHEDLOCK_CLAIM_NOTIFY, &batch, start, &job,
								   run_cxt))
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
	run_id = schedlock_record_run(&job, &plan, "running", start, 0, false);
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
		 * is made while waiting for the instant.  A job due when the claim's
		 * transaction started (every job of a burst but the first few) runs
		 * in that transaction: one commit.  (start, taken after the claim,
		 * always lies after the transaction's start.)
		 */
		if (plan.due_at > GetCurrentTransactionStartTimestamp())
		{
			commit_early_claim();
			wait_until(start);
			begin_tx("schedlock: running a job");
		}
		else
			wait_until(start);
		set_running_job(job.job_id);
		report_job_activity(&job);
		if (error == NULL)
			schedlock_log_run_statement(job.job_name, run_id, job.command);
		job_cancel_begin();
		if (error == NULL &&
			!schedlock_exec_atomic(job.command, user, job.timeout_ms, &error,
								   result_status, &notices))
			MemoryContextSwitchTo(run_cxt);
		job_cancel_end();
		set_running_job(0);
		schedlock_record_outcome(&job, &plan, run_id, error, result_status,
								 notices);
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
		/* in a backend of its own, connected as the job's role */
		schedlock_log_run_statement(job.job_name, run_id, job.command);
		job_cancel_begin();
		(void) schedlock_jobbackend_run(job.command, user, job.timeout_ms,
										&error, result_status, &notices);
		job_cancel_end();
		MemoryContextSwitchTo(run_cxt);
	}
	set_running_job(0);
	begin_tx("schedlock: recording a run");
	schedlock_record_outcome(&job, &plan, run_id, error, result_status,
							 notices);
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
	uint64		closed;

	begin_tx("schedlock: closing overdue runs");
	closed = schedlock_expire_runs(GetCurrentTimestamp());
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
	int			batch;

	if (schedlock_history_retention <= 0 ||
		!TimestampDifferenceExceeds(*last_prune, now, 60 * 1000))
		return;
	*last_prune = now;
	for (batch = 0; batch < PRUNE_MAX_BATCHES; batch++)
	{
		uint64		deleted;

		begin_tx("schedlock: pruning run history");
		deleted = schedlock_prune_runs(now, schedlock_history_retention);
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
	TimestampTz now = GetCurrentTimestamp();
	long		ms = SCHEDLOCK_MAX_SLEEP_MS;
	TimestampTz next;

	begin_tx("schedlock: computing the next wakeup");
	if (schedlock_next_wakeup(now, &next))
	{
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
	ereport(DEBUG1,
			(errmsg_internal("%s started", MyBgworkerEntry->bgw_name)));

	/* an error in the loop is logged and the loop goes on (quarantine.c) */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		/* a capture is never left on (exec.c ends it on every way out) */
		schedlock_capture_abort();
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
