/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The scheduler's launcher: one background worker for the whole
 *	  cluster that starts job backends and housekeepers on demand: job
 *	  backends under one budget (schedlock.max_job_backends) shared by every
 *	  database, housekeepers under one of their own
 *	  (schedlock.max_housekeepers).
 *
 * How it works, at length: docs/internals.md, section
 * "The launcher and its budget".
 *
 * IDENTIFICATION
 *	  src/sched/launcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/kept_query.h"
#include "base/settings.h"
#include "budget.h"
#include "launcher.h"
#include "sched_shmem.h"
#include "worker.h"

/* Delay before retrying after max_worker_processes ran out. */
#define LAUNCHER_NO_SLOT_DELAY_MS	1000

/* How long an adopted slot may wait for its backend to take it. */
#define LAUNCHER_ADOPT_GRACE_MS		30000

/*
 * How soon the launcher looks again while starts are paced, should no
 * starting backend wake it (one that exits before it is ready).
 */
#define LAUNCHER_PACED_RECHECK_MS	100

/* How often pg_database is read again without being asked to. */
#define LAUNCHER_SCAN_EVERY_MS		60000

/*
 * Whether this pass left due jobs waiting for a backend to make room (the
 * budget, a database's cap, a role's cap): published at its end as
 * schedlock_shared->room_wanted.
 */
static bool pass_wants_room = false;

/* The handles of the backends this launcher started (NULL: adopted). */
static BackgroundWorkerHandle **handles = NULL;

/* Something that wants a process: a database's housekeeping or a queue. */
typedef struct Want
{
	int			db;				/* index in dbs */
	int			queue;			/* index in queues; -1: housekeeper */
	TimestampTz due_at;			/* order: earliest first */
	bool		growth;			/* more backends for a busy queue */
	int			count;			/* how many processes */
} Want;

/*
 * schedlock_register_launcher
 *		Register the launcher as a static background worker (from
 *		_PG_init, in the postmaster).
 */
void
schedlock_register_launcher(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "schedlock");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "schedlock_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "schedlock launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "schedlock launcher");
	worker.bgw_main_arg = (Datum) 0;
	worker.bgw_notify_pid = 0;
	RegisterBackgroundWorker(&worker);
}

/*
 * launcher_detach
 *		on_shmem_exit callback: forget the launcher's latch.
 */
static void
launcher_detach(int code, Datum arg)
{
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	schedlock_shared->launcher_pid = 0;
	schedlock_shared->launcher_latch = NULL;
	LWLockRelease(schedlock_shared->lock);
}

/*
 * take_probe_requests
 *		Move the probe requests queued in shared memory into the database
 *		table: a probed database gets a housekeeper, which looks for the
 *		extension again.  Returns whether there were any.  Caller holds the
 *		lock exclusively.
 */
static bool
take_probe_requests(void)
{
	bool		any = schedlock_shared->probe_all ||
		schedlock_shared->nprobes > 0 || schedlock_shared->rescan;
	int			i;

	Assert(LWLockHeldByMeInMode(schedlock_shared->lock, LW_EXCLUSIVE));

	schedlock_shared->rescan = false;
	for (i = 0; i < SCHEDLOCK_MAX_DATABASES; i++)
	{
		SchedlockDatabase *db = &schedlock_shared->dbs[i];
		int			j;
		bool		probed = schedlock_shared->probe_all;

		if (!db->in_use)
			continue;
		for (j = 0; j < schedlock_shared->nprobes; j++)
			if (schedlock_shared->probe_db[j] == db->dboid)
				probed = true;
		if (probed)
		{
			db->no_extension = false;
			db->housekeep = true;
			db->probes++;
		}
	}
	schedlock_shared->probe_all = false;
	schedlock_shared->nprobes = 0;
	return any;
}

/*
 * scan_databases
 *		Read pg_database: every database that can run jobs gets an entry
 *		(a new one is housekept), and the entries of databases that are
 *		gone, or no longer take connections, go with their queues once they
 *		have no process left.  Runs its own transaction; must be called
 *		outside one.
 */
