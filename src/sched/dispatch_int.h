/*-------------------------------------------------------------------------
 *
 * dispatch_int.h
 *	  What the two halves of a job backend's pass share, and nothing else
 *	  includes: the simple path of one claimed job (dispatch.c) and the
 *	  runs that share a commit with it.
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

/*
 * A run of an atomic job claimed before its instant with the first job
 * due then (schedlock_claim_ahead), to run in the transaction begun on the
 * instant (schedlock_run_ahead).
 */
typedef struct AheadRun
{
	ClaimedJob	job;
	ClaimPlan	plan;
	int64		run_id;
	ErrorData  *error;			/* the role check's verdict, then the
								 * command's error */
	char	   *result_status;	/* SCHEDLOCK_RESULT_STATUS_LEN bytes */
	char	   *notices;
} AheadRun;

/* the simple path's steps (dispatch.c) */
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
extern ErrorData *schedlock_job_error(ClaimedJob *job, const ClaimPlan *plan,
									  const char *start_error);

/* runs that share a commit */
extern int	schedlock_claim_ahead(Oid role, ClaimPosition *pos,
								  TimestampTz start, const char *start_error,
								  AheadRun *runs);
extern void schedlock_run_ahead(ClaimedJob *job, ClaimPlan *plan,
								int64 run_id, TimestampTz start,
								ErrorData *error, AheadRun *runs, int n);
extern void schedlock_dispatch_batch(Oid role, ClaimPosition *pos,
									 const char *start_error, int n);

#endif							/* SCHEDLOCK_DISPATCH_INT_H */
