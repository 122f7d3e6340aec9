/*-------------------------------------------------------------------------
 *
 * schedlock.c
 *	  Module entry point: the settings defined, the hooks installed.
 *
 * schedlock must be loaded through shared_preload_libraries, because it owns
 * shared memory and background workers.  _PG_init refuses any other way of
 * loading it, defines every schedlock.* setting and reserves the prefix
 * (src/base/settings.c), and installs every hook schedlock uses in all
 * processes (shared memory, ProcessUtility, ExecutorStart,
 * ExecutorCheckPerms, object access, emit_log); the hook functions live in
 * the files of their concern.  Only
 * a job backend adds one more for itself, at its start (worker.c: the
 * error that ends a start-up).
 *
 * IDENTIFICATION
 *	  src/schedlock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgtime.h"
#include "postmaster/bgworker.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "base/kept_query.h"
#include "base/settings.h"
#include "base/subxact.h"
#include "base/table_guard.h"
#include "cron/cron_pg.h"
#include "lock/lease_shmem.h"
#include "lock/lock_marks.h"
#include "lock/lock_session.h"
#include "lock/lock_watch.h"
#include "sched/database_ddl.h"
#include "sched/job_roles.h"
#include "sched/launcher.h"
#include "sched/run_status.h"
#include "sched/runlog.h"
#include "sched/sched_shmem.h"

PG_MODULE_MAGIC;


static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

PGDLLEXPORT void _PG_init(void);

/*
 * check_schedlock_timezone
 *		GUC check hook: accept only time zones PostgreSQL itself accepts for
 *		its TimeZone setting (IANA names, abbreviations are not enough).
 */
static bool
check_schedlock_timezone(char **newval, void **extra, GucSource source)
{
	pg_tz	   *tz;

	if (*newval == NULL || (*newval)[0] == '\0')
	{
		GUC_check_errdetail("The time zone must not be empty.");
		return false;
	}
	tz = pg_tzset(*newval);
	if (tz == NULL)
	{
		GUC_check_errdetail("Time zone \"%s\" is not known.", *newval);
		return false;
	}
	if (schedlock_cron_timezone_problem(tz) != NULL)
	{
		GUC_check_errdetail("%s", schedlock_cron_timezone_problem(tz));
		return false;
	}
	return true;
}

/*
 * schedlock_check_preloaded
 *		Raise an error unless we are being loaded by shared_preload_libraries.
 */
static void
schedlock_check_preloaded(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("schedlock must be loaded via shared_preload_libraries"),
				 errhint("Add schedlock to the shared_preload_libraries setting in postgresql.conf and restart the server.")));
}

/*
 * sl_shmem_request
 *		shmem_request_hook: reserve the scheduler's shared memory.
 */
static void
sl_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	schedlock_shmem_request();
	schedlock_lease_shmem_request();
	schedlock_marks_shmem_request();
}

/*
 * sl_shmem_startup
 *		shmem_startup_hook: create or attach to the scheduler's state.
 */
static void
sl_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	schedlock_shmem_startup();
	schedlock_lease_shmem_startup();
	schedlock_marks_shmem_startup();
}

/*
 * call_prev_utility
 *		Hand a utility statement on to the next hook or to PostgreSQL.
 */
