/*-------------------------------------------------------------------------
 *
 * notify_dispatch.h
 *	  A job backend's NOTIFY jobs (notify_dispatch.c).
 *
 * IDENTIFICATION
 *	  src/sched/notify_dispatch.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_NOTIFY_DISPATCH_H
#define SCHEDLOCK_NOTIFY_DISPATCH_H

#include "sched/store/jobstore.h"

extern void schedlock_dispatch_notify(Oid role, ClaimPosition *pos,
									  ClaimedJob *job, ClaimPlan *plan,
									  TimestampTz start, ErrorData *error,
									  MemoryContext cxt);
extern void schedlock_notify_committed(void);
extern long schedlock_notify_lead_ms(int njobs);

#endif							/* SCHEDLOCK_NOTIFY_DISPATCH_H */
