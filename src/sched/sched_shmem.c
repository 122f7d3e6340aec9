/*-------------------------------------------------------------------------
 *
 * sched_shmem.c
 *	  The job scheduler's shared memory: the databases the launcher serves,
 *	  their queues (one per role with jobs in a database), the slots of the
 *	  job backends and housekeepers, and the wakeups that replace polling.
 *
 * One SchedlockShared struct (sched_shmem.h) lives in shared memory, with
 * room for SCHEDLOCK_MAX_DATABASES databases, SCHEDLOCK_MAX_QUEUES queues
 * and max_worker_processes backend slots, guarded by one LWLock of the
 * "schedlock" tranche.  Locking rule: read any field under the lock in
 * shared mode, write under it in exclusive mode; never wait or run SQL
 * while holding it.  Latches found under the lock are set after releasing
 * it (a latch stays valid while its process lives, and setting the latch of
 * a process that just exited is harmless: PGPROC latches are never freed).
 *
 * Wakeups happen at commit, so a backend woken by schedule_job() sees the
 * new job: the SQL API notes the role and next run of each job it wrote
 * (schedlock_note_due_at_commit), which stays backend-local until the
 * transaction commits; then the queue's due time is moved earlier and its
 * backend, or the launcher, is woken.  A transaction that changed the jobs
 * in a way that cannot be told per role (an adoption, an import) asks for
 * the database's housekeeping instead, which publishes every queue anew.
 * CREATE EXTENSION and CREATE DATABASE queue a probe request for the
 * launcher the same way.
 *
 * Statements that need a database without connections (DROP DATABASE,
 * CREATE DATABASE ... TEMPLATE, ALTER DATABASE ... RENAME, and DROP
 * EXTENSION schedlock, which must not wait for a job backend) make its
 * backends step aside: the backend marks the database in dropping_db with
 * its own pid, terminates the database's job backends and housekeeper, and
 * the launcher starts none there while the mark stands.  The mark goes when the statement fails, when its
 * transaction ends (so that the launcher sees a new name or a dropped
 * database when it starts backends again), or when the backend exits, even
 * by FATAL: a terminated DROP EXTENSION does not leave the database without
 * its jobs.
 *
 * IDENTIFICATION
 *	  src/sched/sched_shmem.c
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
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "sched_shmem.h"
#include "startwave.h"

/* The shared state, attached in every process by schedlock_shmem_startup. */
SchedlockShared *schedlock_shared = NULL;

/*
 * Backend-local: what to do when the current transaction commits.  The
 * roles whose queues get a due time (due_roles, due_times: n_due entries,
 * kept in TopMemoryContext and grown as needed), and whether the database
 * needs its housekeeping.
 */
static Oid *due_roles = NULL;
static TimestampTz *due_times = NULL;
static int	n_due = 0;
static int	max_due = 0;
static bool housekeep_pending = false;
static bool probe_pending = false;
static bool probe_all_pending = false;

/* Backend-local: whether this backend has step-aside marks standing. */
static bool step_aside_marks = false;
static bool step_aside_exit_registered = false;

static void release_step_aside_marks(void);
static void request_rescan(void);

/*
 * shared_size
 *		Bytes of shared memory the scheduler needs.
 */
