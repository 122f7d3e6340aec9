/*-------------------------------------------------------------------------
 *
 * lock.c
 *	  The lease locks' SQL functions: schedlock_acquire, schedlock_release,
 *	  schedlock_extend and schedlock_assert.
 *
 * A lock is known by its name; its lease is a row of schedlock.lock_state
 * or an entry in shared memory.  All writes to it happen while holding a
 * transaction-level "mutex" on the name: an
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
 * The lease rules (when a lease keeps acquirers out, when it is in force,
 * what release and extend may do, what assert answers) are lease.c's, the
 * same for both stores; this file reads a lease from its store under the
 * name's mutex, asks them, and writes back what they answer.  The table
 * store is lock_table.c.
 *
 * A session-bound lease is normally kept in shared memory (lease_shmem.c):
 * no row, no WAL flush, no identity lock; the session's exit ends it.  One
 * kept in the table relies on its session's identity lock instead
 * (lock_session.c).  The functions look in shared memory first, under the
 * same per-name mutex, so a name is held in one place or the other, never
 * both; acquire falls back to the table when shared memory has no room.
 *
 * Every lease belongs to the role that acquired it (current_user at the
 * acquire, recorded in holder_role).  Only members of that role and
 * superusers may release, extend or assert it, or see its token and
 * holder_pid in the schedlock.locks view; everybody else gets SQLSTATE 42501
 * before the token is even compared, so a refusal says nothing about whether
 * a guessed token is right.  Lock names stay shared: any role may acquire a
 * name whose lease has ended, and the lease is then its own.
 *
 * IDENTIFICATION
 *	  src/lock/lock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/args.h"
#include "base/compat.h"
#include "base/primary.h"
#include "lease.h"
#include "lease_role.h"
#include "lease_shmem.h"
#include "lock.h"
#include "lock_marks.h"
#include "lock_session.h"
#include "lock_table.h"
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
	 * In the table of 1.0 (library updated, extension not yet) no lease has a
	 * role: the token alone identifies its holder, as in 1.0.
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
	schedlock_require_writable("schedlock_acquire");

	/* never wait: another transaction busy with this name means "taken" */
	set_mutex_tag(&mutex, name);
	if (LockAcquire(&mutex, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		PG_RETURN_NULL();

	/*
	 * A name kept in shared memory has its state there; a session-bound
	 * acquire goes there when it can (see lease_shmem.c).
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

	schedlock_require_writable("schedlock_release");

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
	schedlock_require_writable("schedlock_extend");

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
	schedlock_require_primary("schedlock_assert");

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
