/*-------------------------------------------------------------------------
 *
 * store_claim_scan.c
 *	  The job backends' walks of jobs_role_due_idx on the tables of
 *	  release 1.2, done without SQL: the claim of due jobs (a scan and a
 *	  row lock per job taken), and the role's next due time and the number
 *	  of its jobs due at one instant.
 *
 * A job backend lives for a few runs, and most of them for one: a fleet of
 * databases on a small budget starts a backend per run.  Its catalog caches
 * start cold, and preparing and planning a claim statement (two tables, a
 * dozen operators and casts, two subqueries, nine indexes weighed) cost a
 * third of the CPU of such a backend's whole life.  The claim needs none of
 * that: it walks one index in one order, and asks two questions of the
 * claimed job's runs through two more.  So it does that here, directly:
 *
 * - jobs_role_due_idx ((COALESCE(run_as, owner)::oid), next_run_at, job_id)
 *	 WHERE enabled, scanned for the role from the pass's position up to the
 *	 claim's horizon, in the index's order;
 * - each candidate row locked FOR NO KEY UPDATE, skipping a row another
 *	 transaction holds (SKIP LOCKED), following its update chain to the
 *	 newest version, which is checked again as the executor's recheck of a
 *	 locked row would (a version that no longer matches is skipped, and the
 *	 scan goes on);
 * - for the general claim, whether a run of the claimed job is pending or
 *	 running (job_runs_open_idx) and whether its next slot has a row (the
 *	 unique key of job_runs), as of the claim's snapshot.
 *
 * The two reads a job backend makes between passes (when its role's next
 * job is due, and how many are due then) walk the same index the same way.
 *
 * The lock mode and the recheck are those of the statement this replaces
 * ("SELECT ... ORDER BY next_run_at, job_id LIMIT n FOR NO KEY UPDATE SKIP
 * LOCKED"): see claim_sql.h, whose statements remain those of the tables of
 * release 1.1.  The isolation specs job_claim.spec and job_claim_runs.spec
 * race this code through schedlock_claim_probe below.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_claim_scan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "base/compat.h"
#include "base/subxact.h"
#include "jobstore.h"
#include "store_int.h"

PG_FUNCTION_INFO_V1(schedlock_claim_probe);

/* The columns of schedlock.jobs the claim reads, by name. */
typedef enum ClaimColumn
{
	CC_JOB_ID,
	CC_JOB_NAME,
	CC_OWNER,
	CC_SCHEDULE,
	CC_COMMAND,
	CC_NOTIFY_CHANNEL,
	CC_PAYLOAD,
	CC_TIMEZONE,
	CC_TIMEOUT,
	CC_MISFIRE,
	CC_ATOMIC,
	CC_ENABLED,
	CC_RUN_AS,
	CC_REBOOT,
	CC_NEXT_SLOT,
	CC_RETRY_SLOT,
	CC_RETRY_ATTEMPT,
	CC_RETRY_AT,
	CC_MANUAL_PENDING,
	CC_NEXT_RUN_AT,
	CC_CONSECUTIVE_FAILURES,
	CC_SEARCH_PATH,
	CC_RECORD_RUNS,
	CC_COUNT
} ClaimColumn;

static const char *const claim_column_names[CC_COUNT] = {
	"job_id", "job_name", "owner", "schedule", "command", "notify_channel",
	"payload", "timezone", "timeout", "misfire", "atomic", "enabled",
	"run_as", "reboot", "next_slot", "retry_slot", "retry_attempt",
	"retry_at", "manual_pending", "next_run_at", "consecutive_failures",
	"search_path", "record_runs"
};

/*
 * What one claim works with: the table, its index, where each column is
 * (attribute numbers, which differ between a fresh install and an upgraded
 * one), and the claim's terms.
 */
typedef struct ClaimScan
{
	SchedlockClaimKind kind;
	Oid			role;
	TimestampTz horizon;
	ClaimPosition after;
	AttrNumber	attnum[CC_COUNT];
} ClaimScan;

