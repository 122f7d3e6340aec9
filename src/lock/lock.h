/*-------------------------------------------------------------------------
 *
 * lock.h
 *	  The end of a session's leases, for the job backends (lock.c).
 *
 * IDENTIFICATION
 *	  src/lock/lock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOCK_H
#define SCHEDLOCK_LOCK_H

extern void schedlock_lock_end_session_leases(void);

#endif							/* SCHEDLOCK_LOCK_H */
