/*-------------------------------------------------------------------------
 *
 * exec.c
 *	  Running a job's SQL command in a worker: atomically inside the
 *	  claiming transaction, or at top level in transactions of its own.
 *
 * Both ways run the command as the job's user (its owner, or run_as) with
 * SECURITY_LOCAL_USERID_CHANGE, so the command cannot SET ROLE back to the
 * worker's superuser, and under the job's timeout as statement timeout.
 * Neither throws: an error is caught, returned as ErrorData, and its
 * effects are rolled back; settings the command changed are undone.
 *
 * Atomic: the command runs through SPI in a subtransaction of the claiming
 * transaction, so its effects commit together with the run's bookkeeping or
 * roll back alone.
 *
 * Top level: each statement is parsed, planned and run through a portal
 * the way PostgreSQL runs a simple query, in a transaction of its own and
 * with isTopLevel set, so VACUUM runs and a procedure called with CALL may
 * COMMIT.
 *
 * IDENTIFICATION
 *	  src/exec.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

#include "compat.h"
#include "schedlock.h"
#include "scheduler.h"

/*
 * schedlock_exec_atomic
 *		Run command in a subtransaction of the current transaction as user.
 *		Caller is connected to SPI.  Returns false and sets *error when the
 *		command failed (its effects are then rolled back).
 */
bool
schedlock_exec_atomic(const char *command, Oid user, int timeout_ms,
					  ErrorData **error)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	Oid			save_uid;
	int			save_sec;
	bool		ok = true;

	GetUserIdAndSecContext(&save_uid, &save_sec);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);

	PG_TRY();
	{
		int			nestlevel = NewGUCNestLevel();
		int			rc;

		SetUserIdAndSecContext(user, save_sec | SECURITY_LOCAL_USERID_CHANGE);
		if (timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);
		rc = SPI_execute(command, false, 0);
		if (rc < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("job command could not be run: %s",
							SPI_result_code_string(rc))));
		if (timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		AtEOXact_GUC(true, nestlevel);
		SetUserIdAndSecContext(save_uid, save_sec);

		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		if (timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(oldcxt);
		*error = CopyErrorData();
		FlushErrorState();

		/* also restores the user and the settings */
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		SetUserIdAndSecContext(save_uid, save_sec);
		ok = false;
	}
	PG_END_TRY();

	return ok;
}

/*
 * run_statement
 *		Parse-analyse, plan and run one statement through an unnamed portal
 *		at top level, in its own transaction.  Plans live in CurrentMemoryContext,
 *		which must survive transaction ends (a procedure may commit).
 */
static void
run_statement(RawStmt *parsetree, const char *command, MemoryContext cxt)
{
	bool		snapshot_set = false;
	List	   *querytrees;
	List	   *plantrees;
	Portal		portal;
	DestReceiver *receiver;
	int16		format = 0;
	QueryCompletion qc;
	CommandTag	tag = CreateCommandTag(parsetree->stmt);

	StartTransactionCommand();
	MemoryContextSwitchTo(cxt);
	if (analyze_requires_snapshot(parsetree))
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		snapshot_set = true;
	}
	querytrees = pg_analyze_and_rewrite_fixedparams(parsetree, command,
													NULL, 0, NULL);
	plantrees = pg_plan_queries(querytrees, command, CURSOR_OPT_PARALLEL_OK,
								NULL);
	if (snapshot_set)
		PopActiveSnapshot();
	CHECK_FOR_INTERRUPTS();

	portal = CreatePortal("", true, true);
	portal->visible = false;
	PortalDefineQuery(portal, NULL, command, tag, plantrees, NULL);
	PortalStart(portal, NULL, 0, InvalidSnapshot);
	PortalSetResultFormat(portal, 1, &format);
	receiver = CreateDestReceiver(DestNone);
	InitializeQueryCompletion(&qc);
	(void) schedlock_portal_run(portal, FETCH_ALL, true, receiver, receiver, &qc);
	receiver->rDestroy(receiver);
	PortalDrop(portal, false);

	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
}

/*
 * schedlock_exec_toplevel
 *		Run command statement by statement, each at top level in a
 *		transaction of its own, as user.  Must be called outside a
 *		transaction; CurrentMemoryContext must not be a transaction context.
 *		Returns false and sets *error when a statement failed; the
 *		statements before it stay committed.  Settings changed by the
 *		command are reset (RESET ALL) afterwards.
 */
bool
schedlock_exec_toplevel(const char *command, Oid user, int timeout_ms,
						ErrorData **error)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			save_uid;
	int			save_sec;
	bool		ok = true;

	GetUserIdAndSecContext(&save_uid, &save_sec);
	PG_TRY();
	{
		List	   *parsetrees;
		ListCell   *lc;

		SetUserIdAndSecContext(user, save_sec | SECURITY_LOCAL_USERID_CHANGE);
		if (timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);
		parsetrees = pg_parse_query(command);
		foreach(lc, parsetrees)
			run_statement(lfirst_node(RawStmt, lc), command, cxt);
		if (timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		SetUserIdAndSecContext(save_uid, save_sec);
	}
	PG_CATCH();
	{
		if (timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(cxt);
		*error = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(cxt);
		SetUserIdAndSecContext(save_uid, save_sec);
		ok = false;
	}
	PG_END_TRY();

	/* undo SET commands of the job, so that the next job starts clean */
	StartTransactionCommand();
	ResetAllOptions();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);

	return ok;
}
