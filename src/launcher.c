/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The scheduler's launcher: one background worker for the whole
 *	  cluster that starts and stops the per-database dispatch workers.
 *
 * The launcher connects to no database; it reads pg_database to learn
 * which databases exist and starts worker 0 in each one that accepts
 * connections.  Worker 0 looks for the extension: when it is missing the
 * worker raises no_extension in its slot and exits, and the launcher leaves
 * the database alone until CREATE EXTENSION (or CREATE DATABASE) asks it to
 * probe again.  When the extension is there, worker 0 closes runs lost by
 * an earlier life of the server, fires @reboot jobs (once per server life,
 * recorded in shared memory), raises ready, and the launcher starts workers
 * 1 .. schedlock.workers - 1.  The launcher is
 * registered with BgWorkerStart_RecoveryFinished, so nothing runs on a
 * standby and dispatch starts as soon as a standby is promoted.
 *
 * The launcher sleeps on its latch; it is woken by the postmaster when one
 * of its workers starts or stops (bgw_notify_pid), by probe requests, by
 * DROP DATABASE, and by SIGHUP; it looks at pg_database at least once a
 * minute.  A worker that stopped on an error is started again after
 * LAUNCHER_RESTART_DELAY_MS; workers that stepped aside for a statement
 * (DROP, CREATE ... TEMPLATE or RENAME of their database, DROP EXTENSION;
 * see shmem.c) come back as soon as it is over.
 *
 * The worker pool: once every worker of a database has been running a job
 * for SCHEDLOCK_POOL_GROW_AFTER_MS, the launcher starts one more, up to
 * schedlock.max_workers; a worker beyond schedlock.workers leaves on its own
 * when it has been idle for a while (shmem.c), and is not started again
 * until the pool needs it.
 *
 * Everything the launcher must know survives it in the worker slots of
 * shared memory: a launcher started again after it was terminated adopts
 * the workers it finds there (adopt_workers).  It has no handle for them,
 * so it learns that one stopped from the slot (exited, set by the worker)
 * and is woken by the worker itself.  A slot reserved by the previous
 * launcher whose worker never took it is given up after
 * LAUNCHER_ADOPT_GRACE_MS; should that worker start later, it finds its
 * generation gone and exits.
 *
 * IDENTIFICATION
 *	  src/launcher.c
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
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "schedlock.h"
#include "scheduler.h"

/* Delay before a worker that stopped unexpectedly is started again. */
#define LAUNCHER_RESTART_DELAY_MS	5000

/* Delay before retrying after max_worker_processes ran out. */
#define LAUNCHER_NO_SLOT_DELAY_MS	10000

/* How long an adopted slot may wait for its worker to take it. */
#define LAUNCHER_ADOPT_GRACE_MS		30000

/* What the launcher knows about one database. */
typedef struct LauncherDb
{
	Oid			dboid;			/* hash key */
	NameData	dbname;			/* for the workers' process titles */
	bool		seen;			/* found by the latest pg_database scan */
	bool		absent;			/* the extension is not installed there */
	bool		warned;			/* complained about max_worker_processes */
	TimestampTz retry_after;	/* start no worker before this time */
	int			slot[SCHEDLOCK_MAX_WORKERS_PER_DB]; /* shmem slot, -1 none */
	/* the workers this launcher started; NULL for adopted ones */
	BackgroundWorkerHandle *handle[SCHEDLOCK_MAX_WORKERS_PER_DB];
} LauncherDb;

static HTAB *launcher_dbs = NULL;

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
 * lookup_db
 *		Find or create the launcher's entry for a database.
 */
static LauncherDb *
lookup_db(Oid dboid)
{
	LauncherDb *db;
	bool		found;
	int			i;

	db = (LauncherDb *) hash_search(launcher_dbs, &dboid, HASH_ENTER, &found);
	if (!found)
	{
		memset(NameStr(db->dbname), 0, NAMEDATALEN);
		db->seen = false;
		db->absent = false;
		db->warned = false;
		db->retry_after = 0;
		for (i = 0; i < SCHEDLOCK_MAX_WORKERS_PER_DB; i++)
		{
			db->slot[i] = -1;
			db->handle[i] = NULL;
		}
	}
	return db;
}

/*
 * take_probe_requests
 *		Move the probe requests queued in shared memory into the launcher's
 *		table: a probed database is no longer considered extension-free.
 */