static Size
shared_size(void)
{
	return add_size(offsetof(SchedlockShared, slots),
					mul_size(sizeof(SchedlockBackendSlot),
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
	schedlock_waves_attach(&schedlock_shared->waves, !found);
	LWLockRelease(AddinShmemInitLock);
}

/*
 * wake_backends
 *		Set the latch of every job backend of the database (of one role
 *		only, unless role is InvalidOid).  Returns how many it woke.
 */
static int
wake_backends(Oid dboid, Oid role)
{
	Latch	   *latches[64];
	int			n = 0;
	int			i;

	if (schedlock_shared == NULL)
		return 0;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots && n < lengthof(latches); i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

		if (slot->in_use && slot->kind == SCHEDLOCK_BACKEND_JOBS &&
			slot->dboid == dboid &&
			(!OidIsValid(role) || slot->role == role) &&
			slot->pid != 0 && slot->latch != NULL)
			latches[n++] = slot->latch;
	}
	LWLockRelease(schedlock_shared->lock);
	for (i = 0; i < n; i++)
		SetLatch(latches[i]);
	return n;
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
 * request_rescan
 *		Have the launcher read pg_database again (a database was dropped,
 *		renamed or copied) and wake it.
 */
static void
request_rescan(void)
{
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	schedlock_shared->rescan = true;
	LWLockRelease(schedlock_shared->lock);
	schedlock_wake_launcher();
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
 * schedlock_find_database
 *		The entry of dboid, or NULL; with create, a new entry is made when
 *		there is none (NULL when the table is full).  Caller holds the lock,
 *		exclusive when create.
 */
SchedlockDatabase *
schedlock_find_database(Oid dboid, bool create)
{
	SchedlockDatabase *free_entry = NULL;
	int			i;

	Assert(create ? LWLockHeldByMeInMode(schedlock_shared->lock, LW_EXCLUSIVE) :
		   LWLockHeldByMe(schedlock_shared->lock));
	for (i = 0; i < SCHEDLOCK_MAX_DATABASES; i++)
	{
		SchedlockDatabase *db = &schedlock_shared->dbs[i];

		if (db->in_use && db->dboid == dboid)
			return db;
		if (!db->in_use && free_entry == NULL)
			free_entry = db;
	}
	if (!create || free_entry == NULL)
		return NULL;
	memset(free_entry, 0, sizeof(SchedlockDatabase));
	free_entry->in_use = true;
	free_entry->dboid = dboid;
	free_entry->housekeep = true;
	free_entry->housekeep_at = DT_NOEND;
	return free_entry;
}

/*
 * schedlock_find_queue
 *		The queue of (dboid, role), or NULL; with create, a new one is made
 *		when there is none (NULL when the table is full), due at DT_NOEND.
 *		Caller holds the lock, exclusive when create.
 */
SchedlockQueue *
schedlock_find_queue(Oid dboid, Oid role, bool create)
{
	SchedlockQueue *free_entry = NULL;
	int			i;

	Assert(create ? LWLockHeldByMeInMode(schedlock_shared->lock, LW_EXCLUSIVE) :
		   LWLockHeldByMe(schedlock_shared->lock));
	for (i = 0; i < SCHEDLOCK_MAX_QUEUES; i++)
	{
		SchedlockQueue *q = &schedlock_shared->queues[i];

		if (q->in_use && q->dboid == dboid && q->role == role)
			return q;
		if (!q->in_use && free_entry == NULL)
			free_entry = q;
	}
	if (!create || free_entry == NULL)
		return NULL;
	memset(free_entry, 0, sizeof(SchedlockQueue));
	free_entry->in_use = true;
	free_entry->dboid = dboid;
	free_entry->role = role;
	free_entry->due_at = DT_NOEND;
	return free_entry;
}

/*
 * deliver_due
 *		At commit: move the noted queues' due times earlier and wake their
 *		backends, or the launcher when a queue has none; ask for the
 *		database's housekeeping when the transaction did.
 */
static void
deliver_due(void)
{
	bool		wake_launcher = false;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	schedlock_shared->note_count++;
	for (i = 0; i < n_due; i++)
	{
		SchedlockQueue *q = schedlock_find_queue(MyDatabaseId, due_roles[i],
												 true);

		if (q == NULL)
		{
			/* no room: the housekeeping reports it */
			housekeep_pending = true;
			continue;
		}
		if (due_times[i] < q->due_at)
			q->due_at = due_times[i];
		q->noted = schedlock_shared->note_count;
		/* a queue whose backends are all busy may need one more */
		wake_launcher = true;
	}
	if (housekeep_pending)
	{
		SchedlockDatabase *db = schedlock_find_database(MyDatabaseId, true);

		if (db != NULL)
			db->housekeep = true;
		wake_launcher = true;
	}
	LWLockRelease(schedlock_shared->lock);
	for (i = 0; i < n_due; i++)
		(void) wake_backends(MyDatabaseId, due_roles[i]);
	if (wake_launcher)
		schedlock_wake_launcher();
}

/*
 * scheduler_xact_callback
 *		At commit, deliver the wakeups the transaction asked for; at abort,
 *		forget them.  Either way, let the job backends of databases they
 *		stepped aside from come back.
 */
static void
scheduler_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (n_due > 0 || housekeep_pending)
				deliver_due();
			if (probe_all_pending)
				queue_probe(InvalidOid);
			else if (probe_pending)
				queue_probe(MyDatabaseId);
			n_due = 0;
			housekeep_pending = probe_pending = probe_all_pending = false;
			release_step_aside_marks();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			n_due = 0;
			housekeep_pending = probe_pending = probe_all_pending = false;
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
 * schedlock_note_due_at_commit
 *		When the current transaction commits, the queue of role in this
 *		database is due at 'due' at the latest (DT_NOBEGIN: now), and its
 *		backend or the launcher is woken.  A later due time changes nothing:
 *		a backend that finds nothing due publishes its queue's real time.
 */
void
schedlock_note_due_at_commit(Oid role, TimestampTz due)
{
	int			i;

	if (TIMESTAMP_NOT_FINITE(due) && due != DT_NOBEGIN)
		return;
	for (i = 0; i < n_due; i++)
		if (due_roles[i] == role)
		{
			due_times[i] = Min(due_times[i], due);
			return;
		}
	if (n_due == max_due)
	{
		int			new_max = Max(8, max_due * 2);

		if (due_roles == NULL)
		{
			due_roles = MemoryContextAlloc(TopMemoryContext,
										   sizeof(Oid) * new_max);
			due_times = MemoryContextAlloc(TopMemoryContext,
										   sizeof(TimestampTz) * new_max);
		}
		else
		{
			due_roles = repalloc(due_roles, sizeof(Oid) * new_max);
			due_times = repalloc(due_times, sizeof(TimestampTz) * new_max);
		}
		max_due = new_max;
	}
	due_roles[n_due] = role;
	due_times[n_due] = due;
	n_due++;
}

/*
 * schedlock_wake_workers_at_commit
 *		When the current transaction commits, have the database's
 *		housekeeping publish the due times of all its queues anew (for
 *		changes to the jobs that cannot be told per role).
 */
void
schedlock_wake_workers_at_commit(void)
{
	housekeep_pending = true;
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
		request_rescan();
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
 *		launcher from starting job backends for dboid until the statement's
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
	/* the launcher also stops backends that are starting but not yet here */
	schedlock_wake_launcher();

	for (waited = 0; waited < 10000; waited += 10)
	{
		bool		any = false;

		LWLockAcquire(schedlock_shared->lock, LW_SHARED);
		for (i = 0; i < schedlock_shared->nslots; i++)
		{
			SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

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
	request_rescan();
}

/*
 * schedlock_backend_attach
 *		Called by a job backend or housekeeper first thing, with its SIGHUP
 *		handler in place: take the slot the launcher reserved for it and
 *		publish pid and latch.  Returns false when the slot is no longer
 *		this process's (a restarted launcher gave up waiting for it and
 *		freed or reused it; the generation tells): the process must exit.
 *
 *		*reload tells whether the process must read the configuration
 *		files: the launcher has read them since it reserved the slot
 *		(schedlock_note_reload), so the postmaster's SIGHUP may have come
 *		while this process could not take it.  Otherwise the configuration
 *		it has from the postmaster is the current one, or the launcher,
 *		which has not read the new one yet, signals it when it does.
 */
bool
schedlock_backend_attach(SchedlockBackendSlot *slot, uint64 generation,
						 bool *reload)
{
	bool		ok;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	ok = slot->in_use && slot->generation == generation && !slot->attached;
	if (ok)
	{
		/* a reserved slot no process has taken holds no process's state */
		Assert(!slot->exited && slot->pid == 0 && slot->latch == NULL);
		Assert(slot->running_job == 0 && slot->nahead == 0);
		slot->attached = true;
		slot->pid = MyProcPid;
		slot->latch = MyLatch;
	}
	*reload = slot->reloads_seen != schedlock_shared->reloads;
	LWLockRelease(schedlock_shared->lock);
	return ok;
}

/*
 * schedlock_note_reload
 *		Called by the launcher after it has read the configuration files
 *		on SIGHUP: count the reload, and pass the signal on to every job
 *		backend and housekeeper that has taken its slot, as one that took
 *		it before the launcher counted may have missed the postmaster's
 *		(see schedlock_backend_attach).  The others read the files as they
 *		attach.  A process that already had the postmaster's signal reads
 *		them twice.
 */
void
schedlock_note_reload(void)
{
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	schedlock_shared->reloads++;
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

		if (slot->in_use && slot->attached && !slot->exited &&
			slot->pid != 0)
			kill(slot->pid, SIGHUP);
	}
	LWLockRelease(schedlock_shared->lock);
}

/*
 * schedlock_note_start
 *		Called by a job backend once it is ready for its first claim: how
 *		long it took since the launcher reserved its slot is a sample of
 *		start_ms (schedlock_slow_sample).
 */
void
schedlock_note_start(SchedlockBackendSlot *slot)
{
	TimestampTz now = GetCurrentTimestamp();
	long		took;
	Latch	   *wake = NULL;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	took = (long) ((now - slot->reserved_at) / 1000);
	if (took < 0)
		took = 0;
	if (took > SCHEDLOCK_START_LEAD_MAX_MS)
		took = SCHEDLOCK_START_LEAD_MAX_MS;
	schedlock_shared->start_ms =
		schedlock_slow_sample(schedlock_shared->start_ms, (int) took);
	slot->ready = true;
	/* a launcher that waits for a start to be over can start the next */
	if (schedlock_shared->starts_paced)
	{
		schedlock_shared->starts_paced = false;
		wake = schedlock_shared->launcher_latch;
	}
	LWLockRelease(schedlock_shared->lock);
	if (wake != NULL)
		SetLatch(wake);
}

/*
 * schedlock_backend_left_locked
 *		Called by a job backend that leaves because one of its statements
 *		could not get a lock within schedlock.bookkeeping_lock_timeout: the
 *		launcher, when it frees the slot, holds the queue back for a while
 *		and shows why (SCHEDLOCK_WAIT_LOCKED).
 */
void
schedlock_backend_left_locked(SchedlockBackendSlot *slot)
{
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	slot->left_locked = true;
	LWLockRelease(schedlock_shared->lock);
}

/*
 * schedlock_start_lead_ms
 *		How long before a queue's instant the launcher starts its backends:
 *		twice the slowest start seen lately (start_ms), within
 *		SCHEDLOCK_START_LEAD_MS and SCHEDLOCK_START_LEAD_MAX_MS.
 */
long
schedlock_start_lead_ms(void)
{
	long		lead = 2L * schedlock_shared->start_ms;

	return Min(Max(lead, (long) SCHEDLOCK_START_LEAD_MS),
			   (long) SCHEDLOCK_START_LEAD_MAX_MS);
}

/*
 * schedlock_backend_detach
 *		Called when a job backend or housekeeper exits: clear its pid, latch
 *		and run, mark it exited, and wake the launcher.  A backend that ends
 *		in the middle of a run leaves it running: the database's
 *		housekeeping closes it as lost, asked for here.
 */
void
schedlock_backend_detach(SchedlockBackendSlot *slot)
{
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);

	/*
	 * only the process that took the slot detaches, once: the launcher frees
	 * or reuses an attached slot only after it has exited
	 */
	Assert(slot->in_use && slot->attached && !slot->exited);
	Assert(slot->pid == MyProcPid);
	if (slot->running_job != 0 || slot->nahead != 0)
	{
		SchedlockDatabase *db = schedlock_find_database(slot->dboid, false);

		if (db != NULL)
			db->housekeep = true;
	}
	slot->pid = 0;
	slot->latch = NULL;
	slot->running_job = 0;
	slot->nahead = 0;
	slot->idle = false;
	slot->exited = true;
	LWLockRelease(schedlock_shared->lock);
	schedlock_wake_launcher();
}

/*
 * schedlock_set_running
 *		Publish the job the backend runs now (0: none), and the slot and
 *		attempt of its run (schedlock_note_died_run), for job_status and
 *		for telling a run in progress from a lost one
 *		(schedlock.job_worker_pid), busy since start or now, whichever is
 *		later (a run claimed ahead waits for its instant: that is not time
 *		spent running).  When every backend of its queue runs a job now,
 *		wake the launcher: the queue may need one more.
 */
void
schedlock_set_running(SchedlockBackendSlot *slot, int64 job_id,
					  TimestampTz run_slot, int32 attempt, TimestampTz start)
{
	TimestampTz since = job_id != 0 ? Max(GetCurrentTimestamp(), start) : 0;
	bool		all_busy = (job_id != 0);
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	slot->running_job = job_id;
	slot->running_since = since;
	slot->running_slot = run_slot;
	slot->running_attempt = attempt;
	slot->idle = false;
	for (i = 0; i < schedlock_shared->nslots && all_busy; i++)
	{
		SchedlockBackendSlot *s = &schedlock_shared->slots[i];

		if (s->in_use && s->kind == SCHEDLOCK_BACKEND_JOBS &&
			s->dboid == slot->dboid && s->role == slot->role &&
			s->running_job == 0)
			all_busy = false;
	}

	/*
	 * Its queue may need one more backend soon (budget.c, all_busy), unless
	 * the launcher already watches it: one wakeup, not one per run of a
	 * burst.
	 */
	all_busy = all_busy && !slot->busy_watched;
	LWLockRelease(schedlock_shared->lock);
	if (all_busy)
		schedlock_wake_launcher();
}

/*
 * schedlock_set_ahead
 *		Publish the n jobs whose runs the backend claimed before their
 *		instant and will run next (n = 0: none): until their runs have
 *		ended, each of them is run by this backend as far as
 *		schedlock_running_pid tells, so that a run marked running and
 *		committed ahead is not taken for a lost one.  Set before those
 *		claims commit, cleared after the runs' outcomes have.
 */
void
schedlock_set_ahead(SchedlockBackendSlot *slot, const int64 *job_ids, int n)
{
	Assert(n >= 0 && n <= SCHEDLOCK_MAX_RUNS_PER_COMMIT);
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	if (n > 0)
		memcpy(slot->ahead_jobs, job_ids, sizeof(int64) * n);
	slot->nahead = n;
	LWLockRelease(schedlock_shared->lock);
}

/*
 * schedlock_note_count / schedlock_publish_due
 *		A job backend reads the count of commits that moved a due time
 *		earlier before its pass (seen), and after the pass publishes its
 *		queue's earliest job due (DT_NOEND: none), how much earlier than
 *		usual a backend for it is to start (lead_ms; -1 keeps the queue's),
 *		how many backends the SQL jobs due at that time keep busy at once
 *		(wanted; -1 keeps the queue's), and whether it has more due now than
 *		its backends run (backlog: the launcher may add one).
 *		When a commit noted the queue after seen, the pass may have missed
 *		it: the earlier time stays and *again asks for another pass.
 *		Returns whether the backend should leave now (the launcher asked it
 *		to).
 */
uint64
schedlock_note_count(void)
{
	uint64		n;

	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	n = schedlock_shared->note_count;
	LWLockRelease(schedlock_shared->lock);
	return n;
}

bool
schedlock_publish_due(SchedlockBackendSlot *slot, TimestampTz due_at,
					  int lead_ms, int wanted, bool backlog, uint64 seen,
					  bool *again)
{
	SchedlockQueue *q;
	bool		leave;
	bool		wake = false;

	*again = false;
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	q = schedlock_find_queue(slot->dboid, slot->role, true);
	if (q != NULL)
	{
		if (q->noted > seen)
		{
			/* a commit since the pass began: keep its time, look again */
			q->due_at = Min(q->due_at, due_at);
			*again = true;
		}
		else
			q->due_at = due_at;
		if (lead_ms >= 0)
			q->lead_ms = lead_ms;
		if (wanted >= 0)
		{
			/* more backends for a new instant: the launcher plans a start */
			wake = (wanted > q->nbackends &&
					(q->wanted != wanted || q->wanted_at != due_at));
			q->wanted = wanted;
			q->wanted_at = due_at;
		}
		wake |= (backlog && !q->backlog);
		q->backlog = backlog;
	}
	leave = slot->yield;
	LWLockRelease(schedlock_shared->lock);
	if (wake)
		schedlock_wake_launcher();
	return leave;
}

/*
 * schedlock_set_idle
 *		Whether the job backend waits for its queue's next job (the
 *		launcher then asks it to leave first when others wait: a backend
 *		that turns idle while due jobs wait for room wakes it, rather than
 *		idling until the launcher's next look).  Returns whether it has
 *		been asked to leave.
 */
bool
schedlock_set_idle(SchedlockBackendSlot *slot, bool idle)
{
	bool		leave;
	bool		wake;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	wake = idle && !slot->idle && schedlock_shared->room_wanted;
	slot->idle = idle;
	leave = slot->yield;
	LWLockRelease(schedlock_shared->lock);
	if (idle && (leave || wake))
		schedlock_wake_launcher();
	return leave;
}

/*
 * schedlock_queue_rank
 *		How many backends of the same queue were reserved before this one
 *		(0: the queue's first).  When earlier_free is not NULL, *earlier_free
 *		tells whether one of those is not running a job now: the runs this
 *		one just made could have been that one's, had it woken first (under
 *		load the queue's first backend can wake more than
 *		SCHEDLOCK_EXTRA_DELAY_MS late).
 */
int
schedlock_queue_rank(SchedlockBackendSlot *slot, bool *earlier_free)
{
	int			rank = 0;
	bool		free = false;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *s = &schedlock_shared->slots[i];

		if (s != slot && s->in_use && s->kind == SCHEDLOCK_BACKEND_JOBS &&
			s->dboid == slot->dboid && s->role == slot->role &&
			s->generation < slot->generation)
		{
			rank++;
			if (s->attached && !s->exited && !s->yield && s->running_job == 0)
				free = true;
		}
	}
	LWLockRelease(schedlock_shared->lock);
	if (earlier_free != NULL)
		*earlier_free = free;
	return rank;
}

/*
 * schedlock_starting_backends
 *		Job backends the launcher has reserved that are not yet ready for
 *		their first claim, in the whole cluster; one reserved more than
 *		SCHEDLOCK_START_STUCK_MS ago no longer counts (its start waits for
 *		something else than the machine).  Caller holds the lock.
 */
int
schedlock_starting_backends(TimestampTz now)
{
	TimestampTz since = TimestampTzPlusMilliseconds(now,
													-SCHEDLOCK_START_STUCK_MS);
	int			n = 0;
	int			i;

	Assert(LWLockHeldByMe(schedlock_shared->lock));

	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *s = &schedlock_shared->slots[i];

		if (s->in_use && s->kind == SCHEDLOCK_BACKEND_JOBS && !s->ready &&
			!s->exited && s->reserved_at > since)
			n++;
	}
	return n;
}

/*
 * schedlock_housekeep_by
 *		The database's housekeeping is due at 'when' at the latest: a NOTIFY
 *		run's deadline, or the next history pruning.
 */
void
schedlock_housekeep_by(Oid dboid, TimestampTz when)
{
	SchedlockDatabase *db;
	bool		earlier = false;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	db = schedlock_find_database(dboid, false);
	if (db != NULL && when < db->housekeep_at)
	{
		db->housekeep_at = when;
		earlier = true;
	}
	LWLockRelease(schedlock_shared->lock);
	if (earlier)
		schedlock_wake_launcher();
}

/*
 * schedlock_running_pid
 *		The pid of the job backend of dboid that runs job_id now, or has
 *		claimed its run ahead and runs it next (schedlock_set_ahead), or 0.
 */
int
schedlock_running_pid(Oid dboid, int64 job_id)
{
	int			pid = 0;
	int			i;

	if (schedlock_shared == NULL)
		return 0;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

		if (!slot->in_use || slot->dboid != dboid || slot->pid == 0)
			continue;
		if (slot->running_job == job_id)
			pid = slot->pid;
		for (int k = 0; k < slot->nahead && pid == 0; k++)
		{
			if (slot->ahead_jobs[k] == job_id)
				pid = slot->pid;
		}
		if (pid != 0)
			break;
	}
	LWLockRelease(schedlock_shared->lock);
	return pid;
}

