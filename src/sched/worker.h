/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  Job backends (worker.c): the entry point, and the start a housekeeper
 *	  (housekeeper.c) shares; dispatch.h and dispatch_run.h have what they run.
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

#endif							/* SCHEDLOCK_WORKER_H */
