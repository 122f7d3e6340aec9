/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  Job backends and housekeepers (worker.c).
 *
 * IDENTIFICATION
 *	  src/sched/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_WORKER_H
#define SCHEDLOCK_WORKER_H

#include "fmgr.h"

extern PGDLLEXPORT void schedlock_worker_main(Datum arg);

#endif							/* SCHEDLOCK_WORKER_H */
