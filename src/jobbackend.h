/*-------------------------------------------------------------------------
 *
 * jobbackend.h
 *	  A non-atomic job's own backend: a dynamic background worker connected
 *	  as the job's role (jobbackend.c).
 *
 * IDENTIFICATION
 *	  src/jobbackend.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_JOBBACKEND_H
#define SCHEDLOCK_JOBBACKEND_H

#include "postgres.h"

extern bool schedlock_jobbackend_run(const char *command, Oid user,
									 int timeout_ms, ErrorData **error,
									 char *result_status, char **notices);
extern PGDLLEXPORT void schedlock_jobbackend_main(Datum arg);

#endif							/* SCHEDLOCK_JOBBACKEND_H */
