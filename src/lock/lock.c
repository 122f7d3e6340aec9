/*-------------------------------------------------------------------------
 *
 * lock.c
 *	  Lease locks with fencing tokens: schedlock_acquire, schedlock_release,
 *	  schedlock_extend and schedlock_assert.
 *
 * A lock is a row of schedlock.lock_state, keyed by its name.  All writes to
 * a row happen while holding a transaction-level "mutex" on the name: an
 * advisory lock tag (database, 64-bit hash of the name, SCHEDLOCK_LOCKTAG_MUTEX)
 * in the regular lock manager.  Acquire takes the mutex conditionally, so a
 * caller that meets another transaction working on the same name gets NULL at
 * once instead of waiting, tripping over a duplicate key or deadlocking.  Once
 * a change is made the mutex is kept until the transaction ends, so nobody
 * reads or overwrites a row version that may still roll back.  When acquire
 * makes no change it drops the mutex straight away.
 *
 * Because the mutex is released only after the holder's commit has become
 * visible, the rows are read with a fresh snapshot (GetLatestSnapshot) after
 * taking it, which also makes the functions correct inside REPEATABLE READ
 * transactions.
 *
 * Times are always the server's clock at the moment of the call
 * (GetCurrentTimestamp, i.e. clock_timestamp()), never the client's and
 * never the transaction start.
 *
 * Fencing tokens come from the WAL insert position (token.c).  Acquire and
 * extend force a synchronous commit (ForceSyncCommit), so that under
 * synchronous_commit = off a crash cannot lose a token or renewal the caller
 * has already been told about.
 *
 * Session-bound locks: every session that holds at least one session-bound
 * lock holds one session-level advisory lock on a tag that identifies the
 * session (pid and backend start time, SCHEDLOCK_LOCKTAG_SESSION).  The row
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
 * All of that concerns session-bound leases kept in the table.  Normally a
 * session-bound lease is kept in shared memory instead (lock_shmem.c): no
 * row, no WAL flush, no identity lock; the session's exit ends it.  The
 * functions look there first, under the same per-name mutex, so a name is
 * held in one place or the other, never both; acquire falls back to the
 * table when shared memory has no room.
 *
 * Every lease belongs to the role that acquired it (current_user at the
 * acquire, recorded in holder_role).  Only members of that role and
 * superusers may release, extend or assert it, or see its token and
 * holder_pid in the schedlock.locks view; everybody else gets SQLSTATE 42501
 * before the token is even compared, so a refusal says nothing about whether
 * a guessed token is right.  Lock names stay shared: any role may acquire a
 * name whose lease has ended, and the lease is then its own.
 *
 * The table is not writable by ordinary roles.  The functions read it
 * through its primary key and write it with the heap and index routines
 * PostgreSQL uses for its own catalogs (no SQL is parsed, planned or
 * executed), so neither the caller's rights nor its search_path play a part,
 * and a call costs little more than the index probe and the heap update.
 * Every change is followed by CommandCounterIncrement, so a later call in the
 * same transaction (even in the same statement) sees it.  Those routines
 * keep plain column indexes up to date but evaluate no expressions,
 * predicates, constraints, triggers or rules, so the functions refuse to
 * write (SQLSTATE 55000) while the table has an expression or partial
 * index, an exclusion or deferrable constraint, a trigger, a rule or a CHECK
 * constraint it was not created with; see check_lock_table.  Acquire,
 * release and extend are writes: they are refused in read-only transactions.
 *
 * IDENTIFICATION
 *	  src/lock/lock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/rmgr.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_control.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "args.h"
#include "compat.h"
#include "lease.h"
#include "lease_role.h"
#include "lock.h"
#include "lock_session.h"
#include "lock_shmem.h"
#include "lock_table.h"
#include "schedlock.h"
#include "token.h"

PG_FUNCTION_INFO_V1(schedlock_acquire);
PG_FUNCTION_INFO_V1(schedlock_release);
PG_FUNCTION_INFO_V1(schedlock_extend);
PG_FUNCTION_INFO_V1(schedlock_assert);
PG_FUNCTION_INFO_V1(schedlock_session_alive);
PG_FUNCTION_INFO_V1(schedlock_lease_visible);

PGDLLEXPORT Datum schedlock_acquire(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_release(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_extend(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_assert(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_session_alive(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_lease_visible(PG_FUNCTION_ARGS);

/*
 * Longest lock_at_most_for / lock_at_least_for accepted, in years.  Each
 * field of an interval (months, days, time) is bounded by it too, so that
 * now + interval can never leave the timestamp range.
 */
#define MAX_LEASE_YEARS			1000
#define MAX_LEASE_DAYS			(MAX_LEASE_YEARS * 366)

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
 * set_mutex_tag
 *		Fill in the transaction-level mutex tag for a lock name.
 */
static void
set_mutex_tag(LOCKTAG *tag, const char *name)
{
	uint64		h = hash_bytes_extended((const unsigned char *) name,
										(int) strlen(name), 0x5C4ED10C);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (h >> 32), (uint32) h,
						 SCHEDLOCK_LOCKTAG_MUTEX);
}

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

/*
 * get_token
 *		Fetch the token argument, which must not be NULL.
 */
static int64
get_token(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("token must not be null"),
				 errhint("Pass the token that schedlock_acquire returned.")));
	return PG_GETARG_INT64(argno);
}

/*
 * get_interval
 *		Fetch a non-NULL interval argument; argname is used in messages.
 */
static Interval *
get_interval(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
	return PG_GETARG_INTERVAL_P(argno);
}

/*
 * interval_text
 *		The interval as text, for messages.
 */
static char *
interval_text(Interval *iv)
{
	return DatumGetCString(DirectFunctionCall1(interval_out,
											   IntervalPGetDatum(iv)));
}

/*
 * plus_interval
 *		ts + iv, in the session time zone as timestamptz + interval does.
 */
static TimestampTz
plus_interval(TimestampTz ts, Interval *iv)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(ts),
												   IntervalPGetDatum(iv)));
}

/*
 * lease_end
 *		now + iv, for an interval argument named argname; 22023 when the
 *		interval is too large.
 *
 * Every field alone may move the clock by at most MAX_LEASE_YEARS, so the
 * sum cannot leave the timestamp range (no 22008 from the arithmetic), and
 * the result may lie at most MAX_LEASE_YEARS after now.  The sum is taken in
 * the session time zone, as timestamptz + interval does: a month is a
 * calendar month, which is why the callers judge the result, not the
 * interval (interval comparison counts a month as 30 days, so '-1 year
 * +361 days' compares as positive although it ends before now).
 */
