/*-------------------------------------------------------------------------
 *
 * budget.c
 *	  The job backends' budget, shared by every database: why a queue's due
 *	  jobs wait, which backend leaves to make room for a waiting queue, and
 *	  when a queue's backends are all busy.  The launcher (launcher.c) calls
 *	  these under the lock of the scheduler's shared memory, held
 *	  exclusively; the rules they follow are in launcher.c's header.
 *
 * IDENTIFICATION
 *	  src/sched/budget.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "base/kept_query.h"
#include "base/settings.h"
#include "budget.h"
#include "sched_shmem.h"

/* A queue waiting this long is worth a WARNING, at most this often. */
#define SCHEDLOCK_WAIT_WARN_AFTER_MS	10000
#define SCHEDLOCK_WAIT_WARN_EVERY_MS	600000

/* When each kind of wait was last warned about. */
static TimestampTz warned_at[SCHEDLOCK_WAIT_START_FAILED + 1];

/*
 * schedlock_budget_warn_wait
 *		Log, at most once per SCHEDLOCK_WAIT_WARN_EVERY_MS per kind, that a
 *		queue's due jobs have waited SCHEDLOCK_WAIT_WARN_AFTER_MS for a
 *		backend, naming the setting to raise.  Returns in how many ms the
 *		next warning falls due if the queue still waits then (-1: it does
 *		not wait), so that the launcher wakes for it: nothing else may wake
 *		it while the backends run long jobs.
 */
long
schedlock_budget_warn_wait(SchedlockQueue *q, SchedlockDatabase *db,
						   TimestampTz now)
{
	TimestampTz due;

	if (q->waiting_since == 0)
		return -1;
	due = TimestampTzPlusMilliseconds(q->waiting_since,
									  SCHEDLOCK_WAIT_WARN_AFTER_MS);
	if (warned_at[q->wait] != 0)
		due = Max(due, TimestampTzPlusMilliseconds(warned_at[q->wait],
												   SCHEDLOCK_WAIT_WARN_EVERY_MS));
	if (due > now)
		return (long) ((due - now) / 1000) + 1;
	warned_at[q->wait] = now;
	switch (q->wait)
	{
		case SCHEDLOCK_WAIT_BUDGET:
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("schedlock jobs in database \"%s\" wait for a job backend",
							NameStr(db->dbname)),
					 errdetail("All schedlock.max_job_backends (%d) job backends of the cluster are in use.",
							   schedlock_max_job_backends),
					 errhint("Raise schedlock.max_job_backends, and max_worker_processes with it.")));
			break;
		case SCHEDLOCK_WAIT_DATABASE_CAP:
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("schedlock jobs in database \"%s\" wait for a job backend",
							NameStr(db->dbname)),
					 errdetail("The database has schedlock.max_workers (%d) job backends.",
							   schedlock_max_workers),
					 errhint("Raise schedlock.max_workers.")));
			break;
		case SCHEDLOCK_WAIT_ROLE_CAP:
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("schedlock jobs in database \"%s\" wait for a job backend",
							NameStr(db->dbname)),
					 errdetail("Their role has schedlock.max_runs_per_role (%d) job backends in the cluster.",
							   schedlock_max_runs_per_role),
					 errhint("Raise schedlock.max_runs_per_role, keeping it below schedlock.max_job_backends.")));
			break;
		case SCHEDLOCK_WAIT_LOCKED:
			ereport(WARNING,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("schedlock jobs in database \"%s\" wait: their job backend could not get a lock",
							NameStr(db->dbname)),
					 errdetail("Another session holds a lock on schedlock's tables or on a job's row for longer than schedlock.bookkeeping_lock_timeout (%d ms); the backend left and is started again every few seconds.",
							   schedlock_bookkeeping_lock_timeout),
					 errhint("Look in pg_locks for the session that holds it.")));
			break;
		case SCHEDLOCK_WAIT_PROCESSES:
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("schedlock jobs in database \"%s\" wait for a job backend",
							NameStr(db->dbname)),
					 errdetail("All max_worker_processes (%d) background worker slots are in use.",
							   max_worker_processes),
					 errhint("Raise max_worker_processes: the scheduler needs one launcher plus up to schedlock.max_job_backends (%d) processes.",
							 schedlock_max_job_backends)));
			break;
		default:
			break;
	}
	return SCHEDLOCK_WAIT_WARN_EVERY_MS;
}

