/*-------------------------------------------------------------------------
 *
 * runlog.h
 *	  What a run tells the DBA: the output (NOTICE, INFO, WARNING) a job's
 *	  command raises, captured for schedlock.job_runs.notices, and the
 *	  server log lines per run (schedlock.log_runs, schedlock.log_statement).
 *
 * IDENTIFICATION
 *	  src/sched/runlog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_RUNLOG_H
#define SCHEDLOCK_RUNLOG_H

#include "utils/elog.h"

#include "postgres.h"

#include "datatype/timestamp.h"
#include "tcop/cmdtag.h"

#include "run_status.h"

/* Longest job_runs.result_status, with the NUL (COMPLETION_TAG_BUFSIZE). */
#define SCHEDLOCK_RESULT_STATUS_LEN	64

/* Room for the marker that ends captured output that was cut. */
#define SCHEDLOCK_NOTICE_MARKER_LEN	160

extern emit_log_hook_type schedlock_prev_emit_log_hook;
extern void schedlock_runlog_emit_log(ErrorData *edata);

/* capturing a job's output, in the process that runs its command */
extern void schedlock_capture_begin(int max_bytes);
extern char *schedlock_capture_end(void);
extern void schedlock_capture_abort(void);

extern void schedlock_format_result_status(char *buf, CommandTag tag,
										   uint64 processed);

/* server log lines */
extern void schedlock_runlog_where(void);
extern void schedlock_log_run_statement(const char *job_name,
										const char *role, int64 run_id,
										const char *command);
extern void schedlock_log_run_end(const char *job_name, const char *role,
								  int64 run_id, SchedlockRunStatus status,
								  const char *sqlstate, const char *message,
								  const Interval *duration);

#endif							/* SCHEDLOCK_RUNLOG_H */
