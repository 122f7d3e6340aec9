/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The job scheduler's shared memory: worker slots, the launcher's
 *	  latch, and the wakeups that replace polling.
 *
 * One SchedlockShared struct (scheduler.h) lives in shared memory, sized
 * for max_worker_processes worker slots, and is guarded by one LWLock of
 * the "schedlock" tranche.  Locking rule: read any field under the lock in
 * shared mode, write under it in exclusive mode; never wait or run SQL
 * while holding it.  Latches found under the lock are set after releasing
 * it (a latch stays valid while its process lives, and setting the latch of
 * a process that just exited is harmless: PGPROC latches are never freed).
 *
 * Wakeups happen at commit, so a worker woken by schedule_job() sees the
 * new job: the SQL API calls schedlock_wake_workers_at_commit(), which only
 * raises a backend-local flag; the transaction callback sets the latches of
 * this database's workers when the transaction commits, and forgets the
 * flag when it aborts.  CREATE EXTENSION and CREATE DATABASE queue a probe
 * request for the launcher the same way.
 *
 * Statements that need a database without connections (DROP DATABASE,
 * CREATE DATABASE ... TEMPLATE, ALTER DATABASE ... RENAME, and DROP
 * EXTENSION schedlock, which must not wait for a worker) make its workers
 * step aside: the backend marks the database in dropping_db with its own
 * pid, terminates the workers, and the launcher starts none there while the
 * mark stands.  The mark goes when the statement fails, when its
 * transaction ends (so that the launcher sees a new name or a dropped
 * database when it starts workers again), or when the backend exits, even
 * by FATAL: a terminated DROP EXTENSION does not leave the database without
 * workers.
 *
 * IDENTIFICATION
 *	  src/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "schedlock.h"
#include "scheduler.h"

/* The shared state, attached in every process by schedlock_shmem_startup. */
SchedlockShared *schedlock_shared = NULL;

/* Backend-local: what to do when the current transaction commits. */
static bool wake_workers_pending = false;
static bool probe_pending = false;
static bool probe_all_pending = false;

/* Backend-local: whether this backend has step-aside marks standing. */
static bool step_aside_marks = false;
static bool step_aside_exit_registered = false;

static void release_step_aside_marks(void);

/*
 * shared_size
 *		Bytes of shared memory the scheduler needs.
 */
static Size
shared_size(void)
{
	return add_size(offsetof(SchedlockShared, slots),
					mul_size(sizeof(SchedlockWorkerSlot),
							 Max(max_worker_processes, 1)));
}

/*
 * schedlock_shmem_request
 *		Called from the shmem_request_hook: reserve memory and the LWLock.
 */
void
schedlock_shmem_request(void)
{
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche("schedlock", 1);
}

/*
 * schedlock_shmem_startup
 *		Called from the shmem_startup_hook: create or attach to the struct.
 *		Runs in the postmaster (and, under EXEC_BACKEND, in every child);
 *		after a crash restart the memory is created afresh.
 */
void
schedlock_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	schedlock_shared = ShmemInitStruct("schedlock scheduler", shared_size(),
									   &found);
	if (!found)
	{
		memset(schedlock_shared, 0, shared_size());
		schedlock_shared->lock = &(GetNamedLWLockTranche("schedlock"))->lock;
		schedlock_shared->nslots = Max(max_worker_processes, 1);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * wake_database_workers
 *		Set the latch of every worker of this database.
 */
static void
wake_database_workers(Oid dboid)
{
	Latch	   *latches[SCHEDLOCK_MAX_WORKERS_PER_DB * 4];
	int			n = 0;
	int			i;

	if (schedlock_shared == NULL)
		return;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots && n < lengthof(latches); i++)
	{
		SchedlockWorkerSlot *slot = &schedlock_shared->slots[i];

		if (slot->in_use && slot->dboid == dboid && slot->pid != 0 &&
			slot->latch != NULL)
			latches[n++] = slot->latch;
	}
	LWLockRelease(schedlock_shared->lock);
	for (i = 0; i < n; i++)
		SetLatch(latches[i]);
}

