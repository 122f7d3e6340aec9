/*-------------------------------------------------------------------------
 *
 * jobbackend.c
 *	  Running a non-atomic job in a backend of its own: a dynamic
 *	  background worker connected to the database as the job's role.
 *
 * A non-atomic job's statements run at top level, and some of them start
 * and commit transactions themselves (VACUUM of several relations, CALL of
 * a procedure that COMMITs, CREATE INDEX CONCURRENTLY).  Run in the
 * dispatch worker, under a user switched in with
 * SECURITY_LOCAL_USERID_CHANGE, those transactions would start inside a
 * security context, which PostgreSQL does not allow (xact.c asserts
 * against it).  So the dispatch worker starts, per run, a dynamic
 * background worker ("schedlock job") that connects with
 * BackgroundWorkerInitializeConnectionByOid(database, job role): the job's
 * role is its session and current user, as after a login, so there is no
 * superuser to SET ROLE or SET SESSION AUTHORIZATION back to.  It inherits
 * nothing of the dispatch worker's session: settings, temporary objects,
 * locks and prepared statements of the job end with its process.
 *
 * The job backend runs the statements one by one, each in a transaction
 * of its own unless the command manages its own, the way a simple-query
 * client's statements run; the job's timeout is its statement_timeout for
 * the whole command.  It reports success, or the error's SQLSTATE,
 * message, detail and hint, the command tag of its last statement and the
 * output its statements raised (runlog.c), in a dynamic shared memory segment
 * (JobBackendShared) that the dispatch worker created and handed over by
 * handle; the dispatch worker records the outcome.  An error that ends the
 * job backend itself (FATAL: it could not connect as the job's role, say
 * "too many connections for role" under the role's CONNECTION LIMIT, or it
 * was terminated) is reported the same way, by an emit_log_hook, as the
 * server logs it.
 *
 * The dispatch worker waits for the job backend to end.  Meanwhile a
 * cancel of the dispatch worker (pg_cancel_backend of the pid shown for
 * the run) is forwarded to the job backend, and a dispatch worker that is
 * terminated terminates the job backend first (the run is then closed as
 * lost by the other workers, through the dispatch worker's pid).  A job
 * backend that ends without reporting anything (killed, or its FATAL was
 * not logged because log_min_messages is PANIC) fails the run with
 * SQLSTATE 57P01.
 *
 * Each non-atomic run in progress takes a background worker slot of
 * max_worker_processes besides its dispatch worker's.
 *
 * IDENTIFICATION
 *	  src/jobbackend.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

#include "compat.h"
#include "jobbackend.h"
#include "runlog.h"

/* Longest message, detail or hint passed back, in bytes (with the NUL). */
#define JOBBACKEND_TEXT_LEN		2048

/* The segment a dispatch worker shares with its job backend. */
typedef struct JobBackendShared
{
	Oid			dboid;			/* database to connect to */
	Oid			user;			/* role to connect as */
	int			timeout_ms;		/* the job's timeout, 0: none */
	int			max_notice_bytes;	/* capture limit, 0: no capture */
	Size		notices_offset; /* of the notices area, from command */
	bool		finished;		/* set last by the job backend: result valid */
	bool		failed;			/* a statement failed */
	int			sqlerrcode;		/* its error */
	char		message[JOBBACKEND_TEXT_LEN];
	char		detail[JOBBACKEND_TEXT_LEN];	/* "" when none */
	char		hint[JOBBACKEND_TEXT_LEN];	/* "" when none */
	char		result_status[SCHEDLOCK_RESULT_STATUS_LEN];	/* "": none */

	/*
	 * The job's SQL, then at notices_offset its captured output (NUL-ended,
	 * max_notice_bytes + SCHEDLOCK_NOTICE_MARKER_LEN bytes at most).
	 */
	char		command[FLEXIBLE_ARRAY_MEMBER];
} JobBackendShared;

/* The job backend of the run in progress (dispatch worker), or NULL. */
static BackgroundWorkerHandle *current_child = NULL;

/* Whether jobbackend_parent_exit is registered. */
static bool exit_callback_set = false;

/* The job backend's segment, for report_fatal_error. */
static JobBackendShared *my_shared = NULL;
static emit_log_hook_type prev_emit_log_hook = NULL;

/*
 * jobbackend_parent_exit
 *		before_shmem_exit callback of the dispatch worker: a job backend
 *		still running is terminated, so that it does not outlive the
 *		worker that would record its outcome.
 */
