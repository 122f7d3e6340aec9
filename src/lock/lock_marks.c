/*-------------------------------------------------------------------------
 *
 * lock_marks.c
 *	  Marks: which names of a database have a row in schedlock.lock_state
 *	  that a session-bound acquire kept in shared memory must look at.
 *
 * A session-bound acquire of a name that has no entry in shared memory
 * (lease_shmem.c) must not hand out a lease while the table's row blocks,
 * nor a token that is not larger than the row's.  Probing the table's
 * primary key for that costs a third of such an acquire, so a second shared
 * hash table (as large as the lease table) marks the names whose row may
 * matter: rows that may block until some time (mark.until), and rows whose
 * token may be larger than the tokens the batches will still hand out
 * (until = DT_NOEND).  A database's marks are loaded by one scan of its
 * table when a session-bound acquire first needs them; from then on every
 * lock function that leaves a row blocking marks it after writing it
 * (acquire, extend, a release with a lock_at_least_for window), a table
 * acquire whose token comes from the row rather than the WAL position marks
 * it for good, and an acquire kept in shared memory that probed the row
 * removes the name's mark.  A name of a loaded database that is not marked
 * (or whose mark's time has passed) needs no probe.  Writes to the table by
 * SQL (INSERT, UPDATE, COPY FROM by the table's owner, a restore, also
 * through a partitioned table the lock table is attached to) are seen by
 * lock_watch.c: while such a transaction is open every acquire probes, and
 * when it ends the database's marks are loaded again.  When the marks do not
 * fit, acquires probe until a later load fits (tried at most every
 * MARK_RELOAD_SECONDS).
 *
 * What is kept for a database (its marks and its slot here, its entries in
 * lease_shmem.c) is keyed by its OID, which CREATE DATABASE ... OID = n can
 * give to a new database once the old one is dropped.  DROP DATABASE
 * removes it all (schedlock_lease_shmem_drop_database and
 * schedlock_marks_drop_database, from the ProcessUtility hook).  A slot also
 * records the xmin of the database's pg_database row when it was taken,
 * which every CREATE DATABASE gives a new value: an acquire does not trust
 * the marks of a slot with another xmin, and a load starts the slot afresh,
 * so a drop that went unseen cannot hand a new database the marks of an old
 * one.  ALTER DATABASE and GRANT give the row a new xmin too; that costs one
 * more load.  Entries record no xmin, as that change must not end the
 * lock_at_least_for windows of a live database: they rely on the drop.
 *
 * The load cannot miss a row a lock function writes meanwhile: it first
 * clears the database's marks and then scans every row version that is
 * current or being written (a dirty snapshot); a writer marks after writing,
 * so either its mark comes after the clear and stays, or its row version
 * existed before the scan began.  A load that overlapped a change it cannot
 * see (SQL writes, marks that did not fit) is not used (the database's
 * generation moved on).
 *
 * IDENTIFICATION
 *	  src/lock/lock_marks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "lease_shmem.h"
#include "lock_marks.h"

/* A mark: the name's row may block until until, or carries a large token. */
typedef struct MarkEntry
{
	SchedlockLeaseKey key;		/* must be first */
	TimestampTz until;			/* DT_NOEND: the row's token may be large */
} MarkEntry;

/* Databases whose marks are kept, and how long a failed load waits. */
#define MARK_DATABASES			64
#define MARK_RELOAD_SECONDS		5

/* The marks' state of one database. */
typedef struct MarkDatabase
{
	Oid			dbid;			/* InvalidOid: a free slot */
	TransactionId incarnation;	/* xmin of the database's pg_database row */
	bool		loaded;			/* the marks cover every row */
	bool		loading;		/* a session is loading them */
	int			writers;		/* open transactions that wrote the table by
								 * SQL */
	uint64		gen;			/* moves on whenever loaded is reset */
	TimestampTz next_load;		/* no load before it */
} MarkDatabase;

/* The marks' state, guarded by the third LWLock of the tranche. */
typedef struct LeaseMarks
{
	int			orphan_writers; /* SQL writers of databases without a slot */
	MarkDatabase dbs[MARK_DATABASES];
} LeaseMarks;

