/*-------------------------------------------------------------------------
 *
 * lock_session.c
 *	  Session identity for session-bound leases kept in the table, and the
 *	  lock functions' transaction callbacks.
 *
 * Session-bound locks kept in the table: every session that holds at least
 * one such lock holds one session-level advisory lock on a tag that
 * identifies the session (pid and backend start time,
 * SCHEDLOCK_LOCKTAG_SESSION).  The row
 * records the pid and start time; "is the holder gone" is answered by a
 * conditional probe of that tag, which the lock manager frees the moment the
 * session ends in any way.  The identity lock is taken before the row is
 * written, and released at commit once the session's count of session-bound
 * locks drops to zero (or at abort, when the change that needed it rolls
 * back), tracked per (sub)transaction below.
 *
 * The advisory lock is only the fast answer: pg_advisory_unlock_all(),
 * DISCARD ALL, or a job worker cleaning up between jobs release it behind
 * our back.  So nothing here trusts a flag saying "we hold it": the holder
 * checks the lock manager (LockHeldByMe) and takes the lock again whenever it
 * needs it and at the end of every transaction, and a prober that finds the
 * identity lock free confirms that the holding backend (pid and start time,
 * from the backend status table) is really gone before it takes the lease
 * over.  A session-bound lease therefore has one holder for as long as its
 * session lives, whatever advisory locks the session drops.  A job worker's
 * session runs one job after another, so the worker ends the session-bound
 * leases a job took once its run is over (schedlock_lock_end_session_leases).
 *
 * The transaction callbacks also end a (sub)transaction for the leases and
 * marks kept in shared memory (lease_shmem.c, lock_marks.c): an abort puts
 * back what it changed before the names' mutexes are released.
 *
 * IDENTIFICATION
 *	  src/lock/lock_session.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "lock.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "utils/backend_status.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "lease_shmem.h"
#include "lock_marks.h"
#include "lock_session.h"

/*
 * Session identity lock bookkeeping.  session_bound_count is the number of
 * session-bound locks this session holds as of its last commit (it may
 * overcount when a lease expired and was taken over; that only keeps the
 * identity lock a little longer).  Changes made by the open transaction are
 * kept as (nesting level, delta) pairs until it commits or aborts.  Whether
 * the identity lock is held is never remembered here: the lock manager is
 * asked (identity_lock_held), since other code may release it.
 */
typedef struct PendingDelta
{
	int			nestlevel;
	int			delta;
} PendingDelta;

static int	session_bound_count = 0;
static PendingDelta *pending = NULL;
static int	npending = 0;
static int	maxpending = 0;

/*
 * set_session_tag
 *		Fill in the identity lock tag of the session (pid, start time).
 */
static void
set_session_tag(LOCKTAG *tag, int32 pid, TimestampTz start)
{
	uint64		s = (uint64) start;

	SET_LOCKTAG_ADVISORY(*tag, (uint32) pid, (uint32) (s >> 32), (uint32) s,
						 SCHEDLOCK_LOCKTAG_SESSION);
}

/*
 * backend_alive
 *		Whether the backend with this pid that started at start still exists.
 *
 * Asked only when the backend's identity lock is free, which is normal for
 * a session that has ended but also happens for a live one that released
 * its advisory locks (pg_advisory_unlock_all, DISCARD ALL) and has not yet
 * ended the transaction in which it did.  A pid missing from the proc array
 * settles it cheaply.  Otherwise the backend status table decides (a reused
 * pid has another start time; an exiting backend clears its entry before it
 * leaves the proc array); it is read afresh, not from the transaction's
 * cached copy, which may be older than the holder.
 */
static bool
backend_alive(int32 pid, TimestampTz start)
{
	bool		alive = false;
	int			n;
	int			i;

	if (BackendPidGetProc(pid) == NULL)
		return false;

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	for (i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *entry = schedlock_local_beentry(i);

		if (entry != NULL && entry->backendStatus.st_procpid == pid)
		{
			alive = entry->backendStatus.st_proc_start_timestamp == start;
			break;
		}
	}
	pgstat_clear_backend_activity_snapshot();
	return alive;
}

/*
 * schedlock_holder_session_alive
 *		Whether the session identified by (pid, start) still exists.
 *
 * Probes the session's identity lock with a conditional share lock; the
 * holder keeps it exclusively while it holds any session-bound lock.  When
 * the probe gets the lock, backend_alive makes sure the holder is really
 * gone and did not merely drop its advisory locks.  Must run inside a
 * transaction.
 */
bool
schedlock_holder_session_alive(int32 pid, TimestampTz start)
{
	LOCKTAG		tag;

	if (pid == MyProcPid && start == MyStartTimestamp)
		return true;

	set_session_tag(&tag, pid, start);
	if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ShareLock, false);
	return backend_alive(pid, start);
}

/*
 * identity_lock_held
 *		Whether this session holds its identity lock right now, as the lock
 *		manager sees it.
 */
static bool
identity_lock_held(void)
{
	LOCKTAG		tag;

	set_session_tag(&tag, MyProcPid, MyStartTimestamp);
	return schedlock_lock_held_by_me(&tag, ExclusiveLock);
}

