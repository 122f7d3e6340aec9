/*-------------------------------------------------------------------------
 *
 * lease_shmem.c
 *	  Session-bound leases in shared memory, and fencing tokens reserved in
 *	  durable batches for them.
 *
 * A session-bound lease needs no durability of its own: a crash ends every
 * session, and with it every session-bound lease.  So schedlock_acquire(...,
 * session_bound => true) keeps the lease in a shared hash table keyed by
 * (database, name) instead of writing schedlock.lock_state, and release,
 * extend and assert of such a lease change only that entry.  The table is
 * sized by schedlock.max_session_locks (PGC_POSTMASTER); when it is full (or
 * the holder text is too long for an entry), acquire falls back to the table,
 * as every lease was kept before.  A crash restart re-creates shared memory
 * empty, which ends every session-bound lease as the crash ended every
 * session; a session that exits ends its own leases (before_shmem_exit).
 *
 * Who changes an entry holds the name's transaction mutex (lock.c), as for
 * the rows of the table, so the two kinds of lease exclude each other: an
 * acquire of either kind looks at both under the mutex, and an acquire in the
 * table removes an entry that no longer blocks.  While an entry exists it,
 * not the table's row, is the name's current state.
 *
 * Changes are transactional like the rows': each change records the entry's
 * previous state (an undo record, with the (sub)transaction nesting level),
 * which an abort puts back before the mutex is released; the entry is pinned
 * until then so that nobody reclaims it.  A session-bound lease ends with its
 * session whatever rolls back: the undo record of a change made by another
 * session may hold the lease of a session that has exited since, which no
 * entry showed when it ended its leases.  So every session that puts an
 * entry has a slot in lease_sessions until it ends its leases, under
 * lease_lock, and an abort that puts back the lease of a session without a
 * slot puts it back ended.  Entries that no longer block an
 * acquire (released and out of their lock_at_least_for window, expired, or of
 * an ended session) are reclaimed when the table is full.
 *
 * Tokens: every token handed out through shared memory is below
 * limit = timeline * 2^52 + E / 32, E being the end of a WAL record that was
 * flushed before the token was handed out.  A batch is reserved by writing a
 * no-op WAL record of TOKEN_BATCH * 32 bytes and flushing it, which lets the
 * next TOKEN_BATCH tokens be handed out without WAL.  After a crash the WAL
 * insert position is past E, so tokens computed from it (the table's, or
 * the next batch) are larger than every token of the batch: a crash skips
 * the rest of a batch instead of repeating it, as sequences do.  The table's
 * tokens are timeline * 2^52 + insert position / 32 at their acquire, which
 * is past every reserved batch; and every token the table hands out from the
 * WAL position moves the batch on (schedlock_lease_shmem_note_token), so
 * tokens of both kinds keep growing together.  A new timeline (promotion)
 * starts a new batch.
 *
 * A session-bound acquire of a name that has no entry here asks the marks
 * (lock_marks.c) whether the table's row of the name may matter.  DROP
 * DATABASE removes the database's entries
 * (schedlock_lease_shmem_drop_database).
 *
 * IDENTIFICATION
 *	  src/lock/lease_shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "catalog/pg_control.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "lease.h"
#include "lease_role.h"
#include "lease_shmem.h"
#include "token.h"

PG_FUNCTION_INFO_V1(schedlock_session_leases);
PGDLLEXPORT Datum schedlock_session_leases(PG_FUNCTION_ARGS);

/* Tokens reserved by one flushed WAL record (token.h: 32 bytes of WAL each). */
#define TOKEN_BATCH			1024

/* An entry of the shared hash table. */
typedef struct LeaseEntry
{
	SchedlockLeaseKey key;		/* must be first */
	int			pinned_by;		/* pid of a transaction that changed it */
	SchedlockShmemLease data;
} LeaseEntry;

/* The token batch, guarded by the second LWLock of the tranche. */
typedef struct LeaseTokens
{
	TimeLineID	tli;			/* timeline the batch was reserved on */
	int64		next;			/* smallest token that may be handed out */
	int64		limit;			/* first token not reserved */
} LeaseTokens;

/*
 * A session that has put an entry and not yet ended its leases (pid 0: a
 * free slot).  There are MaxBackends slots, as many as processes that can
 * run SQL at once, so a session always finds one.  Guarded by lease_lock.
 */
typedef struct LeaseSession
{
	int32		pid;
	TimestampTz start;
} LeaseSession;