/*
 * schedlock_budget_set_wait
 *		Record why queue q's due jobs wait (SCHEDLOCK_WAIT_NONE: they do not).
 *		Caller holds the lock exclusively.
 */
void
schedlock_budget_set_wait(SchedlockQueue *q, SchedlockWait wait,
						  TimestampTz now)
{
	Assert(LWLockHeldByMeInMode(schedlock_shared->lock, LW_EXCLUSIVE));

	if (wait == SCHEDLOCK_WAIT_NONE)
	{
		q->wait = SCHEDLOCK_WAIT_NONE;
		q->waiting_since = 0;
		q->start_error[0] = '\0';
		return;
	}
	q->wait = wait;
	if (q->waiting_since == 0)
		q->waiting_since = now;
}

/*
 * schedlock_budget_role_backends
 *		The job backends of role in the whole cluster: its reserved slots,
 *		as the budget counts them (starting ones included, those asked to
 *		leave too: they run their current job first, and one that ended
 *		until the launcher frees its slot), so that they add up with its
 *		queues' nbackends.  What schedlock.max_runs_per_role caps: a role is
 *		the cluster's, not a database's.  Caller holds the lock.
 */
int
schedlock_budget_role_backends(Oid role)
{
	int			n = 0;
	int			i;

	Assert(LWLockHeldByMe(schedlock_shared->lock));

	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

		if (slot->in_use &&
			slot->kind == SCHEDLOCK_BACKEND_JOBS && slot->role == role)
			n++;
	}
	return n;
}

/*
 * schedlock_budget_role_at_cap
 *		Whether role has its schedlock.max_runs_per_role job backends in the
 *		cluster.  Caller holds the lock.
 */
bool
schedlock_budget_role_at_cap(Oid role)
{
	return schedlock_max_runs_per_role > 0 &&
		schedlock_budget_role_backends(role) >= schedlock_max_runs_per_role;
}

/*
 * schedlock_budget_make_room
 *		The budget (of the cluster; of database dboid when valid; of role
 *		when valid, its schedlock.max_runs_per_role) is spent and 'needed'
 *		queues wait: ask that many backends (of that database, of that
 *		role) to leave (see the file header).  Returns in how many ms to
 *		look again when a busy backend has not had its turn yet (-1: no
 *		need).  Caller holds the lock exclusively.
 */