/*
 * find_columns
 *		The attribute number of each of names[0..n-1] in desc, into
 *		attnum[]; an error names a column that is missing.
 */
static void
find_columns(TupleDesc desc, const char *relname, const char *const *names,
			 int n, AttrNumber *attnum)
{
	for (int c = 0; c < n; c++)
	{
		attnum[c] = InvalidAttrNumber;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!att->attisdropped && strcmp(NameStr(att->attname), names[c]) == 0)
			{
				attnum[c] = att->attnum;
				break;
			}
		}
		if (attnum[c] == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table schedlock.%s is missing",
							names[c], relname),
					 errhint("Run ALTER EXTENSION schedlock UPDATE, or reinstall the extension.")));
	}
}

/*
 * store_relation_oid
 *		The OID of relation schedlock.relname, which the tables of release
 *		1.2 have; an error if it is gone.
 */
static Oid
store_relation_oid(const char *relname)
{
	Oid			relid = schedlock_table_oid(relname);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("relation schedlock.%s is missing", relname),
				 errhint("Run ALTER EXTENSION schedlock UPDATE, or reinstall the extension.")));
	return relid;
}

static inline Datum
slot_col(TupleTableSlot *slot, const ClaimScan *cs, ClaimColumn c, bool *isnull)
{
	return slot_getattr(slot, cs->attnum[c], isnull);
}

static char *
slot_text(TupleTableSlot *slot, const ClaimScan *cs, ClaimColumn c,
		  MemoryContext cxt)
{
	bool		isnull;
	Datum		d = slot_col(slot, cs, c, &isnull);
	MemoryContext old;
	char	   *s;

	if (isnull)
		return NULL;
	old = MemoryContextSwitchTo(cxt);
	s = TextDatumGetCString(d);
	MemoryContextSwitchTo(old);
	return s;
}

/* whether the row in slot is an enabled job that runs as cs->role */
static bool
row_of_role(TupleTableSlot *slot, const ClaimScan *cs)
{
	bool		isnull;
	Datum		d = slot_col(slot, cs, CC_ENABLED, &isnull);

	if (isnull || !DatumGetBool(d))
		return false;
	d = slot_col(slot, cs, CC_RUN_AS, &isnull);
	if (isnull)
		d = slot_col(slot, cs, CC_OWNER, &isnull);
	return !isnull && DatumGetObjectId(d) == cs->role;
}

/*
 * row_matches
 *		Whether the row version in slot is one the claim takes: enabled, of
 *		the role, due by the horizon, after the position in the order
 *		(next_run_at, job_id), and of the claim's kind.  Asked of the version
 *		the scan found and again of the version the lock got.
 */
static bool
row_matches(TupleTableSlot *slot, const ClaimScan *cs)
{
	bool		isnull;
	Datum		d;
	TimestampTz due;
	int64		job_id;

	if (!row_of_role(slot, cs))
		return false;
	d = slot_col(slot, cs, CC_NEXT_RUN_AT, &isnull);
	if (isnull)
		return false;
	due = DatumGetTimestampTz(d);
	if (due > cs->horizon)
		return false;
	job_id = DatumGetInt64(slot_col(slot, cs, CC_JOB_ID, &isnull));
	if (due < cs->after.next_run_at ||
		(due == cs->after.next_run_at && job_id <= cs->after.job_id))
		return false;

	switch (cs->kind)
	{
		case SCHEDLOCK_CLAIM_ANY:
			return true;
		case SCHEDLOCK_CLAIM_NOTIFY:
			(void) slot_col(slot, cs, CC_NOTIFY_CHANNEL, &isnull);
			return !isnull;
		case SCHEDLOCK_CLAIM_ATOMIC:
			(void) slot_col(slot, cs, CC_COMMAND, &isnull);
			if (isnull)
				return false;
			d = slot_col(slot, cs, CC_ATOMIC, &isnull);
			return !isnull && DatumGetBool(d);
	}
	return false;
}

