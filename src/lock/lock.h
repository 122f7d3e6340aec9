/*-------------------------------------------------------------------------
 *
 * lock.h
 *	  The lease locks' setup and the end of a session's leases (lock.c).
 *
 * IDENTIFICATION
 *	  src/lock/lock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOCK_H
#define SCHEDLOCK_LOCK_H

extern void schedlock_lock_init(void);
extern void schedlock_lock_end_session_leases(void);

#endif							/* SCHEDLOCK_LOCK_H */