static void
scan_databases(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	int			i;
	bool		full = false;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < SCHEDLOCK_MAX_DATABASES; i++)
		schedlock_shared->dbs[i].seen = false;
	LWLockRelease(schedlock_shared->lock);

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tup);
		SchedlockDatabase *db;

		if (!form->datallowconn || form->datistemplate ||
			form->datconnlimit == DATCONNLIMIT_INVALID_DB)
			continue;
		LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
		db = schedlock_find_database(form->oid, true);
		if (db != NULL)
		{
			db->seen = true;
			namestrcpy(&db->dbname, NameStr(form->datname));
		}
		else
			full = true;
		LWLockRelease(schedlock_shared->lock);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(TopMemoryContext);

	if (full)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("schedlock serves at most %d databases",
						SCHEDLOCK_MAX_DATABASES),
				 errdetail("The jobs of the databases beyond them do not run.")));

	/* forget databases that are gone and have no process left */
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < SCHEDLOCK_MAX_DATABASES; i++)
	{
		SchedlockDatabase *db = &schedlock_shared->dbs[i];
		bool		busy = false;
		int			j;

		if (!db->in_use || db->seen)
			continue;
		for (j = 0; j < schedlock_shared->nslots; j++)
			if (schedlock_shared->slots[j].in_use &&
				schedlock_shared->slots[j].dboid == db->dboid)
				busy = true;
		if (busy)
			continue;
		for (j = 0; j < SCHEDLOCK_MAX_QUEUES; j++)
			if (schedlock_shared->queues[j].in_use &&
				schedlock_shared->queues[j].dboid == db->dboid)
				schedlock_shared->queues[j].in_use = false;
		db->in_use = false;
	}
	LWLockRelease(schedlock_shared->lock);
}

/*
 * adopt_backends
 *		At launcher start: take over the backends an earlier launcher of
 *		this server life started (their slots are still reserved).
 */
static void
adopt_backends(void)
{
	int			adopted = 0;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots; i++)
		if (schedlock_shared->slots[i].in_use)
			adopted++;
	LWLockRelease(schedlock_shared->lock);
	if (adopted > 0)
		ereport(LOG,
				(errmsg("schedlock launcher adopted %d running job backends",
						adopted)));
}

/*
 * backend_stopped
 *		Whether the process in slot i has stopped for good.
 */
static bool
backend_stopped(int i, TimestampTz now)
{
	SchedlockBackendSlot *slot = &schedlock_shared->slots[i];
	pid_t		pid;
	bool		stopped;

	if (handles[i] != NULL)
		return GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	stopped = slot->exited ||
		(!slot->attached &&
		 TimestampDifferenceExceeds(slot->reserved_at, now,
									LAUNCHER_ADOPT_GRACE_MS));
	LWLockRelease(schedlock_shared->lock);
	return stopped;
}

/*
 * reap_backends
 *		Free the slots of the processes that have stopped, and act on what
 *		they left there: a backend that could not start holds its queue
 *		back and has the housekeeper fail its due runs; a process that found
 *		no extension leaves the database alone until a probe.
 */