static TimestampTz
lease_end(TimestampTz now, Interval *iv, const char *argname)
{
	TimestampTz end = 0;
	bool		too_large;

	too_large = iv->month > MAX_LEASE_YEARS * MONTHS_PER_YEAR ||
		iv->month < -MAX_LEASE_YEARS * MONTHS_PER_YEAR ||
		iv->day > MAX_LEASE_DAYS || iv->day < -MAX_LEASE_DAYS ||
		iv->time > (int64) MAX_LEASE_DAYS * USECS_PER_DAY ||
		iv->time < -(int64) MAX_LEASE_DAYS * USECS_PER_DAY;
	if (!too_large)
	{
		end = plus_interval(now, iv);
		/* MAX_LEASE_YEARS calendar years are at least 365 days each */
		if (end - now > (int64) MAX_LEASE_YEARS * 365 * USECS_PER_DAY)
		{
			Interval	limit;

			memset(&limit, 0, sizeof(limit));
			limit.month = MAX_LEASE_YEARS * MONTHS_PER_YEAR;
			too_large = end > plus_interval(now, &limit);
		}
	}
	if (too_large)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is too large", argname),
				 errdetail("%s is \"%s\"; the limit is %d years.",
						   argname, interval_text(iv), MAX_LEASE_YEARS)));
	return end;
}

/*
 * lease_until
 *		now + lock_at_most_for, which must lie after now.
 */
static TimestampTz
lease_until(TimestampTz now, Interval *most)
{
	TimestampTz until = lease_end(now, most, "lock_at_most_for");

	if (until <= now)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_at_most_for must be positive"),
				 errdetail("lock_at_most_for is \"%s\", which ends at or before now.",
						   interval_text(most))));
	return until;
}

/*
 * check_primary
 *		Lock state can only change on a primary.
 */
static void
check_primary(const char *funcname)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s() during recovery", funcname),
				 errhint("schedlock locks are taken on the primary server; connect to it instead of a standby.")));
}

/*
 * check_writable
 *		Lock state can only change on a primary, outside read-only
 *		transactions (25006 in both cases).
 */
static void
check_writable(const char *funcname)
{
	check_primary(funcname);
	PreventCommandIfReadOnly(psprintf("%s()", funcname));
}

/*
 * Column numbers of schedlock.lock_state (version 1.1); check_lock_table
 * checks them against the catalog once per relcache fill.
 */
#define Anum_lock_name				1
#define Anum_lock_token				2
#define Anum_lock_holder			3
#define Anum_lock_holder_pid		4
#define Anum_lock_holder_start		5
#define Anum_lock_session_bound		6
#define Anum_lock_locked_at			7
#define Anum_lock_lock_until		8
#define Anum_lock_min_until			9
#define Anum_lock_released_at		10
#define Anum_lock_holder_role		11
#define Natts_lock					11

/* Columns of schedlock.lock_state in version 1.0 (no holder_role). */
#define Natts_lock_1_0				10

/* The CHECK constraint the table is created with (on lock_name's length). */
#define LOCK_NAME_CHECK				"lock_state_lock_name_check"

/*
 * OIDs of the lock table and its primary key, cached per backend; and
 * whether the table, as the relcache currently describes it, passed
 * check_lock_table.  lock_relcache_callback resets them whenever the table
 * or one of its indexes changes (any DDL on the table invalidates its
 * relcache entry).
 */
static Oid	lock_relid = InvalidOid;
static Oid	lock_indexid = InvalidOid;
static bool lock_table_checked = false;
static bool lock_inval_registered = false;

/*
 * lock_relcache_callback
 *		Forget the cached OIDs and checks when the table, its primary key (or
 *		everything) is invalidated, e.g. by CREATE INDEX or DROP EXTENSION.
 */
static void
lock_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == lock_relid || relid == lock_indexid)
	{
		lock_relid = InvalidOid;
		lock_indexid = InvalidOid;
		lock_table_checked = false;
	}
}

/*
 * refuse_table
 *		Error out: the table has something the lock functions cannot honour.
 */
static void
refuse_table(const char *what, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("schedlock cannot write table schedlock.lock_state while it has %s", what),
			 errdetail("%s", why),
			 errhint("Drop it; schedlock.lock_state may have plain indexes besides its own, but no expression or partial indexes, triggers, rules or constraints.")));
}

/*
 * check_lock_table_shape
 *		Make sure the table has the columns this file writes, in order, with
 *		the NOT NULL markings it was created with.  The table of version 1.0
 *		(the library was updated, the extension not yet) lacks the last
 *		column, holder_role; the lock functions work on it as 1.0's did
 *		until ALTER EXTENSION schedlock UPDATE adds it (see check_lease_role).
 */
static void
check_lock_table_shape(Relation rel)
{
	static const struct
	{
		const char *name;
		Oid			type;
		bool		notnull;
	}			cols[Natts_lock] = {
		{"lock_name", TEXTOID, true},
		{"token", INT8OID, true},
		{"holder", TEXTOID, false},
		{"holder_pid", INT4OID, false},
		{"holder_session_start", TIMESTAMPTZOID, false},
		{"session_bound", BOOLOID, true},
		{"locked_at", TIMESTAMPTZOID, true},
		{"lock_until", TIMESTAMPTZOID, true},
		{"min_until", TIMESTAMPTZOID, true},
		{"released_at", TIMESTAMPTZOID, false},
		{"holder_role", OIDOID, false},
	};
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	for (i = 0; i < Min(desc->natts, Natts_lock); i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != cols[i].type ||
			strcmp(NameStr(att->attname), cols[i].name) != 0 ||
			att->attnotnull != cols[i].notnull)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table schedlock.lock_state does not have the expected definition"),
					 errdetail("Column %d should be \"%s\" of type %s, %s.", i + 1,
							   cols[i].name, format_type_be(cols[i].type),
							   cols[i].notnull ? "NOT NULL" : "nullable"),
					 errhint("Reinstall the schedlock extension.")));
	}
	if (desc->natts != Natts_lock && desc->natts != Natts_lock_1_0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table schedlock.lock_state does not have the expected definition"),
				 errdetail("The table has %d columns; schedlock expects %d.",
						   desc->natts, Natts_lock),
				 errhint("Reinstall the schedlock extension.")));
}

/*
 * check_lock_index
 *		Refuse an index the catalog routines would maintain wrongly or not
 *		at all (CatalogIndexInsert evaluates no expressions or predicates and
 *		checks no exclusion or deferred constraints); return whether it is a
 *		valid primary key on lock_name that lookups can use (a btree with the
 *		text opfamily and collation "C", which schedlock_lock_table_fetch's scan key
 *		assumes).
 */