static HTAB *mark_table = NULL;
static LeaseMarks *marks = NULL;
static LWLock *mark_lock = NULL;

/* A name whose mark goes when the transaction commits (a release). */
typedef struct PendingUnmark
{
	int			nestlevel;
	char	   *name;
} PendingUnmark;

static PendingUnmark *unmarks = NULL;
static int	nunmarks = 0;
static int	maxunmarks = 0;

/* This database's incarnation (database_incarnation), while valid. */
static TransactionId my_incarnation = InvalidTransactionId;
static bool my_incarnation_valid = false;
static bool incarnation_callback_registered = false;

/*
 * schedlock_marks_shmem_request
 *		Called from the shmem_request_hook: the marks and their databases.
 */
void
schedlock_marks_shmem_request(void)
{
	Size		size = MAXALIGN(sizeof(LeaseMarks));

	if (schedlock_max_session_locks > 0)
		size = add_size(size, hash_estimate_size(schedlock_max_session_locks,
												 sizeof(MarkEntry)));
	RequestAddinShmemSpace(size);
}

/*
 * schedlock_marks_shmem_startup
 *		Called from the shmem_startup_hook: create or attach to the marks.
 *		After a crash restart they start empty.
 */
void
schedlock_marks_shmem_startup(void)
{
	bool		found;
	HASHCTL		ctl;
	int			flags;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	marks = ShmemInitStruct("schedlock lease mark state", sizeof(LeaseMarks), &found);
	if (!found)
		memset(marks, 0, sizeof(LeaseMarks));
	mark_lock = &GetNamedLWLockTranche(SCHEDLOCK_LEASE_TRANCHE)[SCHEDLOCK_MARK_LOCK].lock;
	if (schedlock_max_session_locks > 0)
	{
		flags = schedlock_lease_key_hashctl(&ctl, sizeof(MarkEntry));
		mark_table = ShmemInitHash("schedlock lease marks",
								   schedlock_max_session_locks,
								   schedlock_max_session_locks,
								   &ctl, flags);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * remove_database_marks
 *		Remove every mark of database dbid.  Caller holds mark_lock
 *		exclusively.
 */
static void
remove_database_marks(Oid dbid)
{
	HASH_SEQ_STATUS status;
	MarkEntry  *entry;

	hash_seq_init(&status, mark_table);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid == dbid)
			(void) hash_search(mark_table, &entry->key, HASH_REMOVE, NULL);
	}
}

/*
 * unload
 *		The database's marks no longer cover every row; a load that is under
 *		way must not be used.  Caller holds mark_lock exclusively.
 */
static void
unload(MarkDatabase *d)
{
	d->loaded = false;
	d->gen++;
}

/*
 * incarnation_callback
 *		Syscache callback: the database's pg_database row may have changed.
 */
static void
incarnation_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	my_incarnation_valid = false;
}

/*
 * database_incarnation
 *		The xmin of this database's pg_database row, which CREATE DATABASE
 *		sets anew each time it gives the OID to a database.  Reads the
 *		syscache: call inside a transaction, before taking mark_lock.
 */
static TransactionId
database_incarnation(void)
{
	HeapTuple	tup;

	if (my_incarnation_valid)
		return my_incarnation;
	if (!incarnation_callback_registered)
	{
		CacheRegisterSyscacheCallback(DATABASEOID, incarnation_callback,
									  (Datum) 0);
		incarnation_callback_registered = true;
	}
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for database %u", MyDatabaseId);
	my_incarnation = HeapTupleHeaderGetRawXmin(tup->t_data);
	ReleaseSysCache(tup);
	my_incarnation_valid = true;
	return my_incarnation;
}

/*
 * mark_database
 *		The marks' state of this database; when it has none and create is
 *		true, a free slot, or else one taken from a database nobody loads or
 *		writes by SQL (its marks are removed).  NULL when there is none.
 *		incarnation is database_incarnation(), or InvalidTransactionId from
 *		a caller that only makes the marks less trusted (and must not fail):
 *		then the slot of this database's OID is taken as it is.  A slot of
 *		another incarnation is NULL, or with create its marks are removed
 *		and it is unloaded (its writers and loaders, which can only be this
 *		database's, are kept).  Caller holds mark_lock (exclusively to
 *		create).
 */