/*
 * interval_ms
 *		A job's timeout in whole milliseconds, rounded up (a timeout never
 *		becomes "none"), as EXTRACT(epoch FROM timeout) * 1000 counts it: a
 *		month as 30 days, twelve months as 365.25 days.
 */
static int
interval_ms(const Interval *iv)
{
	double		days = (double) DAYS_PER_YEAR * (iv->month / MONTHS_PER_YEAR) +
		(double) DAYS_PER_MONTH * (iv->month % MONTHS_PER_YEAR) + iv->day;
	double		ms = days * SECS_PER_DAY * 1000.0 + iv->time / 1000.0;

	return (int) Min(ceil(ms), (double) INT_MAX);
}

/*
 * read_job
 *		Copy the locked row version in slot into *job, strings in cxt.
 */
static void
read_job(TupleTableSlot *slot, const ClaimScan *cs, ClaimedJob *job,
		 MemoryContext cxt)
{
	bool		isnull;
	Datum		d;

	memset(job, 0, sizeof(*job));
	job->job_id = DatumGetInt64(slot_col(slot, cs, CC_JOB_ID, &isnull));
	job->job_name = slot_text(slot, cs, CC_JOB_NAME, cxt);
	job->owner = DatumGetObjectId(slot_col(slot, cs, CC_OWNER, &isnull));
	job->schedule = slot_text(slot, cs, CC_SCHEDULE, cxt);
	job->command = slot_text(slot, cs, CC_COMMAND, cxt);
	job->channel = slot_text(slot, cs, CC_NOTIFY_CHANNEL, cxt);
	d = slot_col(slot, cs, CC_PAYLOAD, &isnull);
	if (!isnull)
	{
		Oid			typoutput;
		bool		typisvarlena;
		char	   *s;

		getTypeOutputInfo(TupleDescAttr(slot->tts_tupleDescriptor,
										cs->attnum[CC_PAYLOAD] - 1)->atttypid,
						  &typoutput, &typisvarlena);
		s = OidOutputFunctionCall(typoutput, d);
		job->payload = MemoryContextStrdup(cxt, s);
	}
	job->timezone = slot_text(slot, cs, CC_TIMEZONE, cxt);
	d = slot_col(slot, cs, CC_TIMEOUT, &isnull);
	job->timeout_ms = isnull ? 0 : interval_ms(DatumGetIntervalP(d));
	job->misfire = slot_text(slot, cs, CC_MISFIRE, cxt);
	job->atomic = DatumGetBool(slot_col(slot, cs, CC_ATOMIC, &isnull));
	d = slot_col(slot, cs, CC_RUN_AS, &isnull);
	job->run_as = isnull ? InvalidOid : DatumGetObjectId(d);
	job->reboot = DatumGetBool(slot_col(slot, cs, CC_REBOOT, &isnull));
	d = slot_col(slot, cs, CC_NEXT_SLOT, &isnull);
	job->has_next_slot = !isnull;
	job->next_slot = isnull ? 0 : DatumGetTimestampTz(d);
	d = slot_col(slot, cs, CC_RETRY_SLOT, &isnull);
	job->has_retry = !isnull;
	job->retry_slot = isnull ? 0 : DatumGetTimestampTz(d);
	d = slot_col(slot, cs, CC_RETRY_ATTEMPT, &isnull);
	job->retry_attempt = isnull ? 1 : DatumGetInt32(d);
	d = slot_col(slot, cs, CC_RETRY_AT, &isnull);
	job->retry_at = isnull ? 0 : DatumGetTimestampTz(d);
	job->manual_pending = DatumGetInt32(slot_col(slot, cs, CC_MANUAL_PENDING,
												 &isnull));
	ItemPointerCopy(&slot->tts_tid, &job->ctid);
	job->failures = DatumGetInt32(slot_col(slot, cs, CC_CONSECUTIVE_FAILURES,
										   &isnull));
	job->search_path = slot_text(slot, cs, CC_SEARCH_PATH, cxt);
	job->failures_only = schedlock_failures_only(slot_text(slot, cs,
														   CC_RECORD_RUNS,
														   cxt));
	job->role_name = schedlock_claimed_role_name(job, cxt);
	job->runs_seen = false;
}

