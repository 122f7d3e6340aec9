/*-------------------------------------------------------------------------
 *
 * run_status.c
 *	  The statuses of a job run: names and sets (run_status.h).  Nothing
 *	  here touches PostgreSQL.
 *
 * IDENTIFICATION
 *	  src/sched/run_status.c
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "run_status.h"

/* indexed by SchedlockRunStatus */
static const char *const run_status_names[SCHEDLOCK_RUN_NSTATUSES] = {
	[SCHEDLOCK_RUN_QUEUED] = SCHEDLOCK_RUN_QUEUED_NAME,
	[SCHEDLOCK_RUN_PENDING] = SCHEDLOCK_RUN_PENDING_NAME,
	[SCHEDLOCK_RUN_RUNNING] = SCHEDLOCK_RUN_RUNNING_NAME,
	[SCHEDLOCK_RUN_SUCCEEDED] = SCHEDLOCK_RUN_SUCCEEDED_NAME,
	[SCHEDLOCK_RUN_FAILED] = SCHEDLOCK_RUN_FAILED_NAME,
	[SCHEDLOCK_RUN_TIMED_OUT] = SCHEDLOCK_RUN_TIMED_OUT_NAME,
	[SCHEDLOCK_RUN_LOST] = SCHEDLOCK_RUN_LOST_NAME,
	[SCHEDLOCK_RUN_SKIPPED] = SCHEDLOCK_RUN_SKIPPED_NAME,
};

/*
 * schedlock_run_status_name
 *		The name job_runs.status holds for status.
 */
const char *
schedlock_run_status_name(SchedlockRunStatus status)
{
	if ((int) status < 0 || status >= SCHEDLOCK_RUN_NSTATUSES)
		return "?";
	return run_status_names[status];
}

/*
 * schedlock_run_status_parse
 *		The status named by the len bytes at text (not terminated: a text
 *		datum's data); false when no status has that name.
 */
bool
schedlock_run_status_parse(const char *text, size_t len,
						   SchedlockRunStatus *status)
{
	for (int i = 0; i < SCHEDLOCK_RUN_NSTATUSES; i++)
	{
		if (strlen(run_status_names[i]) == len &&
			memcmp(run_status_names[i], text, len) == 0)
		{
			*status = (SchedlockRunStatus) i;
			return true;
		}
	}
	return false;
}

/*
 * schedlock_run_status_in_progress
 *		Taken and not ended: pending (a NOTIFY run published to the
 *		applications) or running.  A job's next run waits while one is
 *		(the overlap rule).
 */
bool
schedlock_run_status_in_progress(SchedlockRunStatus status)
{
	return status == SCHEDLOCK_RUN_PENDING || status == SCHEDLOCK_RUN_RUNNING;
}
