/*-------------------------------------------------------------------------
 *
 * rules.h
 *	  The scheduling rules of the job scheduler, in plain C: which slot a
 *	  claimed job runs under its misfire policy and which comes next, what
 *	  an overlapping slot becomes, a job's next_run_at, the attempt number
 *	  and retry time of a failed run (backoff and caps), and how long a
 *	  job that broke dispatch is held back before it is quarantined.
 *
 * This header and rules.c depend on nothing but the C library, as cron.h
 * and the cron engine do, so that the rules are unit-tested as plain C
 * (test/unit/test_rules.c, test/suites/rules-unit.sh).  The scheduler's
 * files (dispatch.c, notify_api.c, job_api.c, quarantine.c) read the rows, ask these
 * functions, and write what they answer; none of them decides a rule on
 * its own.
 *
 * Instants are SchedlockTime: microseconds, on the scale of PostgreSQL's
 * TimestampTz (the rules only compare instants and add durations, so the
 * epoch does not matter).  Time zones and DST are the cron engine's: the
 * slot rule asks for the next slot through a callback (the worker's wraps
 * schedlock_cron_next_time, cron_pg.h).
 *
 * IDENTIFICATION
 *	  src/sched/rules.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_RULES_H
#define SCHEDLOCK_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/instant.h"

/* run_all catches up at most this many missed slots of a job. */
#define SCHEDLOCK_RUN_ALL_LIMIT		100

/* Iterations allowed when counting missed slots for run_all. */
#define SCHEDLOCK_MISFIRE_MAX_ITERATIONS	1000000

/*
 * Bounds of a job's retry delay, in seconds: the effective delay before
 * retry n is retry_delay * 2^(n - 1), but at least
 * SCHEDLOCK_MIN_RETRY_DELAY_SECS * 2^(n - 1) and at most
 * SCHEDLOCK_MAX_RETRY_DELAY_SECS, the longest retry_delay accepted.
 * Intervals are measured as EXTRACT(epoch FROM ...).
 */
#define SCHEDLOCK_MIN_RETRY_DELAY_SECS	1
#define SCHEDLOCK_MAX_RETRY_DELAY_SECS	86400

/* The exponent of the backoff stops growing here (2^20 > 1 day / 1 s). */
#define SCHEDLOCK_RETRY_MAX_DOUBLINGS	20

/* Dispatch errors in a row after which a job is quarantined (quarantine.c). */
#define SCHEDLOCK_QUARANTINE_BREAKS		3

/* A job's misfire policy (the jobs.misfire column). */
typedef enum SchedlockMisfire
{
	SCHEDLOCK_MISFIRE_RUN_ONCE = 0, /* one catch-up run for missed slots */
	SCHEDLOCK_MISFIRE_SKIP,		/* skip them, go on with the next future one */
	SCHEDLOCK_MISFIRE_RUN_ALL	/* run every missed slot, the latest
								 * SCHEDLOCK_RUN_ALL_LIMIT at most */
} SchedlockMisfire;

/*
 * The next slot of a job's schedule strictly after an instant, in its time
 * zone; false when there is none.  arg is passed through.
 */
typedef bool (*SchedlockNextSlotFn) (const void *arg, SchedlockTime after,
									 SchedlockTime *next);

/* What becomes of a due slot. */
typedef enum SchedlockSlotAction
{
	SCHEDLOCK_SLOT_RUN = 0,		/* run it */
	SCHEDLOCK_SLOT_SKIP			/* record it as skipped */
} SchedlockSlotAction;

/* The slot rule's answer (schedlock_rule_due_slot). */
typedef struct SchedlockSlotPlan
{
	SchedlockSlotAction action;
	bool		has_next;		/* whether the job has a next slot */
	SchedlockTime next;			/* the job's next slot, when has_next */
	char		message[128];	/* why, for the run's row; "" when none */
} SchedlockSlotPlan;

/* What a claim of a due job serves (schedlock_rule_claim_serves). */
typedef enum SchedlockClaimServes
{
	SCHEDLOCK_SERVES_NOTHING = 0,	/* nothing is due after all */
	SCHEDLOCK_SERVES_RUN_JOB,	/* a queued run_job() call */
	SCHEDLOCK_SERVES_RETRY,		/* the pending retry */
	SCHEDLOCK_SERVES_SLOT		/* the due slot (schedlock_rule_due_slot) */
} SchedlockClaimServes;

/* What a claim of the job serves at now. */
extern SchedlockClaimServes schedlock_rule_claim_serves(int32_t manual_pending,
														bool has_retry,
														SchedlockTime retry_at,
														bool has_slot,
														SchedlockTime slot,
														SchedlockTime now);

/* Parse a misfire policy; false (and *policy run_once) when unknown. */
extern bool schedlock_misfire_parse(const char *text, SchedlockMisfire *policy);

/* What to do with a job's due slot, and its next slot. */
extern void schedlock_rule_due_slot(SchedlockTime slot, SchedlockTime now,
									SchedlockMisfire misfire, bool reboot,
									SchedlockNextSlotFn next_slot,
									const void *arg,
									SchedlockSlotPlan *plan);

/* Why a run is skipped for a run of the job in progress, or NULL. */
extern const char *schedlock_rule_overlap(bool previous_in_progress);

/* A job's next_run_at; false when it has none (NULL, also while disabled). */
extern bool schedlock_rule_next_run_at(bool enabled,
									   bool has_slot, SchedlockTime slot,
									   bool has_retry, SchedlockTime retry_at,
									   int32_t manual_pending,
									   SchedlockTime now,
									   SchedlockTime *next_run_at);

/* The attempt number a failure counts for retries (0: never retried). */
extern int32_t schedlock_rule_failed_attempt(bool manual, int32_t attempt);

/* The delay before the retry that follows a failed attempt, microseconds. */
extern int64_t schedlock_rule_retry_delay(int32_t attempt,
										  double retry_delay_secs);

/* Whether a failed attempt is retried, and which attempt runs when. */
extern bool schedlock_rule_retry(int32_t attempt, int32_t max_attempts,
								 double retry_delay_secs,
								 SchedlockTime failed_at,
								 int32_t *next_attempt,
								 SchedlockTime *retry_at);

/* Dispatch errors in a row, counting one more. */
extern int	schedlock_rule_dispatch_breaks(bool run_since_last_error,
										   int32_t previous_errors);

/* How long a job that broke dispatch breaks times in a row is held, ms. */
extern int	schedlock_quarantine_hold_ms(int breaks);

/* Hold a job that broke dispatch; false when it is to be quarantined. */
extern bool schedlock_rule_dispatch_hold(int breaks, SchedlockTime now,
										 bool has_next_run_at,
										 SchedlockTime next_run_at,
										 SchedlockTime *hold_until);

#endif							/* SCHEDLOCK_RULES_H */
