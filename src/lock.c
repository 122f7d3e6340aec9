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
 * Fencing tokens are max(previous token + 1, timeline << 40 | 1): strictly
 * increasing per name, and a promoted standby (which always starts a new,
 * higher timeline) hands out tokens above anything its old primary could have
 * handed out, even tokens whose WAL never reached the standby.  Acquire and
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
 * The table is not writable by ordinary roles.  The functions read it
 * through its primary key and write it with the heap and index routines
 * PostgreSQL uses for its own catalogs (no SQL is parsed, planned or
 * executed), so neither the caller's rights nor its search_path play a part,
 * and a call costs little more than the index probe and the heap update.
 * Every change is followed by CommandCounterIncrement, so a later call in the
 * same transaction (even in the same statement) sees it.
 *
 * IDENTIFICATION
 *	  src/lock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "schedlock.h"

PG_FUNCTION_INFO_V1(schedlock_acquire);
PG_FUNCTION_INFO_V1(schedlock_release);
PG_FUNCTION_INFO_V1(schedlock_extend);
PG_FUNCTION_INFO_V1(schedlock_assert);
PG_FUNCTION_INFO_V1(schedlock_session_alive);

PGDLLEXPORT Datum schedlock_acquire(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_release(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_extend(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_assert(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_session_alive(PG_FUNCTION_ARGS);

/* Number of low-order token bits that count acquisitions within a timeline. */
#define TOKEN_TIMELINE_SHIFT	40

/* The state of one lock row, as read under the name's mutex. */
typedef struct LockRow
{
	int64		token;
	bool		session_bound;
	int32		holder_pid;		/* valid when session_bound */
	TimestampTz holder_session_start;	/* valid when session_bound */
	TimestampTz lock_until;
	bool		released;
} LockRow;

/*
 * Session identity lock bookkeeping.  session_bound_count is the number of
 * session-bound locks this session holds as of its last commit (it may
 * overcount when a lease expired and was taken over; that only keeps the
 * identity lock a little longer).  Changes made by the open transaction are
 * kept as (nesting level, delta) pairs until it commits or aborts.
 */
typedef struct PendingDelta
{
	int			nestlevel;
	int			delta;
} PendingDelta;

static bool session_lock_held = false;
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
 * holder_session_alive
 *		Whether the session identified by (pid, start) still exists.
 *
 * Probes the session's identity lock with a conditional share lock; the
 * holder keeps it exclusively while it holds any session-bound lock.  Must
 * run inside a transaction.
 */
static bool
holder_session_alive(int32 pid, TimestampTz start)
{
	LOCKTAG		tag;

	if (pid == MyProcPid && start == MyStartTimestamp)
		return true;

	set_session_tag(&tag, pid, start);
	if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ShareLock, false);
	return false;
}

/*
 * ensure_session_lock
 *		Take this session's identity lock if we do not hold it yet.
 *
 * Nobody else ever holds the tag for long (only probes, momentarily), so a
 * blocking acquire is fine.
 */
static void
ensure_session_lock(void)
{
	LOCKTAG		tag;

	if (session_lock_held)
		return;
	set_session_tag(&tag, MyProcPid, MyStartTimestamp);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	session_lock_held = true;
}

/*
 * drop_session_lock_if_unused
 *		Release the identity lock when no session-bound lock needs it.
 */
static void
drop_session_lock_if_unused(void)
{
	LOCKTAG		tag;

	if (!session_lock_held || session_bound_count > 0)
		return;
	set_session_tag(&tag, MyProcPid, MyStartTimestamp);
	LockRelease(&tag, ExclusiveLock, true);
	session_lock_held = false;
	session_bound_count = 0;
}

/*
 * push_session_delta
 *		Record that the current (sub)transaction changes the number of
 *		session-bound locks this session holds by delta.
 */
static void
push_session_delta(int delta)
{
	if (npending >= maxpending)
	{
		int			newmax = maxpending == 0 ? 8 : maxpending * 2;

		if (pending == NULL)
			pending = MemoryContextAlloc(TopMemoryContext,
										 newmax * sizeof(PendingDelta));
		else
			pending = repalloc(pending, newmax * sizeof(PendingDelta));
		maxpending = newmax;
	}
	pending[npending].nestlevel = GetCurrentTransactionNestLevel();
	pending[npending].delta = delta;
	npending++;
}

/*
 * lock_xact_callback
 *		Fold the transaction's session-bound deltas into the session count at
 *		commit, forget them at abort, and drop the identity lock when unused.
 */
static void
lock_xact_callback(XactEvent event, void *arg)
{
	int			i;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (npending > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that acquired or released a session-bound schedlock lock")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			for (i = 0; i < npending; i++)
				session_bound_count += pending[i].delta;
			if (session_bound_count < 0)
				session_bound_count = 0;
			npending = 0;
			drop_session_lock_if_unused();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			npending = 0;
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

		for (i = 0; i < npending; i++)
			if (pending[i].nestlevel < level)
				pending[keep++] = pending[i];
		npending = keep;
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
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
 * schedlock_name_arg
 *		Fetch and validate a name argument (a lock's or a job's): not null,
 *		not empty, at most SCHEDLOCK_MAX_NAME_LENGTH characters.  what names
 *		the argument in the messages.
 */
char *
schedlock_name_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	text	   *t;
	int			nchars;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	t = PG_GETARG_TEXT_PP(argno);
	if (VARSIZE_ANY_EXHDR(t) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));
	nchars = pg_mbstrlen_with_len(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	if (nchars > SCHEDLOCK_MAX_NAME_LENGTH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is too long", what),
				 errdetail("The name has %d characters; the limit is %d.",
						   nchars, SCHEDLOCK_MAX_NAME_LENGTH)));
	return text_to_cstring(t);
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
 * schedlock_interval_sign
 *		-1, 0 or 1 as the interval is negative, zero or positive (months are
 *		counted as 30 days, as interval comparison does).  Also used by the
 *		job functions.
 */
int
schedlock_interval_sign(Interval *iv)
{
	Interval	zero;

	memset(&zero, 0, sizeof(zero));
	return DatumGetInt32(DirectFunctionCall2(interval_cmp,
											 IntervalPGetDatum(iv),
											 IntervalPGetDatum(&zero)));
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
 * check_lock_at_most_for
 *		lock_at_most_for must be strictly positive.
 */
static void
check_lock_at_most_for(Interval *most)
{
	if (schedlock_interval_sign(most) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_at_most_for must be positive"),
				 errdetail("lock_at_most_for is \"%s\".", interval_text(most))));
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
 * current_timeline
 *		The timeline new WAL is written on (we are not in recovery).
 */
static int64
current_timeline(void)
{
	return (int64) GetWALInsertionTimeLine();
}

/*
 * next_token
 *		The token for the next acquisition of a name whose last token was
 *		prev (has_prev false for a new name).
 */
static int64
next_token(bool has_prev, int64 prev)
{
	int64		base = (current_timeline() << TOKEN_TIMELINE_SHIFT) + 1;

	if (!has_prev)
		return base;
	if (prev >= PG_INT64_MAX - 1)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("fencing token counter exhausted")));
	return Max(prev + 1, base);
}

/*
 * Column numbers of schedlock.lock_state; lock_tables() checks them against
 * the catalog once per cache fill.
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
#define Natts_lock					10

/* OIDs of the lock table and its primary key, cached per backend. */
static Oid	lock_relid = InvalidOid;
static Oid	lock_indexid = InvalidOid;
static bool lock_inval_registered = false;

/*
 * lock_relcache_callback
 *		Forget the cached OIDs when the table (or everything) is invalidated,
 *		e.g. by DROP EXTENSION.
 */
static void
lock_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == lock_relid || relid == lock_indexid)
	{
		lock_relid = InvalidOid;
		lock_indexid = InvalidOid;
	}
}

/*
 * check_lock_table_shape
 *		Make sure the table has the columns this file writes, in order.
 */
static void
check_lock_table_shape(Relation rel)
{
	static const struct
	{
		const char *name;
		Oid			type;
	}			cols[Natts_lock] = {
		{"lock_name", TEXTOID},
		{"token", INT8OID},
		{"holder", TEXTOID},
		{"holder_pid", INT4OID},
		{"holder_session_start", TIMESTAMPTZOID},
		{"session_bound", BOOLOID},
		{"locked_at", TIMESTAMPTZOID},
		{"lock_until", TIMESTAMPTZOID},
		{"min_until", TIMESTAMPTZOID},
		{"released_at", TIMESTAMPTZOID},
	};
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	if (desc->natts != Natts_lock)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table schedlock.lock_state does not have the expected definition"),
				 errhint("Reinstall the schedlock extension.")));
	for (i = 0; i < Natts_lock; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != cols[i].type ||
			strcmp(NameStr(att->attname), cols[i].name) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table schedlock.lock_state does not have the expected definition"),
					 errdetail("Column %d should be \"%s\".", i + 1, cols[i].name),
					 errhint("Reinstall the schedlock extension.")));
	}
}