static void
reap_backends(TimestampTz now)
{
	int			i;

	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];
		SchedlockDatabase *db;

		if (!slot->in_use || !backend_stopped(i, now))
			continue;
		LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
		db = schedlock_find_database(slot->dboid, false);

		/*
		 * A process that found no extension says so only when no probe came
		 * after it was reserved: CREATE EXTENSION may have committed after it
		 * looked, and that probe was taken first (this pass, or one before
		 * it).  The probe has asked for a housekeeper again.
		 */
		if (db != NULL && slot->no_extension &&
			slot->probes_seen == db->probes)
			db->no_extension = true;
		/* a housekeeping that ended early (terminated, an error) again */
		if (db != NULL && slot->kind == SCHEDLOCK_BACKEND_HOUSEKEEPER &&
			!slot->finished && !slot->no_extension)
			db->housekeep_at = Min(db->housekeep_at,
								   TimestampTzPlusMilliseconds(now,
															   SCHEDLOCK_HOUSEKEEP_RETRY_MS));
		if (slot->kind == SCHEDLOCK_BACKEND_JOBS)
		{
			SchedlockQueue *q = schedlock_find_queue(slot->dboid, slot->role,
													 false);

			if (q != NULL)
			{
				q->nbackends = Max(q->nbackends - 1, 0);
				if (slot->start_sqlerrcode != 0 && !slot->attached)
					slot->start_sqlerrcode = ERRCODE_CONNECTION_FAILURE;
				if (slot->start_sqlerrcode != 0 && slot->start_error[0] != '\0')
				{
					q->retry_after = TimestampTzPlusMilliseconds(now,
																 SCHEDLOCK_START_RETRY_MS);
					q->wait = SCHEDLOCK_WAIT_START_FAILED;
					if (q->waiting_since == 0)
						q->waiting_since = now;
					q->start_sqlerrcode = slot->start_sqlerrcode;
					strlcpy(q->start_error, slot->start_error,
							sizeof(q->start_error));
					q->fail_due = true;
					if (db != NULL)
						db->housekeep = true;
				}
				else if (slot->left_locked)
				{
					/*
					 * another session's lock stopped its bookkeeping: try
					 * again after twice the lock timeout, at least 1 s, and
					 * let other queues have the slot meanwhile
					 */
					q->retry_after =
						TimestampTzPlusMilliseconds(now,
													Max(1000L, 2L * schedlock_bookkeeping_lock_timeout));
					schedlock_budget_set_wait(q, SCHEDLOCK_WAIT_LOCKED, now);
				}
			}
		}
		memset(slot, 0, sizeof(SchedlockBackendSlot));
		LWLockRelease(schedlock_shared->lock);
		if (handles[i] != NULL)
			pfree(handles[i]);
		handles[i] = NULL;
	}
}

/*
 * start_backend
 *		Reserve a slot and register a job backend (kind JOBS, for role) or a
 *		housekeeper for database db.  Returns the slot number, -1 when
 *		max_worker_processes had no room.  Caller does not hold the lock.
 */
static int
start_backend(SchedlockBackendKind kind, SchedlockDatabase *db, Oid role)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	MemoryContext oldcxt;
	int			slotno = -1;
	uint64		generation = 0;
	int			i;
	bool		ok;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

		if (!slot->in_use)
		{
			memset(slot, 0, sizeof(SchedlockBackendSlot));
			slot->in_use = true;
			slot->kind = kind;
			slot->dboid = db->dboid;
			slot->role = role;
			slot->probes_seen = db->probes;
			slot->generation = generation = ++schedlock_shared->next_generation;
			slot->reloads_seen = schedlock_shared->reloads;
			slot->reserved_at = GetCurrentTimestamp();
			slot->turn_from = slot->reserved_at;
			slotno = i;
			break;
		}
	}
	LWLockRelease(schedlock_shared->lock);
	if (slotno < 0)
		return -1;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "schedlock");
	snprintf(worker.bgw_function_name, BGW_MAXLEN,
			 kind == SCHEDLOCK_BACKEND_JOBS ?
			 "schedlock_worker_main" : "schedlock_housekeeper_main");
	if (kind == SCHEDLOCK_BACKEND_JOBS)
	{
		snprintf(worker.bgw_name, BGW_MAXLEN,
				 "schedlock job backend for database %s",
				 NameStr(db->dbname));
		snprintf(worker.bgw_type, BGW_MAXLEN, "schedlock job");
	}
	else
	{
		snprintf(worker.bgw_name, BGW_MAXLEN,
				 "schedlock housekeeper for database %s",
				 NameStr(db->dbname));
		snprintf(worker.bgw_type, BGW_MAXLEN, "schedlock housekeeper");
	}
	worker.bgw_main_arg = Int32GetDatum(slotno);
	worker.bgw_notify_pid = MyProcPid;
	memcpy(worker.bgw_extra, &generation, sizeof(uint64));

	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	ok = RegisterDynamicBackgroundWorker(&worker, &handle);
	MemoryContextSwitchTo(oldcxt);
	if (!ok)
	{
		LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
		memset(&schedlock_shared->slots[slotno], 0,
			   sizeof(SchedlockBackendSlot));
		LWLockRelease(schedlock_shared->lock);
		return -1;
	}
	handles[slotno] = handle;
	return slotno;
}

