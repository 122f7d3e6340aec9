/*-------------------------------------------------------------------------
 *
 * claim_plan.h
 *	  What becomes of a claimed job (claim_plan.c).
 *
 * IDENTIFICATION
 *	  src/sched/claim_plan.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_CLAIM_PLAN_H
#define SCHEDLOCK_CLAIM_PLAN_H

#include "sched/store/jobstore.h"

extern void schedlock_plan_claim(ClaimedJob *job, TimestampTz now,
								 ClaimPlan *plan, MemoryContext cxt);
extern bool schedlock_plan_may_defer(ClaimedJob *job, ClaimPlan *plan);
extern TimestampTz schedlock_defer_plan(ClaimPlan *plan, int64 run_id,
										TimestampTz horizon);
extern TimestampTz schedlock_settle_plan(ClaimedJob *job, ClaimPlan *plan,
										 TimestampTz horizon, bool may_defer);
extern TimestampTz schedlock_settle_claim(ClaimedJob *job, ClaimPlan *plan,
										  TimestampTz horizon, bool may_defer,
										  MemoryContext cxt);

#endif							/* SCHEDLOCK_CLAIM_PLAN_H */