/*
 * schedlock_queue_wait
 *		Why the due jobs of role in dboid wait for a backend, and since
 *		when; SCHEDLOCK_WAIT_NONE when they do not.  *error (256 bytes) gets
 *		the start-up error for SCHEDLOCK_WAIT_START_FAILED.
 */
SchedlockWait
schedlock_queue_wait(Oid dboid, Oid role, TimestampTz *since, char *error)
{
	SchedlockWait wait = SCHEDLOCK_WAIT_NONE;
	SchedlockQueue *q;

	error[0] = '\0';
	*since = 0;
	if (schedlock_shared == NULL)
		return wait;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	q = schedlock_find_queue(dboid, role, false);
	if (q != NULL && q->nbackends == 0)
	{
		wait = q->wait;
		*since = q->waiting_since;
		strlcpy(error, q->start_error, 256);
	}
	LWLockRelease(schedlock_shared->lock);
	return wait;
}

/*
 * schedlock_note_died_run
 *		From a job backend's exit, before its transaction is rolled back
 *		(so before another backend can claim the job's row): note the run it
 *		was in the middle of, if any, in the ring of died runs.  Not when
 *		schedlock itself stopped the backend to step aside for a statement
 *		on its database (schedlock_stop_database_workers): the run's slot
 *		runs again afterwards, as it always has.
 */