/*
 * schedlock_ensure_session_lock
 *		Take this session's identity lock unless it holds it now.
 *
 * Nobody else ever holds the tag for long (only probes, momentarily), so a
 * blocking acquire is fine.
 */
void
schedlock_ensure_session_lock(void)
{
	LOCKTAG		tag;

	if (identity_lock_held())
		return;
	set_session_tag(&tag, MyProcPid, MyStartTimestamp);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
}

/*
 * retake_session_lock_at_abort
 *		schedlock_ensure_session_lock for the abort callback, which must neither sleep
 *		on a lock nor raise an error: a few conditional attempts, a
 *		millisecond apart, outlast any probe.  Should they all fail, the
 *		lease is still safe (probers check the backend itself), and the next
 *		transaction end takes it again.
 */
static void
retake_session_lock_at_abort(void)
{
	LOCKTAG		tag;
	int			attempt;

	if (proc_exit_inprogress || identity_lock_held())
		return;
	set_session_tag(&tag, MyProcPid, MyStartTimestamp);
	for (attempt = 0; attempt < 10; attempt++)
	{
		if (schedlock_try_session_lock_quietly(&tag, ExclusiveLock) != LOCKACQUIRE_NOT_AVAIL)
			return;
		pg_usleep(1000L);
	}
}

/*
 * drop_session_lock_if_unused
 *		Release the identity lock when no session-bound lock needs it.
 */
static void
drop_session_lock_if_unused(void)
{
	LOCKTAG		tag;

	if (session_bound_count > 0 || !identity_lock_held())
		return;
	set_session_tag(&tag, MyProcPid, MyStartTimestamp);
	LockRelease(&tag, ExclusiveLock, true);
}

/*
 * schedlock_session_bound_after_commit
 *		How many session-bound locks this session will hold if the open
 *		transaction commits.
 */
int
schedlock_session_bound_after_commit(void)
{
	int			count = session_bound_count;
	int			i;

	for (i = 0; i < npending; i++)
		count += pending[i].delta;
	return count;
}

/*
 * schedlock_session_bound_count
 *		How many session-bound locks this session held as of its last commit
 *		(it may overcount, see above).
 */
int
schedlock_session_bound_count(void)
{
	return session_bound_count;
}

/*
 * schedlock_push_session_delta
 *		Record that the current (sub)transaction changes the number of
 *		session-bound locks this session holds by delta.
 */
void
schedlock_push_session_delta(int delta)
{
	schedlock_ensure_room((void **) &pending, &maxpending, npending,
						  sizeof(PendingDelta));
	pending[npending].nestlevel = GetCurrentTransactionNestLevel();
	pending[npending].delta = delta;
	npending++;
}

/*
 * lock_xact_callback
 *		Fold the transaction's session-bound deltas into the session count at
 *		commit, forget them at abort, and drop the identity lock when unused.
 *		While session-bound locks remain, take the identity lock again should
 *		the transaction have released it (pg_advisory_unlock_all, DISCARD
 *		ALL).
 */
static void
lock_xact_callback(XactEvent event, void *arg)
{
	int			i;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (npending > 0 || schedlock_lease_shmem_pending())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that acquired or released a session-bound schedlock lock")));
			if (session_bound_count > 0)
				schedlock_ensure_session_lock();
			break;
		case XACT_EVENT_PRE_COMMIT:
			/* the transaction may have released it (pg_advisory_unlock_all) */
			if (schedlock_session_bound_after_commit() > 0)
				schedlock_ensure_session_lock();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			schedlock_lease_shmem_end_xact(true, 1);
			schedlock_marks_end_xact(true, 1);
			for (i = 0; i < npending; i++)
				session_bound_count += pending[i].delta;
			if (session_bound_count < 0)
				session_bound_count = 0;
			npending = 0;
			drop_session_lock_if_unused();
			break;
		case XACT_EVENT_PREPARE:
			/* COMMIT PREPARED may come from anywhere: keep the marks */
			schedlock_marks_end_xact(false, 1);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			schedlock_lease_shmem_end_xact(false, 1);
			schedlock_marks_end_xact(false, 1);
			npending = 0;
			if (session_bound_count > 0)
				retake_session_lock_at_abort();
			else
				drop_session_lock_if_unused();
			break;
		default:
			break;
	}
}

/*
 * lock_subxact_callback
 *		Forget the deltas of an aborted subtransaction; hand those of a
 *		committed one to its parent.
 */
static void
lock_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	int			i;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		int			keep = 0;

		schedlock_lease_shmem_end_xact(false, level);
		schedlock_marks_end_xact(false, level);
		for (i = 0; i < npending; i++)
			if (pending[i].nestlevel < level)
				pending[keep++] = pending[i];
		npending = keep;
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		schedlock_lease_shmem_end_xact(true, level);
		schedlock_marks_end_xact(true, level);
		for (i = 0; i < npending; i++)
			if (pending[i].nestlevel >= level)
				pending[i].nestlevel = level - 1;
	}
}

/*
 * schedlock_lock_init
 *		Called from _PG_init: register the transaction callbacks.
 */
void
schedlock_lock_init(void)
{
	RegisterXactCallback(lock_xact_callback, NULL);
	RegisterSubXactCallback(lock_subxact_callback, NULL);
}