long
schedlock_budget_make_room(int needed, Oid dboid, Oid role, TimestampTz now)
{
	Latch	   *latches[64];
	int			nlatches = 0;
	long		recheck = -1;
	int			i;

	Assert(LWLockHeldByMeInMode(schedlock_shared->lock, LW_EXCLUSIVE));

	/* idle backends first: their queue has nothing due soon */
	for (i = 0; i < schedlock_shared->nslots && needed > 0; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];
		SchedlockQueue *q;

		if (!slot->in_use || slot->kind != SCHEDLOCK_BACKEND_JOBS ||
			!slot->idle || slot->yield ||
			(OidIsValid(dboid) && slot->dboid != dboid) ||
			(OidIsValid(role) && slot->role != role))
			continue;
		q = schedlock_find_queue(slot->dboid, slot->role, false);
		if (q != NULL &&
			q->due_at <= TimestampTzPlusMilliseconds(now, schedlock_start_lead_ms() +
													 q->lead_ms))
			continue;
		slot->yield = true;
		if (slot->latch != NULL && nlatches < lengthof(latches))
			latches[nlatches++] = slot->latch;
		needed--;
	}
	/* already leaving */
	for (i = 0; i < schedlock_shared->nslots; i++)
		if (schedlock_shared->slots[i].in_use &&
			schedlock_shared->slots[i].yield &&
			(!OidIsValid(dboid) || schedlock_shared->slots[i].dboid == dboid) &&
			(!OidIsValid(role) || schedlock_shared->slots[i].role == role))
			needed--;
	while (needed > 0)
	{
		SchedlockBackendSlot *victim = NULL;
		int			victim_n = 0;

		for (i = 0; i < schedlock_shared->nslots; i++)
		{
			SchedlockBackendSlot *slot = &schedlock_shared->slots[i];
			SchedlockQueue *q;
			int			n;

			if (!slot->in_use || slot->kind != SCHEDLOCK_BACKEND_JOBS ||
				slot->yield || (OidIsValid(dboid) && slot->dboid != dboid) ||
				(OidIsValid(role) && slot->role != role))
				continue;
			if (!TimestampDifferenceExceeds(slot->turn_from, now,
											SCHEDLOCK_TURN_MS))
			{
				long		left = (long) ((slot->turn_from - now) / 1000) +
					SCHEDLOCK_TURN_MS + 1;

				if (recheck < 0 || left < recheck)
					recheck = left;
				continue;
			}
			q = schedlock_find_queue(slot->dboid, slot->role, false);
			n = q != NULL ? q->nbackends : 1;
			if (victim == NULL || n > victim_n ||
				(n == victim_n && slot->turn_from < victim->turn_from))
			{
				victim = slot;
				victim_n = n;
			}
		}
		if (victim == NULL)
			break;
		victim->yield = true;
		if (victim->latch != NULL && nlatches < lengthof(latches))
			latches[nlatches++] = victim->latch;
		needed--;
	}
	LWLockRelease(schedlock_shared->lock);
	for (i = 0; i < nlatches; i++)
		SetLatch(latches[i]);
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	return recheck;
}

/*
 * schedlock_budget_watch_busy
 *		Tell the backends of queue q whether the launcher watches the queue
 *		being busy by itself (busy_watched: a backend that starts a run
 *		then does not wake it).  Caller holds the lock exclusively.
 */
void
schedlock_budget_watch_busy(SchedlockQueue *q, bool watched)
{
	int			i;

	Assert(LWLockHeldByMeInMode(schedlock_shared->lock, LW_EXCLUSIVE));

	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

		if (slot->in_use && slot->kind == SCHEDLOCK_BACKEND_JOBS &&
			slot->dboid == q->dboid && slot->role == q->role)
			slot->busy_watched = watched;
	}
}

/*
 * schedlock_budget_all_busy
 *		Whether every backend of the due queue q has been running a job for
 *		SCHEDLOCK_GROW_AFTER_MS; when they all run one but not yet for that
 *		long, *wake_at is moved to when they will have, and the backends are
 *		told that the launcher will look again by itself (busy_watched: a
 *		backend that starts a run then does not wake it; nor while the queue
 *		has a backlog, which the launcher knows of).  Caller holds the lock
 *		exclusively.
 */
bool
schedlock_budget_all_busy(SchedlockQueue *q, TimestampTz now,
						  TimestampTz *wake_at)
{
	TimestampTz latest = 0;
	int			i;

	Assert(LWLockHeldByMeInMode(schedlock_shared->lock, LW_EXCLUSIVE));

	for (i = 0; i < schedlock_shared->nslots; i++)
	{
		SchedlockBackendSlot *slot = &schedlock_shared->slots[i];

		if (!slot->in_use || slot->kind != SCHEDLOCK_BACKEND_JOBS ||
			slot->dboid != q->dboid || slot->role != q->role)
			continue;
		if (slot->running_job == 0)
		{
			schedlock_budget_watch_busy(q, false);
			return false;
		}
		latest = Max(latest, slot->running_since);
	}
	if (latest == 0)
		return false;
	latest = TimestampTzPlusMilliseconds(latest, SCHEDLOCK_GROW_AFTER_MS);
	if (latest <= now)
	{
		schedlock_budget_watch_busy(q, false);
		return true;
	}
	if (latest < *wake_at)
		*wake_at = latest;
	schedlock_budget_watch_busy(q, true);
	return false;
}
