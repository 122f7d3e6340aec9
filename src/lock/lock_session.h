/*-------------------------------------------------------------------------
 *
 * lock_session.h
 *	  Session identity for session-bound leases, and the lock functions'
 *	  transaction callbacks (lock_session.c).
 *
 * IDENTIFICATION
 *	  src/lock/lock_session.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOCK_SESSION_H
#define SCHEDLOCK_LOCK_SESSION_H

#include "utils/timestamp.h"

extern void schedlock_lock_init(void);
extern bool schedlock_holder_session_alive(int32 pid, TimestampTz start);
extern void schedlock_ensure_session_lock(void);
extern int	schedlock_session_bound_count(void);
extern int	schedlock_session_bound_after_commit(void);
extern void schedlock_push_session_delta(int delta);

#endif							/* SCHEDLOCK_LOCK_SESSION_H */
