/*-------------------------------------------------------------------------
 *
 * sched_shmem.h
 *	  The job scheduler's shared memory: the databases the launcher serves,
 *	  their queues, the backend slots and the wakeups (sched_shmem.c), and the
 *	  timing of the job backends (launcher.c, worker.c).
 *
 * IDENTIFICATION
 *	  src/sched/sched_shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_SCHED_SHMEM_H
#define SCHEDLOCK_SCHED_SHMEM_H

#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "startwave.h"

/* Pending "extension created here" requests the launcher can queue. */
#define SCHEDLOCK_MAX_PROBES		16

/*
 * Statements that can have job backends stepping aside at once (DROP,
 * CREATE ... TEMPLATE, RENAME DATABASE; DROP EXTENSION).
 */
#define SCHEDLOCK_MAX_DROPPING		16

/* Longest a worker sleeps before looking at the clock again, in ms. */
#define SCHEDLOCK_MAX_SLEEP_MS		60000

/*
 * The job backends (launcher.c, worker.c): the launcher starts a backend
 * for a queue SCHEDLOCK_START_LEAD_MS before its next job falls due, so
 * that the start-up is over by the instant.  A backend that has had its
 * turn for SCHEDLOCK_TURN_MS may be asked to leave after its current job
 * when another queue waits for the budget.  A backend that fails to start
 * (its role cannot log in, say) is tried again for its queue after
 * SCHEDLOCK_START_RETRY_MS.
 */
#define SCHEDLOCK_START_LEAD_MS		100
#define SCHEDLOCK_TURN_MS			50

/*
 * Job backends starting at once (reserved, not yet ready for their first
 * claim), in the whole cluster.  The launcher starts no more until one is
 * ready: when many more databases have frequent jobs than the budget
 * serves, the budget turns from queue to queue with a start per turn, and
 * without a bound a large budget started a hundred backends at once, whose
 * starts took both cores and every session's latency with them.  Bounded,
 * the turns come as fast as backends start, and a start that the machine
 * makes slow makes them slower.
 */
#define SCHEDLOCK_MAX_STARTING		4
#define SCHEDLOCK_START_STUCK_MS	10000

/*
 * A start takes what the machine allows: on a loaded machine, or a build
 * with assertions, a backend may need more than SCHEDLOCK_START_LEAD_MS
 * from its reservation to its first claim.  Each job backend measures its
 * own start (start_ms, see schedlock_note_start); the lead is twice the
 * slowest start seen lately, at least SCHEDLOCK_START_LEAD_MS and at most
 * SCHEDLOCK_START_LEAD_MAX_MS (schedlock_start_lead_ms).
 */
#define SCHEDLOCK_START_LEAD_MAX_MS	1000

/*
 * schedlock_slow_sample
 *		The next value of a "slowest lately" measure (start_ms,
 *		notify_prep_us) that was cur, given a new sample: a slower sample is
 *		taken at once, a faster one moves it a quarter of the way, so that
 *		a lead grows at once on a loaded machine and shrinks again only
 *		over several samples once it is quiet.
 */
static inline int
schedlock_slow_sample(int cur, int sample)
{
	return sample >= cur ? sample : cur - (cur - sample + 3) / 4;
}

#define SCHEDLOCK_START_RETRY_MS	5000

/*
 * A queue that is due while every one of its backends has been running a
 * job for SCHEDLOCK_GROW_AFTER_MS gets one more backend (a long job does
 * not hold up its role's other jobs).  A queue's backends beyond the first
 * wake SCHEDLOCK_EXTRA_DELAY_MS per rank later than the first, so that the
 * first takes the jobs when it is free and the others leave when idle.
 */
#define SCHEDLOCK_GROW_AFTER_MS		200
#define SCHEDLOCK_EXTRA_DELAY_MS	3

/* Delay before a housekeeping that ended early is tried again. */
#define SCHEDLOCK_HOUSEKEEP_RETRY_MS	5000

