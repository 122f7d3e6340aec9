/*-------------------------------------------------------------------------
 *
 * claim_plan.c
 *	  What becomes of a claimed job: the plan the scheduling rules make for
 *	  it (a queued run_job() call, a due retry, or its next slot under the
 *	  misfire policy), and the plan settled: the job advanced, a run in
 *	  progress turned into an overlap, a skipped slot recorded.
 *
 * The job backend (dispatch.c) claims the job and runs what the plan says;
 * the rules are rules.c's, the statements src/sched/store's.
 *
 * IDENTIFICATION
 *	  src/sched/claim_plan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "claim_plan.h"
#include "cron/cron_pg.h"
#include "job_def.h"
#include "rules.h"
#include "sched/store/jobstore.h"

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
 *		misfire policy, and advance next_slot (schedlock_rule_due_slot);
 *		a message for the run goes into cxt.
 */
static void
plan_slot(ClaimedJob *job, TimestampTz now, ClaimPlan *plan, MemoryContext cxt)
{
	JobSchedule js;
	SchedlockMisfire misfire;
	SchedlockSlotPlan slot;

	plan->scheduled_for = job->next_slot;
	plan->attempt = 1;

	/* a one-off job (job_api.c): its one slot runs, however late, and it ends */
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
		plan->message = MemoryContextStrdup(cxt, slot.message);
	job->has_next_slot = slot.has_next;
	if (slot.has_next)
		job->next_slot = slot.next;
}

/*
 * schedlock_plan_claim
 *		Decide what to do with the claimed job (schedlock_rule_claim_serves:
 *		a queued run_job() call first, then a due retry, then the due slot).
 */
void
schedlock_plan_claim(ClaimedJob *job, TimestampTz now, ClaimPlan *plan,
					 MemoryContext cxt)
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
		plan_slot(job, now, plan, cxt);
		plan->due_at = plan->scheduled_for;
	}
}

/*
 * schedlock_plan_may_defer
 *		Whether the planned run may be deferred as far as the job and its
 *		plan tell; the store is asked the rest (schedlock_run_may_defer).
 *
 * An atomic SQL job due already when the claiming transaction began runs in
 * it: nobody sees the run before it has ended, so its row is written once,
 * as it ended, together with the job's advanced state
 * (schedlock_record_ended_run), when nothing stands in the way (a run in
 * progress, one lost by a backend, the slot's row); and not at all when it
 * succeeded and the job keeps only its failures (record_runs = failures).
 * A queued run_job() call has its row already: it takes the general way.
 */
bool
schedlock_plan_may_defer(ClaimedJob *job, ClaimPlan *plan)
{
	return plan->kind == PLAN_RUN && plan->manual_run_id == 0 &&
		plan->due_at <= GetCurrentTransactionStartTimestamp() &&
		job->command != NULL && job->atomic &&
		schedlock_store_caps()->run_sets;
}

/*
 * schedlock_defer_plan
 *		Defer the planned run, whose id run_id the store handed out: its
 *		row and the job's state as of horizon are written once it has
 *		ended.  Returns when it is to start.
 */
TimestampTz
schedlock_defer_plan(ClaimPlan *plan, int64 run_id, TimestampTz horizon)
{
	Assert(run_id != 0);
	plan->run_id = run_id;
	plan->deferred = true;
	plan->horizon = horizon;
	return Max(GetCurrentTimestamp(), plan->due_at);
}

/*
 * schedlock_settle_plan
 *		The part of settle_claim after plan_claim, for a job planned
 *		already (see dispatch_notify_batch, schedlock_dispatch_batch).  may_defer:
 *		the run may be deferred (schedlock_plan_may_defer) if the store
 *		agrees; false when it was asked already, for a set of jobs.
 */
TimestampTz
schedlock_settle_plan(ClaimedJob *job, ClaimPlan *plan, TimestampTz horizon,
					  bool may_defer)
{
	TimestampTz now;
	int64		run_id;

	if (may_defer && schedlock_plan_may_defer(job, plan) &&
		(run_id = schedlock_run_may_defer(job, plan->scheduled_for,
										  plan->attempt)) != 0)
		return schedlock_defer_plan(plan, run_id, horizon);
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

	/*
	 * A skipped slot is no failure: not recorded when only those are (a
	 * queued run_job() call it serves is forgotten instead).
	 */
	if (plan->kind == PLAN_SKIP && !job->failures_only)
		(void) schedlock_record_run(job, plan, SCHEDLOCK_RUN_SKIPPED, now, 0, false);
	else if (plan->kind == PLAN_SKIP && plan->manual_run_id != 0)
		schedlock_forget_run(plan->manual_run_id);
	return Max(now, plan->due_at);
}

/*
 * schedlock_settle_claim
 *		Decide what to do with a job claimed as of horizon and advance it.
 *		A slot that is not to run (misfire skip, or overlap with a run in
 *		progress) is recorded as skipped here; plan->kind says whether to
 *		run.  Returns when the run is to start: now, or the instant it falls
 *		due (its slot, or its retry time) when that lies ahead, by at most
 *		WORKER_CLAIM_LEAD_MS.
 */
TimestampTz
schedlock_settle_claim(ClaimedJob *job, ClaimPlan *plan, TimestampTz horizon,
					   bool may_defer, MemoryContext cxt)
{
	schedlock_plan_claim(job, horizon, plan, cxt);
	return schedlock_settle_plan(job, plan, horizon, may_defer);
}
