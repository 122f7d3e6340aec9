/*-------------------------------------------------------------------------
 *
 * rules.c
 *	  The scheduling rules, in plain C: misfire, overlap, next_run_at,
 *	  retry and backoff, and the dispatch hold before quarantine.
 *
 * Nothing here touches PostgreSQL: the callers (dispatch.c, notify_api.c, job_api.c,
 * quarantine.c) read a job's row, ask a rule, and write the answer.  Each
 * rule is written once, here; test/unit/test_rules.c checks them.
 *
 * Slots: a claimed job's due slot is the earliest slot not yet handled
 * (jobs.next_slot, at or before now).  When the slot after it is still in
 * the future the job is on time and the slot runs.  Otherwise slots were
 * missed (the server was down, dispatch was off, the workers were busy)
 * and the misfire policy decides:
 *	- run_once: the due slot runs once, as a catch-up run for all of them,
 *	  and the job goes on with its first slot after now;
 *	- skip: the due slot is recorded as skipped, and the job goes on with
 *	  its first slot after now;
 *	- run_all: every missed slot runs, one claim each, while there are at
 *	  most SCHEDLOCK_RUN_ALL_LIMIT of them; with more, the due slot is
 *	  recorded as skipped and the job goes on with the oldest of the latest
 *	  SCHEDLOCK_RUN_ALL_LIMIT (counting stops after
 *	  SCHEDLOCK_MISFIRE_MAX_ITERATIONS slots: then it goes on after now).
 * An @reboot job's slot runs and the job has no next slot.
 *
 * IDENTIFICATION
 *	  src/sched/rules.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

/*
 * schedlock_misfire_parse
 *		The misfire policy named by text (run_once, skip or run_all).  An
 *		unknown or NULL text gives false and *policy run_once: the API
 *		refuses it, and a worker that finds one in a row (written by hand)
 *		treats it as run_once.
 */
bool
schedlock_misfire_parse(const char *text, SchedlockMisfire *policy)
{
	*policy = SCHEDLOCK_MISFIRE_RUN_ONCE;
	if (text == NULL)
		return false;
	if (strcmp(text, "run_all") == 0)
		*policy = SCHEDLOCK_MISFIRE_RUN_ALL;
	else if (strcmp(text, "skip") == 0)
		*policy = SCHEDLOCK_MISFIRE_SKIP;
	else if (strcmp(text, "run_once") != 0)
		return false;
	return true;
}

/*
 * schedlock_rule_claim_serves
 *		What a worker that claimed a job at now does first: a queued
 *		run_job() call (manual_pending > 0), else the pending retry when it
 *		is due (retry_at <= now), else the next slot when it is due (slot <=
 *		now), else nothing (the job was claimed as of an instant a little
 *		ahead, or its row changed).  One claim serves one of them; the next
 *		claim the next.
 */
SchedlockClaimServes
schedlock_rule_claim_serves(int32_t manual_pending, bool has_retry,
							SchedlockTime retry_at, bool has_slot,
							SchedlockTime slot, SchedlockTime now)
{
	if (manual_pending > 0)
		return SCHEDLOCK_SERVES_RUN_JOB;
	if (has_retry && retry_at <= now)
		return SCHEDLOCK_SERVES_RETRY;
	if (has_slot && slot <= now)
		return SCHEDLOCK_SERVES_SLOT;
	return SCHEDLOCK_SERVES_NOTHING;
}

/*
 * schedlock_rule_due_slot
 *		What to do with a job's due slot (slot <= now) under its misfire
 *		policy, and which slot comes after it (see the file header).
 *		next_slot(arg, t, &n) gives the job's next slot strictly after t.
 *		reboot: the job is an @reboot job.
 */
