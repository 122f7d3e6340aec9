/*-------------------------------------------------------------------------
 *
 * schedlock.c
 *	  Module entry point: GUC definitions and hook installation.
 *
 * schedlock must be loaded through shared_preload_libraries, because it owns
 * shared memory and background workers.  _PG_init refuses any other way of
 * loading it, defines every schedlock.* setting and reserves the prefix, and
 * installs every hook schedlock uses in all processes (shared memory,
 * ProcessUtility, ExecutorStart, ExecutorCheckPerms, object access,
 * emit_log); the hook functions live in the files of their concern.  Only
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

#include "compat.h"
#include "cron_pg.h"
#include "database_ddl.h"
#include "job_roles.h"
#include "kept_query.h"
#include "launcher.h"
#include "lock_session.h"
#include "lease_shmem.h"
#include "lock_marks.h"
#include "lock_watch.h"
#include "run_status.h"
#include "runlog.h"
#include "sched_shmem.h"
#include "schedlock.h"
#include "subxact.h"
#include "table_guard.h"

PG_MODULE_MAGIC;

/* Default time zone for cron schedules (schedlock.timezone). */
char	   *schedlock_timezone = NULL;

/* Ignored since release 1.2, kept so that configurations load. */
int			schedlock_workers = 2;

/* Job backends of one database at once (schedlock.max_workers). */
int			schedlock_max_workers = 4;

/* Job backends of one role in the cluster at once (0: no limit). */
int			schedlock_max_runs_per_role = 3;

/* Job backends of the cluster at once. */
int			schedlock_max_job_backends = 4;

/* Housekeepers of the cluster at once, apart from the job backends. */
int			schedlock_max_housekeepers = 1;

/* How long an idle job backend stays, in ms. */
int			schedlock_job_backend_idle_timeout = 30000;

/* Whether the workers run jobs at all (schedlock.enabled). */
bool		schedlock_enabled = true;

/* Minutes of run history the workers keep (schedlock.history_retention). */
int			schedlock_history_retention = 7 * 24 * 60;

/* Which ended runs schedlock.job_runs keeps (schedlock.record_runs). */
int			schedlock_record_runs = SCHEDLOCK_RECORD_RUNS_ALL;
int			schedlock_runs_per_commit = 1;
char	   *schedlock_run_id = NULL;
char	   *schedlock_scheduled_for = NULL;

static const struct config_enum_entry log_runs_options[] = {
	{"none", SCHEDLOCK_LOG_RUNS_NONE, false},
	{"failures", SCHEDLOCK_LOG_RUNS_FAILURES, false},
	{"all", SCHEDLOCK_LOG_RUNS_ALL, false},
	{NULL, 0, false}
};

static const struct config_enum_entry record_runs_options[] = {
	{SCHEDLOCK_RECORD_RUNS_ALL_NAME, SCHEDLOCK_RECORD_RUNS_ALL, false},
	{SCHEDLOCK_RECORD_RUNS_FAILURES_NAME, SCHEDLOCK_RECORD_RUNS_FAILURES, false},
	{NULL, 0, false}
};

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
void
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

	if (IsA(parsetree, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) parsetree)->extname, "schedlock") == 0)
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
 * define_run_setting
 *		A read-only setting that the job backend sets around a job's
 *		command (and only then: empty elsewhere), for the command to read.
 */
static void
define_run_setting(const char *name, const char *short_desc,
				   const char *long_desc, char **value)
{
	DefineCustomStringVariable(name, short_desc, long_desc, value, "",
							   PGC_INTERNAL,
							   GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);
}

/*
 * _PG_init
 *		Module load callback.
 */