/*
 * want_order
 *		qsort comparator: housekeepers first, then queues without a backend
 *		by due time, then one more backend for busy queues by due time.
 */
static int
want_order(const void *a, const void *b)
{
	const Want *x = a;
	const Want *y = b;
	int			rx = x->queue < 0 ? 0 : (x->growth ? 2 : 1);
	int			ry = y->queue < 0 ? 0 : (y->growth ? 2 : 1);

	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (x->due_at != y->due_at)
		return x->due_at < y->due_at ? -1 : 1;
	return x->db - y->db;
}

/*
 * recheck_within
 *		Have the launcher look again within ms (-1: no need) as well.
 */
static inline void
recheck_within(long *recheck, long ms)
{
	if (ms >= 0 && (*recheck < 0 || ms < *recheck))
		*recheck = ms;
}

/*
 * serve_want
 *		Start one process of w within the budget and the caps; on the way,
 *		record why a queue waits and ask for room.  Returns whether it
 *		started one.  Caller does not hold the lock.
 */
static bool
serve_want(Want *w, TimestampTz now, int *used, int *keepers, int *waiting,
		   long *recheck)
{
	SchedlockDatabase *db = &schedlock_shared->dbs[w->db];
	SchedlockQueue *q = w->queue >= 0 ? &schedlock_shared->queues[w->queue] : NULL;
	int			in_db = 0;
	int			j;
	int			slotno;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (j = 0; j < schedlock_shared->nslots; j++)
		if (schedlock_shared->slots[j].in_use &&
			schedlock_shared->slots[j].dboid == db->dboid &&
			schedlock_shared->slots[j].kind == SCHEDLOCK_BACKEND_JOBS)
			in_db++;

	/*
	 * The role's cap first: a role with schedlock.max_runs_per_role backends
	 * in the cluster (in any databases) gets none more, so it neither counts
	 * as waiting for the budget nor has another role's backend leave for it.
	 * Only its own backends make room for it, in another database too.
	 */
	if (q != NULL && schedlock_budget_role_at_cap(q->role))
	{
		if (!w->growth)
		{
			schedlock_budget_set_wait(q, SCHEDLOCK_WAIT_ROLE_CAP, now);
			pass_wants_room = true;
			recheck_within(recheck, schedlock_budget_warn_wait(q, db, now));
			recheck_within(recheck,
						   schedlock_budget_make_room(1, InvalidOid, q->role,
													  now));
		}
		LWLockRelease(schedlock_shared->lock);
		return false;
	}

	/*
	 * Housekeepers have a budget of their own: one that waits for it never
	 * has a job backend leave (they would take turns with every-second jobs
	 * whenever a NOTIFY deadline expires).
	 */
	if (q == NULL && *keepers >= schedlock_max_housekeepers)
	{
		LWLockRelease(schedlock_shared->lock);
		return false;
	}
	if (q != NULL && *used >= schedlock_max_job_backends)
	{
		if (!w->growth)
		{
			schedlock_budget_set_wait(q, SCHEDLOCK_WAIT_BUDGET, now);
			pass_wants_room = true;
			recheck_within(recheck, schedlock_budget_warn_wait(q, db, now));
			(*waiting)++;
		}
		LWLockRelease(schedlock_shared->lock);
		return false;
	}
	if (q != NULL && in_db >= schedlock_max_workers)
	{
		if (!w->growth)
		{
			schedlock_budget_set_wait(q, SCHEDLOCK_WAIT_DATABASE_CAP, now);
			pass_wants_room = true;
			recheck_within(recheck, schedlock_budget_warn_wait(q, db, now));
			/* another role's backend of the database makes room */
			recheck_within(recheck,
						   schedlock_budget_make_room(1, db->dboid, InvalidOid,
													  now));
		}
		LWLockRelease(schedlock_shared->lock);
		return false;
	}

	/*
	 * Starts are paced: at most SCHEDLOCK_MAX_STARTING job backends start at
	 * once in the cluster.  The next is started when one is ready (it wakes
	 * the launcher), so a queue waits a start's time, not the budget's; it
	 * does not count as waiting for the budget, which would have another
	 * backend leave for it.
	 */
	if (q != NULL && schedlock_starting_backends(now) >= SCHEDLOCK_MAX_STARTING)
	{
		schedlock_shared->starts_paced = true;
		recheck_within(recheck, LAUNCHER_PACED_RECHECK_MS);
		LWLockRelease(schedlock_shared->lock);
		return false;
	}
	if (q != NULL)
		q->nbackends++;
	else
		db->housekeep = false;
	LWLockRelease(schedlock_shared->lock);

	slotno = start_backend(q != NULL ? SCHEDLOCK_BACKEND_JOBS :
						   SCHEDLOCK_BACKEND_HOUSEKEEPER,
						   db, q != NULL ? q->role : InvalidOid);

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	if (slotno < 0)
	{
		if (q != NULL)
		{
			q->nbackends--;
			if (!w->growth)
			{
				schedlock_budget_set_wait(q, SCHEDLOCK_WAIT_PROCESSES, now);
				recheck_within(recheck, schedlock_budget_warn_wait(q, db, now));
			}
		}
		else
			db->housekeep = true;
		recheck_within(recheck, LAUNCHER_NO_SLOT_DELAY_MS);
	}
	else
	{
		if (q == NULL)
			(*keepers)++;
		else
		{
			SchedlockBackendSlot *slot = &schedlock_shared->slots[slotno];

			(*used)++;
			schedlock_budget_set_wait(q, SCHEDLOCK_WAIT_NONE, now);
			q->backlog = false;

			/*
			 * A backend started ahead of its queue's instant has its turn
			 * from that instant: it waited for its jobs, it did not run them.
			 */
			if (q->due_at != DT_NOEND && slot->turn_from < q->due_at)
				slot->turn_from = q->due_at;
		}
	}
	LWLockRelease(schedlock_shared->lock);
	return slotno >= 0;
}

