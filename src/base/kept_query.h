/*-------------------------------------------------------------------------
 *
 * kept_query.h
 *	  Prepared statements planned once per backend and kept, run with a
 *	  generic plan and a pinned search_path (kept_query.c).
 *
 * IDENTIFICATION
 *	  src/base/kept_query.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_KEPT_QUERY_H
#define SCHEDLOCK_KEPT_QUERY_H

#include "executor/spi.h"

#define SCHEDLOCK_QUERY_MAX_ARGS	25

/* A statement run through a kept, generic plan (see kept_query.c). */
typedef struct SchedlockQuery
{
	const char *sql;
	int			nargs;
	Oid			argtypes[SCHEDLOCK_QUERY_MAX_ARGS];
	SPIPlanPtr	plan;			/* NULL until first used in this backend */
} SchedlockQuery;

extern void schedlock_bookkeeping_locks_begin(void);
extern void schedlock_bookkeeping_locks_end(void);
extern void schedlock_bookkeeping_tx_begin(const char *activity);
extern int	schedlock_trusted_path_begin(void);
extern void schedlock_trusted_path_end(int nestlevel);
extern int	schedlock_query_run(SchedlockQuery *q, Datum *values,
								const char *nulls, bool read_only, long count);

#endif							/* SCHEDLOCK_KEPT_QUERY_H */
