/*-------------------------------------------------------------------------
 *
 * dispatch_run.c
 *	  A claimed job's run in its job backend (or housekeeper): the process
 *	  state it publishes, the cancel window of its command, the
 *	  bookkeeping's transactions and role switch, waiting for the instant,
 *	  and running the command atomic (in a subtransaction of the claim's
 *	  transaction) or at top level; and the recovery after an error in the
 *	  backend's own work.  dispatch.c's pass and dispatch_sets.c's runs
 *	  that share a commit are made of these steps.
 *
 * IDENTIFICATION
 *	  src/sched/dispatch_run.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/elog.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "base/kept_query.h"
#include "base/settings.h"
#include "base/subxact.h"
#include "claim_plan.h"
#include "dispatch_int.h"
#include "dispatch_run.h"
#include "job_roles.h"
#include "notify_dispatch.h"
#include "quarantine.h"
#include "run_command.h"
#include "runlog.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"
#include "startwave.h"
#include "trusted_path.h"

/* The log line of a run whose job went between its claim and its instant */
#define UNSCHEDULED_MESSAGE \
	"the job was unscheduled or disabled before the run started"

/* This process's slot in shared memory. */
SchedlockBackendSlot *schedlock_my_slot = NULL;

/* The role a job backend runs jobs as (its session user). */
Oid			schedlock_my_role = InvalidOid;

/* The extension owner, as read at the start of the current pass. */
Oid			schedlock_bookkeeper = InvalidOid;

/*
 * How much earlier than SCHEDLOCK_CLAIM_LEAD_MS the backend claims the NOTIFY
 * jobs of its role's next instant, so that they are ready by then
 * (schedlock_notify_lead_ms; set by next_due).
 */
long		schedlock_notify_lead = 0;

/* Memory for one claim and run; reset after each pass. */
MemoryContext schedlock_run_cxt = NULL;

/*
 * Whether a cancel now cancels the job's statement (see
 * schedlock_job_sigint).
 */
static volatile sig_atomic_t job_cancel_allowed = false;

/*
 * schedlock_set_running_job
 *		Publish the job this backend runs now (0: none), for job_status and
 *		for telling its run from a lost one (schedlock.job_worker_pid), and
 *		start, the instant its command starts: a run claimed ahead counts as
 *		busy from then, not while it waits for it; and plan, the slot and
 *		attempt it runs (for a backend that ends in the middle of the run,
 *		schedlock_note_died_run).  Set before the run's "running" row can
 *		commit, cleared after its outcome has.
 */
void
schedlock_set_running_job(int64 job_id, const ClaimPlan *plan, TimestampTz start)
{
	schedlock_set_running(schedlock_my_slot, job_id,
						  plan ? plan->scheduled_for : 0,
						  plan ? plan->attempt : 0, start);
}

/*
 * set_run_settings
 *		Show the run a job's command belongs to in schedlock.run_id and the
 *		slot it stands for in schedlock.scheduled_for (run_id 0: none, both
 *		are empty), for the command to read.  The instant is written in ISO
 *		form in UTC, which reads back the same whatever the session's
 *		DateStyle and TimeZone.
 */