/*
 * open_lock_table
 *		Open schedlock.lock_state with RowExclusiveLock and return it; sets
 *		*indexid to its primary key.  Errors out when the extension is not
 *		installed in this database.
 */
static Relation
open_lock_table(Oid *indexid)
{
	Relation	rel;

	if (!lock_inval_registered)
	{
		CacheRegisterRelcacheCallback(lock_relcache_callback, (Datum) 0);
		lock_inval_registered = true;
	}
	if (!OidIsValid(lock_relid))
	{
		Oid			nsp = get_namespace_oid("schedlock", true);
		Oid			relid = InvalidOid;
		Oid			idxid = InvalidOid;

		if (OidIsValid(nsp))
		{
			relid = get_relname_relid("lock_state", nsp);
			idxid = get_relname_relid("lock_state_pkey", nsp);
		}
		if (!OidIsValid(relid) || !OidIsValid(idxid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("table schedlock.lock_state does not exist"),
					 errhint("Run CREATE EXTENSION schedlock in this database.")));
		rel = table_open(relid, RowExclusiveLock);
		check_lock_table_shape(rel);
		lock_relid = relid;
		lock_indexid = idxid;
		*indexid = idxid;
		return rel;
	}
	*indexid = lock_indexid;
	return table_open(lock_relid, RowExclusiveLock);
}