static MarkDatabase *
mark_database(bool create, TransactionId incarnation)
{
	MarkDatabase *slot = NULL;
	MarkDatabase *evict = NULL;
	int			i;

	for (i = 0; i < MARK_DATABASES; i++)
	{
		MarkDatabase *d = &marks->dbs[i];

		if (d->dbid == MyDatabaseId)
		{
			if (!TransactionIdIsValid(incarnation) ||
				d->incarnation == incarnation)
				return d;
			if (!create)
				return NULL;
			remove_database_marks(d->dbid);
			unload(d);
			d->incarnation = incarnation;
			d->next_load = 0;
			return d;
		}
		if (d->dbid == InvalidOid)
		{
			if (slot == NULL)
				slot = d;
		}
		else if (evict == NULL && d->writers == 0 && !d->loading)
			evict = d;
	}
	if (!create)
		return NULL;
	if (slot == NULL && evict != NULL)
	{
		remove_database_marks(evict->dbid);
		slot = evict;
	}
	if (slot != NULL)
	{
		memset(slot, 0, sizeof(MarkDatabase));
		slot->dbid = MyDatabaseId;
		slot->incarnation = incarnation;
	}
	return slot;
}

/*
 * add_mark
 *		Mark a name of this database until until (keeping a later time it
 *		had).  False when the marks are full even after removing those whose
 *		time has passed.  Caller holds mark_lock exclusively.
 */
static bool
add_mark(const char *name, TimestampTz until, TimestampTz now)
{
	SchedlockLeaseKey key;
	MarkEntry  *entry;
	bool		found;

	if (strlen(name) >= sizeof(key.name))
		return false;
	schedlock_lease_key_set(&key, name);
	entry = hash_search(mark_table, &key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		entry->until = Max(entry->until, until);
		return true;
	}
	if (hash_get_num_entries(mark_table) >= schedlock_max_session_locks)
	{
		HASH_SEQ_STATUS status;

		hash_seq_init(&status, mark_table);
		while ((entry = hash_seq_search(&status)) != NULL)
		{
			if (entry->until <= now)
				(void) hash_search(mark_table, &entry->key, HASH_REMOVE, NULL);
		}
		if (hash_get_num_entries(mark_table) >= schedlock_max_session_locks)
			return false;
	}
	entry = hash_search(mark_table, &key, HASH_ENTER_NULL, &found);
	if (entry == NULL)
		return false;
	entry->until = until;
	return true;
}

/*
 * schedlock_marks_check
 *		What a session-bound acquire kept in shared memory must do about the
 *		table's row of a name that has no entry here, under the name's mutex:
 *		MARKS_CLEAR, nothing (no row blocks, no row's token is too large);
 *		MARKS_PROBE, read the row; MARKS_LOAD, load the database's marks
 *		first (schedlock_marks_begin_load), then read the row.
 */
SchedlockMarks
schedlock_marks_check(const char *name, TimestampTz now)
{
	MarkDatabase *d;
	SchedlockMarks result;
	TransactionId incarnation;

	if (mark_table == NULL)
		return MARKS_PROBE;
	incarnation = database_incarnation();
	LWLockAcquire(mark_lock, LW_SHARED);
	d = mark_database(false, incarnation);
	if (marks->orphan_writers > 0 ||
		(d != NULL && (d->writers > 0 || d->loading)))
		result = MARKS_PROBE;
	else if (d == NULL || !d->loaded)
		result = (d == NULL || now >= d->next_load) ? MARKS_LOAD : MARKS_PROBE;
	else
	{
		SchedlockLeaseKey key;
		MarkEntry  *entry;

		schedlock_lease_key_set(&key, name);
		entry = hash_search(mark_table, &key, HASH_FIND, NULL);
		result = (entry != NULL && entry->until > now) ? MARKS_PROBE : MARKS_CLEAR;
	}
	LWLockRelease(mark_lock);
	return result;
}

/*
 * schedlock_marks_begin_load
 *		Start loading this database's marks: clear them, and return the
 *		generation to hand to schedlock_marks_end_load.  False when there is
 *		nothing to do now (loaded, being loaded, written by SQL, no slot, a
 *		failed load too recently).
 */
