/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  Every schedlock.* setting: its variable, its definition and its
 *	  default, in one place (settings.h declares them).  _PG_init
 *	  (schedlock.c) calls schedlock_define_settings once, in the
 *	  postmaster; the files of the three parts read the variables.
 *
 * IDENTIFICATION
 *	  src/base/settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "compat.h"
#include "settings.h"

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

/* schedlock.bookkeeping_lock_timeout, in ms (kept_query.c) */
int			schedlock_bookkeeping_lock_timeout = 5000;

/* schedlock.log_runs, schedlock.log_statement, schedlock.max_notice_bytes */
int			schedlock_log_runs = SCHEDLOCK_LOG_RUNS_FAILURES;
bool		schedlock_log_statement = false;
int			schedlock_max_notice_bytes = 8192;

/* schedlock.max_session_locks */
int			schedlock_max_session_locks = 1024;

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
 * schedlock_define_settings
 *		Define every schedlock.* setting and reserve the prefix.
 *		check_timezone checks schedlock.timezone (the cron engine's rule:
 *		schedlock.c passes it, so that this layer depends on no part).
 */
void
schedlock_define_settings(GucStringCheckHook check_timezone)
{
	DefineCustomStringVariable("schedlock.timezone",
							   "Time zone in which cron schedules are evaluated when a job or call names none.",
							   "Any IANA time zone name PostgreSQL accepts.",
							   &schedlock_timezone,
							   "UTC",
							   PGC_USERSET,
							   0,
							   check_timezone,
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
}

/*
 * schedlock_record_runs_parse
 *		The record_runs value named by text (all or failures); false, and
 *		*value all, when text is NULL or names none.
 */
bool
schedlock_record_runs_parse(const char *text, SchedlockRecordRuns *value)
{
	*value = SCHEDLOCK_RECORD_RUNS_ALL;
	if (text == NULL)
		return false;
	if (strcmp(text, SCHEDLOCK_RECORD_RUNS_FAILURES_NAME) == 0)
	{
		*value = SCHEDLOCK_RECORD_RUNS_FAILURES;
		return true;
	}
	return strcmp(text, SCHEDLOCK_RECORD_RUNS_ALL_NAME) == 0;
}