/*
 * fetch_lock_row
 *		Look up the row of a lock name through the primary key, with a fresh
 *		snapshot; returns a copy of the tuple (NULL when there is none) and
 *		fills *row.  Must hold the name's mutex, so the row cannot change
 *		underneath us.
 */
static HeapTuple
fetch_lock_row(Relation rel, Oid indexid, const char *name, LockRow *row)
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

		copy = heap_copytuple(tup);
		heap_deform_tuple(copy, RelationGetDescr(rel), values, nulls);
		row->token = DatumGetInt64(values[Anum_lock_token - 1]);
		row->session_bound = DatumGetBool(values[Anum_lock_session_bound - 1]) &&
			!nulls[Anum_lock_holder_pid - 1] && !nulls[Anum_lock_holder_start - 1];
		row->holder_pid = nulls[Anum_lock_holder_pid - 1] ? 0 :
			DatumGetInt32(values[Anum_lock_holder_pid - 1]);
		row->holder_session_start = nulls[Anum_lock_holder_start - 1] ? 0 :
			DatumGetTimestampTz(values[Anum_lock_holder_start - 1]);
		row->lock_until = DatumGetTimestampTz(values[Anum_lock_lock_until - 1]);
		row->released = !nulls[Anum_lock_released_at - 1];
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
 * blocks_acquire
 *		Whether the row keeps a new acquirer out at now: its lock_until
 *		(the lease, or after a release the lock_at_least_for window) has not
 *		passed and, when session-bound, the holding session still exists.
 */
