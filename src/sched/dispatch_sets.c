/*-------------------------------------------------------------------------
 *
 * dispatch_sets.c
 *	  The runs that share a commit with a claimed job: the role's atomic
 *	  jobs due at the same instant, claimed ahead of it and run with it
 *	  (schedlock.runs_per_commit), and the batches of atomic runs whose
 *	  rows are written once they have ended (deferred runs), claimed,
 *	  asked about and recorded a set at a time, made of the steps of
 *	  dispatch_run.c.  dispatch.c's pass calls them at one entry point,
 *	  schedlock_run_sharing_commit.
 *
 * How it works, at length: docs/internals.md, section
 * "A job backend's pass".
 *
 * IDENTIFICATION
 *	  src/sched/dispatch_sets.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "base/subxact.h"
#include "dispatch_int.h"
#include "dispatch_run.h"
#include "quarantine.h"
#include "runlog.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"
#include "startwave.h"

/*
 * Longest a batch of atomic runs that share one commit goes on taking
 * further runs (schedlock.runs_per_commit), from its transaction's start.
 */
#define WORKER_BATCH_MS	10

/*
 * Atomic jobs of a batch claimed in one statement, asked about in one and
 * recorded in one (see schedlock_dispatch_batch).
 */
#define WORKER_BATCH_SET	64

/*
 * Runs claimed ahead of their instant with the first job due then
 * (schedlock_claim_ahead) are taken until this long before the instant.
 */
#define WORKER_AHEAD_MARGIN_MS	5

/*
 * A run of an atomic job claimed before its instant with the first job
 * due then (schedlock_claim_ahead), to run in the transaction begun on the
 * instant (schedlock_run_ahead).
 */
typedef struct AheadRun
{
	ClaimedJob	job;
	ClaimPlan	plan;
	int64		run_id;
	ErrorData  *error;			/* the role check's verdict, then the
								 * command's error */
	char	   *result_status;	/* SCHEDLOCK_RESULT_STATUS_LEN bytes */
	char	   *notices;
} AheadRun;

/*
 * record_set
 *		Record the n ended runs in one statement, by_set
 *		(schedlock_record_ended_runs, schedlock_record_outcomes), in a
 *		subtransaction; returns whether it recorded them all.  When it did
 *		not, or failed, the subtransaction is rolled back, and the caller
 *		records them one at a time, each charged to its job: the runs' own
 *		statements then say what it was.
 */
typedef bool (*SetRecorder) (SchedlockEndedRun *runs, const int64 *run_ids,
							 int n);

static bool
record_set(SetRecorder by_set, SchedlockEndedRun *runs, const int64 *run_ids,
		   int n)
{
	SchedlockSubxact sx;
	volatile bool recorded = false;

	schedlock_dispatch_blame(0);
	schedlock_subxact_begin(&sx);
	PG_TRY();
	{
		recorded = by_set(runs, run_ids, n);
		schedlock_subxact_end(&sx, recorded);
	}
	PG_CATCH();
	{
		FreeErrorData(schedlock_subxact_abort(&sx));
		recorded = false;
	}
	PG_END_TRY();
	return recorded;
}

/*
 * schedlock_claim_ahead
 *		Before the instant start, in the transaction that claimed the role's
 *		first atomic job due then and wrote its run as running, claim up to
 *		schedlock.runs_per_commit - 1 more of the role's atomic SQL jobs due
 *		by then, the general way: each is advanced and its run written as
 *		running (or its slot recorded as skipped).  Their commands run with
 *		the first one's, in the transaction begun on the instant
 *		(schedlock_run_ahead), so that at the instant only the commands are
 *		left to do.  Taking them stops WORKER_AHEAD_MARGIN_MS before the
 *		instant: a job claimed but not handled by then is left as it was
 *		(its row lock goes with the commit) and is claimed again later.
 *		Returns how many runs it put in runs (room for
 *		schedlock.runs_per_commit - 1).
 */