static void
take_probe_requests(void)
{
	Oid			probes[SCHEDLOCK_MAX_PROBES];
	int			nprobes;
	bool		all;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	all = schedlock_shared->probe_all;
	nprobes = schedlock_shared->nprobes;
	memcpy(probes, schedlock_shared->probe_db, sizeof(Oid) * nprobes);
	schedlock_shared->probe_all = false;
	schedlock_shared->nprobes = 0;
	LWLockRelease(schedlock_shared->lock);

	if (all)
	{
		HASH_SEQ_STATUS status;
		LauncherDb *db;

		hash_seq_init(&status, launcher_dbs);
		while ((db = (LauncherDb *) hash_seq_search(&status)) != NULL)
		{
			db->absent = false;
			db->retry_after = 0;
		}
	}
	for (i = 0; i < nprobes; i++)
	{
		LauncherDb *db = lookup_db(probes[i]);

		db->absent = false;
		db->retry_after = 0;
	}
}

/*
 * scan_databases
 *		Mark every database that can run jobs as seen (creating entries for
 *		new ones).  Runs its own transaction; must be called outside one.
 */
static void
scan_databases(void)
{
	HASH_SEQ_STATUS status;
	LauncherDb *db;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	hash_seq_init(&status, launcher_dbs);
	while ((db = (LauncherDb *) hash_seq_search(&status)) != NULL)
		db->seen = false;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tup);

		if (!form->datallowconn || form->datistemplate ||
			form->datconnlimit == DATCONNLIMIT_INVALID_DB)
			continue;
		db = lookup_db(form->oid);
		db->seen = true;
		namestrcpy(&db->dbname, NameStr(form->datname));
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(TopMemoryContext);
}

/*
 * free_slot
 *		Give a worker slot back; read its exit flags first.  Returns true
 *		when the worker reported that the database has no extension; sets
 *		*retired when it left the pool because it was idle.
 */
static bool
free_slot(int slotno, bool *retired)
{
	SchedlockWorkerSlot *slot = &schedlock_shared->slots[slotno];
	bool		no_extension;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	no_extension = slot->no_extension;
	if (retired)
		*retired = slot->retired;
	memset(slot, 0, sizeof(SchedlockWorkerSlot));
	LWLockRelease(schedlock_shared->lock);
	return no_extension;
}

/*
 * adopt_workers
 *		At launcher start: take over the workers an earlier launcher of this
 *		server life started (their slots are still reserved), instead of
 *		starting a second set.
 */
static void
adopt_workers(void)
{
	int			adopted = 0;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockWorkerSlot *slot = &schedlock_shared->slots[i];
		LauncherDb *db;

		if (!slot->in_use || slot->worker_index < 0 ||
			slot->worker_index >= SCHEDLOCK_MAX_WORKERS_PER_DB)
			continue;
		db = lookup_db(slot->dboid);
		if (db->slot[slot->worker_index] >= 0)
			continue;			/* cannot happen: one slot per index */
		db->slot[slot->worker_index] = i;
		db->handle[slot->worker_index] = NULL;
		adopted++;
	}
	LWLockRelease(schedlock_shared->lock);
	if (adopted > 0)
		ereport(LOG,
				(errmsg("schedlock launcher adopted %d running workers",
						adopted)));
}

/*
 * worker_stopped
 *		Whether the worker in slot 'slotno' (started with 'handle', or
 *		adopted when it is NULL) has stopped for good.
 */
static bool
worker_stopped(int slotno, BackgroundWorkerHandle *handle, TimestampTz now)
{
	SchedlockWorkerSlot *slot = &schedlock_shared->slots[slotno];
	pid_t		pid;
	bool		stopped;

	if (handle != NULL)
		return GetBackgroundWorkerPid(handle, &pid) == BGWH_STOPPED;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	stopped = slot->exited ||
		(!slot->attached &&
		 TimestampDifferenceExceeds(slot->reserved_at, now,
									LAUNCHER_ADOPT_GRACE_MS));
	LWLockRelease(schedlock_shared->lock);
	return stopped;
}

/*
 * start_worker
 *		Reserve a slot and register worker 'index' for a database.
 */
