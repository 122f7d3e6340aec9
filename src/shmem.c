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
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

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
	Size		size;

	size = add_size(offsetof(SchedlockShared, slots),
					mul_size(sizeof(SchedlockWorkerSlot),
							 Max(max_worker_processes, 1)));
	size = MAXALIGN(size);
	return add_size(size, mul_size(sizeof(Oid), Max(max_worker_processes, 1)));
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
		schedlock_shared->reboot_db = (Oid *)
			((char *) schedlock_shared +
			 MAXALIGN(offsetof(SchedlockShared, slots) +
					  sizeof(SchedlockWorkerSlot) * schedlock_shared->nslots));
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

/*
 * schedlock_worker_attach
 *		Called by a worker first thing: take the slot the launcher reserved
 *		for it and publish pid and latch.  Returns false when the slot is no
 *		longer this worker's (a restarted launcher gave up waiting for it
 *		and freed or reused it; the generation tells): the worker must exit.
 */
bool
schedlock_worker_attach(SchedlockWorkerSlot *slot, uint64 generation)
{
	bool		ok;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	ok = slot->in_use && slot->generation == generation && !slot->attached;
	if (ok)
	{
		slot->attached = true;
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
	}
	LWLockRelease(schedlock_shared->lock);
	return ok;
}

/*
 * schedlock_worker_detach
 *		Called when a worker exits: clear its pid, latch and run, mark it
 *		exited, and wake the launcher (which may have adopted the worker
 *		and then gets no postmaster notification).
 */
void
schedlock_worker_detach(SchedlockWorkerSlot *slot)
{
	schedlock_pool_release_role(slot);
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	slot->pid = 0;
	slot->latch = NULL;
	slot->running_job = 0;
	slot->exited = true;
	LWLockRelease(schedlock_shared->lock);
	schedlock_wake_launcher();
}

/*
 * schedlock_reboot_due
 *		Whether the @reboot jobs of dboid have not fired yet in this server
 *		life.
 */
bool
schedlock_reboot_due(Oid dboid)
{
	bool		due = true;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots; i++)
		if (schedlock_shared->reboot_db[i] == dboid)
			due = false;
	LWLockRelease(schedlock_shared->lock);
	return due;
}

/*
 * db_has_workers
 *		Whether any slot is reserved for dboid.  Caller holds the lock.
 */
static bool
db_has_workers(Oid dboid)
{
	int			i;

	for (i = 0; i < schedlock_shared->nslots; i++)
		if (schedlock_shared->slots[i].in_use &&
			schedlock_shared->slots[i].dboid == dboid)
			return true;
	return false;
}

/*
 * schedlock_reboot_done
 *		Record that the @reboot jobs of dboid fired.  The table has a place
 *		per worker slot and the caller holds one, so there is always a free
 *		entry or one of a database without workers to take over.
 */
void
schedlock_reboot_done(Oid dboid)
{
	Oid		   *dbs = schedlock_shared->reboot_db;
	int			victim = -1;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		if (dbs[i] == dboid)
		{
			victim = -1;
			break;
		}
		if (victim < 0 && (!OidIsValid(dbs[i]) || !db_has_workers(dbs[i])))
			victim = i;
	}
	if (i == schedlock_shared->nslots)
		dbs[victim >= 0 ? victim : 0] = dboid;
	LWLockRelease(schedlock_shared->lock);
}

/*
 * schedlock_pool_set_running
 *		Publish the job the worker runs now (0: none).  When every worker of
 *		the database runs a job and the pool may grow, wake the launcher;
 *		when the run is over, give the role's place back.
 */
void
schedlock_pool_set_running(SchedlockWorkerSlot *slot, int64 job_id)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		all_busy = true;
	int			n = 0;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	slot->running_job = job_id;
	slot->running_since = job_id != 0 ? now : 0;
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockWorkerSlot *s = &schedlock_shared->slots[i];

		if (s->in_use && s->dboid == slot->dboid)
		{
			n++;
			if (s->running_job == 0)
				all_busy = false;
		}
	}
	LWLockRelease(schedlock_shared->lock);
	if (job_id != 0 && all_busy &&
		n < Max(schedlock_workers, schedlock_max_workers))
		schedlock_wake_launcher();
	if (job_id == 0)
		schedlock_pool_release_role(slot);
}

/*
 * role_runs
 *		How many workers of dboid other than 'self' hold a place for role.
 *		Caller holds the lock.
 */
