/*-------------------------------------------------------------------------
 *
 * quarantine.c
 *	  A job backend's recovery from errors in its own bookkeeping, and the
 *	  quarantine of jobs that keep breaking it.
 *
 * A job's command runs under its own error handling (run_command.c): its errors
 * fail the run, nothing more.  Everything else the job backend does for a
 * job -- claiming it, working out its next slot, recording its run and
 * outcome, scheduling its retry -- runs in the backend's own transactions,
 * and an error there (a row a superuser wrote by hand, a trigger on the
 * scheduler's tables, a bug) must not end the backend: it would take the
 * same job first again when started anew, and one job would stop every job
 * of its role.
 *
 * So the backend's main loop catches such an error the way PostgreSQL's
 * own processes do (PostgresMain, the autovacuum launcher):
 * schedlock_worker_recover logs it, aborts the transaction (which releases
 * locks, buffer pins, the SPI stack, snapshots, the GUC nest levels and
 * the user id the backend had switched to), and goes back to the loop.
 * The job being handled when the error came (schedlock_dispatch_blame, set
 * by the claim) is charged with it, in a transaction of its own, as the
 * extension owner:
 *	- a run of it this backend left "running" (a non-atomic job whose
 *	  outcome could not be recorded) is closed as failed;
 *	- its count of dispatch errors in a row (jobs.dispatch_errors) goes up,
 *	  or starts again at 1 when a run of the job was recorded since its
 *	  last one (jobs.dispatch_error_at; schedlock_rule_dispatch_breaks,
 *	  rules.c): a dispatch that commits always records a run, so the
 *	  claim needs no column of its own;
 *	- the job is held back (next_run_at) for 1 s, then 2 s, so that the
 *	  loop goes on with the other jobs instead of taking it again at once
 *	  (schedlock_rule_dispatch_hold, rules.c);
 *	- at SCHEDLOCK_QUARANTINE_BREAKS errors in a row the job is quarantined:
 *	  disabled, with the reason in jobs.quarantine_reason, which
 *	  schedlock.job_status shows as paused_reason.  alter_job(...,
 *	  enabled => true), or schedule_job replacing the job, releases it.
 * Until ALTER EXTENSION schedlock UPDATE has added those columns, the
 * error is logged and nothing is charged.
 *
 * Errors that say nothing about the job (a cancel, a deadlock or
 * serialization failure, lack of memory or disk, an I/O error, a unique
 * violation: see schedlock_error_is_transient) are not charged to it.
 * When no job can be charged, or charging it fails too, the backend waits
 * a second before it goes on, so that an error that repeats does not keep
 * a core busy.  A housekeeper that meets an error exits, and the launcher starts
 * the database's housekeeping again a little later.
 *
 * IDENTIFICATION
 *	  src/sched/quarantine.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "base/owner.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "base/kept_query.h"
#include "quarantine.h"
#include "rules.h"
#include "sched/store/jobstore.h"

/* How long the worker waits after an error it could not charge to a job. */
#define RECOVER_PAUSE_MS	1000

/* The job the worker is handling now, or 0 (see schedlock_dispatch_blame). */
static int64 blamed_job = 0;

/*
 * schedlock_dispatch_blame
 *		Name the job the worker's bookkeeping is about from now on (0: none):
 *		an error before the next call is charged to it.
 */
void
schedlock_dispatch_blame(int64 job_id)
{
	blamed_job = job_id;
}

/*
 * schedlock_error_is_transient
 *		Whether an error says nothing about the job that was being handled:
 *		operator intervention (cancel), transaction rollback (deadlock,
 *		serialization), lock not available, insufficient resources and
 *		system (I/O) errors, and unique violations.  A unique violation on
 *		the scheduler's tables goes away when tried again: after pg_upgrade
 *		the run id sequence can lag behind the runs the old server's
 *		workers recorded while pg_upgrade dumped it (each failed INSERT
 *		still takes a number), and a conflicting slot is a race.
 */
bool
schedlock_error_is_transient(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_OPERATOR_INTERVENTION:
		case ERRCODE_TRANSACTION_ROLLBACK:
		case ERRCODE_INSUFFICIENT_RESOURCES:
		case ERRCODE_SYSTEM_ERROR:
			return true;
		default:
			return sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
				sqlerrcode == ERRCODE_UNIQUE_VIOLATION;
	}
}

/*
 * charge_job
 *		In a transaction of its own: close the runs this worker left
 *		running as failed, and count the error against job_id (when it is
 *		not 0), holding the job back or quarantining it.  Errors propagate.
 */
