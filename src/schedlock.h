/*-------------------------------------------------------------------------
 *
 * schedlock.h
 *	  Declarations shared by the files of the schedlock extension.
 *
 * Each .c file under src/ owns one concern; what one file offers the others
 * is declared here (the cron engine has its own headers, cron.h for the pure
 * parser and cron_pg.h for its PostgreSQL wrapper).
 *
 * IDENTIFICATION
 *	  src/schedlock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_H
#define SCHEDLOCK_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

/*
 * Custom SQLSTATE raised by schedlock_assert() when the token no longer holds
 * an unexpired lease ("SL" is an implementation-defined class).
 */
#define ERRCODE_SCHEDLOCK_LEASE_LOST	MAKE_SQLSTATE('S','L','0','0','1')

/* Longest lock name accepted, in characters. */
#define SCHEDLOCK_MAX_NAME_LENGTH	255

/* Longest holder description accepted, in characters. */
#define SCHEDLOCK_MAX_HOLDER_LENGTH	1024

/*
 * field4 values of the advisory lock tags schedlock takes.  User advisory
 * locks use 1 (bigint key) and 2 (two int keys), so these never collide with
 * pg_advisory_lock() calls made by applications.  They show up in pg_locks
 * as locktype 'advisory' with these objsubid values.
 */
#define SCHEDLOCK_LOCKTAG_MUTEX		0x534D	/* "SM": per-name transaction mutex */
#define SCHEDLOCK_LOCKTAG_SESSION	0x5353	/* "SS": per-session identity lock */

/*
 * Largest schedlock.workers and schedlock.max_workers value (workers per
 * database).
 */
#define SCHEDLOCK_MAX_WORKERS_PER_DB	32

/* GUC variables (schedlock.c) */
extern char *schedlock_timezone;
extern int	schedlock_workers;
extern int	schedlock_max_workers;
extern int	schedlock_max_housekeepers;
extern int	schedlock_max_runs_per_role;	/* 0: no limit */
extern int	schedlock_max_job_backends;
extern int	schedlock_job_backend_idle_timeout; /* ms */
extern bool schedlock_enabled;
extern int	schedlock_history_retention;	/* minutes; 0 keeps history forever */

/* schedlock.record_runs: a SchedlockRecordRuns (run_status.h) */
extern int	schedlock_record_runs;

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

/* schedlock.c */
extern void schedlock_check_preloaded(void);

/*
 * The files of src/common, src/lock, src/cron and src/sched each declare
 * what they share in a header of their own.
 */

#endif							/* SCHEDLOCK_H */