static bool
check_lock_index(Oid indexid, Oid pkid)
{
	Relation	irel = index_open(indexid, AccessShareLock);
	Form_pg_index index = irel->rd_index;
	char	   *what = psprintf("index \"%s\"", RelationGetRelationName(irel));
	bool		usable_pk;

	if (!heap_attisnull(irel->rd_indextuple, Anum_pg_index_indexprs, NULL))
		refuse_table(what, "The lock functions write the table without SQL and cannot compute the expressions of an expression index.");
	if (!heap_attisnull(irel->rd_indextuple, Anum_pg_index_indpred, NULL))
		refuse_table(what, "The lock functions write the table without SQL and cannot evaluate the predicate of a partial index.");
	if (index->indisexclusion || !index->indimmediate)
		refuse_table(what, "The lock functions write the table without SQL and cannot check exclusion or deferrable constraints.");

	usable_pk = indexid == pkid &&
		index->indisvalid && index->indisready && index->indisunique &&
		index->indnatts == 1 && index->indnkeyatts == 1 &&
		index->indkey.values[0] == Anum_lock_name &&
		irel->rd_rel->relam == BTREE_AM_OID &&
		irel->rd_opfamily[0] == TEXT_BTREE_FAM_OID &&
		irel->rd_indcollation[0] == C_COLLATION_OID;
	index_close(irel, NoLock);
	return usable_pk;
}

/*
 * check_lock_table
 *		Everything the lock functions rely on about the opened (and locked)
 *		table; returns the OID of its primary key.
 *
 * The primary key is found by OID from the relcache, not by name.  Besides
 * it, plain indexes are fine (CatalogTupleInsert/Update keep them up to
 * date; a unique one then refuses duplicates with 23505 as it should);
 * anything the catalog routines would skip is refused while it exists:
 * expression and partial indexes (the catalog routines cannot compute an
 * expression index's keys, and a partial one would silently hold wrong
 * entries), exclusion or
 * deferrable constraints, triggers and rules (they would not fire) and CHECK
 * constraints other than the table's own (they would not be enforced).  The
 * table must also stay logged: a crash empties an unlogged table, and the
 * token counters with it.
 *
 * Holding RowExclusiveLock on the table keeps all of this stable for the
 * rest of the transaction: every DDL that adds such an object needs a
 * conflicting lock, except CREATE INDEX CONCURRENTLY, whose index stays
 * not-ready-for-inserts (skipped by CatalogIndexInsert) until we are done.
 */
static Oid
check_lock_table(Relation rel)
{
	Oid			pkid;
	List	   *indexes;
	ListCell   *lc;
	bool		pk_ok = false;
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	check_lock_table_shape(rel);

	pkid = schedlock_relation_primary_key_index(rel);
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		if (check_lock_index(lfirst_oid(lc), pkid))
			pk_ok = true;
	}
	list_free(indexes);
	if (!pk_ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table schedlock.lock_state has no usable primary key"),
				 errdetail("The lock functions look names up through a valid btree primary key on lock_name with collation \"C\"."),
				 errhint("Reinstall the schedlock extension.")));

	if (rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table schedlock.lock_state must not be unlogged"),
				 errdetail("An unlogged table is emptied by a crash, and fencing tokens would be handed out again."),
				 errhint("Run ALTER TABLE schedlock.lock_state SET LOGGED.")));
	if (rel->trigdesc != NULL && rel->trigdesc->numtriggers > 0)
		refuse_table("triggers",
					 "The lock functions write the table without SQL, so its triggers (and foreign keys) would not fire.");
	if (rel->rd_rules != NULL)
		refuse_table("rules",
					 "The lock functions write the table without SQL, so its rules would not be applied.");
	if (constr != NULL)
	{
		int			i;

		for (i = 0; i < constr->num_check; i++)
		{
			if (strcmp(constr->check[i].ccname, LOCK_NAME_CHECK) != 0)
				refuse_table(psprintf("constraint \"%s\"", constr->check[i].ccname),
							 "The lock functions write the table without SQL and enforce only the table's own CHECK constraint on lock_name.");
		}
	}
	return pkid;
}

/*
 * schedlock_lock_table_open
 *		Open schedlock.lock_state with RowExclusiveLock and return it; sets
 *		*indexid to its primary key.  Errors out when the extension is not
 *		installed in this database, or when check_lock_table refuses the
 *		table.
 *
 * The table is checked after it is locked, and again whenever its relcache
 * entry was rebuilt since the last check (the invalidation is processed
 * while the lock is taken, so a check is never older than the DDL it must
 * see).
 */
Relation
schedlock_lock_table_open(Oid *indexid)
{
	Relation	rel;

	if (!lock_inval_registered)
	{
		CacheRegisterRelcacheCallback(lock_relcache_callback, (Datum) 0);
		lock_inval_registered = true;
	}
	for (;;)
	{
		Oid			relid = lock_relid;
		bool		cached = OidIsValid(relid);

		if (!cached)
		{
			Oid			nsp = get_namespace_oid("schedlock", true);

			if (OidIsValid(nsp))
				relid = get_relname_relid("lock_state", nsp);
			if (!OidIsValid(relid))
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_TABLE),
						 errmsg("table schedlock.lock_state does not exist"),
						 errhint("Run CREATE EXTENSION schedlock in this database.")));
		}
		/* NULL when it was dropped since we looked it up: look again */
		rel = try_relation_open(relid, RowExclusiveLock);
		if (rel != NULL)
			break;
		if (!cached)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("table schedlock.lock_state does not exist"),
					 errhint("Run CREATE EXTENSION schedlock in this database.")));
		lock_relid = InvalidOid;
	}
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("schedlock.lock_state is not a table"),
				 errhint("Reinstall the schedlock extension.")));
	if (!lock_table_checked || lock_relid != RelationGetRelid(rel))
	{
		Oid			pkid = check_lock_table(rel);

		lock_relid = RelationGetRelid(rel);
		lock_indexid = pkid;
		lock_table_checked = true;
	}
	*indexid = lock_indexid;
	return rel;
}

/*
 * schedlock_lock_table_fetch
 *		Look up the row of a lock name through the primary key, with a fresh
 *		snapshot; returns a copy of the tuple (NULL when there is none) and
 *		fills *lease from it.  Must hold the name's mutex, so the row cannot
 *		change underneath us.
 */