static void
call_prev_utility(PlannedStmt *pstmt, const char *queryString,
				  bool readOnlyTree, ProcessUtilityContext context,
				  ParamListInfo params, QueryEnvironment *queryEnv,
				  DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/*
 * sl_process_utility
 *		ProcessUtility_hook: tell the scheduler about statements that
 *		change where jobs run.
 *
 * CREATE EXTENSION schedlock and CREATE DATABASE make the launcher look
 * for the extension again once they commit.  DROP DATABASE, CREATE
 * DATABASE ... TEMPLATE, ALTER DATABASE ... RENAME and DROP EXTENSION
 * schedlock first have the database's workers step aside, so that the
 * statement neither fails with "database is being accessed by other users"
 * nor deadlocks with a worker; they come back when the statement fails or
 * its transaction ends.  Workers are stopped only for a statement that
 * PostgreSQL will let the current user run (database_ddl.c checks the same
 * rights first); any other runs with every worker in place and fails as
 * usual.  DROP OWNED and REASSIGN OWNED also act on the jobs of the roles
 * (job_roles.c), after PostgreSQL has checked the caller's rights.  Once DROP
 * DATABASE has succeeded, what lock_marks.c and lease_shmem.c keep for the
 * database goes.
 */
static void
sl_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			dboid;
	Oid			dropped = InvalidOid;

	/* PostgreSQL checks the caller's rights and does its part first */
	if (IsA(parsetree, DropOwnedStmt) || IsA(parsetree, ReassignOwnedStmt))
	{
		call_prev_utility(pstmt, queryString, readOnlyTree, context,
						  params, queryEnv, dest, qc);
		schedlock_owned_jobs(parsetree);
		return;
	}

	/* LOCK TABLE, REINDEX, CLUSTER of schedlock's tables (table_guard.c) */
	schedlock_table_guard_utility(parsetree);

	/* COPY ... FROM into schedlock.lock_state (lock_watch.c) */
	if (IsA(parsetree, CopyStmt))
		schedlock_lock_watch_copy(parsetree);

	/* the tables may be new, or newer: the launcher looks again */
	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, "schedlock") == 0)
		schedlock_probe_database_at_commit();
	else if (IsA(parsetree, AlterExtensionStmt) &&
			 strcmp(((AlterExtensionStmt *) parsetree)->extname, "schedlock") == 0)
		schedlock_probe_database_at_commit();
	else if (IsA(parsetree, CreatedbStmt))
		schedlock_probe_all_at_commit();

	if (IsA(parsetree, DropdbStmt))
		dropped = get_database_oid(((DropdbStmt *) parsetree)->dbname, true);

	dboid = schedlock_step_aside_for(parsetree,
									 context == PROCESS_UTILITY_TOPLEVEL);
	if (OidIsValid(dboid))
	{
		/* after DROP EXTENSION the launcher finds the extension gone */
		if (IsA(parsetree, DropStmt))
			schedlock_probe_database_at_commit();
		schedlock_stop_database_workers(dboid);
		PG_TRY();
		{
			call_prev_utility(pstmt, queryString, readOnlyTree, context,
							  params, queryEnv, dest, qc);
		}
		PG_CATCH();
		{
			schedlock_database_drop_done(dboid);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	else
		call_prev_utility(pstmt, queryString, readOnlyTree, context,
						  params, queryEnv, dest, qc);

	/* the name may have passed to another database before the drop */
	if (OidIsValid(dropped))
	{
		CommandCounterIncrement();
		if (!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dropped)))
		{
			schedlock_lease_shmem_drop_database(dropped);
			schedlock_marks_drop_database(dropped);
		}
	}
}

/*
 * _PG_init
 *		Module load callback.
 */
void
_PG_init(void)
{
	schedlock_check_preloaded();

	schedlock_define_settings(check_schedlock_timezone);

	schedlock_lock_init();
	schedlock_lock_watch_init();
	schedlock_subxact_init();

	if (max_worker_processes < 1 + schedlock_max_job_backends)
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("max_worker_processes (%d) is too low for the schedlock job scheduler",
						max_worker_processes),
				 errdetail("The scheduler needs one launcher process plus up to schedlock.max_job_backends (%d) job backends.",
						   schedlock_max_job_backends),
				 errhint("Raise max_worker_processes and restart the server, or lower schedlock.max_job_backends.")));

	/* every hook schedlock installs, each calling the one it replaced */
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sl_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sl_shmem_startup;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = sl_process_utility;
	/* writes to the lock table made by SQL (lock_watch.c) */
	schedlock_prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = schedlock_lock_watch_executor_start;
	/* writes and row locks on schedlock's tables (table_guard.c) */
	schedlock_prev_ExecutorCheckPerms = ExecutorCheckPerms_hook;
	ExecutorCheckPerms_hook = schedlock_table_guard_check_perms;
	/* DROP ROLE, DROP OWNED, REASSIGN OWNED and jobs' roles (job_roles.c) */
	schedlock_prev_object_access_hook = object_access_hook;
	object_access_hook = schedlock_roles_object_access;
	/* a run's NOTICE output and the log lines per run (runlog.c) */
	schedlock_prev_emit_log_hook = emit_log_hook;
	emit_log_hook = schedlock_runlog_emit_log;

	schedlock_xact_init();

	/*
	 * pg_upgrade starts both clusters in binary-upgrade mode.  No job may run
	 * then: its transaction IDs would not be carried over to the new cluster,
	 * and nothing should run in the middle of an upgrade.
	 */
	if (!IsBinaryUpgrade)
		schedlock_register_launcher();
}
