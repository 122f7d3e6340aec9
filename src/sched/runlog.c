/*-------------------------------------------------------------------------
 *
 * runlog.c
 *	  What a run tells the DBA besides its status: the output its command
 *	  raised (NOTICE, INFO and WARNING messages, e.g. RAISE NOTICE), kept
 *	  in schedlock.job_runs.notices, and the server log lines per run.
 *
 * Capture.  A background worker has no client, so a job's NOTICE would go
 * nowhere, and emit_log_hook sees only the messages the server log takes
 * (log_min_messages, WARNING by default).  While a job's command runs
 * (schedlock_capture_begin .. schedlock_capture_end, in the process that
 * runs it: the dispatch worker for an atomic job, the job backend for a
 * non-atomic one) log_min_messages is lowered to INFO when it is above, so
 * that INFO, NOTICE and WARNING messages reach the hook.  The hook keeps
 * them, and then clears output_to_server of every message the server log
 * would not have taken under the real setting: the server log gets exactly
 * what it got without capture.  Only the GUC's variable is changed, not
 * its setting, and it is put back when the command ends (after the end of
 * the job's (sub)transaction or GUC nest level, which would otherwise put
 * back the lowered value under a SET of its own), so capture never
 * outlives the job's command: the worker's own messages are not captured.
 * What the command raises is captured whoever raises it (a SECURITY
 * DEFINER function, a trigger, another role).
 *
 * The output kept is bounded by schedlock.max_notice_bytes: the first
 * messages are kept whole, the one that does not fit is cut at a character
 * boundary, and the text ends with a marker that says how many bytes of
 * how many messages were cut.  The buffer is allocated when capture
 * begins, so that the hook, which runs inside error reporting, never
 * allocates.
 *
 * Log lines: schedlock.log_runs says which finished runs get a LOG line
 * (none, failed / timed_out / lost ones, or all with their duration), and
 * schedlock.log_statement logs each SQL job's command before it runs.
 * Each line names the job, the role it runs as and the database: a job's
 * name is unique only per owner and database, and a log gathers every
 * database's lines.
 *
 * IDENTIFICATION
 *	  src/sched/runlog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/elog.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "base/settings.h"
#include "runlog.h"

emit_log_hook_type schedlock_prev_emit_log_hook = NULL;

/* The capture in progress in this process. */
static struct
{
	bool		active;
	int			saved_level;	/* log_min_messages when capture began */
	int			lowered_level;	/* what it was set to for the capture */
	int			max_bytes;		/* text kept, at most */
	StringInfoData buf;			/* max_bytes + 1 allocated at begin */
	Size		cut_bytes;		/* bytes not kept */
	int			cut_messages;	/* messages not, or not wholly, kept */
	bool		cutting;		/* the current message lost bytes */
}			capture;

/* Memory of the capture buffer: kept across runs, reset each begin. */
static MemoryContext capture_cxt = NULL;

/*
 * level_logged
 *		Whether the server log takes a message of elevel under
 *		log_min_messages = min_level (as elog.c decides it: LOG ranks
 *		between ERROR and FATAL there).
 */
static bool
level_logged(int elevel, int min_level)
{
	if (elevel == LOG || elevel == LOG_SERVER_ONLY)
		return min_level == LOG || min_level <= ERROR;
	if (min_level == LOG)
		return elevel >= FATAL;
	return elevel >= min_level;
}

/*
 * capture_append
 *		Keep len bytes of s, as far as they fit in the buffer; count what
 *		does not.  A cut falls on a character boundary.  Never allocates.
 */
static void
capture_append(const char *s, int len)
{
	int			room = capture.max_bytes - capture.buf.len;
	int			keep = len;

	if (len <= 0)
		return;
	if (keep > room)
		keep = room > 0 ? pg_mbcliplen(s, len, room) : 0;
	if (keep > 0)
	{
		memcpy(capture.buf.data + capture.buf.len, s, keep);
		capture.buf.len += keep;
		capture.buf.data[capture.buf.len] = '\0';
	}
	if (keep < len)
	{
		capture.cut_bytes += len - keep;
		capture.cutting = true;
		/* nothing after a cut is kept, not even a shorter message */
		capture.max_bytes = capture.buf.len;
	}
}

static void
capture_append_str(const char *s)
{
	capture_append(s, strlen(s));
}