static HTAB *lease_table = NULL;
static LeaseSession *lease_sessions = NULL;
static LeaseTokens *lease_tokens = NULL;
static LWLock *lease_lock = NULL;
static LWLock *token_lock = NULL;

/* One undo record: the state of an entry before this transaction changed it. */
typedef struct LeaseUndo
{
	int			nestlevel;
	char	   *name;
	bool		existed;
	SchedlockShmemLease old;
} LeaseUndo;

static LeaseUndo *undo = NULL;
static int	nundo = 0;
static int	maxundo = 0;
static bool exit_registered = false;

/* This session's slot in lease_sessions, or -1 before its first put. */
static int	my_session_slot = -1;

/*
 * lease_hash
 *		Hash of a key: the database and the name's bytes up to its NUL.
 */
static uint32
lease_hash(const void *key, Size keysize)
{
	const SchedlockLeaseKey *k = key;

	return hash_bytes((const unsigned char *) k->name, (int) strlen(k->name)) ^
		murmurhash32(k->dbid);
}

/*
 * lease_match
 *		Compare two keys (0 when equal), as hsearch expects.
 */
static int
lease_match(const void *key1, const void *key2, Size keysize)
{
	const SchedlockLeaseKey *a = key1;
	const SchedlockLeaseKey *b = key2;

	if (a->dbid != b->dbid)
		return 1;
	return strcmp(a->name, b->name);
}

/*
 * lease_keycopy
 *		Copy a key into a new entry (only the name's bytes matter).
 */
static void *
lease_keycopy(void *dest, const void *src, Size keysize)
{
	SchedlockLeaseKey *d = dest;
	const SchedlockLeaseKey *s = src;

	d->dbid = s->dbid;
	strlcpy(d->name, s->name, sizeof(d->name));
	return dest;
}

/*
 * schedlock_lease_key_hashctl
 *		Fill in *ctl for a shared hash table keyed by SchedlockLeaseKey with
 *		entries of entrysize bytes; returns the flags for ShmemInitHash.
 */
int
schedlock_lease_key_hashctl(HASHCTL *ctl, Size entrysize)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->keysize = sizeof(SchedlockLeaseKey);
	ctl->entrysize = entrysize;
	ctl->hash = lease_hash;
	ctl->match = lease_match;
	ctl->keycopy = lease_keycopy;
	return HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_KEYCOPY;
}

/*
 * schedlock_lease_shmem_request
 *		Called from the shmem_request_hook: the lease table, the sessions
 *		that put entries, the token batch, and the LWLocks of the leases, the
 *		batch and the marks (SCHEDLOCK_LEASE_TRANCHE).
 */
void
schedlock_lease_shmem_request(void)
{
	Size		size = MAXALIGN(sizeof(LeaseTokens));

	if (schedlock_max_session_locks > 0)
	{
		size = add_size(size, hash_estimate_size(schedlock_max_session_locks,
												 sizeof(LeaseEntry)));
		size = add_size(size, mul_size(MaxBackends, sizeof(LeaseSession)));
	}
	RequestAddinShmemSpace(size);
	RequestNamedLWLockTranche(SCHEDLOCK_LEASE_TRANCHE,
							  SCHEDLOCK_LEASE_TRANCHE_LOCKS);
}

/*
 * schedlock_lease_shmem_startup
 *		Called from the shmem_startup_hook: create or attach to the table and
 *		the token batch.  After a crash restart both start empty.
 */