HeapTuple
schedlock_lock_table_fetch(Relation rel, Oid indexid, const char *name,
			   SchedlockLease *lease)
{
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tup;
	HeapTuple	copy = NULL;

	/* the key column is COLLATE "C", which ScanKeyInit assumes */
	ScanKeyInit(&key, Anum_lock_name, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(name));
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Datum		values[Natts_lock];
		bool		nulls[Natts_lock];

		/* the table of 1.0 fills all but holder_role */
		memset(nulls, true, sizeof(nulls));
		copy = heap_copytuple(tup);
		heap_deform_tuple(copy, RelationGetDescr(rel), values, nulls);
		memset(lease, 0, sizeof(*lease));
		lease->token = DatumGetInt64(values[Anum_lock_token - 1]);
		lease->session_bound = DatumGetBool(values[Anum_lock_session_bound - 1]) &&
			!nulls[Anum_lock_holder_pid - 1] && !nulls[Anum_lock_holder_start - 1];
		lease->holder_pid = nulls[Anum_lock_holder_pid - 1] ? 0 :
			DatumGetInt32(values[Anum_lock_holder_pid - 1]);
		lease->holder_start = nulls[Anum_lock_holder_start - 1] ? 0 :
			DatumGetTimestampTz(values[Anum_lock_holder_start - 1]);
		lease->locked_at = DatumGetTimestampTz(values[Anum_lock_locked_at - 1]);
		lease->lock_until = DatumGetTimestampTz(values[Anum_lock_lock_until - 1]);
		lease->min_until = DatumGetTimestampTz(values[Anum_lock_min_until - 1]);
		lease->released = !nulls[Anum_lock_released_at - 1];
		if (lease->released)
			lease->released_at =
				DatumGetTimestampTz(values[Anum_lock_released_at - 1]);
		lease->has_role = !nulls[Anum_lock_holder_role - 1];
		lease->holder_role = lease->has_role ?
			DatumGetObjectId(values[Anum_lock_holder_role - 1]) : InvalidOid;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	return copy;
}

/*
 * update_lock_row
 *		Replace the columns marked in repl of the row oldtup, and make the
 *		change visible to the rest of this transaction.
 */
static void
update_lock_row(Relation rel, HeapTuple oldtup, Datum *values, bool *nulls,
				bool *repl)
{
	HeapTuple	newtup;

	newtup = heap_modify_tuple(oldtup, RelationGetDescr(rel), values, nulls, repl);
	CatalogTupleUpdate(rel, &oldtup->t_self, newtup);
	heap_freetuple(newtup);
	CommandCounterIncrement();
}

/*
 * schedlock_lock_table_is_1_0
 *		Whether the table has the columns of version 1.0 (no holder_role):
 *		the library was updated, the extension not yet.
 */
bool
schedlock_lock_table_is_1_0(Relation rel)
{
	return RelationGetDescr(rel)->natts == Natts_lock_1_0;
}

/*
 * schedlock_lock_table_write_lease
 *		Write the lease an acquire hands out, held by holder (NULL: none), as
 *		the row of name: a new row when oldtup is NULL, else every column of
 *		oldtup but the name.
 */
void
schedlock_lock_table_write_lease(Relation rel, HeapTuple oldtup,
								 const char *name, const SchedlockLease *lease,
								 text *holder)
{
	Datum		values[Natts_lock];
	bool		nulls[Natts_lock];

	memset(nulls, false, sizeof(nulls));
	values[Anum_lock_name - 1] = CStringGetTextDatum(name);
	values[Anum_lock_token - 1] = Int64GetDatum(lease->token);
	if (holder != NULL)
		values[Anum_lock_holder - 1] = PointerGetDatum(holder);
	else
		nulls[Anum_lock_holder - 1] = true;
	values[Anum_lock_holder_pid - 1] = Int32GetDatum(lease->holder_pid);
	values[Anum_lock_holder_start - 1] = TimestampTzGetDatum(lease->holder_start);
	values[Anum_lock_session_bound - 1] = BoolGetDatum(lease->session_bound);
	values[Anum_lock_locked_at - 1] = TimestampTzGetDatum(lease->locked_at);
	values[Anum_lock_lock_until - 1] = TimestampTzGetDatum(lease->lock_until);
	values[Anum_lock_min_until - 1] = TimestampTzGetDatum(lease->min_until);
	nulls[Anum_lock_released_at - 1] = true;
	values[Anum_lock_holder_role - 1] = ObjectIdGetDatum(lease->holder_role);

	if (oldtup != NULL)
	{
		bool		repl[Natts_lock];

		memset(repl, true, sizeof(repl));
		repl[Anum_lock_name - 1] = false;
		update_lock_row(rel, oldtup, values, nulls, repl);
	}
	else
	{
		HeapTuple	newtup = heap_form_tuple(RelationGetDescr(rel), values, nulls);

		CatalogTupleInsert(rel, newtup);
		heap_freetuple(newtup);
		CommandCounterIncrement();
	}
}

/*
 * schedlock_lock_table_write_until
 *		Write the lock_until of an extended lease to its row oldtup.
 */
void
schedlock_lock_table_write_until(Relation rel, HeapTuple oldtup,
								 const SchedlockLease *lease)
{
	Datum		values[Natts_lock];
	bool		nulls[Natts_lock];
	bool		repl[Natts_lock];

	memset(repl, false, sizeof(repl));
	memset(nulls, false, sizeof(nulls));
	values[Anum_lock_lock_until - 1] = TimestampTzGetDatum(lease->lock_until);
	repl[Anum_lock_lock_until - 1] = true;
	update_lock_row(rel, oldtup, values, nulls, repl);
}

/*
 * schedlock_lock_table_write_release
 *		Write what a release changed of a lease (lock_until, released_at, no
 *		longer session-bound) to its row oldtup.
 */
void
schedlock_lock_table_write_release(Relation rel, HeapTuple oldtup,
								   const SchedlockLease *lease)
{
	Datum		values[Natts_lock];
	bool		nulls[Natts_lock];
	bool		repl[Natts_lock];

	memset(repl, false, sizeof(repl));
	memset(nulls, false, sizeof(nulls));
	values[Anum_lock_lock_until - 1] = TimestampTzGetDatum(lease->lock_until);
	repl[Anum_lock_lock_until - 1] = true;
	values[Anum_lock_released_at - 1] = TimestampTzGetDatum(lease->released_at);
	repl[Anum_lock_released_at - 1] = true;
	values[Anum_lock_session_bound - 1] = BoolGetDatum(lease->session_bound);
	repl[Anum_lock_session_bound - 1] = true;
	update_lock_row(rel, oldtup, values, nulls, repl);
}

/*
 * schedlock_lock_table_session_names
 *		The names of the rows whose holder_pid is this backend's (some may
 *		be another session's with a reused pid, or released), read with a
 *		fresh snapshot, in the current memory context.
 */