static void
start_worker(LauncherDb *db, int index)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	MemoryContext oldcxt;
	int			slotno = -1;
	int			i;
	bool		ok;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockWorkerSlot *slot = &schedlock_shared->slots[i];

		if (!slot->in_use)
		{
			memset(slot, 0, sizeof(SchedlockWorkerSlot));
			slot->in_use = true;
			slot->dboid = db->dboid;
			slot->worker_index = index;
			slot->generation = ++schedlock_shared->next_generation;
			slot->reserved_at = GetCurrentTimestamp();
			slotno = i;
			break;
		}
	}
	LWLockRelease(schedlock_shared->lock);

	ok = (slotno >= 0);
	if (ok)
	{
		memset(&worker, 0, sizeof(worker));
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
			BGWORKER_BACKEND_DATABASE_CONNECTION;
		worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
		worker.bgw_restart_time = BGW_NEVER_RESTART;
		snprintf(worker.bgw_library_name, BGW_MAXLEN, "schedlock");
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "schedlock_worker_main");
		snprintf(worker.bgw_name, BGW_MAXLEN, "schedlock worker %d for database %s",
				 index, NameStr(db->dbname));
		snprintf(worker.bgw_type, BGW_MAXLEN, "schedlock worker");
		worker.bgw_main_arg = Int32GetDatum(slotno);
		worker.bgw_notify_pid = MyProcPid;
		/* unlocked read: only the launcher writes a reserved slot's number */
		memcpy(worker.bgw_extra, &schedlock_shared->slots[slotno].generation,
			   sizeof(uint64));

		oldcxt = MemoryContextSwitchTo(TopMemoryContext);
		ok = RegisterDynamicBackgroundWorker(&worker, &handle);
		MemoryContextSwitchTo(oldcxt);
		if (!ok)
			(void) free_slot(slotno, NULL);
	}

	if (!ok)
	{
		if (!db->warned)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("schedlock could not start worker %d for database \"%s\"",
							index, NameStr(db->dbname)),
					 errdetail("All max_worker_processes (%d) background worker slots are in use.",
							   max_worker_processes),
					 errhint("The job scheduler needs one launcher plus schedlock.workers (%d), and while long jobs run up to schedlock.max_workers (%d), processes per database that has the extension; raise max_worker_processes or lower these settings.",
							 schedlock_workers,
							 Max(schedlock_workers, schedlock_max_workers))));
		db->warned = true;
		db->retry_after = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  LAUNCHER_NO_SLOT_DELAY_MS);
		return;
	}

	db->slot[index] = slotno;
	db->handle[index] = handle;
}

/*
 * terminate_worker
 *		Stop a worker started with 'handle', or an adopted one (handle
 *		NULL) by its pid.
 */
static void
terminate_worker(int slotno, BackgroundWorkerHandle *handle)
{
	pid_t		pid;

	if (handle != NULL)
	{
		TerminateBackgroundWorker(handle);
		return;
	}
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	pid = schedlock_shared->slots[slotno].pid;
	LWLockRelease(schedlock_shared->lock);
	if (pid != 0)
		kill(pid, SIGTERM);
}

/*
 * reap_workers
 *		Notice the database's workers that have stopped and free their
 *		slots.  Workers that stepped aside for a statement (stepped_aside)
 *		are started again without the restart delay once it is over.
 */
static void
reap_workers(LauncherDb *db, TimestampTz now, bool stepped_aside)
{
	int			i;

	for (i = 0; i < SCHEDLOCK_MAX_WORKERS_PER_DB; i++)
	{
		bool		retired = false;

		if (db->slot[i] < 0)
			continue;
		if (!worker_stopped(db->slot[i], db->handle[i], now))
			continue;
		if (free_slot(db->slot[i], &retired))
			db->absent = true;
		else if (!stepped_aside && !retired)
			db->retry_after = TimestampTzPlusMilliseconds(now,
														  LAUNCHER_RESTART_DELAY_MS);
		if (db->handle[i] != NULL)
			pfree(db->handle[i]);
		db->handle[i] = NULL;
		db->slot[i] = -1;
	}
}

/*
 * pool_growth
 *		Whether the database's pool should get one more worker: all its
 *		workers have been running jobs for SCHEDLOCK_POOL_GROW_AFTER_MS.
 *		When they all run jobs but not yet for that long, *recheck_ms says
 *		when to look again.
 */