void
schedlock_lease_shmem_startup(void)
{
	bool		found;
	HASHCTL		ctl;
	int			flags;
	LWLockPadded *locks;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	lease_tokens = ShmemInitStruct("schedlock lease tokens",
								   sizeof(LeaseTokens), &found);
	if (!found)
		memset(lease_tokens, 0, sizeof(LeaseTokens));
	locks = GetNamedLWLockTranche(SCHEDLOCK_LEASE_TRANCHE);
	lease_lock = &locks[SCHEDLOCK_LEASE_LOCK].lock;
	token_lock = &locks[SCHEDLOCK_TOKEN_LOCK].lock;
	if (schedlock_max_session_locks > 0)
	{
		flags = schedlock_lease_key_hashctl(&ctl, sizeof(LeaseEntry));
		lease_table = ShmemInitHash("schedlock session leases",
									schedlock_max_session_locks,
									schedlock_max_session_locks,
									&ctl, flags);
		lease_sessions = ShmemInitStruct("schedlock lease sessions",
										 mul_size(MaxBackends, sizeof(LeaseSession)),
										 &found);
		if (!found)
			memset(lease_sessions, 0, mul_size(MaxBackends, sizeof(LeaseSession)));
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * schedlock_lease_shmem_enabled
 *		Whether session-bound leases can be kept in shared memory.
 */
bool
schedlock_lease_shmem_enabled(void)
{
	return lease_table != NULL;
}

/*
 * schedlock_lease_key_set
 *		Fill in the key of a name in the current database.
 */
void
schedlock_lease_key_set(SchedlockLeaseKey *key, const char *name)
{
	key->dbid = MyDatabaseId;
	strlcpy(key->name, name, sizeof(key->name));
}

/*
 * schedlock_lease_shmem_get
 *		Copy the entry of a name in this database; false when there is none.
 */
bool
schedlock_lease_shmem_get(const char *name, SchedlockShmemLease *lease)
{
	SchedlockLeaseKey key;
	LeaseEntry *entry;

	if (lease_table == NULL)
		return false;
	schedlock_lease_key_set(&key, name);
	LWLockAcquire(lease_lock, LW_SHARED);
	entry = hash_search(lease_table, &key, HASH_FIND, NULL);
	if (entry != NULL)
		*lease = entry->data;
	LWLockRelease(lease_lock);
	return entry != NULL;
}

/*
 * schedlock_lease_key_remove
 *		Remove the entry of a name in this database from table (the lease
 *		table or the marks, keyed alike), under its lock.
 */
void
schedlock_lease_key_remove(HTAB *table, LWLock *lock, const char *name)
{
	SchedlockLeaseKey key;

	if (table == NULL || strlen(name) >= sizeof(key.name))
		return;
	schedlock_lease_key_set(&key, name);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	(void) hash_search(table, &key, HASH_REMOVE, NULL);
	LWLockRelease(lock);
}

/*
 * reclaim
 *		Remove every entry that blocks nobody and that no open transaction
 *		changed.  Caller holds lease_lock exclusively.
 */
static void
reclaim(TimestampTz now)
{
	HASH_SEQ_STATUS status;
	LeaseEntry *entry;

	hash_seq_init(&status, lease_table);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->pinned_by == 0 &&
			!schedlock_lease_blocks(&entry->data.lease, now, NULL, NULL))
			(void) hash_search(lease_table, &entry->key, HASH_REMOVE, NULL);
	}
}

/*
 * schedlock_ensure_room
 *		Make room for one more item in a growing array of per-session records
 *		kept in TopMemoryContext: *array holds nitems of itemsize bytes and
 *		has room for *maxitems.
 */
void
schedlock_ensure_room(void **array, int *maxitems, int nitems, Size itemsize)
{
	int			newmax;

	if (nitems < *maxitems)
		return;
	newmax = *maxitems == 0 ? 8 : *maxitems * 2;
	if (*array == NULL)
		*array = MemoryContextAlloc(TopMemoryContext, newmax * itemsize);
	else
		*array = repalloc(*array, newmax * itemsize);
	*maxitems = newmax;
}

/*
 * claim_session_slot
 *		Give this session a slot in lease_sessions, which it keeps until it
 *		ends its leases.  False when every slot is taken.  Caller holds
 *		lease_lock exclusively.
 */
static bool
claim_session_slot(void)
{
	int			i;

	if (my_session_slot >= 0)
		return true;
	for (i = 0; i < MaxBackends; i++)
	{
		if (lease_sessions[i].pid == 0)
		{
			lease_sessions[i].pid = MyProcPid;
			lease_sessions[i].start = MyStartTimestamp;
			my_session_slot = i;
			return true;
		}
	}
	return false;
}

/*
 * session_lives
 *		Whether the session (pid, start) has not yet ended its leases.  Every
 *		holder of an entry has put one, and so had a slot.  Caller holds
 *		lease_lock.
 */
static bool
session_lives(int32 pid, TimestampTz start)
{
	int			i;

	if (pid == MyProcPid && start == MyStartTimestamp)
		return true;
	for (i = 0; i < MaxBackends; i++)
	{
		if (lease_sessions[i].pid == pid && lease_sessions[i].start == start)
			return true;
	}
	return false;
}

/*
 * push_undo
 *		Remember the state of an entry before this (sub)transaction changes
 *		it.
 */