/*
 * runs_probe
 *		Whether job_runs, as of snap, has a row of job_id through index
 *		indexrelname: with scheduled_for = slot when by_slot (the unique key
 *		(job_id, scheduled_for, attempt)), else with a status of pending or
 *		running (job_runs_open_idx, whose predicate also admits queued).
 *		Sets *found; false when the index is missing (the caller then asks
 *		the store by SQL).
 */
static bool
runs_probe(Relation runs, const AttrNumber *run_att, const char *indexrelname,
		   Snapshot snap, int64 job_id, bool by_slot, TimestampTz slot,
		   bool *found)
{
	Oid			indexoid = schedlock_table_oid(indexrelname);
	Relation	idx;
	IndexScanDesc scan;
	TupleTableSlot *tslot;
	ScanKeyData key[2];

	*found = false;
	if (!OidIsValid(indexoid))
		return false;
	idx = index_open(indexoid, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(job_id));
	if (by_slot)
		ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_TIMESTAMPTZ_EQ,
					TimestampTzGetDatum(slot));
	scan = schedlock_index_beginscan(runs, idx, snap, by_slot ? 2 : 1, 0);
	index_rescan(scan, key, by_slot ? 2 : 1, NULL, 0);
	tslot = table_slot_create(runs, NULL);
	while (!*found && index_getnext_slot(scan, ForwardScanDirection, tslot))
	{
		bool		isnull;
		Datum		d;
		text	   *status;
		SchedlockRunStatus st;

		if (by_slot)
		{
			*found = true;
			break;
		}
		d = slot_getattr(tslot, run_att[1], &isnull);
		if (isnull)
			continue;
		status = DatumGetTextPP(d);
		*found = schedlock_run_status_parse(VARDATA_ANY(status),
											VARSIZE_ANY_EXHDR(status), &st) &&
			schedlock_run_status_in_progress(st);
		if ((Pointer) status != DatumGetPointer(d))
			pfree(status);
	}
	ExecDropSingleTupleTableSlot(tslot);
	index_endscan(scan);
	index_close(idx, NoLock);
	return true;
}

/*
 * claimed_runs
 *		For the job just claimed, the answers schedlock_run_may_defer would
 *		otherwise ask of the store: whether a run of it is pending or running,
 *		and whether its next slot has a row, as of the claim's snapshot snap.
 *		They are trusted only when the claimed version (xmin) is older than
 *		before, a snapshot its transaction took before the claim's: the lock
 *		may get a version updated after snap was taken, by a transaction that
 *		wrote a run snap cannot see.  Every transaction that writes a pending
 *		or running run of a job updates the job's row too, under the claim's
 *		lock, so when that version is older than before, snap sees every such
 *		run.  Otherwise (and for a version this transaction wrote) runs_seen
 *		stays false.
 */
static void
claimed_runs(ClaimedJob *job, TransactionId xmin, Snapshot before,
			 Snapshot snap)
{
	Relation	runs;
	AttrNumber	run_att[2];
	static const char *const run_names[2] = {"job_id", "status"};
	bool		run_open;
	bool		slot_rows = false;

	if (before == NULL || TransactionIdIsCurrentTransactionId(xmin) ||
		XidInMVCCSnapshot(xmin, before))
		return;
	runs = table_open(store_relation_oid("job_runs"), AccessShareLock);
	find_columns(RelationGetDescr(runs), "job_runs", run_names, 2, run_att);
	if (runs_probe(runs, run_att, "job_runs_open_idx", snap, job->job_id,
				   false, 0, &run_open) &&
		(!job->has_next_slot ||
		 runs_probe(runs, run_att, "job_runs_job_id_scheduled_for_attempt_key",
					snap, job->job_id, true, job->next_slot, &slot_rows)))
	{
		job->run_open = run_open;
		job->slot_rows = slot_rows;
		job->seen_slot = job->has_next_slot ? job->next_slot : DT_NOBEGIN;
		job->runs_seen = true;
	}
	table_close(runs, NoLock);
}