void
schedlock_rule_due_slot(SchedlockTime slot, SchedlockTime now,
						SchedlockMisfire misfire, bool reboot,
						SchedlockNextSlotFn next_slot, const void *arg,
						SchedlockSlotPlan *plan)
{
	SchedlockTime s = slot;
	SchedlockTime n1;

	plan->action = SCHEDLOCK_SLOT_RUN;
	plan->has_next = false;
	plan->next = 0;
	plan->message[0] = '\0';

	if (reboot)
		return;
	if (!next_slot(arg, s, &n1) || n1 > now)
	{
		/* on time: the only due slot */
		plan->has_next = next_slot(arg, s, &plan->next);
		return;
	}

	/* misfire: at least two slots are due */
	if (misfire == SCHEDLOCK_MISFIRE_RUN_ALL)
	{
		SchedlockTime ring[SCHEDLOCK_RUN_ALL_LIMIT];
		int			count = 0;
		SchedlockTime t = s;
		int			iterations = 0;

		while (t <= now && iterations++ < SCHEDLOCK_MISFIRE_MAX_ITERATIONS)
		{
			ring[count % SCHEDLOCK_RUN_ALL_LIMIT] = t;
			count++;
			if (!next_slot(arg, t, &t))
				break;
		}
		plan->has_next = true;
		if (count <= SCHEDLOCK_RUN_ALL_LIMIT)
		{
			plan->next = n1;
			return;
		}
		/* too many: drop the oldest, keep the newest LIMIT slots */
		plan->action = SCHEDLOCK_SLOT_SKIP;
		snprintf(plan->message, sizeof(plan->message),
				 "misfire run_all: %d missed slots, only the latest %d are run",
				 count, SCHEDLOCK_RUN_ALL_LIMIT);
		if (iterations >= SCHEDLOCK_MISFIRE_MAX_ITERATIONS)
			plan->has_next = next_slot(arg, now, &plan->next);
		else
			plan->next = ring[count % SCHEDLOCK_RUN_ALL_LIMIT];
		return;
	}

	plan->has_next = next_slot(arg, now, &plan->next);
	if (misfire == SCHEDLOCK_MISFIRE_SKIP)
	{
		plan->action = SCHEDLOCK_SLOT_SKIP;
		snprintf(plan->message, sizeof(plan->message), "%s",
				 "missed slot skipped (misfire skip)");
	}
	else
		snprintf(plan->message, sizeof(plan->message), "%s",
				 "catch-up run for missed slots (misfire run_once)");
}

/*
 * schedlock_rule_overlap
 *		Overlap: a job's run does not start while an earlier run of the job
 *		is pending or running; the slot (or retry, or run_job() call) is
 *		recorded as skipped instead.  Returns the reason for the skipped
 *		row, or NULL when the run may start.
 */
const char *
schedlock_rule_overlap(bool previous_in_progress)
{
	if (previous_in_progress)
		return "the previous run was still in progress (overlap)";
	return NULL;
}

/*
 * schedlock_rule_next_run_at
 *		A job's next_run_at, the instant a worker next claims it: the
 *		earliest of its next slot, its pending retry, and now when run_job()
 *		calls are queued (manual_pending > 0).  False when it has none of
 *		them (next_run_at NULL: not due), and always while the job is
 *		disabled (a disabled or quarantined job has no next run; its next
 *		slot, a one-off job's instant among them, is kept apart).
 */
bool
schedlock_rule_next_run_at(bool enabled, bool has_slot, SchedlockTime slot,
						   bool has_retry, SchedlockTime retry_at,
						   int32_t manual_pending, SchedlockTime now,
						   SchedlockTime *next_run_at)
{
	bool		has = false;
	SchedlockTime t = 0;

	if (!enabled)
	{
		*next_run_at = 0;
		return false;
	}
	if (has_slot)
	{
		t = slot;
		has = true;
	}
	if (has_retry && (!has || retry_at < t))
	{
		t = retry_at;
		has = true;
	}
	if (manual_pending > 0 && (!has || now < t))
	{
		t = now;
		has = true;
	}
	*next_run_at = t;
	return has;
}

/*
 * schedlock_rule_failed_attempt
 *		The attempt a failed (or timed out, or lost) run counts as for
 *		retries: its attempt number, or 0 for a run asked for with
 *		run_job(), which is never retried.
 */
int32_t
schedlock_rule_failed_attempt(bool manual, int32_t attempt)
{
	return manual ? 0 : attempt;
}

/*
 * schedlock_rule_retry_delay
 *		The backoff after failed attempt number attempt (1 or more) of a job
 *		with the given retry_delay (seconds, as EXTRACT(epoch FROM ...)):
 *		retry_delay * 2^(attempt - 1), with retry_delay taken as at least
 *		SCHEDLOCK_MIN_RETRY_DELAY_SECS (so that retry_delay 0 makes no retry
 *		storm), the exponent as at most SCHEDLOCK_RETRY_MAX_DOUBLINGS, and
 *		the result as at most SCHEDLOCK_MAX_RETRY_DELAY_SECS (so that a row
 *		of release 1.0 with a huge retry_delay cannot overflow).  In
 *		microseconds, rounded as make_interval(secs => ...) rounds.  A NaN
 *		delay counts as the longest, as SQL's GREATEST and LEAST order it.
 */