/*
 * Tables of shared memory (sched_shmem.c) and their sizes: every database the
 * launcher knows, and every queue -- a (database, role) whose jobs run in
 * backends connected as that role.
 */
#define SCHEDLOCK_MAX_DATABASES		1024
#define SCHEDLOCK_MAX_QUEUES		4096

/* What a job backend does (bgw_extra tells it). */
typedef enum SchedlockBackendKind
{
	SCHEDLOCK_BACKEND_JOBS,		/* claims and runs one role's jobs */
	SCHEDLOCK_BACKEND_HOUSEKEEPER	/* a database's housekeeping, no jobs */
} SchedlockBackendKind;

/*
 * Why a queue's due jobs wait for a backend (SchedlockQueue.wait), shown by
 * schedlock.job_status.
 */
typedef enum SchedlockWait
{
	SCHEDLOCK_WAIT_NONE,
	SCHEDLOCK_WAIT_BUDGET,		/* schedlock.max_job_backends in use */
	SCHEDLOCK_WAIT_DATABASE_CAP,	/* schedlock.max_workers of its database */
	SCHEDLOCK_WAIT_ROLE_CAP,	/* schedlock.max_runs_per_role of its role, in
								 * the whole cluster */
	SCHEDLOCK_WAIT_PROCESSES,	/* no max_worker_processes slot was free */
	SCHEDLOCK_WAIT_LOCKED,		/* its backend left: a lock it could not get
								 * within schedlock.bookkeeping_lock_timeout */
	SCHEDLOCK_WAIT_START_FAILED /* its backend could not start: start_error */
} SchedlockWait;

/*
 * One job backend or housekeeper.  The launcher reserves a slot (in_use,
 * kind, dboid, role, generation, reserved_at) before registering the
 * process and frees it after the process has stopped; the process takes
 * the slot (attached, pid, latch) first thing, if its generation still
 * matches, and raises exited when it ends.
 */
typedef struct SchedlockBackendSlot
{
	bool		in_use;			/* reserved by the launcher */
	SchedlockBackendKind kind;
	Oid			dboid;			/* database it connects to */
	Oid			role;			/* role it connects as; InvalidOid for a
								 * housekeeper (bootstrap superuser) */
	uint64		generation;		/* reservation number, in bgw_extra */
	uint64		reloads_seen;	/* schedlock_shared->reloads when reserved */
	TimestampTz reserved_at;	/* when the launcher reserved the slot */
	TimestampTz turn_from;		/* when its turn began: reserved_at, or the
								 * instant its queue fell due, when started
								 * ahead of it (budget.c) */
	bool		attached;		/* the process took the slot */
	bool		exited;			/* the process has ended */
	pid_t		pid;			/* its pid while it runs, else 0 */
	Latch	   *latch;			/* its latch while it runs */
	bool		idle;			/* waiting for its queue's next job */
	bool		yield;			/* asked to leave after its current job */
	bool		no_extension;	/* found no schedlock extension */
	uint64		probes_seen;	/* its database's probes when reserved */
	bool		finished;		/* a housekeeper did its whole pass */
	int64		running_job;	/* job_id being run now, 0 when none */
	bool		busy_watched;	/* the launcher looks again, on its own, at
								 * whether its queue's backends have all been
								 * busy too long (budget.c, all_busy) */
	TimestampTz running_since;	/* when running_job started (its instant, when
								 * claimed ahead of it) */
	TimestampTz running_slot;	/* the slot and attempt of running_job's */
	int32		running_attempt;	/* run (0 when none) */
	/* jobs whose runs it claimed before their instant, to run next */
	int			nahead;
	int64		ahead_jobs[SCHEDLOCK_MAX_RUNS_PER_COMMIT];
	bool		ready;			/* ready for its first claim (job backends) */
	bool		left_locked;	/* it left on a lock it could not get */
	int			start_sqlerrcode;	/* the error that ended its start-up */
	char		start_error[256];	/* ... its message, "" when none */
} SchedlockBackendSlot;