bool
schedlock_marks_begin_load(uint64 *gen, TimestampTz now)
{
	MarkDatabase *d;
	TransactionId incarnation;

	if (mark_table == NULL)
		return false;
	incarnation = database_incarnation();
	LWLockAcquire(mark_lock, LW_EXCLUSIVE);
	d = mark_database(true, incarnation);
	if (d == NULL || d->loaded || d->loading || d->writers > 0 ||
		marks->orphan_writers > 0 || now < d->next_load)
	{
		LWLockRelease(mark_lock);
		return false;
	}
	remove_database_marks(MyDatabaseId);
	d->loading = true;
	*gen = d->gen;
	LWLockRelease(mark_lock);
	return true;
}

/*
 * schedlock_marks_load_add
 *		During a load: mark a row's name until until.  False when the marks
 *		are full (the load fails).
 */
bool
schedlock_marks_load_add(const char *name, TimestampTz until, TimestampTz now)
{
	bool		ok;

	LWLockAcquire(mark_lock, LW_EXCLUSIVE);
	ok = add_mark(name, until, now);
	LWLockRelease(mark_lock);
	return ok;
}

/*
 * schedlock_marks_end_load
 *		End the load begun with generation gen: the marks now cover every
 *		row when it went through (ok) and nothing it cannot see happened
 *		meanwhile.  A failed load is tried again MARK_RELOAD_SECONDS later.
 *		Must not fail (runs on the error path too).
 */
void
schedlock_marks_end_load(uint64 gen, bool ok, TimestampTz now)
{
	MarkDatabase *d;

	LWLockAcquire(mark_lock, LW_EXCLUSIVE);
	d = mark_database(false, InvalidTransactionId);
	if (d != NULL && d->loading)
	{
		d->loading = false;
		if (ok && d->gen == gen && d->writers == 0 && marks->orphan_writers == 0)
			d->loaded = true;
		else if (!ok)
		{
			unload(d);
			d->next_load = now + MARK_RELOAD_SECONDS * USECS_PER_SEC;
		}
	}
	LWLockRelease(mark_lock);
}

/*
 * schedlock_marks_add
 *		A lock function wrote the name's row so that it blocks acquires
 *		until until (DT_NOEND: its token came from the row, not from the WAL
 *		position); call after writing it, under the name's mutex.  When the
 *		mark does not fit, the database's marks are loaded again later.
 */
void
schedlock_marks_add(const char *name, TimestampTz until, TimestampTz now)
{
	MarkDatabase *d;
	int			i;

	if (mark_table == NULL)
		return;
	/* a release earlier in this transaction no longer has the last word */
	for (i = 0; i < nunmarks; i++)
	{
		if (unmarks[i].name != NULL && strcmp(unmarks[i].name, name) == 0)
		{
			pfree(unmarks[i].name);
			unmarks[i].name = NULL;
		}
	}
	LWLockAcquire(mark_lock, LW_EXCLUSIVE);
	d = mark_database(false, InvalidTransactionId);
	/* without a slot nothing is loaded: a later load scans the row */
	if (d != NULL && !add_mark(name, until, now))
	{
		unload(d);
		d->next_load = now + MARK_RELOAD_SECONDS * USECS_PER_SEC;
	}
	LWLockRelease(mark_lock);
}

/*
 * schedlock_marks_unmark_at_commit
 *		A lock function released the name's lease in the table, leaving no
 *		lock_at_least_for window: if the transaction commits (and no later
 *		change of this transaction marks the name again), the row blocks
 *		nobody and the name's mark can go.  Removed at commit, while the
 *		name's mutex is still held (schedlock_marks_end_xact).
 */
void
schedlock_marks_unmark_at_commit(const char *name)
{
	if (mark_table == NULL)
		return;
	schedlock_ensure_room((void **) &unmarks, &maxunmarks, nunmarks,
						  sizeof(PendingUnmark));
	unmarks[nunmarks].nestlevel = GetCurrentTransactionNestLevel();
	unmarks[nunmarks].name = MemoryContextStrdup(TopMemoryContext, name);
	nunmarks++;
}

