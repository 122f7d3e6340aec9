/*-------------------------------------------------------------------------
 *
 * lock_watch.h
 *	  Writes to schedlock.lock_state made by SQL, noticed for the marks
 *	  (lock_watch.c).
 *
 * IDENTIFICATION
 *	  src/lock/lock_watch.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOCK_WATCH_H
#define SCHEDLOCK_LOCK_WATCH_H

#include "executor/executor.h"
#include "nodes/nodes.h"

extern ExecutorStart_hook_type schedlock_prev_ExecutorStart;
extern void schedlock_lock_watch_executor_start(QueryDesc *queryDesc,
												int eflags);
extern void schedlock_lock_watch_init(void);
extern void schedlock_lock_watch_copy(Node *parsetree);

#endif							/* SCHEDLOCK_LOCK_WATCH_H */