/*
 * capture_message
 *		Keep a message the way psql prints it: "NOTICE:  text", then its
 *		DETAIL and HINT lines.
 */
static void
capture_message(ErrorData *edata)
{
	capture.cutting = false;
	capture_append_str(edata->elevel == INFO ? "INFO:  " :
					   edata->elevel == NOTICE ? "NOTICE:  " : "WARNING:  ");
	capture_append_str(edata->message ? edata->message : "");
	capture_append_str("\n");
	if (edata->detail)
	{
		capture_append_str("DETAIL:  ");
		capture_append_str(edata->detail);
		capture_append_str("\n");
	}
	if (edata->hint)
	{
		capture_append_str("HINT:  ");
		capture_append_str(edata->hint);
		capture_append_str("\n");
	}
	if (capture.cutting)
		capture.cut_messages++;
}

/*
 * schedlock_runlog_emit_log
 *		Keep the job's INFO, NOTICE and WARNING messages while a capture
 *		is in progress, and hold back from the server log what only the
 *		lowered log_min_messages let through.  A job that set
 *		log_min_messages itself (a superuser's) is logged by its setting.
 */
void
schedlock_runlog_emit_log(ErrorData *edata)
{
	if (capture.active)
	{
		if (edata->elevel == INFO || edata->elevel == NOTICE ||
			edata->elevel == WARNING)
			capture_message(edata);
		if (log_min_messages == capture.lowered_level)
			edata->output_to_server = level_logged(edata->elevel,
												   capture.saved_level);
	}
	if (edata->output_to_server && schedlock_prev_emit_log_hook)
		schedlock_prev_emit_log_hook(edata);
}

/*
 * schedlock_capture_begin
 *		Start capturing what the job's command raises, keeping at most
 *		max_bytes bytes (0: capture nothing).  Call right before the
 *		command runs.
 */
void
schedlock_capture_begin(int max_bytes)
{
	Assert(!capture.active);
	if (max_bytes <= 0)
		return;
	if (capture_cxt == NULL)
		capture_cxt = AllocSetContextCreate(TopMemoryContext,
											"schedlock captured output",
											ALLOCSET_SMALL_SIZES);
	MemoryContextReset(capture_cxt);
	capture.buf.data = MemoryContextAlloc(capture_cxt, max_bytes + 1);
	capture.buf.maxlen = max_bytes + 1;
	capture.buf.len = 0;
	capture.buf.cursor = 0;
	capture.buf.data[0] = '\0';
	capture.max_bytes = max_bytes;
	capture.cut_bytes = 0;
	capture.cut_messages = 0;
	capture.saved_level = log_min_messages;
	capture.lowered_level = level_logged(INFO, log_min_messages) ?
		log_min_messages : INFO;
	log_min_messages = capture.lowered_level;
	capture.active = true;
}

/*
 * schedlock_capture_abort
 *		Stop capturing, keeping nothing, and put log_min_messages back.
 *		Harmless when no capture is in progress.
 */
void
schedlock_capture_abort(void)
{
	if (!capture.active)
		return;
	capture.active = false;
	/* a SET of the job's was undone by its transaction or subtransaction */
	log_min_messages = capture.saved_level;
}

/*
 * schedlock_capture_end
 *		Stop capturing.  Returns the output kept, with the marker when some
 *		was cut, palloc'd in CurrentMemoryContext; NULL when the command
 *		raised nothing (or capture was off).
 */
char *
schedlock_capture_end(void)
{
	StringInfoData out;

	if (!capture.active)
		return NULL;
	schedlock_capture_abort();
	if (capture.buf.len == 0 && capture.cut_bytes == 0)
		return NULL;
	initStringInfo(&out);
	appendBinaryStringInfo(&out, capture.buf.data, capture.buf.len);
	if (capture.cut_bytes > 0 && out.len > 0 && out.data[out.len - 1] != '\n')
		appendStringInfoChar(&out, '\n');
	if (capture.cut_bytes > 0)
		appendStringInfo(&out,
						 "[schedlock: %zu more bytes of %d message%s cut (schedlock.max_notice_bytes)]",
						 capture.cut_bytes, capture.cut_messages,
						 capture.cut_messages == 1 ? "" : "s");
	return out.data;
}