static int
schedlock_claim_ahead(Oid role, ClaimPosition *pos, TimestampTz start,
					  const char *start_error, AheadRun *runs)
{
	int			want = Min(schedlock_runs_per_commit - 1, WORKER_BATCH_SET);
	TimestampTz stop = TimestampTzPlusMilliseconds(start,
												   -WORKER_AHEAD_MARGIN_MS);
	ClaimedJob *jobs;
	int			k;
	int			n = 0;

	if (want <= 0 || !schedlock_store_caps()->run_sets)
		return 0;
	jobs = MemoryContextAlloc(schedlock_run_cxt, sizeof(ClaimedJob) * want);
	schedlock_dispatch_blame(0);
	k = schedlock_claim_jobs(SCHEDLOCK_CLAIM_ATOMIC, role, pos, start,
							 jobs, want, schedlock_run_cxt);
	for (int i = 0; i < k && GetCurrentTimestamp() < stop; i++)
	{
		AheadRun   *r = &runs[n];

		r->job = jobs[i];
		schedlock_dispatch_blame(r->job.job_id);
		schedlock_plan_claim(&r->job, start, &r->plan, schedlock_run_cxt);
		(void) schedlock_settle_plan(&r->job, &r->plan, start, false);
		if (r->plan.kind != PLAN_RUN)
			continue;
		r->run_id = schedlock_record_run(&r->job, &r->plan, SCHEDLOCK_RUN_RUNNING, start,
										 0, false);
		if (r->run_id == 0)
			continue;
		r->error = schedlock_job_error(&r->job, &r->plan, start_error);
		r->result_status = MemoryContextAlloc(schedlock_run_cxt,
											  SCHEDLOCK_RESULT_STATUS_LEN);
		r->notices = NULL;
		n++;
	}
	schedlock_dispatch_blame(0);
	return n;
}

/*
 * schedlock_run_ahead
 *		schedlock_run_atomic for an atomic job claimed before its instant
 *		start with n more (schedlock_claim_ahead): publish them all as this
 *		backend's, commit their claims, and in a transaction begun on the
 *		instant run their commands one after the other, each in a
 *		subtransaction, as the role; then record their outcomes (in one
 *		statement: the runs' rows and the jobs' statistics).  In a
 *		transaction, in bookkeeping; the caller goes on in the new
 *		transaction, commits it and then clears what was published
 *		(schedlock_set_ahead).
 */
