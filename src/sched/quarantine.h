/*-------------------------------------------------------------------------
 *
 * quarantine.h
 *	  A job backend's recovery from errors in its own bookkeeping, and the
 *	  quarantine (quarantine.c).
 *
 * IDENTIFICATION
 *	  src/sched/quarantine.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_QUARANTINE_H
#define SCHEDLOCK_QUARANTINE_H

#include "utils/palloc.h"

extern void schedlock_dispatch_blame(int64 job_id);
extern bool schedlock_error_is_transient(int sqlerrcode);
extern int	schedlock_worker_recover(MemoryContext cxt);

#endif							/* SCHEDLOCK_QUARANTINE_H */
