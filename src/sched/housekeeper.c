/*-------------------------------------------------------------------------
 *
 * housekeeper.c
 *	  A database's housekeeping pass, which runs no job.
 *
 * The housekeeper connects as the bootstrap superuser and runs no role's
 * SQL: it closes runs lost by backends that ended (stopped, terminated,
 * crashed, or on a server before a restart or failover), fires the
 * @reboot jobs once per server life (or since promotion), closes NOTIFY
 * runs whose deadline passed, prunes old history, fails the due runs of a
 * role whose backend cannot start (its role cannot log in), and publishes
 * every queue's next due time; then it exits.  The launcher starts it when
 * a database is first seen, when one of its backends ended in a run, when
 * a NOTIFY deadline or the next pruning comes, and when the jobs changed
 * in a way that cannot be told per role (an adoption, an import).
 *
 * IDENTIFICATION
 *	  src/sched/housekeeper.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "copies.h"
#include "dispatch.h"
#include "housekeeper.h"
#include "job_roles.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"
#include "worker.h"

/*
 * Transactions of overdue NOTIFY runs closed per housekeeping pass
 * (EXPIRE_BATCH_ROWS each, jobstore.h).
 */
#define EXPIRE_MAX_BATCHES	100

/*
 * History pruning deletes PRUNE_BATCH_ROWS rows per transaction
 * (jobstore.h), oldest first, for at most PRUNE_PASS_MS per housekeeping
 * pass.  A pass that leaves overdue runs or history behind comes back
 * HOUSEKEEP_AGAIN_MS later, so that pruning takes at most about half of
 * one process's time (and its WAL rate about half of what deleting without
 * a pause would write), and the housekeeper's budget slot is free in
 * between.  Caught up, the next pruning is when the oldest finished run
 * passes the retention, at least PRUNE_EVERY_MS away.
 */
#define PRUNE_PASS_MS		1000
#define HOUSEKEEP_AGAIN_MS	1000
#define PRUNE_EVERY_MS		60000

/*
 * expire_runs
 *		Close NOTIFY runs not claimed, or not finished, by their deadline
 *		as timed out, and retry them per policy: at most EXPIRE_BATCH_ROWS
 *		per transaction, EXPIRE_MAX_BATCHES per pass.  Returns whether it
 *		left some behind.
 */
static bool
expire_runs(void)
{
	int			batches;

	for (batches = 0; batches < EXPIRE_MAX_BATCHES; batches++)
	{
		uint64		closed;

		schedlock_worker_begin_tx("schedlock: closing overdue runs");
		closed = schedlock_expire_runs(GetCurrentTimestamp());
		schedlock_worker_end_tx();
		if (closed < EXPIRE_BATCH_ROWS)
			return false;
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

/*
 * prune_history
 *		Delete finished runs older than schedlock.history_retention, oldest
 *		first, in transactions of PRUNE_BATCH_ROWS rows, for at most
 *		PRUNE_PASS_MS.  Each batch starts its index scan where the last one
 *		ended, so that it does not step again over the entries its
 *		predecessors deleted.  Returns whether it left some behind.
 */
static bool
prune_history(void)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz stop = TimestampTzPlusMilliseconds(now, PRUNE_PASS_MS);
	TimestampTz from = DT_NOBEGIN;

	if (schedlock_history_retention <= 0)
		return false;
	for (;;)
	{
		uint64		deleted;

		schedlock_worker_begin_tx("schedlock: pruning run history");
		deleted = schedlock_prune_runs(now, schedlock_history_retention,
									   &from);
		schedlock_worker_end_tx();
		if (deleted < PRUNE_BATCH_ROWS)
			return false;
		if (GetCurrentTimestamp() >= stop)
			return true;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * fail_unstartable_roles
 *		For every queue of this database whose backend could not start
 *		(fail_due), fail the role's due runs with that error, so that they
 *		show why they did not run and the jobs move on (retry, next slot).
 */
static void
fail_unstartable_roles(MemoryContext cxt)
{
	Oid			roles[64];
	char		errors[64][256];
	int			n = 0;
	int			i;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	for (i = 0; i < SCHEDLOCK_MAX_QUEUES && n < lengthof(roles); i++)
	{
		SchedlockQueue *q = &schedlock_shared->queues[i];

		if (q->in_use && q->dboid == MyDatabaseId && q->fail_due)
		{
			roles[n] = q->role;
			strlcpy(errors[n], q->start_error, 256);
			q->fail_due = false;
			n++;
		}
	}
	LWLockRelease(schedlock_shared->lock);
	for (i = 0; i < n; i++)
	{
		bool		more;

		(void) schedlock_dispatch_due(roles[i], errors[i], &more);
		MemoryContextReset(cxt);
	}
}

/*
 * publish_queues
 *		Publish every queue's next due time of this database, from the jobs
 *		table: queues that have no enabled job left are due never; and the
 *		count of its jobs, for schedlock.cluster_status().  Returns
 *		the next housekeeping instant (a NOTIFY deadline), DT_NOEND: none.
 */
static TimestampTz
publish_queues(MemoryContext cxt)
{
	SchedlockRoleDue *dues;
	SchedlockJobCounts counts;
	SchedlockDatabase *db;
	int			ndues;
	TimestampTz next_deadline;
	bool		wake = false;
	uint64		seen;
	int			i;

	seen = schedlock_note_count();
	schedlock_worker_begin_tx("schedlock: publishing due times");
	schedlock_count_jobs(&counts);
	dues = schedlock_roles_due(&ndues, cxt);
	if (!schedlock_next_deadline(&next_deadline))
		next_deadline = DT_NOEND;
	schedlock_worker_end_tx();

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	db = schedlock_find_database(MyDatabaseId, false);
	if (db != NULL)
	{
		db->counted_at = GetCurrentTimestamp();
		db->njobs = counts.njobs;
		db->nenabled = counts.nenabled;
		db->nfailing = counts.nfailing;
		db->nquarantined = counts.nquarantined;
	}
	/* a queue noted by a commit since the scan began keeps its time */
	for (i = 0; i < SCHEDLOCK_MAX_QUEUES; i++)
	{
		SchedlockQueue *q = &schedlock_shared->queues[i];

		if (q->in_use && q->dboid == MyDatabaseId && q->noted <= seen)
			q->due_at = DT_NOEND;
	}
	for (i = 0; i < ndues; i++)
	{
		SchedlockQueue *q = schedlock_find_queue(MyDatabaseId, dues[i].role,
												 true);

		if (q == NULL)
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("schedlock cannot serve the jobs of role %u in this database",
							dues[i].role),
					 errdetail("All %d queues (one per role with jobs per database) are in use.",
							   SCHEDLOCK_MAX_QUEUES)));
			continue;
		}
		q->due_at = q->noted > seen ? Min(q->due_at, dues[i].due_at) :
			dues[i].due_at;
		wake = true;
	}
	/* unused queues go */
	for (i = 0; i < SCHEDLOCK_MAX_QUEUES; i++)
	{
		SchedlockQueue *q = &schedlock_shared->queues[i];

		if (q->in_use && q->dboid == MyDatabaseId && q->due_at == DT_NOEND &&
			q->nbackends == 0 && !q->fail_due)
			q->in_use = false;
	}
	LWLockRelease(schedlock_shared->lock);
	if (wake)
		schedlock_wake_launcher();
	return next_deadline;
}