void
_PG_init(void)
{
	schedlock_check_preloaded();

	DefineCustomStringVariable("schedlock.timezone",
							   "Time zone in which cron schedules are evaluated when a job or call names none.",
							   "Any IANA time zone name PostgreSQL accepts.",
							   &schedlock_timezone,
							   "UTC",
							   PGC_USERSET,
							   0,
							   check_schedlock_timezone,
							   NULL,
							   NULL);

	DefineCustomIntVariable("schedlock.max_job_backends",
							"Largest number of job backends and housekeepers of the whole cluster at once.",
							"Each takes one of max_worker_processes, besides the launcher's. Shared fairly by every database and role.",
							&schedlock_max_job_backends,
							4,
							1,
							MAX_BACKENDS,
							PGC_SIGHUP,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("schedlock.job_backend_idle_timeout",
							"How long a job backend waits for its role's next job before it exits.",
							NULL,
							&schedlock_job_backend_idle_timeout,
							30000,
							100,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("schedlock.bookkeeping_lock_timeout",
							"How long a statement of the scheduler's own processes waits for a lock before it gives up.",
							"The job backends' and housekeepers' statements on schedlock's tables, and the job functions in a session whose lock_timeout is longer or unset: the statement fails with 55P03, which charges no job; a job backend leaves and its queue is tried again later.",
							&schedlock_bookkeeping_lock_timeout,
							5000,
							1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("schedlock.workers",
							"Ignored: the job backends are started on demand.",
							"Kept so that configurations of release 1.1 load; see schedlock.max_job_backends.",
							&schedlock_workers,
							2,
							1,
							SCHEDLOCK_MAX_WORKERS_PER_DB,
							PGC_SIGHUP,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("schedlock.max_housekeepers",
							"Largest number of housekeepers of the cluster at once.",
							"Housekeepers (one database's housekeeping pass each) have a budget of their own, apart from schedlock.max_job_backends: they never make a job backend leave.",
							&schedlock_max_housekeepers,
							1,
							1,
							MAX_BACKENDS,
							PGC_SIGHUP,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("schedlock.max_workers",
							"Largest number of job backends of one database at once.",
							"A database's job backends are part of schedlock.max_job_backends.",
							&schedlock_max_workers,
							4,
							1,
							MAX_BACKENDS,
							PGC_SIGHUP,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("schedlock.max_runs_per_role",
							"Largest number of job backends of one role in the whole cluster at once.",
							"Each backend runs one job at a time. 0 means no limit but the others.",
							&schedlock_max_runs_per_role,
							3,
							0,
							MAX_BACKENDS,
							PGC_SIGHUP,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomBoolVariable("schedlock.enabled",
							 "Whether the job scheduler runs jobs.",
							 "When off, no job backend runs and the running ones leave; jobs that fall due meanwhile are handled by their misfire policy.",
							 &schedlock_enabled,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomIntVariable("schedlock.history_retention",
							"How long finished job runs are kept in schedlock.job_runs.",
							"0 keeps them forever.",
							&schedlock_history_retention,
							7 * 24 * 60,
							0,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MIN,
							NULL,
							NULL,
							NULL);

	DefineCustomEnumVariable("schedlock.record_runs",
							 "Which ended job runs schedlock.job_runs keeps.",
							 "all keeps every run; failures keeps failed, timed-out and lost runs only (the others are counted in the job's statistics). A job's record_runs (schedlock.alter_job) overrides it.",
							 &schedlock_record_runs,
							 SCHEDLOCK_RECORD_RUNS_ALL,
							 record_runs_options,
							 PGC_SIGHUP,
							 0,
							 NULL,
							 NULL,
							 NULL);

	define_run_setting("schedlock.run_id",
					   "The run of a job its command belongs to, while it runs; empty elsewhere.",
					   "Set by the job backend around a job's command: current_setting('schedlock.run_id') is the run's run_id in schedlock.job_runs.",
					   &schedlock_run_id);
	define_run_setting("schedlock.scheduled_for",
					   "The slot a job's command runs for, while it runs; empty elsewhere.",
					   "Set by the job backend around a job's command: current_setting('schedlock.scheduled_for')::timestamptz is the run's scheduled_for in schedlock.job_runs.",
					   &schedlock_scheduled_for);

	DefineCustomIntVariable("schedlock.runs_per_commit",
							"Largest number of atomic job runs of one role that share one commit.",
							"A job backend that finds several atomic SQL jobs due runs them one after the other, each in a subtransaction of its own, and commits them together, while less than 10 ms have passed since the first began. 1 commits each run alone.",
							&schedlock_runs_per_commit,
							1,
							1,
							SCHEDLOCK_MAX_RUNS_PER_COMMIT,
							PGC_SIGHUP,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomEnumVariable("schedlock.log_runs",
							 "Which finished job runs are logged in the server log.",
							 "none: no run; failures: failed, timed-out and lost runs, with SQLSTATE and message; all: also succeeded runs, with their duration.",
							 &schedlock_log_runs,
							 SCHEDLOCK_LOG_RUNS_FAILURES,
							 log_runs_options,
							 PGC_SUSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomBoolVariable("schedlock.log_statement",
							 "Logs the command of each SQL job run before it runs.",
							 NULL,
							 &schedlock_log_statement,
							 false,
							 PGC_SUSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomIntVariable("schedlock.max_notice_bytes",
							"Largest amount of a run's NOTICE, INFO and WARNING output kept in schedlock.job_runs.notices.",
							"The first messages are kept; the text then ends with a marker saying how much was cut. 0 turns capture off.",
							&schedlock_max_notice_bytes,
							8192,
							0,
							1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("schedlock.max_session_locks",
							"Number of session-bound leases kept in shared memory.",
							"Session-bound leases beyond it are written to schedlock.lock_state, as durable leases are. 0 keeps every lease in the table.",
							&schedlock_max_session_locks,
							1024,
							0,
							1000000,
							PGC_POSTMASTER,
							0,
							NULL,
							NULL,
							NULL);

	MarkGUCPrefixReserved("schedlock");

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
	 * pg_upgrade starts both clusters in binary-upgrade mode.  No job may
	 * run then: its transaction IDs would not be carried over to the new
	 * cluster, and nothing should run in the middle of an upgrade.
	 */
	if (!IsBinaryUpgrade)
		schedlock_register_launcher();
}
