/*-------------------------------------------------------------------------
 *
 * exec.c
 *	  Running an atomic job's SQL command in a worker, inside the claiming
 *	  transaction.  (A non-atomic job runs in a backend of its own,
 *	  connected as the job's role: jobbackend.c.)
 *
 * The command runs as the job's user (its owner, or run_as) with
 * SECURITY_LOCAL_USERID_CHANGE, so it cannot SET ROLE back to the worker's
 * superuser, and under the job's timeout as statement timeout.  It does
 * not throw: an error is caught, returned as ErrorData, and its effects
 * are rolled back.
 *
 * Jobs of different roles run one after the other in the worker's one
 * session, so a job must leave nothing there for the next job, nor for the
 * worker's own statements, which run as the bootstrap superuser.  After
 * every run, succeeded or failed, the session is brought back to what it
 * was before, as DISCARD ALL would (but keeping the worker's own plans):
 *	- settings (SET, SET LOCAL, set_config(), SET SESSION CHARACTERISTICS)
 *	  are undone at the end of the GUC nest level the job runs in;
 *	- cursors (WITH HOLD ones too), temporary objects and LISTEN are
 *	  dropped as the job's user, in the job's own subtransaction, before
 *	  the claim commits;
 *	- session-bound schedlock leases are ended as schedlock_release ends
 *	  them, and session advisory locks, prepared statements and sequence
 *	  state (currval, lastval), which no transaction end undoes, are
 *	  dropped, by schedlock_exec_discard_job_state once the run's
 *	  transaction is over.
 * What a job leaves for its transaction's commit runs before the job ends,
 * as the job's user: deferred triggers are fired (SET CONSTRAINTS ALL
 * IMMEDIATE), and WITH HOLD cursors are dropped before the claim commits,
 * which would otherwise run their queries, as the worker's superuser.
 * Dropping the plan cache (as DISCARD ALL does) is left out: the worker's
 * statements are planned under a pinned search_path (query.c), a plan
 * that depends on the job's search_path or role is re-planned by the plan
 * cache itself, and a prepared statement of a job is dropped with it.
 *
 * Atomic: the command runs through SPI in a subtransaction of the claiming
 * transaction, so its effects commit together with the run's bookkeeping or
 * roll back alone.  Its result rows go to a receiver that drops them: the
 * worker's memory does not grow with the size of a result.  What it raises
 * below ERROR (NOTICE, INFO, WARNING) is captured for the run's record
 * while it runs, and only then (runlog.c).
 *
 * IDENTIFICATION
 *	  src/exec.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_namespace.h"
#include "commands/async.h"
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/analyze.h"
#include "pgstat.h"
#include "storage/lock.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

#include "compat.h"
#include "runlog.h"
#include "schedlock.h"
#include "scheduler.h"

/*
 * temp_objects_exist
 *		Whether this session's temporary schema holds anything: an object
 *		there depends on the schema (pg_depend), which is what
 *		ResetTempTableNamespace deletes.  Once a job used a temporary
 *		object the schema stays, and dropping its (usually empty) contents
 *		after every run costs two to three times this look-up.  In a
 *		transaction.
 */