/*
 * schedlock_wake_launcher
 *		Set the launcher's latch, if it runs.
 */
void
schedlock_wake_launcher(void)
{
	Latch	   *latch;

	if (schedlock_shared == NULL)
		return;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	latch = schedlock_shared->launcher_latch;
	LWLockRelease(schedlock_shared->lock);
	if (latch != NULL)
		SetLatch(latch);
}

/*
 * queue_probe
 *		Ask the launcher to look again for the extension in a database (or
 *		in all of them, for InvalidOid or when the queue is full).
 */
static void
queue_probe(Oid dboid)
{
	int			i;
	bool		known = false;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	if (!OidIsValid(dboid) ||
		schedlock_shared->nprobes >= SCHEDLOCK_MAX_PROBES)
		schedlock_shared->probe_all = true;
	else
	{
		for (i = 0; i < schedlock_shared->nprobes; i++)
			if (schedlock_shared->probe_db[i] == dboid)
				known = true;
		if (!known)
			schedlock_shared->probe_db[schedlock_shared->nprobes++] = dboid;
	}
	LWLockRelease(schedlock_shared->lock);
	schedlock_wake_launcher();
}

/*
 * scheduler_xact_callback
 *		At commit, deliver the wakeups the transaction asked for; at abort,
 *		forget them.  Either way, let the workers of databases they stepped
 *		aside from come back.
 */
static void
scheduler_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_workers_pending)
				wake_database_workers(MyDatabaseId);
			if (probe_all_pending)
				queue_probe(InvalidOid);
			else if (probe_pending)
				queue_probe(MyDatabaseId);
			wake_workers_pending = probe_pending = probe_all_pending = false;
			release_step_aside_marks();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			wake_workers_pending = probe_pending = probe_all_pending = false;
			release_step_aside_marks();
			break;
		case XACT_EVENT_PREPARE:
			release_step_aside_marks();
			break;
		default:
			break;
	}
}

/*
 * schedlock_xact_init
 *		Register the transaction callback (from _PG_init).
 */
void
schedlock_xact_init(void)
{
	RegisterXactCallback(scheduler_xact_callback, NULL);
}

/*
 * schedlock_wake_workers_at_commit
 *		Wake this database's workers when the current transaction commits.
 */
void
schedlock_wake_workers_at_commit(void)
{
	wake_workers_pending = true;
}

/*
 * schedlock_probe_database_at_commit
 *		Have the launcher look for the extension in this database once the
 *		current transaction (CREATE EXTENSION) commits.
 */
void
schedlock_probe_database_at_commit(void)
{
	probe_pending = true;
}

/*
 * schedlock_probe_all_at_commit
 *		Have the launcher look at every database after commit (CREATE
 *		DATABASE may copy a template that has the extension).
 */
void
schedlock_probe_all_at_commit(void)
{
	probe_all_pending = true;
}

/*
 * schedlock_database_dropping
 *		Whether a statement has the workers of dboid step aside.  Caller
 *		holds the lock in at least shared mode.
 */
bool
schedlock_database_dropping(Oid dboid)
{
	int			i;

	for (i = 0; i < schedlock_shared->ndropping; i++)
		if (schedlock_shared->dropping_db[i] == dboid)
			return true;
	return false;
}

/*
 * forget_step_aside_marks
 *		Remove this backend's marks for dboid (all of them for InvalidOid).
 *		Returns whether it removed any.
 */