int64_t
schedlock_rule_retry_delay(int32_t attempt, double retry_delay_secs)
{
	double		secs = retry_delay_secs;
	int			doublings = attempt - 1;

	if (doublings < 0)
		doublings = 0;
	if (doublings > SCHEDLOCK_RETRY_MAX_DOUBLINGS)
		doublings = SCHEDLOCK_RETRY_MAX_DOUBLINGS;
	if (secs < SCHEDLOCK_MIN_RETRY_DELAY_SECS)
		secs = SCHEDLOCK_MIN_RETRY_DELAY_SECS;
	secs = secs * ldexp(1.0, doublings);
	if (!(secs <= SCHEDLOCK_MAX_RETRY_DELAY_SECS))
		secs = SCHEDLOCK_MAX_RETRY_DELAY_SECS;
	return (int64_t) rint(secs * 1000000.0);
}

/*
 * schedlock_rule_retry
 *		Whether failed attempt number attempt (from
 *		schedlock_rule_failed_attempt: 0 is never retried) of a slot is
 *		retried: while attempts are left (attempt < max_attempts).  If so,
 *		*next_attempt is attempt + 1 and *retry_at is failed_at plus the
 *		backoff (schedlock_rule_retry_delay), at most the largest instant.
 */
bool
schedlock_rule_retry(int32_t attempt, int32_t max_attempts,
					 double retry_delay_secs, SchedlockTime failed_at,
					 int32_t *next_attempt, SchedlockTime *retry_at)
{
	int64_t		delay;

	if (attempt <= 0 || attempt >= max_attempts)
		return false;
	delay = schedlock_rule_retry_delay(attempt, retry_delay_secs);
	*next_attempt = attempt + 1;
	if (failed_at > INT64_MAX - delay)
		*retry_at = INT64_MAX;
	else
		*retry_at = failed_at + delay;
	return true;
}

/*
 * schedlock_rule_dispatch_breaks
 *		A job broke dispatch again: its count of dispatch errors in a row,
 *		this one included.  The count starts again at 1 when a run of the
 *		job was recorded since its previous error (a dispatch that commits
 *		always records a run); it stops at INT32_MAX.
 */
int
schedlock_rule_dispatch_breaks(bool run_since_last_error,
							   int32_t previous_errors)
{
	if (run_since_last_error)
		return 1;
	if (previous_errors == INT32_MAX)
		return INT32_MAX;
	return previous_errors + 1;
}

/*
 * schedlock_quarantine_hold_ms
 *		The rule for a job whose dispatch failed: after its breaks-th error
 *		in a row, how long to hold it back (milliseconds: 1 s, then twice as
 *		long each time), or -1 when it is to be quarantined
 *		(SCHEDLOCK_QUARANTINE_BREAKS errors in a row).
 */
int
schedlock_quarantine_hold_ms(int breaks)
{
	if (breaks >= SCHEDLOCK_QUARANTINE_BREAKS)
		return -1;
	if (breaks < 1)
		breaks = 1;
	return 1000 << (breaks - 1 < 10 ? breaks - 1 : 10);
}

/*
 * schedlock_rule_dispatch_hold
 *		A job broke dispatch for the breaks-th time in a row at now: its new
 *		next_run_at (*hold_until) is its old one, or now plus the hold of
 *		schedlock_quarantine_hold_ms when that is later (now when it is
 *		quarantined; at most the largest instant).  Returns false when the
 *		job is to be quarantined.
 */
bool
schedlock_rule_dispatch_hold(int breaks, SchedlockTime now,
							 bool has_next_run_at, SchedlockTime next_run_at,
							 SchedlockTime *hold_until)
{
	int			hold_ms = schedlock_quarantine_hold_ms(breaks);
	int64_t		hold = (int64_t) (hold_ms > 0 ? hold_ms : 0) * 1000;
	SchedlockTime until = (now > INT64_MAX - hold) ? INT64_MAX : now + hold;

	*hold_until = (has_next_run_at && next_run_at > until) ? next_run_at : until;
	return hold_ms >= 0;
}