/*
 * housekeep
 *		One housekeeping pass of this database (see the file header), then
 *		publish the database's state and the next housekeeping instant.
 */
static void
housekeep(SchedlockBackendSlot *slot, MemoryContext cxt)
{
	SchedlockDatabase *db;
	bool		known;
	bool		reboot_due;
	bool		was_paused;
	bool		paused;
	bool		behind = false;
	TimestampTz next = DT_NOEND;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	db = schedlock_find_database(MyDatabaseId, false);
	known = db != NULL && db->known;
	reboot_due = db == NULL || !db->reboot_fired;
	was_paused = db != NULL && db->paused;
	if (db != NULL)
	{
		/*
		 * What asks for housekeeping from now on (a NOTIFY deadline of a run
		 * notified meanwhile) is kept: the pass only lowers the time below.
		 */
		db->housekeep = false;
		db->housekeep_at = DT_NOEND;
	}
	LWLockRelease(schedlock_shared->lock);

	/*
	 * In a copy of the database nothing is touched until adoption (copies.c).
	 * Housekeepers come and go: the WARNING is logged by the one that finds
	 * the pause first, not by every one after it.
	 */
	paused = schedlock_jobs_paused(!known, !was_paused);
	if (!paused)
	{
		schedlock_worker_begin_tx("schedlock: closing lost runs");
		(void) schedlock_close_lost_runs();
		if (reboot_due)
		{
			/* after pg_upgrade or a restore the jobs' roles may be unrecorded */
			(void) schedlock_sync_job_roles();
			schedlock_fire_reboot_jobs(GetCurrentTimestamp());
		}
		/* no interrupt between the commit and the record: @reboot fires once */
		HOLD_INTERRUPTS();
		schedlock_worker_end_tx();
		if (reboot_due)
		{
			LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
			db = schedlock_find_database(MyDatabaseId, false);
			if (db != NULL)
				db->reboot_fired = true;
			LWLockRelease(schedlock_shared->lock);
		}
		RESUME_INTERRUPTS();

		if (schedlock_enabled)
		{
			behind |= expire_runs();
			fail_unstartable_roles(cxt);
		}
		behind |= prune_history();
		next = publish_queues(cxt);
		/* while dispatch is off, deadlines wait for it to come back */
		if (!schedlock_enabled)
			next = DT_NOEND;
		if (schedlock_history_retention > 0)
		{
			TimestampTz prune_at;

			schedlock_worker_begin_tx("schedlock: looking at run history");
			if (schedlock_oldest_finished_run(&prune_at))
				next = Min(next,
						   Max(TimestampTzPlusMilliseconds(prune_at,
														   (int64) schedlock_history_retention * 60000),
							   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   PRUNE_EVERY_MS)));
			schedlock_worker_end_tx();
		}
		if (behind)
			next = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   HOUSEKEEP_AGAIN_MS);
	}

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	db = schedlock_find_database(MyDatabaseId, false);
	if (db != NULL)
	{
		db->known = true;
		db->paused = paused;
		db->old_tables = false;
		db->housekeep_at = Min(db->housekeep_at, next);
	}
	slot->finished = true;
	LWLockRelease(schedlock_shared->lock);
	schedlock_wake_launcher();
}

/*
 * schedlock_housekeeper_main
 *		Entry point of a housekeeper; bgw_main_arg is its slot number,
 *		bgw_extra its slot's generation.  One pass, then it exits.
 */
void
schedlock_housekeeper_main(Datum arg)
{
	SchedlockBackendSlot *slot;
	MemoryContext cxt;
	sigjmp_buf	local_sigjmp_buf;

	slot = schedlock_worker_start(arg, &cxt);
	/* an error is logged and ends the pass, and the process */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		schedlock_worker_recover_error();
		proc_exit(1);
	}
	PG_exception_stack = &local_sigjmp_buf;
	housekeep(slot, cxt);
	proc_exit(0);
}
