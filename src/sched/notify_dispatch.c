/*-------------------------------------------------------------------------
 *
 * notify_dispatch.c
 *	  A job backend's NOTIFY jobs: once the first due one is claimed, the
 *	  role's others due by the same instant are claimed and published a
 *	  set at a time, and every notification goes out with the commit.
 *
 * A set is claimed in one statement (schedlock_claim_jobs), asked
 * in one which of its jobs have a run in progress, and published in one
 * (schedlock_publish_notify_runs); a job with anything else to do takes
 * the one-job way in the same transaction.  When a set's statement fails,
 * the error aborts the transaction, charged to no job, and the backend
 * publishes one job at a time until a transaction of NOTIFY runs commits,
 * so that the error is charged to its job (publish_set).
 *
 * IDENTIFICATION
 *	  src/sched/notify_dispatch.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/elog.h"
#include "utils/timestamp.h"

#include "claim_plan.h"
#include "job_roles.h"
#include "notify_dispatch.h"
#include "quarantine.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"

/* NOTIFY jobs claimed and notified in one transaction, at most. */
#define WORKER_NOTIFY_BATCH	1000

/* NOTIFY jobs claimed in one statement and published in one. */
#define WORKER_NOTIFY_SET	50

/*
 * The NOTIFY runs of a role due at one instant are made ready before it, in
 * a transaction that commits on the instant (see dispatch_notify_batch), so
 * that they all go out then.  A job backend whose next instant has njobs
 * NOTIFY jobs wakes schedlock_notify_lead_ms(njobs) before it: its usual
 * claim lead, and WORKER_NOTIFY_PREP_US for each of them (somewhat more
 * than one backend takes to make a NOTIFY run ready; docs/benchmarks.md
 * has the measurement), or what it took lately when that was longer (a
 * loaded machine; notify_prep_us, measured over passes of at least
 * WORKER_NOTIFY_PREP_SAMPLE runs), at most WORKER_NOTIFY_LEAD_MAX_MS.  One transaction makes ready at most
 * WORKER_NOTIFY_EARLY_MAX, as many as that lead allows for; the rest go out
 * after the instant, in transactions of WORKER_NOTIFY_BATCH.
 */
#define WORKER_NOTIFY_PREP_US		40
#define WORKER_NOTIFY_PREP_SAMPLE	200
#define WORKER_NOTIFY_LEAD_MAX_MS	1000
#define WORKER_NOTIFY_EARLY_MAX		25000

/*
 * A set of NOTIFY runs could not be published in one statement: publish
 * one job at a time until a transaction of NOTIFY runs commits (see
 * publish_set).
 */
static bool notify_sets_failed = false;

/*
 * notify_deadline
 *		Until when a NOTIFY run published at now may be claimed: its job's
 *		timeout, or SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT.
 */
static TimestampTz
notify_deadline(ClaimedJob *job, TimestampTz now)
{
	return TimestampTzPlusMilliseconds(now, job->timeout_ms > 0 ?
									   job->timeout_ms :
									   SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT * 1000);
}

/*
 * notify_job
 *		Record a NOTIFY job's run as pending, with its claim deadline, and
 *		queue the notification (sent when the transaction commits); the
 *		database's housekeeping closes the run if nobody claims it by then.
 *		error: the role check's verdict; when set, the run fails and no
 *		notification goes out.
 */
static void
notify_job(ClaimedJob *job, ClaimPlan *plan, TimestampTz now,
		   ErrorData *error, MemoryContext cxt)
{
	TimestampTz deadline = notify_deadline(job, now);
	int64		run_id;

	if (error == NULL)
		error = schedlock_check_job_role(job->owner, job->run_as, cxt);
	/* a job whose role cannot log in is not notified: its run fails */
	if (error != NULL)
	{
		run_id = schedlock_record_run(job, plan, SCHEDLOCK_RUN_RUNNING, now, 0, false);
		if (run_id != 0)
			schedlock_record_outcome(job, plan, run_id, error, NULL, NULL);
		return;
	}
	run_id = schedlock_record_run(job, plan, SCHEDLOCK_RUN_PENDING, now, deadline, true);
	if (run_id != 0)
	{
		schedlock_notify_run(job, plan, run_id);
		schedlock_housekeep_by(MyDatabaseId, deadline);
	}
}