static void
push_undo(const char *name, bool existed, const SchedlockShmemLease *old)
{
	schedlock_ensure_room((void **) &undo, &maxundo, nundo, sizeof(LeaseUndo));
	undo[nundo].nestlevel = GetCurrentTransactionNestLevel();
	undo[nundo].name = MemoryContextStrdup(TopMemoryContext, name);
	undo[nundo].existed = existed;
	if (existed)
		undo[nundo].old = *old;
	nundo++;
}

/*
 * lease_exit
 *		before_shmem_exit callback: undo the changes of a transaction still
 *		open, then end the leases of this session.
 */
static void
lease_exit(int code, Datum arg)
{
	HASH_SEQ_STATUS status;
	LeaseEntry *entry;

	if (lease_table == NULL)
		return;
	schedlock_lease_shmem_end_xact(false, 1);
	LWLockAcquire(lease_lock, LW_EXCLUSIVE);
	hash_seq_init(&status, lease_table);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->data.lease.holder_pid == MyProcPid &&
			entry->data.lease.holder_start == MyStartTimestamp)
			entry->data.lease.session_ended = true;
	}
	/* from now on an abort puts this session's leases back ended */
	if (my_session_slot >= 0)
		lease_sessions[my_session_slot].pid = 0;
	my_session_slot = -1;
	LWLockRelease(lease_lock);
}

/*
 * schedlock_lease_shmem_put
 *		Set the entry of a name in this database to *lease (inserting it),
 *		remembering its previous state for an abort.  Caller holds the name's
 *		mutex.  False, changing nothing, when the table is full even after
 *		reclaiming what blocks nobody.
 */
bool
schedlock_lease_shmem_put(const char *name, const SchedlockShmemLease *lease,
						  TimestampTz now)
{
	SchedlockLeaseKey key;
	LeaseEntry *entry;
	bool		found;

	if (lease_table == NULL)
		return false;
	if (!exit_registered)
	{
		before_shmem_exit(lease_exit, (Datum) 0);
		exit_registered = true;
	}
	schedlock_lease_key_set(&key, name);
	/* room for the undo record first: nothing may fail after the change */
	push_undo(name, false, NULL);
	nundo--;
	LWLockAcquire(lease_lock, LW_EXCLUSIVE);
	if (!claim_session_slot())
	{
		LWLockRelease(lease_lock);
		pfree(undo[nundo].name);
		return false;
	}
	entry = hash_search(lease_table, &key, HASH_FIND, NULL);
	if (entry == NULL &&
		hash_get_num_entries(lease_table) >= schedlock_max_session_locks)
		reclaim(now);
	if (entry == NULL &&
		hash_get_num_entries(lease_table) >= schedlock_max_session_locks)
	{
		LWLockRelease(lease_lock);
		pfree(undo[nundo].name);
		return false;
	}
	if (entry == NULL)
		entry = hash_search(lease_table, &key, HASH_ENTER_NULL, &found);
	else
		found = true;
	if (entry == NULL)
	{
		LWLockRelease(lease_lock);
		pfree(undo[nundo].name);
		return false;
	}
	undo[nundo].existed = found;
	if (found)
		undo[nundo].old = entry->data;
	nundo++;
	entry->data = *lease;
	entry->pinned_by = MyProcPid;
	LWLockRelease(lease_lock);
	return true;
}

/*
 * schedlock_lease_shmem_forget
 *		Remove the entry of a name in this database, which blocks nobody,
 *		when a lease is acquired in the table.  Caller holds the name's
 *		mutex.  No undo: an entry that blocks nobody may go at any time.
 */
void
schedlock_lease_shmem_forget(const char *name)
{
	schedlock_lease_key_remove(lease_table, lease_lock, name);
}

/*
 * schedlock_lease_shmem_pending
 *		Whether the open transaction changed an entry.
 */
bool
schedlock_lease_shmem_pending(void)
{
	return nundo > 0;
}

/*
 * schedlock_lease_shmem_end_xact
 *		At the end of a (sub)transaction at nesting level level: on abort,
 *		put back the state of the entries it changed (newest first); then
 *		unpin them.  On a subtransaction's commit its records go to the
 *		parent.  Runs before the transaction's locks (the names' mutexes)
 *		are released; must not fail.
 */