List *
schedlock_lock_table_session_names(Relation rel)
{
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tup;
	List	   *names = NIL;

	ScanKeyInit(&key, Anum_lock_holder_pid, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(MyProcPid));
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = systable_beginscan(rel, InvalidOid, false, snapshot, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		name = heap_getattr(tup, Anum_lock_name,
										RelationGetDescr(rel), &isnull);

		names = lappend(names, TextDatumGetCString(name));
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	return names;
}

/*
 * row_session_alive
 *		The lease rules' question for a session-bound row of the table
 *		(SchedlockSessionAliveFn): whether its holding session still exists.
 *
 * When the holding session is this one, make sure it holds its identity
 * lock again (it may have been released under us), so that other sessions
 * get the fast answer.
 */
static bool
row_session_alive(const SchedlockLease *lease, void *arg)
{
	if (lease->holder_pid == MyProcPid &&
		lease->holder_start == MyStartTimestamp)
	{
		if (schedlock_session_bound_after_commit() > 0)
			schedlock_ensure_session_lock();
		return true;
	}
	return schedlock_holder_session_alive(lease->holder_pid, lease->holder_start);
}

/*
 * row_blocks
 *		Whether the table's row keeps a new acquirer out at now (lease.h).
 */
static bool
row_blocks(const SchedlockLease *lease, TimestampTz now)
{
	return schedlock_lease_blocks(lease, now, row_session_alive, NULL);
}

/*
 * wait_for_mutex
 *		For release, extend and assert: wait for the name's mutex (these are
 *		short operations by the holder, so waiting is right).
 */
static void
wait_for_mutex(const char *name, LOCKTAG *mutex)
{
	set_mutex_tag(mutex, name);
	(void) LockAcquire(mutex, ExclusiveLock, false, false);
}

/*
 * wait_and_fetch
 *		For release, extend and assert of a name not kept in shared memory,
 *		once wait_for_mutex has returned: open the table and fetch the row.
 *		Returns the row's tuple, or NULL when the name does not exist; *now
 *		is the clock after the wait.
 */
static HeapTuple
wait_and_fetch(const char *name, LOCKTAG *mutex, Relation *rel, Oid *indexid,
			   SchedlockLease *lease, TimestampTz *now)
{
	*now = GetCurrentTimestamp();
	*rel = schedlock_lock_table_open(indexid);
	return schedlock_lock_table_fetch(*rel, *indexid, name, lease);
}

/*
 * give_up
 *		Close the table and drop the mutex of an operation that changed
 *		nothing.
 */
static void
give_up(Relation rel, LOCKTAG *mutex)
{
	table_close(rel, RowExclusiveLock);
	LockRelease(mutex, ExclusiveLock, false);
}

/*
 * release_row
 *		End the lease of the row oldtup (read as *lease under the name's
 *		mutex) held with token at now, as the lease rules release it, and
 *		write the row.  False, changing nothing, when the rules refuse.
 *		When the lease was bound to this session, the session holds one
 *		session-bound lock less once the transaction commits.
 */
static bool
release_row(Relation rel, HeapTuple oldtup, const char *name,
			SchedlockLease *lease, int64 token, TimestampTz now)
{
	bool		mine = schedlock_lease_held_by(lease, MyProcPid,
											   MyStartTimestamp);

	if (!schedlock_lease_release(lease, token, now))
		return false;
	schedlock_lock_table_write_release(rel, oldtup, lease);
	/* the lock_at_least_for window still blocks; else the row blocks nobody */
	if (lease->lock_until > now)
		schedlock_marks_add(name, lease->lock_until, now);
	else
		schedlock_marks_unmark_at_commit(name);

	if (mine)
		schedlock_push_session_delta(-1);
	return true;
}

/*
 * check_lease_role
 *		For release, extend and assert of an existing name: raise 42501,
 *		after giving up the table (rel, unless NULL) and the mutex, unless
 *		the caller may use the row's lease.  Runs before the token is looked at, so the answer
 *		is the same for a right and a wrong token.
 */
static void
check_lease_role(const char *name, const SchedlockLease *lease, Relation rel,
				 LOCKTAG *mutex, const char *funcname)
{
	char	   *rolename;

	/*
	 * In the table of 1.0 (library updated, extension not yet) no lease has
	 * a role: the token alone identifies its holder, as in 1.0.
	 */
	if ((rel != NULL && schedlock_lock_table_is_1_0(rel)) ||
		schedlock_may_use_lease(lease->has_role, lease->holder_role))
		return;
	if (rel != NULL)
		give_up(rel, mutex);
	else
		LockRelease(mutex, ExclusiveLock, false);
	if (!lease->has_role)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for lock \"%s\"", name),
				 errdetail("The lease was acquired before schedlock 1.1 recorded roles; only a superuser may call %s() for it.",
						   funcname)));
	rolename = GetUserNameFromId(lease->holder_role, true);
	if (rolename == NULL)
		rolename = psprintf("%u", lease->holder_role);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for lock \"%s\"", name),
			 errdetail("The lock's last lease was acquired by role \"%s\"; only members of that role may call %s() for it.",
					   rolename, funcname)));
}

/*
 * scan_for_marks
 *		Mark every row of the table that is current or being written (a
 *		dirty snapshot over all versions) and blocks acquires after now, or
 *		whose token is at least floor.  False when the marks do not fit, or
 *		the table is not a heap table.
 */
static bool
scan_for_marks(TimestampTz now, int64 floor)
{
	Relation	rel;
	Oid			indexid;
	TableScanDesc scan;
	HeapTuple	tup;
	SnapshotData dirty;
	bool		ok = true;

	rel = schedlock_lock_table_open(&indexid);
	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID)
	{
		table_close(rel, RowExclusiveLock);
		return false;
	}
	InitDirtySnapshot(dirty);
	scan = table_beginscan(rel, SnapshotAny, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Buffer		buf = ((HeapScanDesc) scan)->rs_cbuf;
		bool		current;
		Datum		values[Natts_lock];
		bool		nulls[Natts_lock];
		int64		token;
		TimestampTz until;
		char	   *name;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		current = HeapTupleSatisfiesVisibility(tup, &dirty, buf);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		if (!current)
			continue;
		heap_deform_tuple(tup, RelationGetDescr(rel), values, nulls);
		token = DatumGetInt64(values[Anum_lock_token - 1]);
		until = DatumGetTimestampTz(values[Anum_lock_lock_until - 1]);
		if (token >= floor)
			until = DT_NOEND;
		else if (until <= now)
			continue;
		name = TextDatumGetCString(values[Anum_lock_name - 1]);
		ok = schedlock_marks_load_add(name, until, now);
		pfree(name);
		if (!ok)
			break;
	}
	table_endscan(scan);
	table_close(rel, RowExclusiveLock);
	return ok;
}