static bool
temp_objects_exist(void)
{
	Oid			temp_nsp;
	Oid			temp_toast_nsp;
	Relation	rel;
	ScanKeyData key[2];
	SysScanDesc scan;
	bool		found;

	GetTempNamespaceState(&temp_nsp, &temp_toast_nsp);
	if (!OidIsValid(temp_nsp))
		return false;

	rel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(NamespaceRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(temp_nsp));
	scan = systable_beginscan(rel, DependReferenceIndexId, true, NULL, 2, key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * finish_job_transaction
 *		Run now what the job left for its transaction's end, and drop what
 *		it left in the session that a transaction can drop: fire its
 *		deferred triggers, drop its cursors (a WITH HOLD cursor would run
 *		its query at commit), its temporary objects and its LISTENs.  In a
 *		transaction, as the job's user, under its settings; an error is the
 *		job's.
 */
static void
finish_job_transaction(void)
{
	ConstraintsSetStmt *all_immediate = makeNode(ConstraintsSetStmt);

	all_immediate->constraints = NIL;
	all_immediate->deferred = false;
	AfterTriggerSetState(all_immediate);

	PortalHashTableDeleteAll();
	if (temp_objects_exist())
		ResetTempTableNamespace();
	/* PostgreSQL refuses LISTEN in a background worker; costs nothing */
	Async_UnlistenAll();
}

/*
 * schedlock_exec_discard_job_state
 *		Drop what a job can leave in the session that no transaction end
 *		undoes: session-bound schedlock leases the job took (ended, in a
 *		transaction of their own, only when there are any), session-level
 *		advisory locks, prepared statements, and sequence state (currval,
 *		lastval).  Called by the worker after every run, succeeded or
 *		failed, outside a transaction: once the run's transaction has
 *		committed, so that a lock the job kept is held until its effects
 *		are visible.
 */
void
schedlock_exec_discard_job_state(void)
{
	Assert(!IsTransactionState());
	/* first: its commit still finds the identity lock to drop */
	schedlock_lock_end_session_leases();
	LockReleaseSession(USER_LOCKMETHOD);
	DropAllPreparedStatements();
	ResetSequenceCaches();
}

/*
 * schedlock_exec_atomic
 *		Run command in a subtransaction of the current transaction as user.
 *		Caller is connected to SPI.  Returns false and sets *error when the
 *		command failed (its effects are then rolled back).  Either way its
 *		settings are undone and its cursors, temporary objects and deferred
 *		triggers dealt with (see finish_job_transaction); the caller calls
 *		schedlock_exec_discard_job_state after the transaction.
 *		result_status (SCHEDLOCK_RESULT_STATUS_LEN bytes) gets the command
 *		tag of its last statement when it succeeded, else "";
 *		*notices the output it raised, or NULL (CurrentMemoryContext).
 */
bool
schedlock_exec_atomic(const char *command, Oid user, int timeout_ms,
					  ErrorData **error, char *result_status, char **notices)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	Oid			save_uid;
	int			save_sec;
	bool		ok = true;

	result_status[0] = '\0';
	*notices = NULL;
	GetUserIdAndSecContext(&save_uid, &save_sec);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);

	PG_TRY();
	{
		int			nestlevel = NewGUCNestLevel();
		int			rc;
		SPIExecuteOptions options;
		List	   *parsetrees;
		CommandTag	tag = CMDTAG_UNKNOWN;

		/* result rows are dropped as they come, never kept (SPI_tuptable) */
		memset(&options, 0, sizeof(options));
		options.dest = None_Receiver;

		SetUserIdAndSecContext(user, save_sec | SECURITY_LOCAL_USERID_CHANGE);
		schedlock_capture_begin(schedlock_max_notice_bytes);
		if (timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);

		/*
		 * The tag of the last statement, as a simple query takes it from
		 * the raw statement (SPI does not return it).
		 */
		parsetrees = pg_parse_query(command);
		if (parsetrees != NIL)
			tag = CreateCommandTag(llast_node(RawStmt, parsetrees)->stmt);
		rc = SPI_execute_extended(command, &options);
		if (rc < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("job command could not be run: %s",
							SPI_result_code_string(rc))));
		/* CREATE TABLE AS and SELECT INTO report as SELECT, as psql shows */
		if (rc == SPI_OK_SELINTO)
			tag = CMDTAG_SELECT;
		if (tag != CMDTAG_UNKNOWN)
			schedlock_format_result_status(result_status, tag, SPI_processed);
		finish_job_transaction();
		if (timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);

		/*
		 * Undo every setting the command changed, SET and SET LOCAL alike:
		 * committing the nest level would keep a SET for the session and
		 * hand a SET LOCAL on to the rest of the claim transaction.
		 */
		AtEOXact_GUC(false, nestlevel);
		SetUserIdAndSecContext(save_uid, save_sec);
		MemoryContextSwitchTo(oldcxt);
		*notices = schedlock_capture_end();

		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		if (timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(oldcxt);
		result_status[0] = '\0';
		*error = CopyErrorData();
		FlushErrorState();

		/* also restores the user and the settings */
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		*notices = schedlock_capture_end();
		CurrentResourceOwner = oldowner;
		SetUserIdAndSecContext(save_uid, save_sec);
		ok = false;
	}
	PG_END_TRY();

	return ok;
}