/*
 * schedlock_format_result_status
 *		Write into buf (SCHEDLOCK_RESULT_STATUS_LEN bytes) the command tag
 *		of a statement as psql prints it: "INSERT 0 5", "SELECT 3",
 *		"VACUUM".
 */
void
schedlock_format_result_status(char *buf, CommandTag tag, uint64 processed)
{
	const char *name = GetCommandTagName(tag);

	if (!command_tag_display_rowcount(tag))
		snprintf(buf, SCHEDLOCK_RESULT_STATUS_LEN, "%s", name);
	else if (tag == CMDTAG_INSERT)
		snprintf(buf, SCHEDLOCK_RESULT_STATUS_LEN, "%s 0 " UINT64_FORMAT,
				 name, processed);
	else
		snprintf(buf, SCHEDLOCK_RESULT_STATUS_LEN, "%s " UINT64_FORMAT,
				 name, processed);
}

/*
 * log_database
 *		The name of this backend's database, for log lines: read in the
 *		first transaction that asks, and kept (a backend cannot outlive its
 *		database, nor see it renamed).  "?" until then.
 */
static const char *
log_database(void)
{
	static char name[NAMEDATALEN] = "";

	if (name[0] == '\0' && IsTransactionState())
	{
		char	   *n = get_database_name(MyDatabaseId);

		if (n != NULL)
			strlcpy(name, n, sizeof(name));
	}
	return name[0] != '\0' ? name : "?";
}

/*
 * schedlock_runlog_where
 *		Learn this backend's database name for the log lines, in a
 *		transaction (a job backend calls it when it starts: it logs the
 *		statement of a non-atomic job outside any).
 */
void
schedlock_runlog_where(void)
{
	(void) log_database();
}

/*
 * schedlock_log_run_statement
 *		With schedlock.log_statement on, log the command a SQL job is about
 *		to run; role is the role it runs as.
 */
void
schedlock_log_run_statement(const char *job_name, const char *role,
							int64 run_id, const char *command)
{
	if (!schedlock_log_statement)
		return;
	ereport(LOG,
			(errmsg("schedlock job \"%s\" of role \"%s\" in database \"%s\" run " INT64_FORMAT " statement: %s",
					job_name, role ? role : "?", log_database(), run_id,
					command),
			 errhidestmt(true)));
}

/*
 * schedlock_log_run_end
 *		Log a finished run as schedlock.log_runs asks: a failed, timed_out
 *		or lost run unless it is none, with its SQLSTATE (when it has one)
 *		and message; a succeeded one only with all, with its duration
 *		(may be NULL).  role is the role the job runs as (may be NULL).
 */
void
schedlock_log_run_end(const char *job_name, const char *role, int64 run_id,
					  SchedlockRunStatus status, const char *sqlstate,
					  const char *message, const Interval *duration)
{
	const char *db = log_database();

	if (job_name == NULL)
		job_name = "?";
	if (role == NULL)
		role = "?";
	if (status == SCHEDLOCK_RUN_SUCCEEDED)
	{
		double		ms = 0;

		if (schedlock_log_runs < SCHEDLOCK_LOG_RUNS_ALL)
			return;
		if (duration != NULL)
			ms = ((double) duration->time +
				  (double) duration->day * USECS_PER_DAY) / 1000.0;
		ereport(LOG,
				(errmsg("schedlock job \"%s\" of role \"%s\" in database \"%s\" run " INT64_FORMAT " succeeded, duration: %.3f ms",
						job_name, role, db, run_id, ms),
				 errhidestmt(true)));
		return;
	}
	if (schedlock_log_runs < SCHEDLOCK_LOG_RUNS_FAILURES)
		return;
	if (sqlstate != NULL)
		ereport(LOG,
				(errcode(MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2],
									   sqlstate[3], sqlstate[4])),
				 errmsg("schedlock job \"%s\" of role \"%s\" in database \"%s\" run " INT64_FORMAT " %s: SQLSTATE %s: %s",
						job_name, role, db, run_id,
						schedlock_run_status_name(status), sqlstate,
						message ? message : ""),
				 errhidestmt(true)));
	else
		ereport(LOG,
				(errmsg("schedlock job \"%s\" of role \"%s\" in database \"%s\" run " INT64_FORMAT " %s: %s",
						job_name, role, db, run_id,
						schedlock_run_status_name(status),
						message ? message : ""),
				 errhidestmt(true)));
}