/*
 * schedlock_lock_table_load_marks
 *		Load this database's marks (see lock_shmem.c), unless somebody else
 *		is doing it or it cannot be done now.
 */
void
schedlock_lock_table_load_marks(TimestampTz now)
{
	uint64		gen;
	volatile bool ok = false;

	if (!schedlock_marks_begin_load(&gen, now))
		return;
	PG_TRY();
	{
		ok = scan_for_marks(now, schedlock_lease_shmem_token_floor());
	}
	PG_FINALLY();
	{
		schedlock_marks_end_load(gen, ok, now);
	}
	PG_END_TRY();
}

/* What acquire_in_shmem did. */
typedef enum ShmemAcquire
{
	SHMEM_ACQUIRED,				/* *token holds the lease */
	SHMEM_TAKEN,				/* the table's row blocks: return NULL */
	SHMEM_FALLBACK				/* acquire in the table instead */
} ShmemAcquire;

/* Whether the session acquired a lease in shared memory since it last looked. */
static bool shmem_leases_taken = false;

/*
 * acquire_in_shmem
 *		A session-bound acquire kept in shared memory, under the name's mutex.
 *		old is the name's entry there (which blocks nobody), or NULL, when
 *		the table's row (if any) is the name's state: then it must not block,
 *		and its token is the previous one.  On SHMEM_TAKEN the mutex is given
 *		up.
 */
static ShmemAcquire
acquire_in_shmem(const char *name, const SchedlockLease *old, LOCKTAG *mutex,
				 TimestampTz now, TimestampTz until, TimestampTz min_until,
				 text *holder, int64 *token)
{
	SchedlockShmemLease sl;
	bool		has_prev = old != NULL;
	int64		prev = old != NULL ? old->token : 0;
	bool		probed = false;

	/* the table's row matters only when the marks say it may */
	if (old == NULL)
	{
		switch (schedlock_marks_check(name, now))
		{
			case MARKS_CLEAR:
				break;
			case MARKS_LOAD:
				schedlock_lock_table_load_marks(now);
				/* FALLTHROUGH */
			case MARKS_PROBE:
				probed = true;
				break;
		}
	}
	if (probed)
	{
		Relation	rel;
		Oid			indexid;
		SchedlockLease row;
		HeapTuple	oldtup;

		rel = schedlock_lock_table_open(&indexid);
		oldtup = schedlock_lock_table_fetch(rel, indexid, name, &row);
		if (oldtup != NULL && row_blocks(&row, now))
		{
			give_up(rel, mutex);
			return SHMEM_TAKEN;
		}
		table_close(rel, RowExclusiveLock);
		if (oldtup != NULL)
		{
			has_prev = true;
			prev = row.token;
			heap_freetuple(oldtup);
		}
	}
	if (!schedlock_lease_shmem_token(has_prev, prev, token))
		return SHMEM_FALLBACK;

	schedlock_lease_start(&sl.lease, *token, now, until, min_until, true,
						  MyProcPid, MyStartTimestamp, GetUserId());
	sl.has_holder = holder != NULL;
	if (holder != NULL)
		text_to_cstring_buffer(holder, sl.holder, sizeof(sl.holder));
	else
		sl.holder[0] = '\0';
	if (!schedlock_lease_shmem_put(name, &sl, now))
		return SHMEM_FALLBACK;
	shmem_leases_taken = true;
	if (probed)
		schedlock_marks_forget(name);
	return SHMEM_ACQUIRED;
}

/*
 * schedlock_acquire
 *		schedlock_acquire(lock_name, lock_at_most_for, lock_at_least_for,
 *						  holder, session_bound) RETURNS bigint
 *
 * Returns a new fencing token when the caller now holds the lock, NULL when
 * somebody else does (or another transaction is changing it right now).
 */
