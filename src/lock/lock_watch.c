/*-------------------------------------------------------------------------
 *
 * lock_watch.c
 *	  Notice writes to schedlock.lock_state made by SQL, so that the marks
 *	  of lock_marks.c stay true.
 *
 * The lock functions write the table themselves and keep the marks up to
 * date.  The table's owner (a superuser, or whoever installed the extension)
 * can also write it by SQL: INSERT, UPDATE, DELETE, MERGE, or COPY FROM, as
 * a restore of a dump does.  An ExecutorStart hook looks at the result
 * relations of every statement that writes, and the ProcessUtility hook of
 * schedlock.c hands COPY ... FROM over; when one of them is the lock table,
 * or a partitioned table the lock table is a partition of (at any level: its
 * INSERT, COPY FROM and row-moving UPDATE route rows into the lock table),
 * the database's acquires read the table again until the transaction ends,
 * and then load the marks afresh.  An inheritance parent needs no such
 * check: UPDATE, DELETE and MERGE through it name every child they write as
 * a result relation of its own, and INSERT and COPY do not reach children.
 * Only the name of a result relation is looked up (in the syscache), and for
 * a partitioned table whether the lock table is one of its partitions, so
 * statements that write other tables pay a syscache lookup or a few each,
 * and those that write nothing pay nothing.  The executor's result
 * relations are looked at once ExecutorStart has set up its partition
 * routing, so a partition it routes to at the top level is seen.
 *
 * Rows written without SQL by other code (logical replication's apply
 * worker, another extension writing the heap) are not seen until the marks
 * are next loaded, nor are rows that a statement already under way routes
 * into the lock table after it was attached meanwhile below a partitioned
 * table the statement writes through.
 *
 * IDENTIFICATION
 *	  src/lock/lock_watch.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "lease_shmem.h"
#include "lock_marks.h"
#include "lock_watch.h"

/* Whether the open transaction wrote the lock table by SQL. */
typedef enum WatchState
{
	WATCH_NONE,
	WATCH_WRITER,				/* registered with the database's marks */
	WATCH_ORPHAN_WRITER			/* registered without a database slot */
} WatchState;

static WatchState watch_state = WATCH_NONE;
ExecutorStart_hook_type schedlock_prev_ExecutorStart = NULL;

/*
 * lock_table_partition_of
 *		Whether schedlock.lock_state is a partition of the partitioned table
 *		relid, directly or below one of its partitions.
 */
static bool
lock_table_partition_of(Oid relid)
{
	Oid			nsp = get_namespace_oid("schedlock", true);
	Oid			lockrel = InvalidOid;
	List	   *ancestors;
	bool		result;

	if (OidIsValid(nsp))
		lockrel = get_relname_relid("lock_state", nsp);
	if (!OidIsValid(lockrel) || !get_rel_relispartition(lockrel))
		return false;
	ancestors = get_partition_ancestors(lockrel);
	result = list_member_oid(ancestors, relid);
	list_free(ancestors);
	return result;
}

/*
 * writes_lock_table
 *		Whether rows written into relid may land in schedlock.lock_state:
 *		relid is the lock table, or a partitioned table it is a partition
 *		of.
 */
static bool
writes_lock_table(Oid relid)
{
	HeapTuple	tp;
	Form_pg_class form;
	Oid			nsp = InvalidOid;
	bool		partitioned;
	char	   *nspname;
	bool		result;

	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tp))
		return false;
	form = (Form_pg_class) GETSTRUCT(tp);
	partitioned = form->relkind == RELKIND_PARTITIONED_TABLE;
	if (strcmp(NameStr(form->relname), "lock_state") == 0)
		nsp = form->relnamespace;
	ReleaseSysCache(tp);
	if (partitioned)
		return lock_table_partition_of(relid);
	if (!OidIsValid(nsp))
		return false;
	nspname = get_namespace_name(nsp);
	result = nspname != NULL && strcmp(nspname, "schedlock") == 0;
	if (nspname != NULL)
		pfree(nspname);
	return result;
}

/*
 * note_writer
 *		The open transaction writes the lock table by SQL.
 */
static void
note_writer(void)
{
	if (watch_state != WATCH_NONE || !schedlock_lease_shmem_enabled())
		return;
	watch_state = schedlock_marks_writer_start() ?
		WATCH_WRITER : WATCH_ORPHAN_WRITER;
}

/*
 * schedlock_lock_watch_executor_start
 *		ExecutorStart_hook: note a statement that writes the lock table,
 *		after the executor has set up (no row is written before
 *		ExecutorRun).
 */
void
schedlock_lock_watch_executor_start(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (schedlock_prev_ExecutorStart)
		schedlock_prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	if (watch_state == WATCH_NONE && stmt->resultRelations != NIL &&
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
	{
		ListCell   *lc;

		foreach(lc, stmt->resultRelations)
		{
			RangeTblEntry *rte = rt_fetch(lfirst_int(lc), stmt->rtable);

			if (rte->rtekind == RTE_RELATION && writes_lock_table(rte->relid))
			{
				note_writer();
				break;
			}
		}
	}
}

/*
 * schedlock_lock_watch_copy
 *		From the ProcessUtility hook: note COPY ... FROM into the lock table
 *		or into a partitioned table it is a partition of.
 */
void
schedlock_lock_watch_copy(Node *parsetree)
{
	CopyStmt   *copy;
	Oid			relid;

	if (!IsA(parsetree, CopyStmt) || watch_state != WATCH_NONE)
		return;
	copy = (CopyStmt *) parsetree;
	if (!copy->is_from || copy->relation == NULL)
		return;
	relid = RangeVarGetRelid(copy->relation, NoLock, true);
	if (OidIsValid(relid) && writes_lock_table(relid))
		note_writer();
}

/*
 * watch_xact_callback
 *		At the end of a transaction that wrote the table by SQL, have the
 *		marks loaded again.
 */
static void
watch_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			if (watch_state != WATCH_NONE)
			{
				schedlock_marks_writer_end(watch_state == WATCH_WRITER);
				watch_state = WATCH_NONE;
			}
			break;
		default:
			break;
	}
}

/*
 * schedlock_lock_watch_init
 *		Called from _PG_init: install the hook and the callback.
 */
void
schedlock_lock_watch_init(void)
{
	RegisterXactCallback(watch_xact_callback, NULL);
}
