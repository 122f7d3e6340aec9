/*-------------------------------------------------------------------------
 *
 * dispatch_run.h
 *	  The state of a process that runs jobs (a job backend or a
 *	  housekeeper), which its start (worker.c) sets, and the steps of a
 *	  claimed job's run that it takes outside dispatch.c's pass: its
 *	  bookkeeping transactions, its cancel signal and the recovery after an
 *	  error (dispatch_run.c).
 *
 * IDENTIFICATION
 *	  src/sched/dispatch_run.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_DISPATCH_RUN_H
#define SCHEDLOCK_DISPATCH_RUN_H

#include "fmgr.h"

#include "sched_shmem.h"

/*
 * A backend wakes this long before the next job falls due, claims it, and
 * waits the rest of the time holding it, so that the command starts on the
 * instant instead of after the wakeup and the claim.  Long enough for the
 * claims of many backends whose jobs fall due at one instant (every
 * database's every-second job) to be over by then on a small machine.
 */
#define SCHEDLOCK_CLAIM_LEAD_MS	50

/* This process's slot in shared memory. */
extern SchedlockBackendSlot *schedlock_my_slot;

/* The role a job backend runs jobs as (its session user). */
extern Oid	schedlock_my_role;

/*
 * The extension owner, as read at the start of the current pass: the
 * role of the backend's own statements on the scheduler's tables.
 */
extern Oid	schedlock_bookkeeper;

/*
 * How much earlier than SCHEDLOCK_CLAIM_LEAD_MS the backend claims the
 * NOTIFY jobs of its role's next instant, so that they are ready by then
 * (schedlock_notify_lead_ms; set when the backend computes its next
 * wakeup).
 */
extern long schedlock_notify_lead;

/* Memory for one claim and run; reset after each pass. */
extern MemoryContext schedlock_run_cxt;

extern void schedlock_job_sigint(SIGNAL_ARGS);
extern void schedlock_worker_begin_tx(const char *activity);
extern void schedlock_worker_end_tx(void);
extern int	schedlock_worker_recover_error(void);

#endif							/* SCHEDLOCK_DISPATCH_RUN_H */