static void
charge_job(int64 job_id, ErrorData *error)
{
	TimestampTz now = GetCurrentTimestamp();

	/* unpack_sql_state returns a static buffer that ereport reuses */
	const char *state = pstrdup(unpack_sql_state(error->sqlerrcode));
	const char *message = error->message ? error->message : "unknown error";
	Oid			save_uid;
	int			save_sec;
	int			nestlevel;

	/* read-write, whatever the role's session defaults */
	schedlock_bookkeeping_tx_begin("schedlock: recording a dispatch error");
	/* a job backend's session user is the job's role: write as the owner */
	schedlock_begin_as_owner(&save_uid, &save_sec, &nestlevel);

	schedlock_fail_dispatch_runs(now, state,
								 psprintf("the worker could not record this run: %s", message));

	if (job_id != 0)
	{
		int			breaks;
		bool		held;
		TimestampTz hold_until;
		DispatchErrors de;
		char	   *role_name;
		char	   *dbname = get_database_name(MyDatabaseId);

		/*
		 * Another worker may have claimed the job between this one's abort
		 * and this transaction, and quarantined it meanwhile: it stays as it
		 * was quarantined.
		 */
		if (schedlock_read_dispatch_errors(job_id, &de))
		{
			char	   *job_name = de.job_name;

			role_name = de.role_name;
			breaks = schedlock_rule_dispatch_breaks(de.run_since, de.errors);
			held = schedlock_rule_dispatch_hold(breaks, now, de.has_next_run_at,
												de.next_run_at, &hold_until);
			ereport(LOG,
					(errmsg("schedlock job \"%s\" of role \"%s\" in database \"%s\" broke dispatch (SQLSTATE %s), %d of %d times in a row",
							job_name, role_name ? role_name : "?",
							dbname ? dbname : "?", state, breaks,
							SCHEDLOCK_QUARANTINE_BREAKS)));
			/* held until then while enabled; quarantined, disabled */
			schedlock_save_dispatch_error(job_id, breaks, now,
										  held && de.enabled, hold_until,
										  held ? NULL :
										  psprintf("quarantined: dispatch of the job failed %d times in a row; last error %s: %s. schedlock.alter_job(..., enabled => true) releases it.",
												   breaks, state, message));
			if (!held)
				ereport(WARNING,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("schedlock job \"%s\" of role \"%s\" in database \"%s\" quarantined: its dispatch failed %d times in a row",
								job_name, role_name ? role_name : "?",
								dbname ? dbname : "?", breaks),
						 errdetail("Last error (SQLSTATE %s): %s", state, message),
						 errhint("Fix the cause, then enable the job again with schedlock.alter_job(job_name => %s, enabled => true).",
								 quote_literal_cstr(job_name))));
		}
	}

	schedlock_end_as_owner(save_uid, save_sec, nestlevel);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/*
 * schedlock_worker_recover
 *		Called by a dispatch worker's main loop when an error has thrown it
 *		back there (from its sigsetjmp point, with the error still being
 *		handled): log the error, abort the transaction and clean up as
 *		PostgresMain does, then charge the error to the job that was being
 *		handled (see the file header).  Leaves CurrentMemoryContext at cxt,
 *		the worker's long-lived context.  Returns the error's SQLSTATE.
 */
int
schedlock_worker_recover(MemoryContext cxt)
{
	ErrorData  *error;
	int64		job_id = blamed_job;
	volatile bool pause = true;

	/* as PostgresMain's error recovery */
	error_context_stack = NULL;
	HOLD_INTERRUPTS();
	disable_all_timeouts(false);
	QueryCancelPending = false;
	MemoryContextSwitchTo(cxt);
	error = CopyErrorData();
	EmitErrorReport();
	AbortCurrentTransaction();
	MemoryContextSwitchTo(cxt);
	FlushErrorState();
	RESUME_INTERRUPTS();

	blamed_job = 0;
	if (schedlock_error_is_transient(error->sqlerrcode))
		job_id = 0;

	PG_TRY();
	{
		charge_job(job_id, error);
		pause = (job_id == 0);
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RESUME_INTERRUPTS();
		ereport(LOG,
				(errmsg("schedlock could not record the dispatch error above")));
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	pgstat_report_activity(STATE_IDLE, NULL);

	/* a lock it could not get: the caller leaves (see worker.c) */
	if (pause && error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 RECOVER_PAUSE_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	return error->sqlerrcode;
}
