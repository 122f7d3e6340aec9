/*-------------------------------------------------------------------------
 *
 * lock_table.c
 *	  The table store of leases: the rows of schedlock.lock_state, read and
 *	  written with the catalog routines.
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
 *
 * The rows are also what the marks (lock_marks.c) are loaded from:
 * schedlock_lock_table_load_marks scans every row version that is current or
 * being written.
 *
 * IDENTIFICATION
 *	  src/lock/lock_table.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "lease_shmem.h"
#include "lock_marks.h"
#include "lock_table.h"

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
 *		Load this database's marks (see lock_marks.c), unless somebody else
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