static void
schedlock_run_ahead(ClaimedJob *job, ClaimPlan *plan, int64 run_id, TimestampTz start,
					ErrorData *error, AheadRun *runs, int n)
{
	char		result_status[SCHEDLOCK_RESULT_STATUS_LEN];
	char	   *notices;
	int64		ids[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	int64		run_ids[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	SchedlockEndedRun ended[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	bool		skipped[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	ClaimedJob *ask_job[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	int64		ask_run[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	int			ask_of[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	bool		ask_skipped[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	int			m;

	Assert(n + 1 <= SCHEDLOCK_MAX_RUNS_PER_COMMIT);
	ids[0] = job->job_id;
	for (int i = 0; i < n; i++)
		ids[i + 1] = runs[i].job.job_id;
	/* their runs, committed as running, are not taken for lost ones */
	schedlock_set_ahead(schedlock_my_slot, ids, n + 1);
	schedlock_commit_early_claim();
	if (start > GetCurrentTimestamp())
		schedlock_wave_join(start);
	schedlock_wait_until(start);
	schedlock_worker_begin_tx("schedlock: running jobs claimed ahead");

	/*
	 * The runs whose job was unscheduled or disabled since do not start (one
	 * whose role check failed is recorded failed all the same).
	 */
	memset(skipped, 0, sizeof(skipped));
	m = 0;
	for (int i = 0; i <= n; i++)
	{
		if ((i == 0 ? error : runs[i - 1].error) != NULL)
			continue;
		ask_job[m] = i == 0 ? job : &runs[i - 1].job;
		ask_run[m] = i == 0 ? run_id : runs[i - 1].run_id;
		ask_of[m++] = i;
	}
	if (m > 0 && schedlock_skip_unscheduled(ask_job, ask_run, m, ask_skipped) > 0)
	{
		for (int a = 0; a < m; a++)
			skipped[ask_of[a]] = ask_skipped[a];
	}

	m = 0;
	if (!skipped[0])
	{
		schedlock_dispatch_blame(job->job_id);
		ended[0].started_at = GetCurrentTimestamp();
		schedlock_run_in_subxact(job, plan, run_id, &error, result_status, &notices);
		ended[0].job = job;
		ended[0].plan = plan;
		ended[0].finished_at = GetCurrentTimestamp();
		ended[0].error = error;
		ended[0].result_status = result_status;
		ended[0].notices = notices;
		run_ids[0] = run_id;
		m = 1;
	}
	for (int i = 0; i < n; i++)
	{
		AheadRun   *r = &runs[i];
		SchedlockEndedRun *e = &ended[m];

		if (skipped[i + 1])
			continue;
		schedlock_dispatch_blame(r->job.job_id);
		schedlock_set_running_job(r->job.job_id, &r->plan, 0);
		e->started_at = GetCurrentTimestamp();
		schedlock_run_in_subxact(&r->job, &r->plan, r->run_id, &r->error,
								 r->result_status, &r->notices);
		e->job = &r->job;
		e->plan = &r->plan;
		e->finished_at = GetCurrentTimestamp();
		e->error = r->error;
		e->result_status = r->result_status;
		e->notices = r->notices;
		run_ids[m] = r->run_id;
		m++;
	}
	/* the others due at this instant start before these runs' bookkeeping */
	schedlock_wave_started();
	schedlock_wave_wait_for_others();
	if (m == 0)
		return;

	/*
	 * Their outcomes, in one statement; when that fails, one at a time, each
	 * charged to its job.
	 */
	if (record_set(schedlock_record_outcomes, ended, run_ids, m))
		return;
	for (int i = 0; i < m; i++)
	{
		schedlock_dispatch_blame(ended[i].job->job_id);
		schedlock_record_outcome(ended[i].job, ended[i].plan, run_ids[i],
								 ended[i].error, ended[i].result_status,
								 ended[i].notices);
	}
}

/*
 * ended_runs_by_set
 *		schedlock_record_ended_runs in record_set's shape (deferred runs
 *		take their ids from their plans).
 */
static bool
ended_runs_by_set(SchedlockEndedRun *runs, const int64 *run_ids, int n)
{
	return schedlock_record_ended_runs(runs, n);
}

/*
 * record_ended_runs
 *		Record the n deferred runs of a set that have ended (see
 *		schedlock_dispatch_batch) in one statement, in a subtransaction;
 *		when that cannot record them all (schedlock_record_ended_runs),
 *		roll it back and record them one at a time, each charged to its
 *		job, as a batch of single claims would have.
 */
static void
record_ended_runs(SchedlockEndedRun *runs, int n)
{
	if (n == 0 || record_set(ended_runs_by_set, runs, NULL, n))
		return;
	for (int i = 0; i < n; i++)
	{
		schedlock_dispatch_blame(runs[i].job->job_id);
		(void) schedlock_record_ended_run(runs[i].job, runs[i].plan,
										  runs[i].started_at, runs[i].error,
										  runs[i].result_status,
										  runs[i].notices);
	}
}

/*
 * schedlock_dispatch_batch
 *		After n atomic runs in the current transaction (see dispatch_one),
 *		claim and run more of the role's atomic SQL jobs due when the
 *		transaction began, in it, until schedlock.runs_per_commit
 *		runs have shared it, WORKER_BATCH_MS have passed since it began, or
 *		none is left; the caller commits them all.  Each job's command runs
 *		in a subtransaction of its own (a failing one rolls back alone and
 *		is recorded failed), and each slot is still run once: a run counts
 *		only if the batch commits, and one that does not is claimed again.
 *
 * The jobs are taken a set at a time (WORKER_BATCH_SET): one statement
 * claims the set, one asks which of its runs may be deferred (no run in
 * progress, none of the slot's attempt), and once the set's commands have
 * run one records those runs and advances their jobs.  A claimed job whose
 * run cannot be deferred (a run in progress, a queued run_job() call,
 * record_runs = failures) is handled the general way in its place in the
 * set, and ends the batch after the set.
 */
static void
schedlock_dispatch_batch(Oid role, ClaimPosition *pos, const char *start_error, int n)
{
	TimestampTz began = GetCurrentTransactionStartTimestamp();
	bool		general = false;

	if (!schedlock_store_caps()->run_sets)
		return;
	while (!general && n < schedlock_runs_per_commit &&
		   !TimestampDifferenceExceeds(began, GetCurrentTimestamp(),
									   WORKER_BATCH_MS))
	{
		int			want = Min(schedlock_runs_per_commit - n, WORKER_BATCH_SET);
		ClaimedJob *jobs = palloc(sizeof(ClaimedJob) * want);
		ClaimPlan  *plans = palloc(sizeof(ClaimPlan) * want);
		int64	   *ask_job = palloc(sizeof(int64) * want);
		TimestampTz *ask_slot = palloc(sizeof(TimestampTz) * want);
		int32	   *ask_attempt = palloc(sizeof(int32) * want);
		int		   *ask_of = palloc(sizeof(int) * want);
		int64	   *run_ids = palloc0(sizeof(int64) * want);
		int64	   *answers = palloc(sizeof(int64) * want);
		SchedlockEndedRun *ended = palloc(sizeof(SchedlockEndedRun) * want);
		int			nask = 0;
		int			nended = 0;
		int			k;

		CHECK_FOR_INTERRUPTS();
		schedlock_dispatch_blame(0);
		k = schedlock_claim_jobs(SCHEDLOCK_CLAIM_ATOMIC, role, pos, began,
								 jobs, want, schedlock_run_cxt);
		if (k == 0)
			return;
		n += k;

		/* the plans, and which runs may be deferred: one question for all */
		for (int i = 0; i < k; i++)
		{
			schedlock_dispatch_blame(jobs[i].job_id);
			schedlock_plan_claim(&jobs[i], began, &plans[i], schedlock_run_cxt);
			if (!schedlock_plan_may_defer(&jobs[i], &plans[i]))
				continue;
			ask_job[nask] = jobs[i].job_id;
			ask_slot[nask] = plans[i].scheduled_for;
			ask_attempt[nask] = plans[i].attempt;
			ask_of[nask++] = i;
		}
		schedlock_dispatch_blame(0);
		if (nask > 0)
			schedlock_runs_may_defer(ask_job, ask_slot, ask_attempt, nask,
									 answers);
		for (int a = 0; a < nask; a++)
			run_ids[ask_of[a]] = answers[a];

		for (int i = 0; i < k; i++)
		{
			ClaimedJob *job = &jobs[i];
			ClaimPlan  *plan = &plans[i];
			SchedlockEndedRun *r;
			char	   *result_status;
			char	   *notices;
			ErrorData  *error;
			TimestampTz start;

			schedlock_dispatch_blame(job->job_id);
			if (run_ids[i] == 0)
			{
				int64		run_id;

				/* the general way, in this transaction */
				start = schedlock_settle_plan(job, plan, began, false);
				if (plan->kind != PLAN_RUN)
					continue;
				general = true;
				run_id = schedlock_record_run(job, plan, SCHEDLOCK_RUN_RUNNING, start, 0,
											  false);
				if (run_id == 0)
					continue;
				schedlock_set_running_job(job->job_id, plan, start);
				schedlock_run_atomic(job, plan, run_id, start,
									 schedlock_job_error(job, plan, start_error), false);
				schedlock_set_running_job(0, NULL, 0);
				continue;
			}
			start = schedlock_defer_plan(plan, run_ids[i], began);
			error = schedlock_job_error(job, plan, start_error);
			result_status = MemoryContextAlloc(schedlock_run_cxt,
											   SCHEDLOCK_RESULT_STATUS_LEN);
			schedlock_set_running_job(job->job_id, plan, start);
			schedlock_wait_until(start);
			schedlock_run_in_subxact(job, plan, plan->run_id, &error, result_status,
									 &notices);
			schedlock_set_running_job(0, NULL, 0);
			r = &ended[nended++];
			r->job = job;
			r->plan = plan;
			r->started_at = start;
			r->finished_at = GetCurrentTimestamp();
			r->error = error;
			r->result_status = result_status;
			r->notices = notices;
		}
		schedlock_wave_started();
		schedlock_wave_wait_for_others();
		record_ended_runs(ended, nended);
	}
}

/*
 * schedlock_run_sharing_commit
 *		Run the claimed job's command in the current transaction (atomic, or
 *		one whose role check failed: run_id is its run, written as running
 *		or deferred), with the runs that share its commit under
 *		schedlock.runs_per_commit: the role's further atomic jobs due at
 *		its instant when it was claimed ahead of it (claimed now, run with
 *		it on the instant), then the batch of atomic jobs due when the
 *		transaction began.  Returns how many runs were claimed ahead: the
 *		caller commits and then clears them (schedlock_set_ahead).
 */
int
schedlock_run_sharing_commit(Oid role, ClaimPosition *pos, ClaimedJob *job,
							 ClaimPlan *plan, int64 run_id, TimestampTz start,
							 ErrorData *error, const char *start_error)
{
	AheadRun   *ahead = NULL;
	int			nahead = 0;

	/*
	 * Claimed before its instant: the role's further atomic jobs due then are
	 * claimed now too, and run with it on the instant.  (A deferred run was
	 * due when its transaction began.)
	 */
	if (job->atomic && error == NULL && start_error == NULL &&
		schedlock_runs_per_commit > 1 &&
		schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS &&
		plan->due_at > GetCurrentTransactionStartTimestamp())
	{
		/* kept past the claim's commit */
		ahead = MemoryContextAlloc(schedlock_run_cxt,
								   sizeof(AheadRun) *
								   (schedlock_runs_per_commit - 1));
		nahead = schedlock_claim_ahead(role, pos, start, start_error, ahead);
	}
	if (nahead > 0)
		schedlock_run_ahead(job, plan, run_id, start, error, ahead, nahead);
	else
		schedlock_run_atomic(job, plan, run_id, start, error, false);
	schedlock_set_running_job(0, NULL, 0);
	schedlock_dispatch_batch(role, pos, start_error, 1 + nahead);
	return nahead;
}