/* One (database, role) with jobs: see launcher.c. */
typedef struct SchedlockQueue
{
	bool		in_use;
	Oid			dboid;
	Oid			role;
	TimestampTz due_at;			/* its earliest job due, DT_NOEND: none */
	uint64		noted;			/* note_count of the last commit that moved
								 * due_at earlier (sched_shmem.c) */
	bool		backlog;		/* its backends have more due than they run */
	int			lead_ms;		/* start its backends this much earlier: the
								 * NOTIFY jobs of its next instant are made
								 * ready before it (worker.c) */
	int			wanted;			/* backends its SQL jobs due at wanted_at keep
								 * busy at once (worker.c counts them) */
	TimestampTz wanted_at;		/* that instant; used while it is due_at */
	int			nbackends;		/* its backends, starting ones included */
	SchedlockWait wait;			/* why due jobs wait for a backend */
	TimestampTz waiting_since;	/* since when (0: not waiting) */
	TimestampTz retry_after;	/* start no backend before this time */
	bool		fail_due;		/* the housekeeper fails its due runs */
	int			start_sqlerrcode;	/* why its last backend did not start */
	char		start_error[256];
} SchedlockQueue;

/*
 * A run whose job backend ended (FATAL: terminated, by its own command
 * too) while the run's command ran: kept from the backend's exit until a
 * backend claims the same slot and attempt of the job again, when the
 * claim records the run failed instead of running the command once more
 * (an atomic run's claim was rolled back with the command, so the slot is
 * due again just as before).  A ring: the oldest note goes first.
 */
#define SCHEDLOCK_DIED_RUNS 64

typedef struct SchedlockDiedRun
{
	Oid			dboid;			/* InvalidOid: the entry is free */
	int64		job_id;
	TimestampTz slot;
	int32		attempt;
} SchedlockDiedRun;

/* One database the launcher serves. */
typedef struct SchedlockDatabase
{
	bool		in_use;
	Oid			dboid;
	NameData	dbname;			/* for process titles and messages */
	bool		known;			/* a housekeeper published its queues */
	bool		no_extension;	/* no schedlock extension there */
	uint64		probes;			/* probe requests taken for it: a process
								 * reserved before the last one cannot tell
								 * that the extension is missing */
	bool		paused;			/* a copy: its jobs wait for adoption */
	bool		old_tables;		/* tables older than the library serves:
								 * nothing runs until ALTER EXTENSION UPDATE
								 * (said once, by the first process to see) */
	bool		reboot_fired;	/* its @reboot jobs fired this server life */
	bool		housekeep;		/* housekeeping wanted now */
	TimestampTz housekeep_at;	/* next housekeeping (deadlines, pruning) */
	bool		seen;			/* found by the launcher's last scan */
	TimestampTz counted_at;		/* when a housekeeper counted the jobs below
								 * (0: never) */
	int32		njobs;			/* jobs of the database then */
	int32		nenabled;		/* ... of them enabled */
	int32		nfailing;		/* ... whose last run failed */
	int32		nquarantined;	/* ... quarantined */
} SchedlockDatabase;

/*
 * The scheduler's shared state.  Every field is protected by lock; hold it
 * in shared mode to read, exclusive to write.  Latches are set after the
 * lock has been released, never while waiting for anything.
 */