/*
 * publish_set
 *		Publish the planned NOTIFY runs of set[] in one statement
 *		(schedlock_publish_notify_runs).  When that fails for a reason that
 *		may lie with one of the jobs (not a cancel, deadlock, lack of
 *		resources: see schedlock_error_is_transient), the error aborts the
 *		transaction as any error of the bookkeeping does, charged to no job,
 *		and this backend publishes one job at a time (notify_sets_failed)
 *		until a transaction of NOTIFY runs commits: an error there is
 *		charged to the job that caused it.  Not in a subtransaction: after
 *		rolling back the set's UPDATE of rows this transaction holds locked,
 *		updating them again trips an assertion of heap_update (seen on
 *		PostgreSQL 15 with assertions, when the new version needs another
 *		page).
 */
static void
publish_set(ClaimedJob *set, ClaimPlan *plans, int n, TimestampTz start)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	TimestampTz earliest = 0;
	TimestampTz *deadlines = palloc(sizeof(TimestampTz) * n);

	/* an error of the whole set is no single job's */
	schedlock_dispatch_blame(0);
	for (int i = 0; i < n; i++)
	{
		deadlines[i] = notify_deadline(&set[i], start);
		earliest = (i == 0) ? deadlines[0] : Min(earliest, deadlines[i]);
	}
	PG_TRY();
	{
		schedlock_publish_notify_runs(set, plans, deadlines, n, start, start);
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(oldcxt);
		error = CopyErrorData();
		if (!schedlock_error_is_transient(error->sqlerrcode))
		{
			notify_sets_failed = true;
			ereport(LOG,
					(errmsg("schedlock: could not publish %d NOTIFY runs in one statement, publishing them one at a time next",
							n),
					 errdetail_internal("%s", error->message)));
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* the housekeeping closes the runs nobody claims by their deadline */
	schedlock_housekeep_by(MyDatabaseId, earliest);
}

/*
 * note_prep_time
 *		A pass that began at began made n NOTIFY runs ready: the time one
 *		took is a sample of notify_prep_us (schedlock_slow_sample).
 */
static void
note_prep_time(TimestampTz began, int n)
{
	long		us = (long) ((GetCurrentTimestamp() - began) / n);

	schedlock_shared->notify_prep_us =
		schedlock_slow_sample(schedlock_shared->notify_prep_us,
							  (int) Min(us, 1000000L));
}

/*
 * dispatch_notify_batch
 *		In the transaction of a claimed NOTIFY job (see dispatch_one): claim
 *		up to max more of the role's NOTIFY jobs due by start, from *pos,
 *		WORKER_NOTIFY_SET at a time, and publish their runs, a set of them
 *		in one statement (publish_set).  A job with anything but its plain
 *		next run to publish (a skipped slot, a queued run_job() call, a run
 *		still in progress, a role that may not log in) is handled alone,
 *		the general way.  Before the instant (start) arrives, it goes on
 *		past max, up to WORKER_NOTIFY_EARLY_MAX: everything made ready
 *		before the instant goes out with the commit at the instant (the
 *		caller waits for it), instead of after it in later transactions.
 *		Tables of release 1.2 (the claim statement reads their columns).
 */
static void
dispatch_notify_batch(Oid role, ClaimPosition *pos, TimestampTz start,
					  int max, MemoryContext cxt)
{
	ClaimedJob *jobs = palloc(sizeof(ClaimedJob) * WORKER_NOTIFY_SET);
	ClaimPlan  *plans = palloc(sizeof(ClaimPlan) * WORKER_NOTIFY_SET);
	ClaimedJob *set = palloc(sizeof(ClaimedJob) * WORKER_NOTIFY_SET);
	ClaimPlan  *set_plans = palloc(sizeof(ClaimPlan) * WORKER_NOTIFY_SET);
	bool		open[WORKER_NOTIFY_SET];
	int			claimed = 0;
	TimestampTz began = GetCurrentTimestamp();

	for (;;)
	{
		int			room = max - claimed;
		int			want;
		int			k;
		int			nset = 0;

		/* before the instant, room for all that can be made ready by then */
		if (GetCurrentTimestamp() < start)
			room = WORKER_NOTIFY_EARLY_MAX - claimed;
		if (room <= 0)
			break;
		want = Min(WORKER_NOTIFY_SET, room);

		CHECK_FOR_INTERRUPTS();
		schedlock_dispatch_blame(0);
		k = schedlock_claim_jobs(SCHEDLOCK_CLAIM_NOTIFY, role, pos, start,
								 jobs, want, cxt);
		if (k > 0)
			schedlock_open_runs_among(jobs, k, open);
		claimed += k;
		for (int i = 0; i < k; i++)
		{
			ErrorData  *error;

			schedlock_dispatch_blame(jobs[i].job_id);
			schedlock_plan_claim(&jobs[i], start, &plans[i], cxt);
			/* the role check of each job (notify_job does it alone) */
			error = schedlock_check_job_role(jobs[i].owner, jobs[i].run_as,
											 cxt);
			if (error == NULL && plans[i].kind == PLAN_RUN &&
				plans[i].manual_run_id == 0 && !open[i])
			{
				set[nset] = jobs[i];
				set_plans[nset++] = plans[i];
				continue;
			}
			(void) schedlock_settle_plan(&jobs[i], &plans[i], start, false);
			if (plans[i].kind == PLAN_RUN)
				notify_job(&jobs[i], &plans[i], start, error, cxt);
		}
		if (nset > 0)
			publish_set(set, set_plans, nset, start);
		if (k < want)
			break;
	}
	schedlock_dispatch_blame(0);
	if (claimed >= WORKER_NOTIFY_PREP_SAMPLE)
		note_prep_time(began, claimed);
}

/*
 * claim_notify_job
 *		Claim the role's next NOTIFY job due by start after position *pos
 *		into *job (its strings in cxt), blamed on it should the claim fail;
 *		false when there is none.
 */
static bool
claim_notify_job(Oid role, ClaimPosition *pos, TimestampTz start,
				 ClaimedJob *job, MemoryContext cxt)
{
	schedlock_dispatch_blame(0);
	if (!schedlock_claim_job(SCHEDLOCK_CLAIM_NOTIFY, role, pos, start, job,
							 cxt))
		return false;
	schedlock_dispatch_blame(job->job_id);
	return true;
}

/*
 * schedlock_dispatch_notify
 *		The rest of a claim of a NOTIFY job *job (planned *plan to run at
 *		start, error the reason it cannot, or NULL): notify it, then the
 *		role's further NOTIFY jobs due by start, after position *pos (a set
 *		at a time, or one at a time on the tables of release 1.1 and after a
 *		set failed).  Memory for the claims is cxt.  The caller commits at
 *		start, then calls schedlock_notify_committed.
 */
void
schedlock_dispatch_notify(Oid role, ClaimPosition *pos, ClaimedJob *job,
						  ClaimPlan *plan, TimestampTz start, ErrorData *error,
						  MemoryContext cxt)
{
	ClaimPosition batch = *pos;
	int			n = 1;

	/*
	 * The batch takes only jobs due by the first one's instant: the
	 * notifications all go out at commit, and none may go out early.
	 */
	notify_job(job, plan, start, error, cxt);
	if (error == NULL && schedlock_store_caps()->run_sets &&
		!notify_sets_failed)
		dispatch_notify_batch(role, &batch, start, WORKER_NOTIFY_BATCH - n,
							  cxt);
	else
	{
		/* the tables of release 1.1, or after a set failed */
		while (error == NULL && n++ < WORKER_NOTIFY_BATCH &&
			   claim_notify_job(role, &batch, start, job, cxt))
		{
			(void) schedlock_settle_claim(job, plan, start, false, cxt);
			if (plan->kind == PLAN_RUN)
				notify_job(job, plan, start, NULL, cxt);
		}
	}
}

/*
 * schedlock_notify_lead_ms
 *		How long before an instant at which njobs NOTIFY jobs of its role
 *		fall due a job backend claims them (see WORKER_NOTIFY_PREP_US); 0
 *		when there are none.
 */
long
schedlock_notify_lead_ms(int njobs)
{
	long		prep_us = Max((long) WORKER_NOTIFY_PREP_US,
							  (long) schedlock_shared->notify_prep_us);

	if (njobs <= 0)
		return 0;
	return Min((long) njobs * prep_us / 1000,
			   (long) WORKER_NOTIFY_LEAD_MAX_MS);
}

/*
 * schedlock_notify_committed
 *		A transaction of NOTIFY runs has committed: the sets may be tried
 *		again (see publish_set).
 */
void
schedlock_notify_committed(void)
{
	notify_sets_failed = false;
}
