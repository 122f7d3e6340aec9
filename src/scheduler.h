/*-------------------------------------------------------------------------
 *
 * scheduler.h
 *	  Declarations shared by the files of the job scheduler: the shared
 *	  memory state (shmem.c), the launcher (launcher.c), the per-database
 *	  workers (worker.c), command execution (exec.c), the SQL API (job.c),
 *	  run bookkeeping (run.c), workers stepping aside for DBA statements
 *	  (stepaside.c) and copies of a database (home.c).  The scheduling
 *	  rules have their own header (rules.h, plain C), and so have the
 *	  statements on the scheduler's tables (jobstore.h).
 *
 * IDENTIFICATION
 *	  src/scheduler.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_SCHEDULER_H
#define SCHEDLOCK_SCHEDULER_H

#include "postgres.h"

#include "executor/spi.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "rules.h"

/* Pending "extension created here" requests the launcher can queue. */
#define SCHEDLOCK_MAX_PROBES		16

/*
 * Statements that can have workers stepping aside at once (DROP, CREATE
 * ... TEMPLATE, RENAME DATABASE; DROP EXTENSION).
 */
#define SCHEDLOCK_MAX_DROPPING		16

/* Longest a worker sleeps before looking at the clock again, in ms. */
#define SCHEDLOCK_MAX_SLEEP_MS		60000

/*
 * The worker pool (shmem.c, launcher.c): the launcher adds a worker to a
 * database, up to schedlock.max_workers, once all its workers have been
 * running jobs for SCHEDLOCK_POOL_GROW_AFTER_MS; a worker beyond
 * schedlock.workers leaves after SCHEDLOCK_POOL_IDLE_MS without a claim,
 * and wakes SCHEDLOCK_POOL_EXTRA_DELAY_MS after the lower ones, so that
 * idle lower workers take the jobs first.
 */
#define SCHEDLOCK_POOL_GROW_AFTER_MS	200
#define SCHEDLOCK_POOL_IDLE_MS			30000
#define SCHEDLOCK_POOL_EXTRA_DELAY_MS	3

/* Deadline of a NOTIFY run without a timeout of its own, in seconds. */
#define SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT	300

/*
 * Longest job payload accepted, in bytes of its JSON text.  The payload is
 * not sent in the notification (any role may LISTEN): the claimer gets it
 * from schedlock_claim_run_payload, so PostgreSQL's 8000-byte NOTIFY limit
 * does not apply; the bound keeps job rows small.
 */
#define SCHEDLOCK_MAX_PAYLOAD_LENGTH	65536

/*
 * Bounds of a job's timeout, in seconds, so that no deadline can leave the
 * range of timestamptz: at least 1 ms and at most 24 days
 * (statement_timeout takes at most INT_MAX ms, 24.8 days).  The bounds of
 * retry_delay, the run_all limit and the quarantine's count are the
 * scheduling rules' (rules.h).  Intervals are measured as EXTRACT(epoch
 * FROM ...).
 */
#define SCHEDLOCK_MAX_TIMEOUT_SECS		2073600	/* 24 days */

/*
 * One-off jobs (job.c): the schedule they are stored with, which the cron
 * engine does not accept, and how far ahead an instant (schedule_once's
 * run_at, alter_job's next_run_at) may lie, in days (100 years).
 */
#define SCHEDLOCK_ONCE_SCHEDULE		"@once"
#define SCHEDLOCK_MAX_AHEAD_DAYS	36525

/*
 * One per-database worker.  The launcher reserves a slot (in_use, dboid,
 * worker_index, generation, reserved_at) before registering the worker and
 * frees it after the worker has stopped; the worker takes the slot
 * (attached, pid, latch) first thing, if its generation still matches,
 * clears pid and latch and raises exited when it ends, and raises ready /
 * no_extension / retired.  The slots are the launcher's memory: a launcher
 * that restarts adopts the workers it finds there (launcher.c).
 */
typedef struct SchedlockWorkerSlot
{
	bool		in_use;			/* reserved by the launcher */
	Oid			dboid;			/* database the worker serves */
	int			worker_index;	/* 0 .. schedlock.max_workers - 1 */
	uint64		generation;		/* reservation number, in bgw_extra */
	TimestampTz reserved_at;	/* when the launcher reserved the slot */
	bool		attached;		/* the worker process took the slot */
	bool		exited;			/* the worker process has ended */
	pid_t		pid;			/* worker's pid while it runs, else 0 */
	Latch	   *latch;			/* worker's latch while it runs */
	bool		ready;			/* worker 0 finished its start-up work */
	bool		no_extension;	/* worker found no schedlock extension */
	bool		retired;		/* an extra worker left the pool, idle */
	int64		running_job;	/* job_id being run now, 0 when none */
	TimestampTz running_since;	/* when running_job started */
	Oid			running_role;	/* owner of the job claimed for a run, for
								 * schedlock.max_runs_per_role */
} SchedlockWorkerSlot;

/*
 * The scheduler's shared state.  Every field is protected by lock; hold it
 * in shared mode to read, exclusive to write.  Latches are set after the
 * lock has been released when convenient, never while waiting for anything.
 */
