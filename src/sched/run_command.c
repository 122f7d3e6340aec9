/*-------------------------------------------------------------------------
 *
 * run_command.c
 *	  Running a job's SQL command in its job backend: a process connected
 *	  as the job's role (worker.c), so the command runs with that role as
 *	  session and current user, as after a login.
 *
 * Atomic: the command runs through SPI in a subtransaction of the
 * transaction that claimed the run, so its effects commit together with
 * the run's bookkeeping or roll back alone; a command of one query runs
 * through the plan the backend keeps for it (command_plans.c).  Its deferred triggers fire
 * before the subtransaction ends (SET CONSTRAINTS ALL IMMEDIATE), so that
 * their errors fail the run; what it re-defers, and its ON COMMIT actions,
 * run at the claim's commit, which happens as the job's role: the
 * bookkeeping switches to the extension owner only around its own
 * statements (dispatch_run.c).
 *
 * Non-atomic: the statements run one by one at top level, each in a
 * transaction of its own unless the command manages its own, the way a
 * simple-query client's statements run (VACUUM, CALL of a procedure that
 * COMMITs, CREATE INDEX CONCURRENTLY).
 *
 * Either way the job's timeout bounds the whole command as its statement
 * timeout; a job without one is bounded by the statement_timeout a login
 * of its role in its database gets (postgresql.conf, ALTER ROLE / ALTER
 * DATABASE ... SET).  Result rows go to a receiver that drops them, and
 * what the command raises below ERROR (NOTICE, INFO, WARNING) is captured
 * for the run's record (runlog.c).  The functions here do not throw: an
 * error is caught and returned as ErrorData.
 *
 * The backend is the role's own, shared by nothing but later jobs of the
 * same role in the same database, like a session of a connection pool.
 * What a job leaves there (temporary objects, prepared statements,
 * advisory locks, extension state such as dblink connections) reaches only
 * those; no other role's SQL, and no SQL with raised rights, ever runs in
 * it.  Two things are still put back after every run, because they would
 * change the bookkeeping or a promise schedlock makes: the settings the
 * job changed (RESET ALL after a non-atomic run; the atomic command's
 * settings end with its GUC nest level), and the session-bound leases it
 * took, which end with the run (schedlock_exec_after_run).
 *
 * A job's search_path is its own, fixed when it was scheduled and stored
 * with it (schedlock_exec_set_search_path sets it as a session setting
 * before the run), so that settings of the database or of another role
 * cannot change what an unqualified name in the job means.
 *
 * IDENTIFICATION
 *	  src/sched/run_command.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/analyze.h"
#include "pgstat.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

#include "base/compat.h"
#include "base/settings.h"
#include "base/subxact.h"
#include "command_plans.h"
#include "lock/lock.h"
#include "run_command.h"
#include "runlog.h"

/*
 * effective_timeout
 *		The job's timeout in ms, or, for a job without one, the
 *		statement_timeout of the session (its role's and database's login
 *		value: a job's own SET is undone after its run).  0: none.
 */
static int
effective_timeout(int timeout_ms)
{
	return timeout_ms > 0 ? timeout_ms : StatementTimeout;
}

/*
 * schedlock_exec_set_search_path
 *		Make the job's search_path the session's (as SET search_path would),
 *		unless it is NULL (a job of release 1.1 tables, before ALTER
 *		EXTENSION UPDATE: the login's).  In a transaction, at its top GUC
 *		nest level, as the job's role; it lasts past the commit, so that
 *		what the job leaves for its commit resolves names the same way.
 */
