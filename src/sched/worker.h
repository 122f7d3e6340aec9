/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  Job backends (worker.c): the entry point, and what a housekeeper
 *	  (housekeeper.c) shares of the job backend's code.
 *
 * IDENTIFICATION
 *	  src/sched/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_WORKER_H
#define SCHEDLOCK_WORKER_H

#include "fmgr.h"

#include "sched_shmem.h"

extern PGDLLEXPORT void schedlock_worker_main(Datum arg);
extern SchedlockBackendSlot *schedlock_worker_start(Datum arg,
													MemoryContext *cxt);
extern void schedlock_worker_recover_error(void);
extern void schedlock_worker_begin_tx(const char *activity);
extern void schedlock_worker_end_tx(void);
extern int	schedlock_dispatch_due(Oid role, const char *start_error,
								  bool *more);

#endif							/* SCHEDLOCK_WORKER_H */
