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
 * an earlier life of the server, fires @reboot jobs, raises ready, and the
 * launcher starts workers 1 .. schedlock.workers - 1.  The launcher is
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
 * IDENTIFICATION
 *	  src/launcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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

/* What the launcher knows about one database. */
typedef struct LauncherDb
{
	Oid			dboid;			/* hash key */
	NameData	dbname;			/* for the workers' process titles */
	bool		seen;			/* found by the latest pg_database scan */
	bool		absent;			/* the extension is not installed there */
	bool		started_before; /* worker 0 started before in this life */
	bool		warned;			/* complained about max_worker_processes */
	TimestampTz retry_after;	/* start no worker before this time */
	int			slot[SCHEDLOCK_MAX_WORKERS_PER_DB]; /* shmem slot, -1 none */
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
		db->started_before = false;
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
 *		when the worker reported that the database has no extension.
 */
static bool
free_slot(int slotno)
{
	SchedlockWorkerSlot *slot = &schedlock_shared->slots[slotno];
	bool		no_extension;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	no_extension = slot->no_extension;
	memset(slot, 0, sizeof(SchedlockWorkerSlot));
	LWLockRelease(schedlock_shared->lock);
	return no_extension;
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
			slot->first_start = (index == 0 && !db->started_before);
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

		oldcxt = MemoryContextSwitchTo(TopMemoryContext);
		ok = RegisterDynamicBackgroundWorker(&worker, &handle);
		MemoryContextSwitchTo(oldcxt);
		if (!ok)
			(void) free_slot(slotno);
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
					 errhint("The job scheduler needs one launcher plus schedlock.workers (%d) processes per database that has the extension; raise max_worker_processes or lower schedlock.workers.",
							 schedlock_workers)));
		db->warned = true;
		db->retry_after = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  LAUNCHER_NO_SLOT_DELAY_MS);
		return;
	}

	db->slot[index] = slotno;
	db->handle[index] = handle;
	if (index == 0)
		db->started_before = true;
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
		pid_t		pid;

		if (db->slot[i] < 0)
			continue;
		if (GetBackgroundWorkerPid(db->handle[i], &pid) != BGWH_STOPPED)
			continue;
		if (free_slot(db->slot[i]))
			db->absent = true;
		else if (!stepped_aside)
			db->retry_after = TimestampTzPlusMilliseconds(now,
														  LAUNCHER_RESTART_DELAY_MS);
		pfree(db->handle[i]);
		db->handle[i] = NULL;
		db->slot[i] = -1;
	}
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
	for (i = wanted; i < SCHEDLOCK_MAX_WORKERS_PER_DB; i++)
		if (db->slot[i] >= 0)
			TerminateBackgroundWorker(db->handle[i]);
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
	}
	if (now < db->retry_after)
		return (long) ((db->retry_after - now) / 1000) + 1;
	return -1;
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

	ereport(LOG,
			(errmsg("schedlock launcher started")));

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