void
schedlock_note_died_run(SchedlockBackendSlot *slot)
{
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	if (slot->running_job != 0 && slot->running_attempt > 0 &&
		!schedlock_database_dropping(slot->dboid))
	{
		SchedlockDiedRun *d = &schedlock_shared->died[schedlock_shared->died_next];

		if (!OidIsValid(d->dboid))
			schedlock_shared->ndied++;
		d->dboid = slot->dboid;
		d->job_id = slot->running_job;
		d->slot = slot->running_slot;
		d->attempt = slot->running_attempt;
		schedlock_shared->died_next = (schedlock_shared->died_next + 1) %
			SCHEDLOCK_DIED_RUNS;
	}
	LWLockRelease(schedlock_shared->lock);
}

/*
 * schedlock_take_died_run
 *		Whether a backend ended in the middle of this run of job job_id of
 *		database dboid (its slot and attempt) without recording it; the
 *		note is taken (removed) when it did.
 */
bool
schedlock_take_died_run(Oid dboid, int64 job_id, TimestampTz slot,
						int32 attempt)
{
	bool		found = false;

	/*
	 * Almost always none: no lock then.  A note is written before the dying
	 * backend's transaction ends, so before the caller could lock the job's
	 * row (the lock manager's locks order the two).
	 */
	if (schedlock_shared->ndied == 0)
		return false;
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SCHEDLOCK_DIED_RUNS && !found; i++)
	{
		SchedlockDiedRun *d = &schedlock_shared->died[i];

		if (d->dboid == dboid && d->job_id == job_id && d->slot == slot &&
			d->attempt == attempt)
		{
			d->dboid = InvalidOid;
			schedlock_shared->ndied--;
			found = true;
		}
	}
	LWLockRelease(schedlock_shared->lock);
	return found;
}