static bool
blocks_acquire(const LockRow *row, TimestampTz now)
{
	if (row->lock_until <= now)
		return false;
	if (row->session_bound &&
		!holder_session_alive(row->holder_pid, row->holder_session_start))
		return false;
	return true;
}

/*
 * lease_valid
 *		Whether the row's current lease is still in force at now: not
 *		released, not expired and, when session-bound, its session alive.
 */
static bool
lease_valid(const LockRow *row, TimestampTz now)
{
	return !row->released && blocks_acquire(row, now);
}

/*
 * wait_and_fetch
 *		For release, extend and assert: wait for the name's mutex (these are
 *		short operations by the holder, so waiting is right), open the table
 *		and fetch the row.  Returns the row's tuple, or NULL when the name
 *		does not exist; *now is the clock after the wait.
 */
static HeapTuple
wait_and_fetch(const char *name, LOCKTAG *mutex, Relation *rel, Oid *indexid,
			   LockRow *row, TimestampTz *now)
{
	set_mutex_tag(mutex, name);
	(void) LockAcquire(mutex, ExclusiveLock, false, false);
	*now = GetCurrentTimestamp();
	*rel = open_lock_table(indexid);
	return fetch_lock_row(*rel, *indexid, name, row);
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
	LockRow		row;
	HeapTuple	oldtup;
	int64		token;
	Datum		values[Natts_lock];
	bool		nulls[Natts_lock];

	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("session_bound must not be null")));
	session_bound = PG_GETARG_BOOL(4);

	check_lock_at_most_for(most);
	if (schedlock_interval_sign(least) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_at_least_for must not be negative"),
				 errdetail("lock_at_least_for is \"%s\".", interval_text(least))));
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(least),
										  IntervalPGetDatum(most))) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_at_least_for must not exceed lock_at_most_for"),
				 errdetail("lock_at_least_for is \"%s\", lock_at_most_for is \"%s\".",
						   interval_text(least), interval_text(most))));
	if (holder != NULL &&
		pg_mbstrlen_with_len(VARDATA_ANY(holder), VARSIZE_ANY_EXHDR(holder)) >
		SCHEDLOCK_MAX_HOLDER_LENGTH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("holder is too long"),
				 errdetail("The limit is %d characters.",
						   SCHEDLOCK_MAX_HOLDER_LENGTH)));
	check_primary("schedlock_acquire");

	now = GetCurrentTimestamp();
	until = plus_interval(now, most);
	min_until = plus_interval(now, least);

	/* never wait: another transaction busy with this name means "taken" */
	set_mutex_tag(&mutex, name);
	if (LockAcquire(&mutex, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		PG_RETURN_NULL();

	rel = open_lock_table(&indexid);
	oldtup = fetch_lock_row(rel, indexid, name, &row);
	if (oldtup != NULL && blocks_acquire(&row, now))
	{
		give_up(rel, &mutex);
		PG_RETURN_NULL();
	}

	token = next_token(oldtup != NULL, oldtup != NULL ? row.token : 0);
	if (session_bound)
		ensure_session_lock();

	memset(nulls, false, sizeof(nulls));
	values[Anum_lock_name - 1] = CStringGetTextDatum(name);
	values[Anum_lock_token - 1] = Int64GetDatum(token);
	if (holder != NULL)
		values[Anum_lock_holder - 1] = PointerGetDatum(holder);
	else
		nulls[Anum_lock_holder - 1] = true;
	values[Anum_lock_holder_pid - 1] = Int32GetDatum(MyProcPid);
	values[Anum_lock_holder_start - 1] = TimestampTzGetDatum(MyStartTimestamp);
	values[Anum_lock_session_bound - 1] = BoolGetDatum(session_bound);
	values[Anum_lock_locked_at - 1] = TimestampTzGetDatum(now);
	values[Anum_lock_lock_until - 1] = TimestampTzGetDatum(until);
	values[Anum_lock_min_until - 1] = TimestampTzGetDatum(min_until);
	nulls[Anum_lock_released_at - 1] = true;

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
	table_close(rel, RowExclusiveLock);

	/*
	 * Flush our commit record before the commit is reported, whatever
	 * synchronous_commit says: under synchronous_commit = off a crash could
	 * otherwise lose this commit after the caller was told about it, and hand
	 * the same token out again (test/t/005_tokens_async_commit_crash.pl).
	 * Costs nothing extra when synchronous_commit is on.
	 */
	ForceSyncCommit();

	if (session_bound)
		push_session_delta(1);

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
	LockRow		row;
	HeapTuple	oldtup;
	TimestampTz now;
	Datum		values[Natts_lock];
	bool		nulls[Natts_lock];
	bool		repl[Natts_lock];

	check_primary("schedlock_release");

	oldtup = wait_and_fetch(name, &mutex, &rel, &indexid, &row, &now);
	if (oldtup == NULL || row.token != token || row.released)
	{
		give_up(rel, &mutex);
		PG_RETURN_BOOL(false);
	}

	/* lock_until = greatest(now, min_until), released_at = now, unbound */
	{
		bool		isnull;
		TimestampTz min_until;

		min_until = DatumGetTimestampTz(heap_getattr(oldtup, Anum_lock_min_until,
													 RelationGetDescr(rel), &isnull));
		memset(repl, false, sizeof(repl));
		memset(nulls, false, sizeof(nulls));
		values[Anum_lock_lock_until - 1] = TimestampTzGetDatum(Max(now, min_until));
		repl[Anum_lock_lock_until - 1] = true;
		values[Anum_lock_released_at - 1] = TimestampTzGetDatum(now);
		repl[Anum_lock_released_at - 1] = true;
		values[Anum_lock_session_bound - 1] = BoolGetDatum(false);
		repl[Anum_lock_session_bound - 1] = true;
		update_lock_row(rel, oldtup, values, nulls, repl);
	}
	table_close(rel, RowExclusiveLock);

	if (row.session_bound && row.holder_pid == MyProcPid &&
		row.holder_session_start == MyStartTimestamp)
		push_session_delta(-1);

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
	LockRow		row;
	HeapTuple	oldtup;
	TimestampTz now;
	Datum		values[Natts_lock];
	bool		nulls[Natts_lock];
	bool		repl[Natts_lock];

	check_lock_at_most_for(most);
	check_primary("schedlock_extend");

	oldtup = wait_and_fetch(name, &mutex, &rel, &indexid, &row, &now);
	if (oldtup == NULL || row.token != token || !lease_valid(&row, now))
	{
		give_up(rel, &mutex);
		PG_RETURN_BOOL(false);
	}

	memset(repl, false, sizeof(repl));
	memset(nulls, false, sizeof(nulls));
	values[Anum_lock_lock_until - 1] = TimestampTzGetDatum(plus_interval(now, most));
	repl[Anum_lock_lock_until - 1] = true;
	update_lock_row(rel, oldtup, values, nulls, repl);
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
	LockRow		row;
	bool		found;
	TimestampTz now;
	char	   *reason = NULL;

	/* a standby cannot hold off a takeover on the primary: refuse there */
	check_primary("schedlock_assert");

	found = wait_and_fetch(name, &mutex, &rel, &indexid, &row, &now) != NULL;
	table_close(rel, RowExclusiveLock);

	if (!found)
		reason = pstrdup("No lock of that name was ever acquired.");
	else if (row.token != token)
		reason = psprintf("The lock was acquired again since, with token " INT64_FORMAT ".",
						  row.token);
	else if (row.released)
		reason = pstrdup("The lease was released.");
	else if (row.lock_until <= now)
		reason = psprintf("The lease expired at %s.",
						  timestamptz_to_str(row.lock_until));
	else if (!lease_valid(&row, now))
		reason = pstrdup("The session that held the session-bound lock has ended.");

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
	PG_RETURN_BOOL(holder_session_alive(PG_GETARG_INT32(0),
										PG_GETARG_TIMESTAMPTZ(1)));
}
