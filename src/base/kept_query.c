/*-------------------------------------------------------------------------
 *
 * kept_query.c
 *	  Prepared statements of the scheduler: planned once per backend,
 *	  kept across transactions, and always executed with a generic plan.
 *
 * How it works, at length: docs/internals.md, section
 * "The bookkeeping's statements".
 *
 * IDENTIFICATION
 *	  src/base/kept_query.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "kept_query.h"
#include "settings.h"
#include "subxact.h"

/*
 * The lock waits of the scheduler's own statements.  In a job backend or a
 * housekeeper, schedlock's statements wait for a lock at most
 * schedlock.bookkeeping_lock_timeout, so that a lock another session holds
 * on schedlock's tables or on a job's row makes the statement fail (55P03,
 * which charges no job: quarantine.c) instead of waiting without end; a
 * job's own command waits as its role's lock_timeout says.  The bound is
 * PostgreSQL's lock_timeout variable itself, set while the scheduler's
 * statements run and put back to the session's value before a command
 * runs (schedlock_bookkeeping_locks_end): not through the GUC machinery,
 * because a non-atomic command commits transactions of its own, which
 * would undo a GUC nest level opened around it.  The GUC machinery writes
 * the variable only when the command sets or resets lock_timeout, at
 * times when it holds the session's value.  bounded tells whether the
 * variable holds the bound now (it stays so through an error, and the
 * session's value is kept in session_lock_timeout).
 */
static bool bounded = false;
static int	session_lock_timeout = 0;

/*
 * schedlock_bookkeeping_locks_begin
 *		From now on, in a background process, bound lock waits by
 *		schedlock.bookkeeping_lock_timeout (see above).  Idempotent.
 */
void
schedlock_bookkeeping_locks_begin(void)
{
	if (!schedlock_am_background_worker())
		return;
	if (!bounded)
	{
		session_lock_timeout = LockTimeout;
		bounded = true;
	}
	LockTimeout = schedlock_bookkeeping_lock_timeout;
}

/*
 * schedlock_bookkeeping_locks_end
 *		Before a job's command: lock waits as the session says again.
 */
void
schedlock_bookkeeping_locks_end(void)
{
	if (!bounded)
		return;
	LockTimeout = session_lock_timeout;
	bounded = false;
}

/*
 * schedlock_bookkeeping_tx_begin
 *		In a background process of the scheduler, start a transaction for
 *		its own statements: read-write and read committed whatever the
 *		session's defaults (default_transaction_read_only, SET SESSION
 *		CHARACTERISTICS), set before its first snapshot as SET TRANSACTION
 *		would; connected to SPI, with an active snapshot, and activity shown
 *		in pg_stat_activity.  The caller switches to the role its statements
 *		run as.
 */
void
schedlock_bookkeeping_tx_begin(const char *activity)
{
	schedlock_bookkeeping_locks_begin();
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	XactReadOnly = false;
	XactIsoLevel = XACT_READ_COMMITTED;
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/*
 * schedlock_trusted_path_begin
 *		Open a GUC nest level in which search_path is "pg_catalog, pg_temp",
 *		whatever the session, role or database set.  Every statement that
 *		schedlock itself runs (the workers' bookkeeping, and the SQL-callable
 *		functions while they act as the extension owner) runs inside one, so
 *		that its functions, operators and types resolve only to pg_catalog
 *		and to the objects it names with their schema; objects in pg_temp are
 *		never found for functions or operators.  Returns the level to hand to
 *		schedlock_trusted_path_end.  An error in between is undone by the
 *		abort of the (sub)transaction.
 */
int
schedlock_trusted_path_begin(void)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	return nestlevel;
}

/*
 * schedlock_trusted_path_end
 *		Restore the settings saved by schedlock_trusted_path_begin (and any
 *		other setting changed at that nest level or deeper).
 */
void
schedlock_trusted_path_end(int nestlevel)
{
	AtEOXact_GUC(false, nestlevel);
}

/*
 * execute_apart
 *		SPI_execute_plan of a statement that writes, in a subtransaction of
 *		its own (see the file header).  Its error rolls the subtransaction
 *		back and goes on to the caller.
 */
static int
execute_apart(SPIPlanPtr plan, Datum *values, const char *nulls, long count)
{
	SchedlockSubxact sx;
	volatile int rc = 0;

	schedlock_subxact_begin(&sx);
	PG_TRY();
	{
		rc = SPI_execute_plan(plan, values, nulls, false, count);
		schedlock_subxact_end(&sx, true);
	}
	PG_CATCH();
	{
		ReThrowError(schedlock_subxact_abort(&sx));
	}
	PG_END_TRY();
	return rc;
}

/*
 * schedlock_query_run
 *		Execute the statement q with the given parameters, preparing and
 *		keeping its plan first if this backend has not yet.  The statement
 *		is prepared and run with the trusted search_path (so its plan is
 *		made, and kept valid, for that path only), enable_seqscan off and
 *		jit off (in a background process of the scheduler, its lock waits
 *		are bounded: see schedlock_bookkeeping_locks_begin).
 *		Caller is connected to SPI; returns what SPI_execute_plan returns.
 */
int
schedlock_query_run(SchedlockQuery *q, Datum *values, const char *nulls,
					bool read_only, long count)
{
	int			nestlevel;
	int			rc;

	/* undone by schedlock_trusted_path_end, or by the abort */
	nestlevel = schedlock_trusted_path_begin();
	(void) set_config_option("enable_seqscan", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("jit", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (q->plan == NULL)
	{
		SPIPlanPtr	plan;

		plan = SPI_prepare_cursor(q->sql, q->nargs, q->argtypes,
								  CURSOR_OPT_GENERIC_PLAN);
		if (plan == NULL)
			elog(ERROR, "could not prepare \"%s\": %s",
				 q->sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "could not keep the plan of \"%s\"", q->sql);
		q->plan = plan;
	}
	if (!read_only && GetCurrentTransactionNestLevel() == 1 &&
		schedlock_subxact_rolled_back())
		rc = execute_apart(q->plan, values, nulls, count);
	else
		rc = SPI_execute_plan(q->plan, values, nulls, read_only, count);
	schedlock_trusted_path_end(nestlevel);
	return rc;
}