/*
 * schedlock_marks_end_xact
 *		At the end of a (sub)transaction at nesting level level: at the top
 *		level's commit remove the marks of the names it released (not those
 *		of rows with a large token); at an abort forget them; at a
 *		subtransaction's commit hand them to the parent.  Must not fail.
 */
void
schedlock_marks_end_xact(bool commit, int level)
{
	int			i;
	int			keep = 0;

	if (nunmarks == 0)
		return;
	if (commit && level > 1)
	{
		for (i = 0; i < nunmarks; i++)
			if (unmarks[i].nestlevel >= level)
				unmarks[i].nestlevel = level - 1;
		return;
	}
	if (commit)
	{
		LWLockAcquire(mark_lock, LW_EXCLUSIVE);
		for (i = 0; i < nunmarks; i++)
		{
			SchedlockLeaseKey key;
			MarkEntry  *entry;

			if (unmarks[i].name == NULL || strlen(unmarks[i].name) >= sizeof(key.name))
				continue;
			schedlock_lease_key_set(&key, unmarks[i].name);
			entry = hash_search(mark_table, &key, HASH_FIND, NULL);
			if (entry != NULL && entry->until != DT_NOEND)
				(void) hash_search(mark_table, &key, HASH_REMOVE, NULL);
		}
		LWLockRelease(mark_lock);
	}
	for (i = 0; i < nunmarks; i++)
	{
		if (!commit && unmarks[i].nestlevel < level)
			unmarks[keep++] = unmarks[i];
		else if (unmarks[i].name != NULL)
			pfree(unmarks[i].name);
	}
	nunmarks = keep;
}

/*
 * schedlock_marks_forget
 *		A session-bound acquire kept in shared memory read the name's row
 *		and took the name over: the row blocks nobody and its token is below
 *		every token to come, so the name needs no mark.
 */
void
schedlock_marks_forget(const char *name)
{
	schedlock_lease_key_remove(mark_table, mark_lock, name);
}

/*
 * schedlock_marks_writer_start
 *		The open transaction writes the table by SQL (lock_watch.c): until
 *		schedlock_marks_writer_end, acquires in this database probe the
 *		table.  Returns whether the database has a slot (pass it on to
 *		writer_end); without one, every database probes meanwhile.
 */
bool
schedlock_marks_writer_start(void)
{
	MarkDatabase *d;
	TransactionId incarnation;

	if (mark_table == NULL)
		return false;
	incarnation = database_incarnation();
	LWLockAcquire(mark_lock, LW_EXCLUSIVE);
	d = mark_database(true, incarnation);
	if (d != NULL)
	{
		d->writers++;
		unload(d);
	}
	else
		marks->orphan_writers++;
	LWLockRelease(mark_lock);
	return d != NULL;
}

/*
 * schedlock_marks_writer_end
 *		The transaction that wrote the table by SQL has ended (committed,
 *		aborted or prepared): the next acquire loads the marks again, seeing
 *		its rows.  Must not fail.
 */
void
schedlock_marks_writer_end(bool had_slot)
{
	int			i;

	if (mark_table == NULL)
		return;
	LWLockAcquire(mark_lock, LW_EXCLUSIVE);
	if (had_slot)
	{
		MarkDatabase *d = mark_database(false, InvalidTransactionId);

		if (d != NULL)
		{
			if (d->writers > 0)
				d->writers--;
			unload(d);
			d->next_load = 0;
		}
	}
	else
	{
		if (marks->orphan_writers > 0)
			marks->orphan_writers--;
		for (i = 0; i < MARK_DATABASES; i++)
			unload(&marks->dbs[i]);
	}
	LWLockRelease(mark_lock);
}

/*
 * schedlock_marks_drop_database
 *		DROP DATABASE dbid has committed: remove its marks and free its
 *		slot, so that a database given the same OID starts afresh.
 */
void
schedlock_marks_drop_database(Oid dbid)
{
	int			i;

	if (mark_table == NULL)
		return;
	LWLockAcquire(mark_lock, LW_EXCLUSIVE);
	remove_database_marks(dbid);
	for (i = 0; i < MARK_DATABASES; i++)
	{
		if (marks->dbs[i].dbid == dbid)
			memset(&marks->dbs[i], 0, sizeof(MarkDatabase));
	}
	LWLockRelease(mark_lock);
}