/*
 * claim_scan
 *		The claim itself: up to max jobs into jobs[] (see
 *		schedlock_claim_scan).
 */
static int
claim_scan(ClaimScan *cs, ClaimedJob *jobs, int max, MemoryContext cxt,
		   Snapshot before)
{
	Snapshot	snap;
	Relation	rel;
	Relation	idx;
	IndexScanDesc scan;
	TupleTableSlot *seen;
	TupleTableSlot *locked;
	ScanKeyData key[3];
	CommandId	cid = GetCurrentCommandId(true);
	int			n = 0;

	/* the statement's snapshot, taken before its locks as a statement's is */
	snap = RegisterSnapshot(GetTransactionSnapshot());
	rel = table_open(store_relation_oid("jobs"), RowShareLock);
	idx = index_open(store_relation_oid("jobs_role_due_idx"), AccessShareLock);
	find_columns(RelationGetDescr(rel), "jobs", claim_column_names, CC_COUNT,
				 cs->attnum);

	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(cs->role));
	ScanKeyInit(&key[1], 2, BTGreaterEqualStrategyNumber, F_TIMESTAMPTZ_GE,
				TimestampTzGetDatum(cs->after.next_run_at));
	ScanKeyInit(&key[2], 2, BTLessEqualStrategyNumber, F_TIMESTAMPTZ_LE,
				TimestampTzGetDatum(cs->horizon));
	scan = schedlock_index_beginscan(rel, idx, snap, 3, 0);
	index_rescan(scan, key, 3, NULL, 0);
	seen = table_slot_create(rel, NULL);
	locked = table_slot_create(rel, NULL);

	while (n < max && index_getnext_slot(scan, ForwardScanDirection, seen))
	{
		ItemPointerData tid;
		TM_FailureData tmfd;
		TM_Result	res;

		CHECK_FOR_INTERRUPTS();
		if (!row_matches(seen, cs))
			continue;
		tid = seen->tts_tid;
		res = table_tuple_lock(rel, &tid, snap, locked, cid,
							   LockTupleNoKeyExclusive, LockWaitSkip,
							   TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
		switch (res)
		{
			case TM_Ok:
				break;
			case TM_WouldBlock: /* another transaction holds it: skip */
			case TM_Deleted:	/* gone since the snapshot */
			case TM_SelfModified:	/* changed by this transaction since */
				continue;
			case TM_Updated:
				/* only where the snapshot is the transaction's */
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent update")));
				break;
			case TM_Invisible:
				elog(ERROR, "attempted to lock invisible tuple");
				break;
			default:
				elog(ERROR, "unrecognized table_tuple_lock status: %u", res);
				break;
		}
		/* the locked version, perhaps newer than the one seen: ask again */
		if (!row_matches(locked, cs))
			continue;
		read_job(locked, cs, &jobs[n], cxt);
		cs->after.job_id = jobs[n].job_id;
		{
			bool		isnull;

			cs->after.next_run_at =
				DatumGetTimestampTz(slot_col(locked, cs, CC_NEXT_RUN_AT, &isnull));
		}
		if (cs->kind == SCHEDLOCK_CLAIM_ANY && max == 1)
		{
			bool		shouldfree;
			HeapTuple	tup = ExecFetchSlotHeapTuple(locked, false, &shouldfree);
			TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

			if (shouldfree)
				heap_freetuple(tup);
			claimed_runs(&jobs[n], xmin, before, snap);
		}
		n++;
	}

	ExecDropSingleTupleTableSlot(locked);
	ExecDropSingleTupleTableSlot(seen);
	index_endscan(scan);
	/* the locks stay until the transaction ends, as a statement's do */
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	UnregisterSnapshot(snap);
	/* what a statement that locked rows ends with */
	CommandCounterIncrement();
	return n;
}

