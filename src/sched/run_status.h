/*-------------------------------------------------------------------------
 *
 * run_status.h
 *	  The statuses of a job run (schedlock.job_runs.status), written once: a
 *	  C enum, its names, the sets the scheduler asks about, and the same
 *	  sets as SQL literals for the statements of store/.  (The values of
 *	  record_runs are a setting's words: settings.h.)
 *
 * Plain C, as rules.h is: unit-tested by test/unit/test_rules.c.
 *
 * IDENTIFICATION
 *	  src/sched/run_status.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_RUN_STATUS_H
#define SCHEDLOCK_RUN_STATUS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A run's life: queued (a run_job() call waiting for a backend) or, for a
 * NOTIFY job, pending (published, not yet claimed by an application); then
 * running; then one of the ended statuses.  A skipped run never ran.
 */
typedef enum SchedlockRunStatus
{
	SCHEDLOCK_RUN_QUEUED = 0,
	SCHEDLOCK_RUN_PENDING,
	SCHEDLOCK_RUN_RUNNING,
	SCHEDLOCK_RUN_SUCCEEDED,
	SCHEDLOCK_RUN_FAILED,
	SCHEDLOCK_RUN_TIMED_OUT,
	SCHEDLOCK_RUN_LOST,
	SCHEDLOCK_RUN_SKIPPED
} SchedlockRunStatus;

#define SCHEDLOCK_RUN_NSTATUSES (SCHEDLOCK_RUN_SKIPPED + 1)

/* The names, as job_runs.status holds them, for SQL text below. */
#define SCHEDLOCK_RUN_QUEUED_NAME		"queued"
#define SCHEDLOCK_RUN_PENDING_NAME		"pending"
#define SCHEDLOCK_RUN_RUNNING_NAME		"running"
#define SCHEDLOCK_RUN_SUCCEEDED_NAME	"succeeded"
#define SCHEDLOCK_RUN_FAILED_NAME		"failed"
#define SCHEDLOCK_RUN_TIMED_OUT_NAME	"timed_out"
#define SCHEDLOCK_RUN_LOST_NAME			"lost"
#define SCHEDLOCK_RUN_SKIPPED_NAME		"skipped"

/* A status as an SQL literal: SCHEDLOCK_RUN_SQL(RUNNING) is 'running'. */
#define SCHEDLOCK_RUN_SQL(status)	"'" SCHEDLOCK_RUN_##status##_NAME "'"

/*
 * In progress: a run taken by a backend or an application and not ended
 * (pending, running).  Open: in progress, or queued to be.  As text[]
 * literals, for "status = ANY (...)".
 */
#define SCHEDLOCK_RUN_IN_PROGRESS_SQL \
	"'{" SCHEDLOCK_RUN_PENDING_NAME "," SCHEDLOCK_RUN_RUNNING_NAME "}'"
#define SCHEDLOCK_RUN_OPEN_SQL \
	"'{" SCHEDLOCK_RUN_QUEUED_NAME "," SCHEDLOCK_RUN_PENDING_NAME "," \
	SCHEDLOCK_RUN_RUNNING_NAME "}'"

extern const char *schedlock_run_status_name(SchedlockRunStatus status);
extern bool schedlock_run_status_parse(const char *text, size_t len,
									   SchedlockRunStatus *status);
extern bool schedlock_run_status_in_progress(SchedlockRunStatus status);

#endif							/* SCHEDLOCK_RUN_STATUS_H */
