/*-------------------------------------------------------------------------
 *
 * dispatch_int.h
 *	  What the parts of a job backend's pass share, and nothing else
 *	  includes: the steps of a claimed job's run (dispatch_run.c), which the
 *	  pass (dispatch.c) and the runs that share a commit with it
 *	  (dispatch_sets.c) are made of.
 *
 * IDENTIFICATION
 *	  src/sched/dispatch_int.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_DISPATCH_INT_H
#define SCHEDLOCK_DISPATCH_INT_H

#include "postgres.h"

#include "utils/elog.h"
#include "utils/timestamp.h"

#include "claim_plan.h"
#include "sched/store/jobstore.h"

/* the steps of a claimed job's run (dispatch_run.c) */
extern void schedlock_set_running_job(int64 job_id, const ClaimPlan *plan,
									  TimestampTz start);
extern void schedlock_wait_until(TimestampTz start);
extern void schedlock_commit_early_claim(void);
extern void schedlock_run_in_subxact(ClaimedJob *job, ClaimPlan *plan,
									 int64 run_id, ErrorData **error,
									 char *result_status, char **notices);
extern int	schedlock_skip_unscheduled(ClaimedJob **jobs,
									   const int64 *run_ids, int n,
									   bool *skipped);
extern void schedlock_run_atomic(ClaimedJob *job, ClaimPlan *plan,
								 int64 run_id, TimestampTz start,
								 ErrorData *error, bool commit);
extern void schedlock_run_toplevel(ClaimedJob *job, ClaimPlan *plan,
								   int64 run_id, TimestampTz start,
								   ErrorData *error);
extern ErrorData *schedlock_job_error(ClaimedJob *job, const ClaimPlan *plan,
									  const char *start_error);

/* the runs that share a commit with it (dispatch_sets.c) */
extern int	schedlock_run_sharing_commit(Oid role, ClaimPosition *pos,
										 ClaimedJob *job, ClaimPlan *plan,
										 int64 run_id, TimestampTz start,
										 ErrorData *error,
										 const char *start_error);

#endif							/* SCHEDLOCK_DISPATCH_INT_H */
