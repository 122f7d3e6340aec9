/*-------------------------------------------------------------------------
 *
 * run_command.h
 *	  Running a job's SQL command in its job backend (run_command.c).
 *
 * IDENTIFICATION
 *	  src/sched/run_command.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_RUN_COMMAND_H
#define SCHEDLOCK_RUN_COMMAND_H

#include "utils/elog.h"

extern bool schedlock_exec_atomic(const char *command, int timeout_ms,
								  ErrorData **error, char *result_status,
								  char **notices);
extern bool schedlock_exec_toplevel(const char *command, int timeout_ms,
									ErrorData **error, char *result_status,
									char **notices);
extern void schedlock_exec_set_search_path(const char *search_path);
extern void schedlock_exec_after_run(bool toplevel);

#endif							/* SCHEDLOCK_RUN_COMMAND_H */