Datum
schedlock_acquire(PG_FUNCTION_ARGS)
{
	char	   *name = schedlock_name_arg(fcinfo, 0, "lock name");
	Interval   *most = get_interval(fcinfo, 1, "lock_at_most_for");
	Interval   *least = get_interval(fcinfo, 2, "lock_at_least_for");
	text	   *holder = PG_ARGISNULL(3) ? NULL : PG_GETARG_TEXT_PP(3);
	bool		session_bound;
	TimestampTz now;
	TimestampTz until;
	TimestampTz min_until;
	LOCKTAG		mutex;
	Relation	rel;
	Oid			indexid;
	SchedlockLease row;
	SchedlockLease lease;
	HeapTuple	oldtup;
	int64		token;
	bool		from_wal;
	XLogRecPtr	lsn;

	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("session_bound must not be null")));
	session_bound = PG_GETARG_BOOL(4);

	/* both windows are judged by the times they give, from one now */
	now = GetCurrentTimestamp();
	until = lease_until(now, most);
	min_until = lease_end(now, least, "lock_at_least_for");
	switch (schedlock_lease_window(now, until, min_until))
	{
		case SCHEDLOCK_WINDOW_OK:
			break;
		case SCHEDLOCK_WINDOW_LEAST_NEGATIVE:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("lock_at_least_for must not be negative"),
					 errdetail("lock_at_least_for is \"%s\", which ends before now.",
							   interval_text(least))));
			break;
		case SCHEDLOCK_WINDOW_LEAST_EXCEEDS_MOST:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("lock_at_least_for must not exceed lock_at_most_for"),
					 errdetail("lock_at_least_for is \"%s\", lock_at_most_for is \"%s\".",
							   interval_text(least), interval_text(most))));
			break;
	}
	if (holder != NULL &&
		pg_mbstrlen_with_len(VARDATA_ANY(holder), VARSIZE_ANY_EXHDR(holder)) >
		SCHEDLOCK_MAX_HOLDER_LENGTH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("holder is too long"),
				 errdetail("The limit is %d characters.",
						   SCHEDLOCK_MAX_HOLDER_LENGTH)));
	check_writable("schedlock_acquire");

	/* never wait: another transaction busy with this name means "taken" */
	set_mutex_tag(&mutex, name);
	if (LockAcquire(&mutex, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		PG_RETURN_NULL();

	/*
	 * A name kept in shared memory has its state there; a session-bound
	 * acquire goes there when it can (see lock_shmem.c).
	 */
	if (schedlock_lease_shmem_enabled())
	{
		SchedlockShmemLease sl;
		bool		in_shmem = schedlock_lease_shmem_get(name, &sl);

		if (in_shmem && schedlock_lease_blocks(&sl.lease, now, NULL, NULL))
		{
			LockRelease(&mutex, ExclusiveLock, false);
			PG_RETURN_NULL();
		}
		if (session_bound &&
			(holder == NULL ||
			 VARSIZE_ANY_EXHDR(holder) < SCHEDLOCK_SHMEM_HOLDER_BYTES))
		{
			switch (acquire_in_shmem(name, in_shmem ? &sl.lease : NULL, &mutex,
									 now, until, min_until, holder, &token))
			{
				case SHMEM_ACQUIRED:
					/* the mutex stays until our transaction ends */
					PG_RETURN_INT64(token);
				case SHMEM_TAKEN:
					PG_RETURN_NULL();
				case SHMEM_FALLBACK:
					break;
			}
		}
		/* from here on the table's row is the name's state */
		if (in_shmem)
			schedlock_lease_shmem_forget(name);
	}

	rel = schedlock_lock_table_open(&indexid);
	oldtup = schedlock_lock_table_fetch(rel, indexid, name, &row);
	if (oldtup != NULL && row_blocks(&row, now))
	{
		give_up(rel, &mutex);
		PG_RETURN_NULL();
	}

	/* read after the name's last holder committed: see the file header */
	lsn = GetXLogInsertRecPtr();
	token = schedlock_next_token(oldtup != NULL, oldtup != NULL ? row.token : 0, lsn);
	from_wal = token == schedlock_token_base(lsn);
	if (from_wal)
		schedlock_lease_shmem_note_token(token);
	if (session_bound)
		schedlock_ensure_session_lock();

	/* the row records the holding session even when the lease is not bound */
	schedlock_lease_start(&lease, token, now, until, min_until, session_bound,
						  MyProcPid, MyStartTimestamp, GetUserId());
	schedlock_lock_table_write_lease(rel, oldtup, name, &lease, holder);
	/* a token from the row may exceed the batch's: mark the name for good */
	schedlock_marks_add(name, from_wal ? until : DT_NOEND, now);
	table_close(rel, RowExclusiveLock);
	schedlock_token_advance_wal(lsn, token);

	/*
	 * Flush our commit record before the commit is reported, whatever
	 * synchronous_commit says: under synchronous_commit = off a crash could
	 * otherwise lose this commit after the caller was told about it, and hand
	 * the same token out again (test/t/005_tokens_async_commit_crash.pl).
	 * Costs nothing extra when synchronous_commit is on.
	 */
	ForceSyncCommit();

	if (session_bound)
		schedlock_push_session_delta(1);

	/* the mutex stays until our transaction ends */
	PG_RETURN_INT64(token);
}

/*
 * schedlock_release
 *		schedlock_release(lock_name, token) RETURNS boolean
 *
 * Ends the lease held with token: lock_until becomes
 * greatest(now, locked_at + lock_at_least_for).  Returns false, changing
 * nothing, when the token is not the current one or was already released.
 */
Datum
schedlock_release(PG_FUNCTION_ARGS)
{
	char	   *name = schedlock_name_arg(fcinfo, 0, "lock name");
	int64		token = get_token(fcinfo, 1);
	LOCKTAG		mutex;
	Relation	rel;
	Oid			indexid;
	SchedlockLease row;
	HeapTuple	oldtup;
	TimestampTz now;
	SchedlockShmemLease sl;

	check_writable("schedlock_release");

	wait_for_mutex(name, &mutex);
	if (schedlock_lease_shmem_get(name, &sl))
	{
		now = GetCurrentTimestamp();
		check_lease_role(name, &sl.lease, NULL, &mutex, "schedlock_release");
		if (!schedlock_lease_release(&sl.lease, token, now))
		{
			LockRelease(&mutex, ExclusiveLock, false);
			PG_RETURN_BOOL(false);
		}
		/* the mutex stays until our transaction ends */
		(void) schedlock_lease_shmem_put(name, &sl, now);
		PG_RETURN_BOOL(true);
	}
	oldtup = wait_and_fetch(name, &mutex, &rel, &indexid, &row, &now);
	if (oldtup != NULL)
		check_lease_role(name, &row, rel, &mutex, "schedlock_release");
	if (oldtup == NULL || !release_row(rel, oldtup, name, &row, token, now))
	{
		give_up(rel, &mutex);
		PG_RETURN_BOOL(false);
	}
	table_close(rel, RowExclusiveLock);

	PG_RETURN_BOOL(true);
}

/*
 * schedlock_extend
 *		schedlock_extend(lock_name, token, lock_at_most_for) RETURNS boolean
 *
 * Renews a lease that is still in force to now + lock_at_most_for.  False
 * means the caller no longer owns the lock and must stop.
 */
Datum
schedlock_extend(PG_FUNCTION_ARGS)
{
	char	   *name = schedlock_name_arg(fcinfo, 0, "lock name");
	int64		token = get_token(fcinfo, 1);
	Interval   *most = get_interval(fcinfo, 2, "lock_at_most_for");
	LOCKTAG		mutex;
	Relation	rel;
	Oid			indexid;
	SchedlockLease row;
	HeapTuple	oldtup;
	TimestampTz now;
	SchedlockShmemLease sl;

	/* bad input fails before any waiting; judged again at the final now */
	(void) lease_until(GetCurrentTimestamp(), most);
	check_writable("schedlock_extend");

	wait_for_mutex(name, &mutex);
	if (schedlock_lease_shmem_get(name, &sl))
	{
		now = GetCurrentTimestamp();
		check_lease_role(name, &sl.lease, NULL, &mutex, "schedlock_extend");
		if (!schedlock_lease_extend(&sl.lease, token, now,
									lease_until(now, most), NULL, NULL))
		{
			LockRelease(&mutex, ExclusiveLock, false);
			PG_RETURN_BOOL(false);
		}
		/* no flush: a crash ends the session, and the lease with it */
		PG_RETURN_BOOL(schedlock_lease_shmem_put(name, &sl, now));
	}
	oldtup = wait_and_fetch(name, &mutex, &rel, &indexid, &row, &now);
	if (oldtup != NULL)
		check_lease_role(name, &row, rel, &mutex, "schedlock_extend");
	if (oldtup == NULL ||
		!schedlock_lease_extend(&row, token, now, lease_until(now, most),
								row_session_alive, NULL))
	{
		give_up(rel, &mutex);
		PG_RETURN_BOOL(false);
	}

	schedlock_lock_table_write_until(rel, oldtup, &row);
	schedlock_marks_add(name, row.lock_until, now);
	table_close(rel, RowExclusiveLock);

	/* a renewal the caller relies on must survive a crash, as in acquire */
	ForceSyncCommit();

	PG_RETURN_BOOL(true);
}

/*
 * schedlock_assert
 *		schedlock_assert(lock_name, token) RETURNS void
 *
 * Raises ERRCODE_SCHEDLOCK_LEASE_LOST (SL001) unless token holds a lease
 * that is still in force.  On success the name's mutex is kept until the
 * calling transaction ends, so nobody can take the lock over before the
 * caller's fenced writes commit or roll back.
 */
Datum
schedlock_assert(PG_FUNCTION_ARGS)
{
	char	   *name = schedlock_name_arg(fcinfo, 0, "lock name");
	int64		token = get_token(fcinfo, 1);
	LOCKTAG		mutex;
	Relation	rel;
	Oid			indexid;
	SchedlockLease row;
	SchedlockLease *lease = NULL;
	TimestampTz now;
	char	   *reason = NULL;
	SchedlockShmemLease sl;
	SchedlockSessionAliveFn alive = NULL;

	/* a standby cannot hold off a takeover on the primary: refuse there */
	check_primary("schedlock_assert");

	wait_for_mutex(name, &mutex);
	if (schedlock_lease_shmem_get(name, &sl))
	{
		now = GetCurrentTimestamp();
		check_lease_role(name, &sl.lease, NULL, &mutex, "schedlock_assert");
		lease = &sl.lease;
	}
	else
	{
		if (wait_and_fetch(name, &mutex, &rel, &indexid, &row, &now) != NULL)
		{
			check_lease_role(name, &row, rel, &mutex, "schedlock_assert");
			lease = &row;
			alive = row_session_alive;
		}
		table_close(rel, RowExclusiveLock);
	}

	switch (schedlock_lease_check(lease, token, now, alive, NULL))
	{
		case SCHEDLOCK_LEASE_HELD:
			break;
		case SCHEDLOCK_LEASE_NEVER_ACQUIRED:
			reason = pstrdup("No lock of that name was ever acquired.");
			break;
		case SCHEDLOCK_LEASE_REACQUIRED:
			reason = psprintf("The lock was acquired again since, with token " INT64_FORMAT ".",
							  lease->token);
			break;
		case SCHEDLOCK_LEASE_RELEASED:
			reason = pstrdup("The lease was released.");
			break;
		case SCHEDLOCK_LEASE_EXPIRED:
			reason = psprintf("The lease expired at %s.",
							  timestamptz_to_str(lease->lock_until));
			break;
		case SCHEDLOCK_LEASE_SESSION_ENDED:
			reason = pstrdup("The session that held the session-bound lock has ended.");
			break;
	}

	if (reason != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SCHEDLOCK_LEASE_LOST),
				 errmsg("lock \"%s\" is not held by token " INT64_FORMAT,
						name, token),
				 errdetail_internal("%s", reason)));

	/* keep the mutex: no takeover until this transaction ends */
	PG_RETURN_VOID();
}