void
schedlock_lease_shmem_end_xact(bool commit, int level)
{
	int			i;
	int			keep = 0;

	if (nundo == 0)
		return;
	if (commit && level > 1)
	{
		for (i = 0; i < nundo; i++)
			if (undo[i].nestlevel >= level)
				undo[i].nestlevel = level - 1;
		return;
	}
	LWLockAcquire(lease_lock, LW_EXCLUSIVE);
	for (i = nundo - 1; i >= 0; i--)
	{
		SchedlockLeaseKey key;
		LeaseEntry *entry;
		bool		found;

		if (undo[i].nestlevel < level)
			continue;
		schedlock_lease_key_set(&key, undo[i].name);
		if (!commit)
		{
			if (undo[i].existed)
			{
				entry = hash_search(lease_table, &key, HASH_ENTER_NULL, &found);
				if (entry != NULL)
				{
					/* the entry may have been removed meanwhile (forget) */
					entry->pinned_by = MyProcPid;
					entry->data = undo[i].old;
					if (!session_lives(entry->data.lease.holder_pid,
									   entry->data.lease.holder_start))
						entry->data.lease.session_ended = true;
				}
			}
			else
				(void) hash_search(lease_table, &key, HASH_REMOVE, NULL);
		}
		entry = hash_search(lease_table, &key, HASH_FIND, NULL);
		if (entry != NULL && entry->pinned_by == MyProcPid)
			entry->pinned_by = 0;
	}
	LWLockRelease(lease_lock);
	for (i = 0; i < nundo; i++)
	{
		if (undo[i].nestlevel < level)
			undo[keep++] = undo[i];
		else
			pfree(undo[i].name);
	}
	nundo = keep;
	/* entries a subtransaction abort unpinned may still be the parent's */
	if (keep > 0)
	{
		LWLockAcquire(lease_lock, LW_EXCLUSIVE);
		for (i = 0; i < nundo; i++)
		{
			SchedlockLeaseKey key;
			LeaseEntry *entry;

			schedlock_lease_key_set(&key, undo[i].name);
			entry = hash_search(lease_table, &key, HASH_FIND, NULL);
			if (entry != NULL)
				entry->pinned_by = MyProcPid;
		}
		LWLockRelease(lease_lock);
	}
}

/*
 * schedlock_lease_shmem_mine
 *		The names of this session's leases in this database that are not
 *		released, in the current memory context.
 */
List *
schedlock_lease_shmem_mine(void)
{
	HASH_SEQ_STATUS status;
	LeaseEntry *entry;
	List	   *names = NIL;

	if (lease_table == NULL)
		return NIL;
	LWLockAcquire(lease_lock, LW_SHARED);
	hash_seq_init(&status, lease_table);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid == MyDatabaseId &&
			schedlock_lease_held_by(&entry->data.lease, MyProcPid,
									MyStartTimestamp))
			names = lappend(names, pstrdup(entry->key.name));
	}
	LWLockRelease(lease_lock);
	return names;
}

/*
 * reserve_batch
 *		Write a no-op WAL record of TOKEN_BATCH * SCHEDLOCK_TOKEN_WAL_UNIT bytes, flush
 *		it, and return its end.
 */
static XLogRecPtr
reserve_batch(void)
{
	static const char zeros[TOKEN_BATCH * SCHEDLOCK_TOKEN_WAL_UNIT];
	XLogRecPtr	end;

	XLogBeginInsert();
	XLogRegisterData((char *) zeros, sizeof(zeros));
	end = XLogInsert(RM_XLOG_ID, XLOG_NOOP);
	XLogFlush(end);
	return end;
}

/*
 * schedlock_lease_shmem_token
 *		The token for a session-bound acquire in shared memory of a name
 *		whose last token was prev (has_prev false for none): the batch's next
 *		token, at least prev + 1.  Reserves a new batch when the batch is
 *		used up or from an earlier timeline.  False when even a new batch
 *		cannot cover prev + 1 (a token carried over from another cluster):
 *		then the caller acquires in the table.
 */
bool
schedlock_lease_shmem_token(bool has_prev, int64 prev, int64 *token)
{
	TimeLineID	tli = GetWALInsertionTimeLine();
	int64		t;

	if (has_prev && prev >= PG_INT64_MAX - 1)
		return false;
	LWLockAcquire(token_lock, LW_EXCLUSIVE);
	if (lease_tokens->tli != tli)
	{
		lease_tokens->tli = tli;
		lease_tokens->next = 0;
		lease_tokens->limit = 0;
	}
	t = lease_tokens->next;
	if (has_prev && prev + 1 > t)
		t = prev + 1;
	if (t >= lease_tokens->limit)
	{
		int64		base = schedlock_token_base(GetXLogInsertRecPtr());

		/* an error here releases token_lock with the others at abort */
		if (base > t)
			t = base;
		lease_tokens->limit = schedlock_token_base(reserve_batch());
	}
	if (t >= lease_tokens->limit)
	{
		LWLockRelease(token_lock);
		return false;
	}
	lease_tokens->next = t + 1;
	LWLockRelease(token_lock);
	*token = t;
	return true;
}