typedef struct SchedlockShared
{
	LWLock	   *lock;			/* protects everything below */
	pid_t		launcher_pid;	/* launcher's pid, 0 when not running */
	Latch	   *launcher_latch; /* launcher's latch while it runs */
	bool		probe_all;		/* probe every database again */
	int			nprobes;		/* used entries of probe_db */
	Oid			probe_db[SCHEDLOCK_MAX_PROBES]; /* databases to probe again */
	int			ndropping;		/* used entries of dropping_db */
	Oid			dropping_db[SCHEDLOCK_MAX_DROPPING];	/* workers step aside
														 * for a statement */
	pid_t		dropping_pid[SCHEDLOCK_MAX_DROPPING];	/* backend running it */
	uint64		next_generation;	/* last slot reservation number */
	Oid		   *reboot_db;		/* nslots entries: databases whose @reboot
								 * jobs fired in this server life (or since
								 * promotion); InvalidOid when unused */
	int			nslots;			/* length of slots (max_worker_processes) */
	SchedlockWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} SchedlockShared;

/* shmem.c */
extern SchedlockShared *schedlock_shared;
extern void schedlock_shmem_request(void);
extern void schedlock_shmem_startup(void);
extern void schedlock_wake_workers_at_commit(void);
extern void schedlock_probe_database_at_commit(void);
extern void schedlock_probe_all_at_commit(void);
extern void schedlock_wake_launcher(void);
extern void schedlock_wake_database_workers(Oid dboid);
extern bool schedlock_database_dropping(Oid dboid);
extern void schedlock_stop_database_workers(Oid dboid);
extern void schedlock_database_drop_done(Oid dboid);
extern void schedlock_xact_init(void);
extern bool schedlock_worker_attach(SchedlockWorkerSlot *slot,
									uint64 generation);
extern void schedlock_worker_detach(SchedlockWorkerSlot *slot);
extern bool schedlock_reboot_due(Oid dboid);
extern void schedlock_reboot_done(Oid dboid);
extern void schedlock_pool_set_running(SchedlockWorkerSlot *slot,
									   int64 job_id);
extern int	schedlock_pool_capped_roles(SchedlockWorkerSlot *slot,
										Oid *roles, int max);
extern bool schedlock_pool_take_role(SchedlockWorkerSlot *slot, Oid role);
extern void schedlock_pool_release_role(SchedlockWorkerSlot *slot);
extern long schedlock_pool_retire_if_idle(SchedlockWorkerSlot *slot,
										  bool claimed,
										  TimestampTz *idle_since,
										  long sleep_ms);

/* stepaside.c */
extern Oid	schedlock_step_aside_for(Node *parsetree, bool isTopLevel);

/* home.c */
extern bool schedlock_jobs_paused(bool at_start, bool warn);

/* launcher.c */
extern void schedlock_register_launcher(void);
extern PGDLLEXPORT void schedlock_launcher_main(Datum arg);

/* worker.c */
extern PGDLLEXPORT void schedlock_worker_main(Datum arg);

/* quarantine.c */
extern void schedlock_dispatch_blame(int64 job_id);
extern bool schedlock_jobs_have_quarantine(void);
extern void schedlock_worker_recover(MemoryContext cxt);

/* exec.c */
extern bool schedlock_exec_atomic(const char *command, Oid user,
								  int timeout_ms, ErrorData **error,
								  char *result_status, char **notices);
extern void schedlock_exec_discard_job_state(void);

/* job.c */
extern void schedlock_check_command(const char *command);
extern bool schedlock_schedule_is_once(const char *schedule);

/* roles.c */
extern void schedlock_roles_init(void);
extern void schedlock_owned_jobs(Node *parsetree);
extern int64 schedlock_sync_job_roles(void);
extern ErrorData *schedlock_check_job_role(Oid owner, Oid run_as,
										   MemoryContext cxt);

/* run.c */
extern Oid	schedlock_extension_owner(void);

/*
 * run.c: switch to the extension owner, with search_path pinned to
 * "pg_catalog, pg_temp", around table writes, and back
 */
extern void schedlock_begin_as_owner(Oid *save_uid, int *save_sec,
									 int *save_nestlevel);
extern void schedlock_end_as_owner(Oid save_uid, int save_sec,
								   int save_nestlevel);

/* query.c */
#define SCHEDLOCK_QUERY_MAX_ARGS	10

/* A statement run through a kept, generic plan (see query.c). */
typedef struct SchedlockQuery
{
	const char *sql;
	int			nargs;
	Oid			argtypes[SCHEDLOCK_QUERY_MAX_ARGS];
	SPIPlanPtr	plan;			/* NULL until first used in this backend */
} SchedlockQuery;

extern int	schedlock_trusted_path_begin(void);
extern void schedlock_trusted_path_end(int nestlevel);
extern int	schedlock_query_run(SchedlockQuery *q, Datum *values,
								const char *nulls, bool read_only, long count);

#endif							/* SCHEDLOCK_SCHEDULER_H */