static bool
forget_step_aside_marks(Oid dboid)
{
	bool		removed = false;
	bool		left = false;
	int			i = 0;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	while (i < schedlock_shared->ndropping)
	{
		if (schedlock_shared->dropping_pid[i] == MyProcPid &&
			(!OidIsValid(dboid) || schedlock_shared->dropping_db[i] == dboid))
		{
			int			last = --schedlock_shared->ndropping;

			schedlock_shared->dropping_db[i] = schedlock_shared->dropping_db[last];
			schedlock_shared->dropping_pid[i] = schedlock_shared->dropping_pid[last];
			removed = true;
			continue;
		}
		if (schedlock_shared->dropping_pid[i] == MyProcPid)
			left = true;
		i++;
	}
	LWLockRelease(schedlock_shared->lock);
	step_aside_marks = left;
	return removed;
}

/*
 * release_step_aside_marks
 *		Remove every mark this backend set, and wake the launcher so that it
 *		starts those databases' workers again.  Called at the end of the
 *		transaction and when the backend exits.
 */
static void
release_step_aside_marks(void)
{
	if (!step_aside_marks || schedlock_shared == NULL)
		return;
	if (forget_step_aside_marks(InvalidOid))
		schedlock_wake_launcher();
}

/*
 * release_step_aside_marks_at_exit
 *		before_shmem_exit callback: a backend that ends, even by FATAL in
 *		the middle of the statement, leaves no mark behind.
 */
static void
release_step_aside_marks_at_exit(int code, Datum arg)
{
	release_step_aside_marks();
}

/*
 * schedlock_stop_database_workers
 *		Before a statement that needs dboid without connections: keep the
 *		launcher from starting workers for dboid until the statement's
 *		transaction ends (or schedlock_database_drop_done), terminate the
 *		running ones and wait (up to 10 s) until they have left.  The caller
 *		has checked that the statement may go ahead.
 */
void
schedlock_stop_database_workers(Oid dboid)
{
	bool		marked = false;
	int			waited;
	int			i;

	if (schedlock_shared == NULL)
		return;
	if (!step_aside_exit_registered)
	{
		before_shmem_exit(release_step_aside_marks_at_exit, (Datum) 0);
		step_aside_exit_registered = true;
	}
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < schedlock_shared->ndropping; i++)
		if (schedlock_shared->dropping_db[i] == dboid &&
			schedlock_shared->dropping_pid[i] == MyProcPid)
			marked = true;
	if (!marked && schedlock_shared->ndropping < SCHEDLOCK_MAX_DROPPING)
	{
		i = schedlock_shared->ndropping++;
		schedlock_shared->dropping_db[i] = dboid;
		schedlock_shared->dropping_pid[i] = MyProcPid;
		marked = true;
	}
	LWLockRelease(schedlock_shared->lock);
	if (marked)
		step_aside_marks = true;
	/* the launcher also stops workers that are starting but not yet here */
	schedlock_wake_launcher();

	for (waited = 0; waited < 10000; waited += 10)
	{
		bool		any = false;

		LWLockAcquire(schedlock_shared->lock, LW_SHARED);
		for (i = 0; i < schedlock_shared->nslots; i++)
		{
			SchedlockWorkerSlot *slot = &schedlock_shared->slots[i];

			if (slot->in_use && slot->dboid == dboid && slot->pid != 0)
			{
				any = true;
				if (waited % 1000 == 0)
					kill(slot->pid, SIGTERM);
			}
		}
		LWLockRelease(schedlock_shared->lock);
		if (!any)
			break;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
	}
}

/*
 * schedlock_database_drop_done
 *		After a statement that failed: let the launcher manage dboid again
 *		at once.  (After one that succeeded, the mark stays until its
 *		transaction ends.)
 */
void
schedlock_database_drop_done(Oid dboid)
{
	if (schedlock_shared == NULL)
		return;
	(void) forget_step_aside_marks(dboid);
	schedlock_wake_launcher();
}

/*
 * schedlock_wake_database_workers
 *		Set the latch of every worker of database dboid, now.
 */
void
schedlock_wake_database_workers(Oid dboid)
{
	wake_database_workers(dboid);
}