static void
jobbackend_parent_exit(int code, Datum arg)
{
	if (current_child != NULL)
		TerminateBackgroundWorker(current_child);
}

/*
 * copy_text
 *		Copy src (may be NULL) into the fixed-size buffer dst, cut short
 *		when too long.
 */
static void
copy_text(char *dst, const char *src)
{
	strlcpy(dst, src ? src : "", JOBBACKEND_TEXT_LEN);
}

/*
 * text_or_null
 *		A palloc'd copy of a reported text, or NULL when it is empty.
 */
static char *
text_or_null(const char *src)
{
	return src[0] != '\0' ? pstrdup(src) : NULL;
}

/*
 * make_error
 *		An ErrorData in CurrentMemoryContext for the dispatch worker's
 *		record of the run.
 */
static ErrorData *
make_error(int sqlerrcode, const char *message, const char *detail,
		   const char *hint)
{
	ErrorData  *error = palloc0(sizeof(ErrorData));

	error->elevel = ERROR;
	error->sqlerrcode = sqlerrcode;
	error->message = pstrdup(message);
	error->detail = detail ? pstrdup(detail) : NULL;
	error->hint = hint ? pstrdup(hint) : NULL;
	error->assoc_context = CurrentMemoryContext;
	return error;
}

/*
 * wait_for_child
 *		Wait until the job backend has ended, forwarding a cancel of this
 *		worker to it.  A termination of this worker terminates the job
 *		backend (jobbackend_parent_exit) and ends this worker here.
 *		worker_sigint (worker.c) turns a cancel into QueryCancelPending
 *		while the run is in progress; it is taken here, never thrown.
 */
static void
wait_for_child(BackgroundWorkerHandle *handle)
{
	bool		cancel_pending = false;

	for (;;)
	{
		BgwHandleStatus status;
		pid_t		pid;

		if (QueryCancelPending)
		{
			QueryCancelPending = false;
			cancel_pending = true;
		}
		if (ProcDiePending)
			CHECK_FOR_INTERRUPTS();

		status = GetBackgroundWorkerPid(handle, &pid);
		if (status == BGWH_STOPPED)
			return;
		if (status == BGWH_POSTMASTER_DIED)
			proc_exit(1);
		if (status == BGWH_STARTED && cancel_pending)
		{
			(void) kill(pid, SIGINT);
			cancel_pending = false;
		}

		/* the postmaster sets the latch when the job backend starts or ends */
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 cancel_pending ? 10L : 1000L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * schedlock_jobbackend_run
 *		Run command as user in a job backend connected to this database
 *		as user, and wait for it.  Called by a dispatch worker outside a
 *		transaction.  Returns false and sets *error (allocated in
 *		CurrentMemoryContext) when the command failed or could not be
 *		run; the statements before a failed one stay committed.
 *		result_status (SCHEDLOCK_RESULT_STATUS_LEN bytes) gets the command
 *		tag of the last statement when the command succeeded, else "";
 *		*notices the output the statements raised, or NULL.
 */
bool
schedlock_jobbackend_run(const char *command, Oid user, int timeout_ms,
						 ErrorData **error, char *result_status,
						 char **notices)
{
	MemoryContext cxt = CurrentMemoryContext;
	Size		len = strlen(command);
	int			max_notice_bytes = schedlock_max_notice_bytes;
	Size		notices_size = max_notice_bytes > 0 ?
		max_notice_bytes + SCHEDLOCK_NOTICE_MARKER_LEN : 1;
	dsm_segment *seg;
	JobBackendShared *shared;
	BackgroundWorker worker;
	bool		finished;
	bool		ok = false;

	Assert(!IsTransactionState());
	if (!exit_callback_set)
	{
		before_shmem_exit(jobbackend_parent_exit, (Datum) 0);
		exit_callback_set = true;
	}

	result_status[0] = '\0';
	*notices = NULL;
	seg = dsm_create(offsetof(JobBackendShared, command) + len + 1 +
					 notices_size, 0);
	shared = dsm_segment_address(seg);
	memset(shared, 0, offsetof(JobBackendShared, command));
	shared->dboid = MyDatabaseId;
	shared->user = user;
	shared->timeout_ms = timeout_ms;
	shared->max_notice_bytes = max_notice_bytes;
	shared->notices_offset = len + 1;
	memcpy(shared->command, command, len + 1);
	shared->command[shared->notices_offset] = '\0';

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "schedlock");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "schedlock_jobbackend_main");
	/* the process title names the dispatch worker it runs for */
	snprintf(worker.bgw_name, BGW_MAXLEN, "schedlock job of %s",
			 MyBgworkerEntry->bgw_name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "schedlock job");
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &current_child))
	{
		*error = make_error(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
							"no background worker slot is free to run the non-atomic job",
							"Every non-atomic run in progress takes a background worker of its own.",
							"Raise max_worker_processes.");
		dsm_detach(seg);
		return false;
	}

	wait_for_child(current_child);
	pfree(current_child);
	current_child = NULL;

	MemoryContextSwitchTo(cxt);
	finished = shared->finished;
	/* the result was written before finished was set */
	pg_read_barrier();
	if (!finished)
		*error = make_error(ERRCODE_ADMIN_SHUTDOWN,
							"the job's backend ended before the run finished",
							"It was terminated, or could not connect as the job's role (see the server log).",
							NULL);
	else
	{
		if (shared->failed)
		{
			*error = make_error(shared->sqlerrcode, shared->message, NULL, NULL);
			(*error)->detail = text_or_null(shared->detail);
			(*error)->hint = text_or_null(shared->hint);
		}
		else
		{
			ok = true;
			strlcpy(result_status, shared->result_status,
					SCHEDLOCK_RESULT_STATUS_LEN);
		}
		*notices = text_or_null(shared->command + shared->notices_offset);
	}
	dsm_detach(seg);
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
 * report_fatal_error
 *		emit_log_hook of a job backend: an error that ends the process
 *		(FATAL, PANIC) before the outcome was reported becomes the run's
 *		outcome, so that the run shows why it failed.  Errors the command
 *		raises are caught in schedlock_jobbackend_main and never get here
 *		as FATAL.
 */