/*
 * launcher_pass
 *		One round: probe requests, pg_database when due, stopped backends,
 *		then start what is wanted within the budget.  Returns the timeout
 *		for the next sleep, in ms.
 */
static long
launcher_pass(TimestampTz *last_scan)
{
	TimestampTz now = GetCurrentTimestamp();
	long		start_lead = schedlock_start_lead_ms();
	TimestampTz wake_at = TimestampTzPlusMilliseconds(now,
													  SCHEDLOCK_MAX_SLEEP_MS);
	Want	   *wants;
	int			nwants = 0;
	int			used = 0;
	int			keepers = 0;
	int			waiting = 0;
	long		timeout;
	long		recheck = -1;
	bool		probed;
	Latch	  **leaving;
	int			nleaving = 0;
	int			i;
	int			j;

	pass_wants_room = false;
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	probed = take_probe_requests();
	LWLockRelease(schedlock_shared->lock);
	if (probed || *last_scan == 0 ||
		TimestampDifferenceExceeds(*last_scan, now, LAUNCHER_SCAN_EVERY_MS))
	{
		scan_databases();
		*last_scan = now;
	}
	reap_backends(now);

	wants = palloc(sizeof(Want) * (SCHEDLOCK_MAX_DATABASES + 2 * SCHEDLOCK_MAX_QUEUES));
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < schedlock_shared->nslots; i++)
		if (schedlock_shared->slots[i].in_use)
		{
			if (schedlock_shared->slots[i].kind == SCHEDLOCK_BACKEND_HOUSEKEEPER)
				keepers++;
			else
				used++;
		}

	/* what the databases want */
	for (i = 0; i < SCHEDLOCK_MAX_DATABASES; i++)
	{
		SchedlockDatabase *db = &schedlock_shared->dbs[i];
		bool		keeper = false;

		if (!db->in_use || !db->seen || db->no_extension ||
			schedlock_database_dropping(db->dboid))
			continue;
		for (j = 0; j < schedlock_shared->nslots; j++)
			if (schedlock_shared->slots[j].in_use &&
				schedlock_shared->slots[j].dboid == db->dboid &&
				schedlock_shared->slots[j].kind == SCHEDLOCK_BACKEND_HOUSEKEEPER)
				keeper = true;
		if (keeper)
			continue;
		if (db->housekeep || db->housekeep_at <= now)
		{
			wants[nwants].db = i;
			wants[nwants].queue = -1;
			wants[nwants].due_at = db->housekeep ? now : db->housekeep_at;
			wants[nwants].growth = false;
			wants[nwants].count = 1;
			nwants++;
		}
		else if (db->housekeep_at < wake_at)
			wake_at = db->housekeep_at;
	}

	/* what the queues want */
	for (i = 0; i < SCHEDLOCK_MAX_QUEUES; i++)
	{
		SchedlockQueue *q = &schedlock_shared->queues[i];
		SchedlockDatabase *db;
		int			dbi;
		int			wanted;
		int			grow;
		int			role_room = PG_INT32_MAX;
		long		q_lead;

		if (!q->in_use)
			continue;
		db = schedlock_find_database(q->dboid, false);
		if (db == NULL || !db->known || db->paused || db->no_extension ||
			!schedlock_enabled || schedlock_database_dropping(q->dboid))
			continue;
		dbi = (int) (db - schedlock_shared->dbs);
		wanted = q->wanted_at == q->due_at ? q->wanted : 0;

		/*
		 * schedlock.max_runs_per_role caps the role's backends in the whole
		 * cluster: the queue's own count with what the role has in the other
		 * databases (serve_want checks it again as it starts each).
		 */
		if (schedlock_max_runs_per_role > 0)
		{
			role_room = schedlock_max_runs_per_role -
				(schedlock_budget_role_backends(q->role) - q->nbackends);
			wanted = Min(wanted, Max(role_room, 0));
		}

		/*
		 * Backends wanted for one instant start at most
		 * SCHEDLOCK_MAX_STARTING at a time: the queue's lead has a start's
		 * time for each round of them.
		 */
		q_lead = start_lead * (1 + Max(wanted - 1, 0) / SCHEDLOCK_MAX_STARTING);
		if (q->due_at > TimestampTzPlusMilliseconds(now, q_lead + q->lead_ms))
		{
			if (q->nbackends == 0 || wanted > q->nbackends)
			{
				TimestampTz at = q->due_at -
					(TimestampTz) (q_lead + q->lead_ms) * 1000;

				if (at < wake_at)
					wake_at = at;
			}
			if (q->nbackends == 0)
				schedlock_budget_set_wait(q, SCHEDLOCK_WAIT_NONE, now);
			continue;
		}
		if (now < q->retry_after)
		{
			if (q->retry_after < wake_at)
				wake_at = q->retry_after;
			continue;
		}
		if (q->nbackends == 0)
		{
			wants[nwants].db = dbi;
			wants[nwants].queue = i;
			wants[nwants].due_at = q->due_at;
			wants[nwants].growth = false;
			wants[nwants].count = 1;
			nwants++;
			/* the others its instant's SQL jobs keep busy, started with it */
			grow = wanted - 1;
		}
		else
		{
			if (q->backlog)
			{
				/* known here: the start of a run need not wake the launcher */
				schedlock_budget_watch_busy(q, true);
				grow = 1;
			}
			else
				grow = schedlock_budget_all_busy(q, now, &wake_at) ? 1 : 0;
			grow = Max(grow, wanted - q->nbackends);
			grow = Min(grow, role_room - q->nbackends);
		}
		if (grow > 0)
		{
			wants[nwants].db = dbi;
			wants[nwants].queue = i;
			wants[nwants].due_at = q->due_at;
			wants[nwants].growth = true;
			wants[nwants].count = grow;
			nwants++;
		}
	}
	LWLockRelease(schedlock_shared->lock);

	qsort(wants, nwants, sizeof(Want), want_order);
	for (i = 0; i < nwants; i++)
		for (j = 0; j < wants[i].count; j++)
			if (!serve_want(&wants[i], now, &used, &keepers, &waiting,
							&recheck))
				break;
	pfree(wants);

	/*
	 * Backends of paused or dropped databases, or all when disabled, leave;
	 * their latches are set once the lock is released.
	 */
	leaving = palloc(sizeof(Latch *) * schedlock_shared->nslots);
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];
		SchedlockDatabase *db;

		if (!slot->in_use || slot->kind != SCHEDLOCK_BACKEND_JOBS || slot->yield)
			continue;
		db = schedlock_find_database(slot->dboid, false);
		if (!schedlock_enabled || db == NULL || db->paused ||
			db->no_extension)
		{
			slot->yield = true;
			if (slot->latch != NULL)
				leaving[nleaving++] = slot->latch;
		}
	}
	if (waiting > 0)
		recheck_within(&recheck,
					   schedlock_budget_make_room(waiting, InvalidOid,
												  InvalidOid, now));
	schedlock_shared->room_wanted = pass_wants_room;
	LWLockRelease(schedlock_shared->lock);
	for (i = 0; i < nleaving; i++)
		SetLatch(leaving[i]);
	pfree(leaving);

	timeout = (long) ((wake_at - now) / 1000) + 1;
	if (timeout < 0)
		timeout = 0;
	if (recheck >= 0 && recheck < timeout)
		timeout = recheck;
	return Min(timeout, SCHEDLOCK_MAX_SLEEP_MS);
}