/*
 * schedlock_lease_shmem_note_token
 *		An acquire in the table handed out token, computed from the WAL
 *		insert position: no later token from shared memory may be smaller.
 */
void
schedlock_lease_shmem_note_token(int64 token)
{
	TimeLineID	tli = GetWALInsertionTimeLine();

	LWLockAcquire(token_lock, LW_EXCLUSIVE);
	if (lease_tokens->tli == tli && lease_tokens->next <= token)
		lease_tokens->next = token + 1;
	LWLockRelease(token_lock);
}

/*
 * schedlock_lease_shmem_token_floor
 *		A number no token handed out through shared memory from now on is
 *		below: the batch's next token, or (no batch on this timeline yet)
 *		the token of the WAL insert position, where the next batch starts.
 */
int64
schedlock_lease_shmem_token_floor(void)
{
	TimeLineID	tli = GetWALInsertionTimeLine();
	int64		floor = -1;

	LWLockAcquire(token_lock, LW_SHARED);
	if (lease_tokens->tli == tli)
		floor = lease_tokens->next;
	LWLockRelease(token_lock);
	if (floor < 0)
		floor = schedlock_token_base(GetXLogInsertRecPtr());
	return floor;
}

/*
 * schedlock_lease_shmem_drop_database
 *		Database dbid has been dropped: remove its entries, so that a
 *		database given the same OID starts afresh.  No session is connected
 *		to it any more.
 */
void
schedlock_lease_shmem_drop_database(Oid dbid)
{
	HASH_SEQ_STATUS status;
	LeaseEntry *entry;

	if (lease_table == NULL)
		return;
	LWLockAcquire(lease_lock, LW_EXCLUSIVE);
	hash_seq_init(&status, lease_table);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid == dbid)
			(void) hash_search(lease_table, &entry->key, HASH_REMOVE, NULL);
	}
	LWLockRelease(lease_lock);
}

/*
 * schedlock_session_leases
 *		schedlock.session_leases() RETURNS SETOF record: the leases of this
 *		database kept in shared memory, for the schedlock.locks view.  The
 *		token and holder_pid are NULL unless the caller may use the lease.
 */
Datum
schedlock_session_leases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS status;
	LeaseEntry *entry;
	List	   *keys = NIL;
	List	   *leases = NIL;
	ListCell   *lc1;
	ListCell   *lc2;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	if (lease_table == NULL)
		return (Datum) 0;

	/* copy first: the role checks may read catalogs */
	LWLockAcquire(lease_lock, LW_SHARED);
	hash_seq_init(&status, lease_table);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		SchedlockShmemLease *copy;

		if (entry->key.dbid != MyDatabaseId)
			continue;
		copy = palloc(sizeof(SchedlockShmemLease));
		*copy = entry->data;
		keys = lappend(keys, pstrdup(entry->key.name));
		leases = lappend(leases, copy);
	}
	LWLockRelease(lease_lock);

	forboth(lc1, keys, lc2, leases)
	{
		SchedlockShmemLease *sl = lfirst(lc2);
		SchedlockLease *l = &sl->lease;
		Datum		values[10];
		bool		nulls[10];
		bool		visible = schedlock_may_use_lease(true, l->holder_role);

		memset(nulls, false, sizeof(nulls));
		values[0] = CStringGetTextDatum((char *) lfirst(lc1));
		values[1] = BoolGetDatum(schedlock_lease_blocks(l, now, NULL, NULL));
		if (sl->has_holder)
			values[2] = CStringGetTextDatum(sl->holder);
		else
			nulls[2] = true;
		values[3] = TimestampTzGetDatum(l->locked_at);
		values[4] = TimestampTzGetDatum(l->lock_until);
		values[5] = Int64GetDatum(l->token);
		nulls[5] = !visible;
		values[6] = BoolGetDatum(!l->released);
		values[7] = Int32GetDatum(l->holder_pid);
		nulls[7] = !visible;
		values[8] = ObjectIdGetDatum(l->holder_role);
		values[9] = TimestampTzGetDatum(l->released_at);
		nulls[9] = !l->released;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
