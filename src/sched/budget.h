/*-------------------------------------------------------------------------
 *
 * budget.h
 *	  The job backends' budget, shared by every database (budget.c): why a
 *	  queue waits, which backend leaves to make room, when a queue's
 *	  backends are all busy.
 *
 * IDENTIFICATION
 *	  src/sched/budget.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_BUDGET_H
#define SCHEDLOCK_BUDGET_H

#include "utils/timestamp.h"

#include "sched_shmem.h"

extern long schedlock_budget_warn_wait(SchedlockQueue *q,
									   SchedlockDatabase *db,
									   TimestampTz now);
extern void schedlock_budget_set_wait(SchedlockQueue *q, SchedlockWait wait,
									  TimestampTz now);
extern int	schedlock_budget_role_backends(Oid role);
extern bool schedlock_budget_role_at_cap(Oid role);
extern long schedlock_budget_make_room(int needed, Oid dboid, Oid role,
									   TimestampTz now);
extern void schedlock_budget_watch_busy(SchedlockQueue *q, bool watched);
extern bool schedlock_budget_all_busy(SchedlockQueue *q, TimestampTz now,
									  TimestampTz *wake_at);

#endif							/* SCHEDLOCK_BUDGET_H */