/*
 * housekeep_all
 *		Have every database's housekeeping run (after a reload).
 */
static void
housekeep_all(void)
{
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < SCHEDLOCK_MAX_DATABASES; i++)
		if (schedlock_shared->dbs[i].in_use)
			schedlock_shared->dbs[i].housekeep = true;
	LWLockRelease(schedlock_shared->lock);
}

/*
 * schedlock_launcher_main
 *		Entry point of the launcher background worker.
 */
void
schedlock_launcher_main(Datum arg)
{
	TimestampTz last_scan = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * A reload signalled while this process started, before its handler was
	 * in place, was ignored: read the configuration files once now.
	 */
	ProcessConfigFile(PGC_SIGHUP);

	/* no database: only the shared catalogs (pg_database) are needed */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	/* identifiable in pg_stat_activity */
	SetConfigOption("application_name", "schedlock launcher",
					PGC_USERSET, PGC_S_OVERRIDE);

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	schedlock_shared->launcher_pid = MyProcPid;
	schedlock_shared->launcher_latch = MyLatch;
	LWLockRelease(schedlock_shared->lock);
	on_shmem_exit(launcher_detach, (Datum) 0);

	handles = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(BackgroundWorkerHandle *) *
									 schedlock_shared->nslots);
	adopt_backends();

	ereport(DEBUG1,
			(errmsg_internal("schedlock launcher started")));

	for (;;)
	{
		long		timeout;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			schedlock_note_reload();

			/*
			 * Every database's housekeeping publishes its queues anew: what
			 * fell due while dispatch was off, and jobs a superuser changed
			 * by hand in schedlock.jobs, are seen after a reload.
			 */
			housekeep_all();
		}

		pgstat_report_activity(STATE_RUNNING, "managing schedlock job backends");
		timeout = launcher_pass(&last_scan);
		pgstat_report_activity(STATE_IDLE, NULL);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
