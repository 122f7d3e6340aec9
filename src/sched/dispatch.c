/*-------------------------------------------------------------------------
 *
 * dispatch.c
 *	  A pass over a role's due jobs, in a job backend (worker.c) or, for a
 *	  role whose backend could not start, in a housekeeper: one claimed job
 *	  at a time, claim, settle, run, record (dispatch_one).  The run's
 *	  steps are dispatch_run.c's; an atomic job's run takes the runs that
 *	  share its commit along (schedlock.runs_per_commit), at one entry
 *	  point of dispatch_sets.c; a NOTIFY job's are notify_dispatch.c's.
 *
 * How it works, at length: docs/internals.md, section
 * "A job backend's pass".
 *
 * IDENTIFICATION
 *	  src/sched/dispatch.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "claim_plan.h"
#include "dispatch.h"
#include "dispatch_int.h"
#include "notify_dispatch.h"
#include "quarantine.h"
#include "run_command.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"

/* Longest run of claims in one pass before looking at signals again. */
#define WORKER_MAX_CLAIMS_PER_PASS	1000

/*
 * claim_job
 *		schedlock_claim_job in schedlock_run_cxt; an error in the bookkeeping from a
 *		successful claim on is charged to the claimed job (quarantine.c),
 *		one before it to none.
 */
static bool
claim_job(SchedlockClaimKind kind, Oid role, ClaimPosition *pos,
		  TimestampTz now, ClaimedJob *job)
{
	schedlock_dispatch_blame(0);
	if (!schedlock_claim_job(kind, role, pos, now, job, schedlock_run_cxt))
		return false;
	schedlock_dispatch_blame(job->job_id);
	return true;
}

/*
 * dispatch_one
 *		Claim and handle one due job of the role (of any role whose queue
 *		the housekeeper fails: fail_role) after position *pos, and move
 *		*pos to it.  Returns false when none was due there.  Called outside
 *		a transaction, in schedlock_run_cxt.
 *
 * A NOTIFY job runs no command, so the role's NOTIFY jobs due with it are
 * claimed and notified in the same transaction, up to WORKER_NOTIFY_BATCH
 * of them: one commit instead of one each, and (dispatch_notify_batch) one
 * claim statement and one publishing statement for WORKER_NOTIFY_SET of
 * them.  They still go out only if the
 * claims commit.  That scan moves a position of its own, so the SQL jobs
 * it steps over are still next for this backend.
 *
 * The housekeeper calls it for a role whose backend could not start
 * (start_error): every due run then fails with the role check's error, or
 * that one, and no command runs and no notification goes out.
 */
static bool
dispatch_one(Oid role, ClaimPosition *pos, const char *start_error)
{
	TimestampTz horizon;
	TimestampTz start;
	ClaimedJob	job;
	ClaimPlan	plan;
	int64		run_id;
	ErrorData  *error;
	bool		toplevel;

	schedlock_worker_begin_tx("schedlock: claiming due jobs");
	horizon = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										  SCHEDLOCK_CLAIM_LEAD_MS);
	if (!claim_job(SCHEDLOCK_CLAIM_ANY, role, pos, horizon, &job))
	{
		/* NOTIFY jobs of an instant further ahead are made ready now */
		horizon = TimestampTzPlusMilliseconds(horizon, schedlock_notify_lead);
		if (schedlock_notify_lead <= 0 ||
			!claim_job(SCHEDLOCK_CLAIM_NOTIFY, role, pos, horizon, &job))
		{
			schedlock_worker_end_tx();
			return false;
		}
	}
	start = schedlock_settle_claim(&job, &plan, horizon, true, schedlock_run_cxt);
	if (plan.kind != PLAN_RUN)
	{
		schedlock_worker_end_tx();
		return true;
	}

	/* a job whose role cannot log in does not run: its run fails */
	error = schedlock_job_error(&job, &plan, start_error);

	if (job.channel != NULL)
	{
		schedlock_dispatch_notify(role, pos, &job, &plan, start, error,
								  schedlock_run_cxt);
		schedlock_wait_until(start);
		schedlock_worker_end_tx();
		schedlock_notify_committed();
		return true;
	}

	/*
	 * Its run: written as running now (started_at is the instant the command
	 * starts, after schedlock_wait_until), or, deferred, once it has ended.
	 */
	run_id = plan.deferred ? plan.run_id :
		schedlock_record_run(&job, &plan, SCHEDLOCK_RUN_RUNNING, start, 0, false);
	if (run_id == 0)
	{
		schedlock_worker_end_tx();
		return true;
	}
	schedlock_set_running_job(job.job_id, &plan, start);
	toplevel = !job.atomic && error == NULL;
	if (toplevel)
	{
		/* the claim commits first, the command runs at top level */
		schedlock_worker_end_tx();
		schedlock_run_toplevel(&job, &plan, run_id, start, error);
		schedlock_set_running_job(0, NULL, 0);
	}
	else
	{
		/*
		 * In this transaction, with the runs that share its commit (which
		 * clears the running job when they have run).
		 */
		int			nahead = schedlock_run_sharing_commit(role, pos, &job,
														  &plan, run_id,
														  start, error,
														  start_error);

		schedlock_worker_end_tx();
		if (nahead > 0)
			schedlock_set_ahead(schedlock_my_slot, NULL, 0);
	}
	if (schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS)
		schedlock_exec_after_run(toplevel);
	return true;
}

/*
 * schedlock_dispatch_due
 *		Claim and handle the role's due jobs until none is left, or
 *		WORKER_MAX_CLAIMS_PER_PASS; at the second claim, tell the launcher
 *		that the queue has a backlog (it may add a backend).  Returns how
 *		many it claimed, and in *more whether it stopped early.
 */
int
schedlock_dispatch_due(Oid role, const char *start_error, bool *more)
{
	ClaimPosition pos = {DT_NOBEGIN, 0};
	int			claims = 0;

	*more = false;
	for (;;)
	{
		bool		claimed = dispatch_one(role, &pos, start_error);

		if (!claimed && pos.next_run_at != DT_NOBEGIN)
		{
			/* end of the range: one scan from its start */
			pos.next_run_at = DT_NOBEGIN;
			pos.job_id = 0;
			claimed = dispatch_one(role, &pos, start_error);
		}
		if (!claimed)
			break;
		MemoryContextReset(schedlock_run_cxt);
		if (++claims == 2 && schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS)
		{
			bool		again;

			/* more than one due: the launcher may add a backend */
			if (schedlock_publish_due(schedlock_my_slot, GetCurrentTimestamp(),
									  -1, -1, true, 0, &again))
				break;
		}
		if (claims >= WORKER_MAX_CLAIMS_PER_PASS)
		{
			*more = true;
			break;
		}
		/* the launcher asked this backend to make room: leave now */
		if (schedlock_my_slot->yield)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	schedlock_dispatch_blame(0);
	return claims;
}