static void
set_run_settings(int64 run_id, TimestampTz scheduled_for)
{
	char		id[32] = "";
	char		slot[MAXDATELEN + 1] = "";

	if (run_id != 0)
	{
		struct pg_tm tm;
		fsec_t		fsec;

		snprintf(id, sizeof(id), INT64_FORMAT, run_id);
		if (timestamp2tm(scheduled_for, NULL, &tm, &fsec, NULL, NULL) == 0)
		{
			/* UTC, with its offset written out (+00) */
			tm.tm_isdst = 0;
			EncodeDateTime(&tm, fsec, true, 0, NULL, USE_ISO_DATES, slot);
		}
	}
	(void) set_config_option("schedlock.run_id", id, PGC_INTERNAL,
							 PGC_S_OVERRIDE, GUC_ACTION_SET, true, 0, false);
	(void) set_config_option("schedlock.scheduled_for", slot, PGC_INTERNAL,
							 PGC_S_OVERRIDE, GUC_ACTION_SET, true, 0, false);
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
 * schedlock_job_sigint
 *		SIGINT handler (pg_cancel_backend, and the statement timeout that
 *		bounds a job): cancels the job's statement while one runs, as
 *		StatementCancelHandler does; otherwise does nothing.  A cancel
 *		processed in the backend's own statements would end its pass.  The
 *		one exception is the lock timeout of those statements
 *		(schedlock.bookkeeping_lock_timeout): PostgreSQL ends a lock wait
 *		that timed out by signalling SIGINT to itself, and that must end
 *		the statement (55P03) rather than be dropped, or the wait goes on.
 */
void
schedlock_job_sigint(SIGNAL_ARGS)
{
	if (job_cancel_allowed || get_timeout_indicator(LOCK_TIMEOUT, false))
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
	/* the command waits for locks as its role's lock_timeout says */
	schedlock_bookkeeping_locks_end();
}

static void
job_cancel_end(void)
{
	job_cancel_allowed = false;
	QueryCancelPending = false;
	schedlock_bookkeeping_locks_begin();
}

/*
 * begin_bookkeeping / end_bookkeeping
 *		Switch a job backend to the extension owner, in a security-restricted
 *		operation, for its own statements on the scheduler's tables; and
 *		back to its role.  The housekeeper is a superuser and stays so.  A
 *		transaction abort switches back by itself.  (The bound on their lock
 *		waits is set where a bookkeeping transaction begins and where a
 *		job's command ends: schedlock_bookkeeping_tx_begin, job_cancel_end.)
 */
static void
begin_bookkeeping(void)
{
	if (schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS)
		SetUserIdAndSecContext(schedlock_bookkeeper,
							   SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
}

static void
end_bookkeeping(void)
{
	if (schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS)
		SetUserIdAndSecContext(schedlock_my_role, 0);
}

/*
 * begin_tx / commit_tx / end_tx
 *		Open a read-write, read committed transaction with SPI and a
 *		snapshot, for bookkeeping; commit it as the role; commit it and
 *		report its statistics (in the worker_spi order).
 */
void
schedlock_worker_begin_tx(const char *activity)
{
	/*
	 * Read-write and read committed, whatever the role's or a job's session
	 * defaults; an atomic job runs in this transaction too.
	 */
	schedlock_bookkeeping_tx_begin(activity);
	begin_bookkeeping();
}

static void
commit_tx(void)
{
	end_bookkeeping();
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(schedlock_run_cxt);
}

void
schedlock_worker_end_tx(void)
{
	commit_tx();
	/* at most once a second; the main loop flushes the rest before sleeping */
	pgstat_report_stat(false);
}

/*
 * schedlock_wait_until
 *		Sleep until the instant start, if it has not come yet.  Everything
 *		that can be done for a run before its instant is done before this.
 *		A signal ends pg_usleep early: sleep the rest again.
 */
void
schedlock_wait_until(TimestampTz start)
{
	TimestampTz now;

	while (start > (now = GetCurrentTimestamp()))
	{
		CHECK_FOR_INTERRUPTS();
		pg_usleep((long) Min(start - now,
							 (TimestampTz) SCHEDLOCK_CLAIM_LEAD_MS * 1000));
	}
}

/*
 * schedlock_commit_early_claim
 *		Commit the claim of an atomic job claimed before its instant, which
 *		then runs in a transaction of its own (see dispatch_one), within
 *		the SCHEDLOCK_CLAIM_LEAD_MS before the instant.  The commit does not
 *		wait for its WAL to reach disk (synchronous_commit off for this
 *		transaction), nor are statistics reported: an fsync slowed by other
 *		writers of the disk, and a statistics flush, made the command start
 *		late (15-30 ms).  Durability is not weakened: the run's transaction
 *		commits synchronously, which flushes the claim's WAL with its own;
 *		if the server stops before that, the job has not run, and its slot
 *		is claimed again after the restart as if it never had been.
 */
void
schedlock_commit_early_claim(void)
{
	(void) set_config_option("synchronous_commit", "off", PGC_SUSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	commit_tx();
}

/*
 * schedlock_run_in_subxact
 *		Run an atomic job's command in a subtransaction of the current
 *		transaction, as the role, unless error (the role check's verdict)
 *		is set already; then back to the bookkeeping.  *error gets the
 *		command's error, result_status (SCHEDLOCK_RESULT_STATUS_LEN bytes)
 *		and *notices what it said (schedlock_run_cxt).
 */
void
schedlock_run_in_subxact(ClaimedJob *job, ClaimPlan *plan, int64 run_id,
						 ErrorData **error, char *result_status, char **notices)
{
	result_status[0] = '\0';
	*notices = NULL;
	report_job_activity(job);
	if (*error != NULL)
		return;
	schedlock_log_run_statement(job->job_name, job->role_name, run_id,
								job->command);
	end_bookkeeping();
	schedlock_exec_set_search_path(job->search_path);
	set_run_settings(run_id, plan->scheduled_for);
	job_cancel_begin();
	schedlock_wave_started();
	if (!schedlock_exec_atomic(job->command, job->timeout_ms, error,
							   result_status, notices))
		MemoryContextSwitchTo(schedlock_run_cxt);
	job_cancel_end();
	set_run_settings(0, 0);
	begin_bookkeeping();
}

/*
 * schedlock_skip_unscheduled
 *		At the instant of n runs whose claims have committed (claimed ahead
 *		of their instant, or a non-atomic job's): skipped[i] is set when the
 *		job of run i (jobs[i], run_ids[i]) was unscheduled or disabled
 *		since; that run is then closed as skipped, logged, and does not
 *		start.  Returns how many were.  In a transaction, in bookkeeping.
 */
int
schedlock_skip_unscheduled(ClaimedJob **jobs, const int64 *run_ids, int n,
						   bool *skipped)
{
	int64		job_ids[SCHEDLOCK_MAX_RUNS_PER_COMMIT] = {0};
	int			k;

	Assert(n <= SCHEDLOCK_MAX_RUNS_PER_COMMIT);
	for (int i = 0; i < n; i++)
		job_ids[i] = jobs[i]->job_id;
	k = schedlock_skip_unscheduled_runs(job_ids, run_ids, n, skipped);
	for (int i = 0; k > 0 && i < n; i++)
		if (skipped[i])
			schedlock_log_run_end(jobs[i]->job_name, jobs[i]->role_name,
								  run_ids[i], SCHEDLOCK_RUN_SKIPPED, NULL,
								  UNSCHEDULED_MESSAGE, NULL);
	return k;
}

/*
 * unscheduled_since_claim
 *		schedlock_skip_unscheduled for one run.
 */
static bool
unscheduled_since_claim(ClaimedJob *job, int64 run_id)
{
	bool		skipped;

	(void) schedlock_skip_unscheduled(&job, &run_id, 1, &skipped);
	return skipped;
}

/*
 * schedlock_run_atomic
 *		Run an atomic job's command in the claiming transaction, as the
 *		role, and record its outcome as the owner; commit as the role.  In
 *		a transaction, in bookkeeping.  error: the role check's verdict
 *		(the command does not run when it is set).  A deferred run
 *		(settle_claim) has no row yet: its row (run_id, taken ahead) and the
 *		job's advanced state are written now, in one statement.  commit:
 *		commit the transaction afterwards (else a batch goes on in it).
 */
void
schedlock_run_atomic(ClaimedJob *job, ClaimPlan *plan, int64 run_id, TimestampTz start,
					 ErrorData *error, bool commit)
{
	char		result_status[SCHEDLOCK_RESULT_STATUS_LEN];
	char	   *notices;

	/*
	 * Claimed before its instant: the claim commits first, and the job runs
	 * in a transaction that starts on the instant, so that its now() is not
	 * before its slot.  Only the claim's commit is added, and it is made
	 * while waiting for the instant.  A job due when the claim's transaction
	 * started (every job of a burst but the first few) runs in that
	 * transaction: one commit.
	 */
	if (!plan->deferred && plan->due_at > GetCurrentTransactionStartTimestamp())
	{
		schedlock_commit_early_claim();
		if (start > GetCurrentTimestamp())
			schedlock_wave_join(start);
		schedlock_wait_until(start);
		schedlock_worker_begin_tx("schedlock: running a job");
		if (error == NULL && unscheduled_since_claim(job, run_id))
		{
			schedlock_wave_started();
			if (commit)
				schedlock_worker_end_tx();
			return;
		}
	}
	else
		schedlock_wait_until(start);
	schedlock_run_in_subxact(job, plan, run_id, &error, result_status, &notices);
	/* the others due at this instant start before this run's bookkeeping */
	schedlock_wave_started();
	schedlock_wave_wait_for_others();
	if (plan->deferred)
		(void) schedlock_record_ended_run(job, plan, start, error,
										  result_status, notices);
	else
		schedlock_record_outcome(job, plan, run_id, error, result_status,
								 notices);
	if (commit)
		schedlock_worker_end_tx();
}

/*
 * schedlock_run_toplevel
 *		Run a non-atomic job's command at top level in this backend, as the
 *		role, after its claim has committed, and record its outcome in a
 *		transaction of its own.  Called outside a transaction.
 */
void
schedlock_run_toplevel(ClaimedJob *job, ClaimPlan *plan, int64 run_id,
					   TimestampTz start, ErrorData *error)
{
	char		result_status[SCHEDLOCK_RESULT_STATUS_LEN] = "";
	char	   *notices = NULL;

	if (start > GetCurrentTimestamp())
		schedlock_wave_join(start);
	schedlock_wait_until(start);
	if (error == NULL)
	{
		bool		skipped;

		schedlock_worker_begin_tx("schedlock: starting a run");
		skipped = unscheduled_since_claim(job, run_id);
		schedlock_worker_end_tx();
		if (skipped)
		{
			schedlock_wave_started();
			return;
		}
	}
	report_job_activity(job);
	if (error == NULL)
	{
		schedlock_log_run_statement(job->job_name, job->role_name, run_id,
									job->command);
		schedlock_exec_set_search_path(job->search_path);
		set_run_settings(run_id, plan->scheduled_for);
		job_cancel_begin();
		schedlock_wave_started();
		(void) schedlock_exec_toplevel(job->command, job->timeout_ms, &error,
									   result_status, &notices);
		job_cancel_end();
		set_run_settings(0, 0);
		MemoryContextSwitchTo(schedlock_run_cxt);
	}
	/* the others due at this instant start before this run's bookkeeping */
	schedlock_wave_started();
	schedlock_wave_wait_for_others();
	schedlock_worker_begin_tx("schedlock: recording a run");
	schedlock_record_outcome(job, plan, run_id, error, result_status,
							 notices);
	schedlock_worker_end_tx();
}

/*
 * schedlock_job_error
 *		The verdict on a claimed job before it runs: the role check's
 *		(schedlock_check_job_role), the approval's of a job that runs as
 *		another role (schedlock_check_job_approval), a failure for a slot
 *		whose last attempt ended with its backend (schedlock_take_died_run),
 *		or the housekeeper's start_error for a
 *		role whose backend could not start; NULL when it may run.
 */
ErrorData *
schedlock_job_error(ClaimedJob *job, const ClaimPlan *plan, const char *start_error)
{
	ErrorData  *error = schedlock_check_job_role(job->owner, job->run_as,
												 schedlock_run_cxt);

	if (error == NULL)
		error = schedlock_check_job_approval(job->job_id, job->job_name,
											 job->owner, job->run_as,
											 schedlock_run_cxt);
	/* an SQL job resolves names only in schemas trusted for its role */
	if (error == NULL && job->command != NULL)
		job->search_path =
			schedlock_trusted_search_path(job->job_id, job->job_name,
										  job->search_path,
										  OidIsValid(job->run_as) ?
										  job->run_as : job->owner,
										  schedlock_run_cxt);
	if (error == NULL && job->command != NULL &&
		schedlock_take_died_run(MyDatabaseId, job->job_id,
								plan->scheduled_for, plan->attempt))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(schedlock_run_cxt);

		error = palloc0(sizeof(ErrorData));
		error->elevel = ERROR;
		error->sqlerrcode = ERRCODE_ADMIN_SHUTDOWN;
		error->message = pstrdup("the job's backend ended while this run's command ran");
		error->detail = pstrdup("Its transaction was rolled back with the command, so the run was not recorded then; it is recorded failed now instead of running the command again. A command that ends its own backend (pg_terminate_backend(pg_backend_pid())) ends this way at every run.");
		error->assoc_context = schedlock_run_cxt;
		MemoryContextSwitchTo(oldcxt);
	}

	if (error == NULL && start_error != NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(schedlock_run_cxt);

		error = palloc0(sizeof(ErrorData));
		error->elevel = ERROR;
		error->sqlerrcode = ERRCODE_CONNECTION_FAILURE;
		error->message = pstrdup(start_error);
		error->detail = pstrdup("The job's backend could not connect as its role.");
		error->assoc_context = schedlock_run_cxt;
		MemoryContextSwitchTo(oldcxt);
	}
	return error;
}

/*
 * schedlock_worker_recover_error
 *		After an error that reached the sigsetjmp of a job backend's or
 *		housekeeper's entry point: log it, abort the transaction and charge
 *		the job being handled (quarantine.c), and forget the run.  Returns
 *		the error's SQLSTATE.
 */
int
schedlock_worker_recover_error(void)
{
	int			sqlerrcode;

	/* a capture is never left on (run_command.c ends it on every way out) */
	schedlock_capture_abort();
	schedlock_wave_leave();
	sqlerrcode = schedlock_worker_recover(schedlock_run_cxt);
	job_cancel_end();
	schedlock_set_running_job(0, NULL, 0);
	/* runs claimed ahead and not recorded are lost ones now */
	if (schedlock_my_slot != NULL && schedlock_my_slot->nahead != 0)
		schedlock_set_ahead(schedlock_my_slot, NULL, 0);
	return sqlerrcode;
}