static bool
pool_growth(LauncherDb *db, TimestampTz now, long *recheck_ms)
{
	TimestampTz latest = 0;
	int			i;

	*recheck_ms = -1;
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < SCHEDLOCK_MAX_WORKERS_PER_DB; i++)
	{
		SchedlockWorkerSlot *slot;

		if (db->slot[i] < 0)
			continue;
		slot = &schedlock_shared->slots[db->slot[i]];
		if (slot->running_job == 0)
		{
			latest = -1;
			break;
		}
		latest = Max(latest, slot->running_since);
	}
	LWLockRelease(schedlock_shared->lock);
	if (latest <= 0)
		return false;
	latest = TimestampTzPlusMilliseconds(latest, SCHEDLOCK_POOL_GROW_AFTER_MS);
	if (latest <= now)
		return true;
	*recheck_ms = (long) ((latest - now) / 1000) + 1;
	return false;
}

/*
 * manage_database
 *		Bring the database's set of workers to what it should be.  Returns
 *		the number of milliseconds after which the launcher should look
 *		again (-1: nothing pending).
 */
static long
manage_database(LauncherDb *db, TimestampTz now)
{
	bool		dropping;
	bool		ready = false;
	int			wanted;
	int			cap;
	long		recheck = -1;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	dropping = schedlock_database_dropping(db->dboid);
	LWLockRelease(schedlock_shared->lock);

	reap_workers(db, now, dropping);

	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	if (db->slot[0] >= 0)
		ready = schedlock_shared->slots[db->slot[0]].ready;
	LWLockRelease(schedlock_shared->lock);

	wanted = (db->absent || dropping || !db->seen) ? 0 : schedlock_workers;
	cap = wanted == 0 ? 0 : Max(schedlock_workers, schedlock_max_workers);
	for (i = cap; i < SCHEDLOCK_MAX_WORKERS_PER_DB; i++)
		if (db->slot[i] >= 0)
			terminate_worker(db->slot[i], db->handle[i]);
	if (wanted == 0)
		return -1;

	if (now < db->retry_after)
		return (long) ((db->retry_after - now) / 1000) + 1;

	if (db->slot[0] < 0)
		start_worker(db, 0);
	else if (ready)
	{
		for (i = 1; i < wanted; i++)
			if (db->slot[i] < 0)
				start_worker(db, i);
		if (pool_growth(db, now, &recheck))
		{
			for (i = wanted; i < cap; i++)
				if (db->slot[i] < 0)
				{
					start_worker(db, i);
					break;
				}
		}
	}
	if (now < db->retry_after)
		return (long) ((db->retry_after - now) / 1000) + 1;
	return recheck;
}

/*
 * launcher_pass
 *		One round: take probe requests, rescan pg_database when asked to or
 *		once a minute, and manage every database.  Returns the timeout for
 *		the next sleep, in ms.
 */
static long
launcher_pass(TimestampTz *last_scan)
{
	HASH_SEQ_STATUS status;
	LauncherDb *db;
	TimestampTz now = GetCurrentTimestamp();
	long		timeout = SCHEDLOCK_MAX_SLEEP_MS;

	take_probe_requests();
	scan_databases();
	*last_scan = now;

	hash_seq_init(&status, launcher_dbs);
	while ((db = (LauncherDb *) hash_seq_search(&status)) != NULL)
	{
		long		t = manage_database(db, now);
		bool		running = false;
		int			i;

		if (t >= 0 && t < timeout)
			timeout = t;
		for (i = 0; i < SCHEDLOCK_MAX_WORKERS_PER_DB; i++)
			if (db->slot[i] >= 0)
				running = true;
		if (!db->seen && !running)
			hash_search(launcher_dbs, &db->dboid, HASH_REMOVE, NULL);
	}
	return timeout;
}

/*
 * schedlock_launcher_main
 *		Entry point of the launcher background worker.
 */
void
schedlock_launcher_main(Datum arg)
{
	HASHCTL		ctl;
	TimestampTz last_scan = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

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

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(LauncherDb);
	ctl.hcxt = TopMemoryContext;
	launcher_dbs = hash_create("schedlock launcher databases", 64, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	adopt_workers();

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
		}

		pgstat_report_activity(STATE_RUNNING, "managing schedlock workers");
		timeout = launcher_pass(&last_scan);
		pgstat_report_activity(STATE_IDLE, NULL);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