void
schedlock_exec_set_search_path(const char *search_path)
{
	if (search_path == NULL)
		return;
	if (strcmp(namespace_search_path, search_path) == 0)
		return;
	(void) set_config_option("search_path", search_path, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
}

/*
 * schedlock_exec_after_run
 *		After every run, succeeded or failed, outside a transaction, once
 *		the run's transaction has committed: end the session-bound leases
 *		the job took (in a transaction of their own, only when there are
 *		any) and, after a non-atomic run (toplevel), undo the settings it
 *		changed for the session (an atomic command's end with its GUC nest
 *		level).
 */
void
schedlock_exec_after_run(bool toplevel)
{
	Assert(!IsTransactionState());
	schedlock_lock_end_session_leases();
	if (toplevel)
		ResetAllOptions();
}

/*
 * schedlock_exec_atomic
 *		Run command in a subtransaction of the current transaction as the
 *		current user, which must be the session's (the job's role).  Caller
 *		is connected to SPI.  Returns false and sets *error when the command
 *		failed (its effects are then rolled back).  Its settings end with
 *		the subtransaction; its deferred triggers have fired.
 *		result_status (SCHEDLOCK_RESULT_STATUS_LEN bytes) gets the command
 *		tag of its last statement when it succeeded, else "";
 *		*notices the output it raised, or NULL (CurrentMemoryContext).
 */
bool
schedlock_exec_atomic(const char *command, int timeout_ms, ErrorData **error,
					  char *result_status, char **notices)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	SchedlockSubxact sx;
	int			timeout = effective_timeout(timeout_ms);
	bool		ok = true;

	Assert(GetUserId() == GetSessionUserId());
	result_status[0] = '\0';
	*notices = NULL;
	schedlock_subxact_begin(&sx);

	PG_TRY();
	{
		int			nestlevel = NewGUCNestLevel();
		int			rc;
		SPIExecuteOptions options;
		SPIPlanPtr	plan;
		CommandTag	tag = CMDTAG_UNKNOWN;
		ConstraintsSetStmt *all_immediate = makeNode(ConstraintsSetStmt);

		/* result rows are dropped as they come, never kept (SPI_tuptable) */
		memset(&options, 0, sizeof(options));
		options.dest = None_Receiver;

		schedlock_capture_begin(schedlock_max_notice_bytes);
		if (timeout > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, timeout);

		/*
		 * Through the plan this backend keeps for the command, if it is one
		 * statement that has a plan; else from its text.  Either way the tag
		 * of the last statement, as a simple query takes it from the raw
		 * statement (SPI does not return it).
		 */
		plan = schedlock_command_plan(command, &tag);
		if (plan != NULL)
			rc = SPI_execute_plan_extended(plan, &options);
		else
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

		/* the job's deferred triggers: their errors are the run's */
		all_immediate->constraints = NIL;
		all_immediate->deferred = false;
		AfterTriggerSetState(all_immediate);

		if (timeout > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);

		/*
		 * Undo every setting the command changed, SET and SET LOCAL alike:
		 * committing the nest level would keep a SET for the session and hand
		 * a SET LOCAL on to the run's bookkeeping.
		 */
		AtEOXact_GUC(false, nestlevel);
		MemoryContextSwitchTo(oldcxt);
		*notices = schedlock_capture_end();

		schedlock_subxact_end(&sx, true);
	}
	PG_CATCH();
	{
		if (timeout > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		result_status[0] = '\0';
		/* the rollback also restores the settings */
		*error = schedlock_subxact_abort(&sx);
		*notices = schedlock_capture_end();
		ok = false;
	}
	PG_END_TRY();

	return ok;
}

/*
 * run_statement
 *		Parse-analyse, plan and run one statement through an unnamed portal
 *		at top level, in a transaction of its own started now (so that its
 *		now() is the statement's start), as a simple query would run.  Plans
 *		live in cxt, which survives transaction ends (a procedure may
 *		commit).  Result rows are dropped.  The statement's command tag,
 *		as psql would print it, goes to result_status.
 */
static void
run_statement(RawStmt *parsetree, const char *command, MemoryContext cxt,
			  char *result_status)
{
	bool		snapshot_set = false;
	List	   *querytrees;
	List	   *plantrees;
	Portal		portal;
	DestReceiver *receiver;
	int16		format = 0;
	QueryCompletion qc;
	CommandTag	tag = CreateCommandTag(parsetree->stmt);

	SetCurrentStatementStartTimestamp();
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
	if (qc.commandTag != CMDTAG_UNKNOWN)
		schedlock_format_result_status(result_status, qc.commandTag,
									   qc.nprocessed);
	PortalDrop(portal, false);

	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	pgstat_report_stat(false);
}

/*
 * schedlock_exec_toplevel
 *		Run command's statements at top level as the session's role (see
 *		run_statement).  Called outside a transaction.  Returns false and
 *		sets *error (in CurrentMemoryContext) when a statement failed; the
 *		statements before it stay committed.  result_status and *notices as
 *		for schedlock_exec_atomic.
 */
bool
schedlock_exec_toplevel(const char *command, int timeout_ms,
						ErrorData **error, char *result_status,
						char **notices)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	int			timeout = effective_timeout(timeout_ms);
	bool		ok = true;

	Assert(!IsTransactionState());
	Assert(GetUserId() == GetSessionUserId());
	result_status[0] = '\0';
	*notices = NULL;
	cxt = AllocSetContextCreate(oldcxt, "schedlock job command",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		List	   *parsetrees;
		ListCell   *lc;

		schedlock_capture_begin(schedlock_max_notice_bytes);
		if (timeout > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, timeout);
		parsetrees = pg_parse_query(command);
		foreach(lc, parsetrees)
			run_statement(lfirst_node(RawStmt, lc), command, cxt,
						  result_status);
		if (timeout > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(oldcxt);
		*notices = schedlock_capture_end();
	}
	PG_CATCH();
	{
		if (timeout > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(oldcxt);
		*error = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(oldcxt);
		result_status[0] = '\0';
		*notices = schedlock_capture_end();
		ok = false;
	}
	PG_END_TRY();

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return ok;
}