/*
 * schedlock_claim_scan
 *		Claim up to max of role's due jobs of the given kind as of horizon,
 *		after position *pos in the order (next_run_at, job_id), on the tables
 *		of release 1.2: read them into jobs[] (strings in cxt), move *pos to
 *		the last and return how many.  For the general claim of one job,
 *		what it saw of that job's runs (runs_seen; before is a snapshot the
 *		transaction took before the claim, or NULL).  In a transaction; the
 *		row locks last until it ends.
 *
 * After a subtransaction of the transaction was rolled back, the claim runs
 * in a subtransaction of its own, as the scheduler's writing statements do
 * (kept_query.c explains why).
 */
int
schedlock_claim_scan(SchedlockClaimKind kind, Oid role, ClaimPosition *pos,
					 TimestampTz horizon, ClaimedJob *jobs, int max,
					 MemoryContext cxt, Snapshot before)
{
	ClaimScan	cs;
	volatile int n = 0;
	MemoryContext scancxt;
	MemoryContext old;

	Assert(max > 0);
	/* the scan's own memory; the jobs' strings go to cxt */
	scancxt = AllocSetContextCreate(CurTransactionContext, "schedlock claim",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(scancxt);
	cs.kind = kind;
	cs.role = role;
	cs.horizon = horizon;
	cs.after = *pos;

	if (GetCurrentTransactionNestLevel() == 1 &&
		schedlock_subxact_rolled_back())
	{
		SchedlockSubxact sx;

		schedlock_subxact_begin(&sx);
		PG_TRY();
		{
			n = claim_scan(&cs, jobs, max, cxt, before);
			schedlock_subxact_end(&sx, true);
		}
		PG_CATCH();
		{
			ReThrowError(schedlock_subxact_abort(&sx));
		}
		PG_END_TRY();
	}
	else
		n = claim_scan(&cs, jobs, max, cxt, before);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scancxt);
	if (n > 0)
		*pos = cs.after;
	return n;
}

/*
 * role_walk_begin / role_walk_end
 *		A read of role's entries in jobs_role_due_idx as of the active
 *		snapshot (that of a read-only statement), keys[1..nkeys-1] beside
 *		the role's; the caller reads the rows with index_getnext_slot.
 */
typedef struct RoleWalk
{
	ClaimScan	cs;
	Relation	rel;
	Relation	idx;
	IndexScanDesc scan;
	TupleTableSlot *slot;
} RoleWalk;

static void
role_walk_begin(RoleWalk *w, Oid role, ScanKeyData *keys, int nkeys)
{
	memset(&w->cs, 0, sizeof(w->cs));
	w->cs.role = role;
	w->rel = table_open(store_relation_oid("jobs"), AccessShareLock);
	w->idx = index_open(store_relation_oid("jobs_role_due_idx"), AccessShareLock);
	find_columns(RelationGetDescr(w->rel), "jobs", claim_column_names,
				 CC_COUNT, w->cs.attnum);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(role));
	w->scan = schedlock_index_beginscan(w->rel, w->idx, GetActiveSnapshot(),
										nkeys, 0);
	index_rescan(w->scan, keys, nkeys, NULL, 0);
	w->slot = table_slot_create(w->rel, NULL);
}

static void
role_walk_end(RoleWalk *w)
{
	ExecDropSingleTupleTableSlot(w->slot);
	index_endscan(w->scan);
	index_close(w->idx, NoLock);
	table_close(w->rel, NoLock);
}

/*
 * schedlock_role_next_due
 *		The earliest next_run_at of the enabled jobs of role (the role they
 *		run as) into *next, as the first of its entries in
 *		jobs_role_due_idx; false when it has none.  Tables of release 1.2.
 */
