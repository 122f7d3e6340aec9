/*-------------------------------------------------------------------------
 *
 * lock.h
 *	  The lock functions' limits, error code and advisory lock tags, and the
 *	  end of a session's leases, for the job backends (lock.c).
 *
 * IDENTIFICATION
 *	  src/lock/lock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOCK_H
#define SCHEDLOCK_LOCK_H

/*
 * Custom SQLSTATE raised by schedlock_assert() when the token no longer holds
 * an unexpired lease ("SL" is an implementation-defined class).
 */
#define ERRCODE_SCHEDLOCK_LEASE_LOST	MAKE_SQLSTATE('S','L','0','0','1')

/*
 * field4 values of the advisory lock tags schedlock takes.  User advisory
 * locks use 1 (bigint key) and 2 (two int keys), so these never collide with
 * pg_advisory_lock() calls made by applications.  They show up in pg_locks
 * as locktype 'advisory' with these objsubid values.
 */
#define SCHEDLOCK_LOCKTAG_MUTEX		0x534D	/* "SM": per-name transaction
											 * mutex */
#define SCHEDLOCK_LOCKTAG_SESSION	0x5353	/* "SS": per-session identity lock */

/* Longest holder description accepted, in characters. */
#define SCHEDLOCK_MAX_HOLDER_LENGTH	1024

extern void schedlock_lock_end_session_leases(void);

#endif							/* SCHEDLOCK_LOCK_H */