/*
 * schedlock_session_alive
 *		schedlock.session_alive(holder_pid, holder_session_start) RETURNS
 *		boolean; used by the schedlock.locks view.
 */
Datum
schedlock_session_alive(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(schedlock_holder_session_alive(PG_GETARG_INT32(0),
										PG_GETARG_TIMESTAMPTZ(1)));
}

/*
 * schedlock_lease_visible
 *		schedlock.lease_visible(holder_role oid) RETURNS boolean: whether the
 *		current user may see (and use) the token of a lease acquired by
 *		holder_role (NULL: before 1.1, superusers only); used by the
 *		schedlock.locks view, with the same rule the functions apply.
 */
Datum
schedlock_lease_visible(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(schedlock_may_use_lease(!PG_ARGISNULL(0),
								 PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0)));
}

/*
 * end_shmem_session_leases
 *		The part of schedlock_lock_end_session_leases for the leases kept in
 *		shared memory: in a transaction of its own, end each under the name's
 *		mutex, as schedlock_release would.  Costs nothing unless the session
 *		acquired such a lease since the last call.
 */
static void
end_shmem_session_leases(void)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	List	   *names;
	ListCell   *lc;

	if (!shmem_leases_taken)
		return;
	StartTransactionCommand();
	names = schedlock_lease_shmem_mine();
	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		LOCKTAG		mutex;
		SchedlockShmemLease sl;

		wait_for_mutex(name, &mutex);
		if (schedlock_lease_shmem_get(name, &sl) &&
			schedlock_lease_held_by(&sl.lease, MyProcPid, MyStartTimestamp))
		{
			TimestampTz now = GetCurrentTimestamp();

			(void) schedlock_lease_release(&sl.lease, sl.lease.token, now);
			(void) schedlock_lease_shmem_put(name, &sl, now);
		}
		else
			LockRelease(&mutex, ExclusiveLock, false);
	}
	shmem_leases_taken = false;
	CommitTransactionCommand();
	MemoryContextSwitchTo(oldcxt);
}

/*
 * schedlock_lock_end_session_leases
 *		End every session-bound lease this session holds, as
 *		schedlock_release would end each of them, without a token and
 *		without a role check.  Called by a job worker after every run,
 *		outside a transaction: a lease a job bound to the worker's session
 *		must not outlive the job.
 *
 * Costs nothing when the session took no session-bound lease (the common
 * case: session_bound_count is zero).  Otherwise, in a transaction of its
 * own, it finds the session's rows (a scan of the table for its pid), and
 * ends each under the name's mutex, read again there; the commit then
 * drops the identity lock.  The count may overcount (a lease that expired
 * and was taken over), so it is set to zero: the session holds nothing
 * once this commits.
 */
void
schedlock_lock_end_session_leases(void)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	Relation	rel;
	Oid			indexid;
	List	   *names;
	ListCell   *lc;
	int			rest;

	Assert(!IsTransactionState());
	end_shmem_session_leases();
	if (schedlock_session_bound_count() == 0)
		return;

	StartTransactionCommand();
	/* updating the rows needs an active snapshot (heap_update asserts it) */
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = schedlock_lock_table_open(&indexid);
	names = schedlock_lock_table_session_names(rel);

	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		LOCKTAG		mutex;
		SchedlockLease row;
		HeapTuple	oldtup;

		/* as release does: wait for the mutex, read the row afresh */
		set_mutex_tag(&mutex, name);
		(void) LockAcquire(&mutex, ExclusiveLock, false, false);
		oldtup = schedlock_lock_table_fetch(rel, indexid, name, &row);
		if (oldtup == NULL ||
			!schedlock_lease_held_by(&row, MyProcPid, MyStartTimestamp) ||
			!release_row(rel, oldtup, name, &row, row.token,
						 GetCurrentTimestamp()))
			LockRelease(&mutex, ExclusiveLock, false);
	}
	table_close(rel, RowExclusiveLock);

	rest = schedlock_session_bound_after_commit();
	if (rest > 0)
		schedlock_push_session_delta(-rest);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(oldcxt);
}