static int
role_runs(Oid dboid, Oid role, SchedlockWorkerSlot *self)
{
	int			n = 0;
	int			i;

	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockWorkerSlot *s = &schedlock_shared->slots[i];

		if (s != self && s->in_use && s->dboid == dboid &&
			s->running_role == role)
			n++;
	}
	return n;
}

/*
 * schedlock_pool_capped_roles
 *		Fill roles (up to max entries) with the roles whose jobs the worker
 *		may not claim now: those with schedlock.max_runs_per_role runs in
 *		progress in its database.  Returns how many.
 */
int
schedlock_pool_capped_roles(SchedlockWorkerSlot *slot, Oid *roles, int max)
{
	int			n = 0;
	int			i;
	int			j;

	if (schedlock_max_runs_per_role <= 0)
		return 0;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots && n < max; i++)
	{
		SchedlockWorkerSlot *s = &schedlock_shared->slots[i];
		bool		known = false;

		if (!s->in_use || s->dboid != slot->dboid ||
			!OidIsValid(s->running_role))
			continue;
		for (j = 0; j < n; j++)
			if (roles[j] == s->running_role)
				known = true;
		if (!known &&
			role_runs(slot->dboid, s->running_role, slot) >=
			schedlock_max_runs_per_role)
			roles[n++] = s->running_role;
	}
	LWLockRelease(schedlock_shared->lock);
	return n;
}

/*
 * schedlock_pool_take_role
 *		Take one of role's schedlock.max_runs_per_role places in the
 *		worker's database for the job it claimed.  Returns false when they
 *		are all taken: the worker must leave the job for later.
 */
bool
schedlock_pool_take_role(SchedlockWorkerSlot *slot, Oid role)
{
	bool		ok = true;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	if (schedlock_max_runs_per_role > 0 &&
		role_runs(slot->dboid, role, slot) >= schedlock_max_runs_per_role)
		ok = false;
	else
		slot->running_role = role;
	LWLockRelease(schedlock_shared->lock);
	return ok;
}

/*
 * schedlock_pool_release_role
 *		Give back the worker's place for a role, if it holds one.  When the
 *		role was at its cap, wake the database's workers: a job of the role
 *		they left due may be claimed now.
 */
void
schedlock_pool_release_role(SchedlockWorkerSlot *slot)
{
	bool		at_cap = false;

	/* only this worker sets its running_role: no lock needed to see none */
	if (!OidIsValid(slot->running_role))
		return;
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	if (OidIsValid(slot->running_role))
	{
		at_cap = schedlock_max_runs_per_role > 0 &&
			role_runs(slot->dboid, slot->running_role, slot) + 1 >=
			schedlock_max_runs_per_role;
		slot->running_role = InvalidOid;
	}
	LWLockRelease(schedlock_shared->lock);
	if (at_cap)
		wake_database_workers(slot->dboid);
}

/*
 * schedlock_pool_retire_if_idle
 *		For a worker beyond schedlock.workers: leave the pool (exit) once it
 *		has claimed nothing for SCHEDLOCK_POOL_IDLE_MS; otherwise return how
 *		long it may sleep, a little longer than the lower workers (so that
 *		idle lower workers take the jobs first) and no longer than its idle
 *		time left.  claimed: whether the last pass claimed anything.
 */
long
schedlock_pool_retire_if_idle(SchedlockWorkerSlot *slot, bool claimed,
							  TimestampTz *idle_since, long sleep_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	int			rank = slot->worker_index - schedlock_workers + 1;
	long		left;

	if (rank <= 0)
		return sleep_ms;
	if (claimed || *idle_since == 0)
		*idle_since = now;
	if (TimestampDifferenceExceeds(*idle_since, now, SCHEDLOCK_POOL_IDLE_MS))
	{
		LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
		slot->retired = true;
		LWLockRelease(schedlock_shared->lock);
		ereport(DEBUG1,
				(errmsg_internal("%s leaves the pool after %d s without a job",
						MyBgworkerEntry->bgw_name,
						SCHEDLOCK_POOL_IDLE_MS / 1000)));
		proc_exit(0);
	}
	if (sleep_ms > 0)
		sleep_ms += Min(rank, 3) * SCHEDLOCK_POOL_EXTRA_DELAY_MS;
	left = (long) (SCHEDLOCK_POOL_IDLE_MS -
				   (now - *idle_since) / 1000) + 1;
	return Min(sleep_ms, left);
}
