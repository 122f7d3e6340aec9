/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  Every schedlock.* setting's variable, the words of the settings that
 *	  take a word, and the limits the parts share (settings.c).
 *
 * IDENTIFICATION
 *	  src/base/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_SETTINGS_H
#define SCHEDLOCK_SETTINGS_H

#include "utils/guc.h"

/* Longest lock or job name accepted, in characters. */
#define SCHEDLOCK_MAX_NAME_LENGTH	255

/*
 * Largest schedlock.workers and schedlock.max_workers value (workers per
 * database).
 */
#define SCHEDLOCK_MAX_WORKERS_PER_DB	32

extern char *schedlock_timezone;
extern int	schedlock_workers;
extern int	schedlock_max_workers;
extern int	schedlock_max_housekeepers;
extern int	schedlock_max_runs_per_role;	/* 0: no limit */
extern int	schedlock_max_job_backends;
extern int	schedlock_job_backend_idle_timeout; /* ms */
extern bool schedlock_enabled;
extern int	schedlock_history_retention;	/* minutes; 0 keeps history
											 * forever */

/*
 * schedlock.runs_per_commit: atomic runs that may share one commit.  Each
 * run of a batch is a subtransaction, and one more records a set of them:
 * a transaction with more than 64 subtransactions that wrote
 * (PGPROC_MAX_CACHED_SUBXIDS) overflows its backend's cache of them, and
 * every snapshot taken in the cluster while it is open gets slower.  So at
 * most SCHEDLOCK_MAX_RUNS_PER_COMMIT, well below that.
 */
#define SCHEDLOCK_MAX_RUNS_PER_COMMIT	50
extern int	schedlock_runs_per_commit;

/* schedlock.run_id: the run a job's command belongs to, while it runs */
extern char *schedlock_run_id;

/* schedlock.scheduled_for: the slot that command runs for */
extern char *schedlock_scheduled_for;

/*
 * How long a kept statement run by one of the scheduler's background
 * processes waits for a lock, in ms (schedlock.bookkeeping_lock_timeout).
 */
extern int	schedlock_bookkeeping_lock_timeout;

/* schedlock.log_runs: what the server log gets per finished run */
typedef enum SchedlockLogRuns
{
	SCHEDLOCK_LOG_RUNS_NONE,
	SCHEDLOCK_LOG_RUNS_FAILURES,	/* failed, timed_out and lost runs */
	SCHEDLOCK_LOG_RUNS_ALL		/* and succeeded runs, with duration */
} SchedlockLogRuns;

extern int	schedlock_log_runs;
extern bool schedlock_log_statement;
extern int	schedlock_max_notice_bytes;

/* schedlock.max_session_locks: session-bound leases kept in shared memory */
extern int	schedlock_max_session_locks;

/*
 * Which ended runs job_runs keeps: every one, or the failures only (failed,
 * timed_out, lost: schedlock_run_status_failure).  A job's record_runs
 * column is one of the names or NULL (the setting's); alter_job takes
 * SCHEDLOCK_RECORD_RUNS_DEFAULT_NAME for NULL.
 */
typedef enum SchedlockRecordRuns
{
	SCHEDLOCK_RECORD_RUNS_ALL = 0,
	SCHEDLOCK_RECORD_RUNS_FAILURES
} SchedlockRecordRuns;

#define SCHEDLOCK_RECORD_RUNS_ALL_NAME		"all"
#define SCHEDLOCK_RECORD_RUNS_FAILURES_NAME	"failures"
#define SCHEDLOCK_RECORD_RUNS_DEFAULT_NAME	"default"

/* schedlock.record_runs: a SchedlockRecordRuns */
extern int	schedlock_record_runs;

extern bool schedlock_record_runs_parse(const char *text,
										SchedlockRecordRuns *value);

extern void schedlock_define_settings(GucStringCheckHook check_timezone);

#endif							/* SCHEDLOCK_SETTINGS_H */