bool
schedlock_role_next_due(Oid role, TimestampTz *next)
{
	RoleWalk	w;
	ScanKeyData keys[1];
	bool		found = false;

	role_walk_begin(&w, role, keys, 1);
	/* the index keeps NULLs last: the first due time seen is the earliest */
	while (!found && index_getnext_slot(w.scan, ForwardScanDirection, w.slot))
	{
		bool		isnull;
		Datum		d;

		if (!row_of_role(w.slot, &w.cs))
			continue;
		d = slot_col(w.slot, &w.cs, CC_NEXT_RUN_AT, &isnull);
		if (isnull)
			break;
		*next = DatumGetTimestampTz(d);
		found = true;
	}
	role_walk_end(&w);
	return found;
}

/*
 * schedlock_role_due_at
 *		How many of the first max enabled jobs of role are due at exactly
 *		the instant at, and in *notify how many of those are NOTIFY jobs.
 *		Tables of release 1.2.
 */
int
schedlock_role_due_at(Oid role, TimestampTz at, int max, int *notify)
{
	RoleWalk	w;
	ScanKeyData keys[2];
	int			n = 0;

	*notify = 0;
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TIMESTAMPTZ_EQ,
				TimestampTzGetDatum(at));
	role_walk_begin(&w, role, keys, 2);
	while (n < max && index_getnext_slot(w.scan, ForwardScanDirection, w.slot))
	{
		bool		isnull;
		Datum		d;

		if (!row_of_role(w.slot, &w.cs))
			continue;
		d = slot_col(w.slot, &w.cs, CC_NEXT_RUN_AT, &isnull);
		if (isnull || DatumGetTimestampTz(d) != at)
			continue;
		n++;
		(void) slot_col(w.slot, &w.cs, CC_NOTIFY_CHANNEL, &isnull);
		if (!isnull)
			(*notify)++;
	}
	role_walk_end(&w);
	return n;
}

/*
 * schedlock_claim_probe
 *		SQL-callable, for the isolation specs that race the claim
 *		(test/isolation/specs/job_claim*.spec): claim(kind text, horizon
 *		timestamptz, after_at timestamptz, after_id bigint, role oid) claims
 *		one job as a job backend would and returns its name, what the claim
 *		saw of its runs and whether that was trusted; no row when nothing
 *		was claimed.  No extension script declares it: a spec binds it
 *		with CREATE FUNCTION ... LANGUAGE C, which only a superuser can,
 *		and only a superuser may call it.
 */
Datum
schedlock_claim_probe(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *kindname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SchedlockClaimKind kind;
	ClaimPosition pos;
	ClaimedJob	job;
	Snapshot	before;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may claim jobs this way")));
	if (strcmp(kindname, "any") == 0)
		kind = SCHEDLOCK_CLAIM_ANY;
	else if (strcmp(kindname, "notify") == 0)
		kind = SCHEDLOCK_CLAIM_NOTIFY;
	else if (strcmp(kindname, "atomic") == 0)
		kind = SCHEDLOCK_CLAIM_ATOMIC;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown claim kind \"%s\"", kindname),
				 errhint("Use any, notify or atomic.")));
	if (!store_tables_current())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the claim without SQL needs the tables of release 1.2"),
				 errhint("Run ALTER EXTENSION schedlock UPDATE.")));

	InitMaterializedSRF(fcinfo, 0);
	pos.next_run_at = PG_GETARG_TIMESTAMPTZ(2);
	pos.job_id = PG_GETARG_INT64(3);
	before = ActiveSnapshotSet() ? GetActiveSnapshot() : NULL;
	if (schedlock_claim_scan(kind, PG_GETARG_OID(4), &pos,
							 PG_GETARG_TIMESTAMPTZ(1), &job, 1,
							 CurrentMemoryContext, before) == 1)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		values[0] = CStringGetTextDatum(job.job_name);
		values[1] = BoolGetDatum(job.run_open);
		values[2] = BoolGetDatum(job.slot_rows);
		values[3] = BoolGetDatum(job.runs_seen);
		if (!job.runs_seen)
			nulls[1] = nulls[2] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