typedef struct SchedlockShared
{
	LWLock	   *lock;			/* protects everything below */
	pid_t		launcher_pid;	/* launcher's pid, 0 when not running */
	Latch	   *launcher_latch; /* launcher's latch while it runs */
	bool		probe_all;		/* probe every database again */
	bool		rescan;			/* read pg_database again (a statement that
								 * stepped aside is over) */
	int			nprobes;		/* used entries of probe_db */
	Oid			probe_db[SCHEDLOCK_MAX_PROBES]; /* databases to probe again */
	int			ndropping;		/* used entries of dropping_db */
	Oid			dropping_db[SCHEDLOCK_MAX_DROPPING];	/* backends step aside
														 * for a statement */
	pid_t		dropping_pid[SCHEDLOCK_MAX_DROPPING];	/* backend running it */
	uint64		next_generation;	/* last slot reservation number */
	uint64		reloads;		/* configuration reloads the launcher has read
								 * (schedlock_note_reload) */
	bool		starts_paced;	/* the launcher waits for a starting job
								 * backend to be ready
								 * (SCHEDLOCK_MAX_STARTING) */
	bool		room_wanted;	/* its last pass left due jobs waiting for a
								 * backend to make room: a backend that turns
								 * idle wakes it (schedlock_set_idle) */
	int			start_ms;		/* slowest job backend start seen lately, in
								 * ms (read unlocked: one int) */
	int			notify_prep_us; /* what making one NOTIFY run ready took
								 * lately, in microseconds (a hint, read and
								 * written unlocked: one int) */
	uint64		note_count;		/* commits that moved a due time earlier */
	SchedlockDatabase dbs[SCHEDLOCK_MAX_DATABASES];
	SchedlockQueue queues[SCHEDLOCK_MAX_QUEUES];
	SchedlockStartWaves waves;	/* its own spinlock (startwave.c) */
	int			died_next;		/* where the next note of died goes */
	int			ndied;			/* notes in died (read unlocked to skip the
								 * look-up when there are none) */
	SchedlockDiedRun died[SCHEDLOCK_DIED_RUNS];
	int			nslots;			/* length of slots (max_worker_processes) */
	SchedlockBackendSlot slots[FLEXIBLE_ARRAY_MEMBER];
} SchedlockShared;

extern SchedlockShared *schedlock_shared;
extern void schedlock_shmem_request(void);
extern void schedlock_shmem_startup(void);
extern void schedlock_xact_init(void);
extern void schedlock_note_due_at_commit(Oid role, TimestampTz due);
extern void schedlock_wake_workers_at_commit(void);
extern void schedlock_probe_database_at_commit(void);
extern void schedlock_probe_all_at_commit(void);
extern void schedlock_wake_launcher(void);
extern bool schedlock_database_dropping(Oid dboid);
extern void schedlock_stop_database_workers(Oid dboid);
extern void schedlock_database_drop_done(Oid dboid);
extern SchedlockDatabase *schedlock_find_database(Oid dboid, bool create);
extern SchedlockQueue *schedlock_find_queue(Oid dboid, Oid role,
											bool create);
extern bool schedlock_backend_attach(SchedlockBackendSlot *slot,
									 uint64 generation, bool *reload);
extern void schedlock_note_reload(void);
extern void schedlock_note_died_run(SchedlockBackendSlot *slot);
extern bool schedlock_take_died_run(Oid dboid, int64 job_id,
									TimestampTz slot, int32 attempt);
extern void schedlock_backend_detach(SchedlockBackendSlot *slot);
extern void schedlock_note_start(SchedlockBackendSlot *slot);
extern void schedlock_backend_left_locked(SchedlockBackendSlot *slot);
extern long schedlock_start_lead_ms(void);
extern void schedlock_set_running(SchedlockBackendSlot *slot, int64 job_id,
								  TimestampTz run_slot, int32 attempt,
								  TimestampTz start);
extern void schedlock_set_ahead(SchedlockBackendSlot *slot,
								const int64 *job_ids, int n);
extern uint64 schedlock_note_count(void);
extern bool schedlock_publish_due(SchedlockBackendSlot *slot,
								  TimestampTz due_at, int lead_ms,
								  int wanted, bool backlog, uint64 seen,
								  bool *again);
extern bool schedlock_set_idle(SchedlockBackendSlot *slot, bool idle);
extern int	schedlock_queue_rank(SchedlockBackendSlot *slot,
								 bool *earlier_free);
extern int	schedlock_starting_backends(TimestampTz now);
extern void schedlock_housekeep_by(Oid dboid, TimestampTz when);
extern int	schedlock_running_pid(Oid dboid, int64 job_id);
extern SchedlockWait schedlock_queue_wait(Oid dboid, Oid role,
										  TimestampTz *since, char *error);

#endif							/* SCHEDLOCK_SCHED_SHMEM_H */