static void
report_fatal_error(ErrorData *edata)
{
	if (my_shared != NULL && edata->elevel >= FATAL && !my_shared->finished)
	{
		my_shared->failed = true;
		my_shared->sqlerrcode = edata->sqlerrcode;
		copy_text(my_shared->message,
				  edata->message ? edata->message : "unknown error");
		copy_text(my_shared->detail, edata->detail);
		copy_text(my_shared->hint, edata->hint);
		pg_write_barrier();
		my_shared->finished = true;
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * schedlock_jobbackend_main
 *		Entry point of a job backend; bgw_main_arg is the handle of the
 *		dispatch worker's segment.  Connects as the job's role, runs the
 *		command, reports the outcome in the segment and exits.
 */
void
schedlock_jobbackend_main(Datum arg)
{
	dsm_segment *seg;
	JobBackendShared *shared;
	MemoryContext cxt;

	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, StatementCancelHandler);
	BackgroundWorkerUnblockSignals();

	seg = dsm_attach(DatumGetUInt32(arg));
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("schedlock job backend could not map its shared memory segment")));
	shared = dsm_segment_address(seg);
	my_shared = shared;
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = report_fatal_error;

	/* the job's role logs in: it is session and current user */
	BackgroundWorkerInitializeConnectionByOid(shared->dboid, shared->user, 0);
	SetConfigOption("application_name", "schedlock job", PGC_USERSET,
					PGC_S_SESSION);
	pgstat_report_appname("schedlock job");
	pgstat_report_activity(STATE_RUNNING, shared->command);

	cxt = AllocSetContextCreate(TopMemoryContext, "schedlock job",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		List	   *parsetrees;
		ListCell   *lc;

		schedlock_capture_begin(shared->max_notice_bytes);
		if (shared->timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, shared->timeout_ms);
		parsetrees = pg_parse_query(shared->command);
		foreach(lc, parsetrees)
			run_statement(lfirst_node(RawStmt, lc), shared->command, cxt,
						  shared->result_status);
		if (shared->timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
	}
	PG_CATCH();
	{
		ErrorData  *error;

		if (shared->timeout_ms > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(cxt);
		error = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(cxt);

		shared->failed = true;
		shared->sqlerrcode = error->sqlerrcode;
		copy_text(shared->message, error->message ? error->message : "unknown error");
		copy_text(shared->detail, error->detail);
		copy_text(shared->hint, error->hint);
	}
	PG_END_TRY();

	/* at most max_notice_bytes plus the marker: fits the area */
	{
		char	   *notices = schedlock_capture_end();

		if (notices != NULL)
			strlcpy(shared->command + shared->notices_offset, notices,
					shared->max_notice_bytes + SCHEDLOCK_NOTICE_MARKER_LEN);
	}

	pgstat_report_activity(STATE_IDLE, NULL);
	pg_write_barrier();
	shared->finished = true;
	dsm_detach(seg);
	proc_exit(0);
}
