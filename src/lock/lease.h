/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  The lease rules of schedlock's locks, in plain C: one model of a
 *	  lock's current lease, kept alike by the table store (a row of
 *	  schedlock.lock_state, lock_table.c) and the shared-memory store of
 *	  session-bound leases (lease_shmem.c), and what acquire, release,
 *	  extend and assert may do with it.
 *
 * This header and lease.c depend on nothing but the C library, as the
 * scheduling rules do (src/sched/rules.h), so that the rules are unit-tested
 * as plain C (test/unit/test_lease.c, test/suites/lease-unit.sh).  The lock
 * functions (lock.c) read a lease from its store under the name's mutex, ask
 * these functions, and write back what they answer.
 *
 * The one thing the rules cannot know alone is whether the session holding a
 * session-bound lease still exists.  A lease kept in shared memory is told
 * when its session exits (session_ended); for a row of the table the store
 * asks the lock manager, which costs a probe, so the rules ask it through a
 * callback, and only when the answer matters.
 *
 * IDENTIFICATION
 *	  src/lock/lease.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LEASE_H
#define SCHEDLOCK_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/instant.h"

/*
 * A lock's current lease, or what is left of it: the token of the last
 * acquire and, once released or expired, the window in which it still keeps
 * acquirers out.
 */
typedef struct SchedlockLease
{
	int64_t		token;			/* the fencing token of the last acquire */
	bool		session_bound;	/* ends with its session (until released) */
	int32_t		holder_pid;		/* the holding session, valid when */
	SchedlockTime holder_start; /* ... session_bound */
	bool		session_ended;	/* the holding session is known to have exited */
	bool		released;
	SchedlockTime released_at;	/* valid when released */
	bool		has_role;		/* false for leases taken before 1.1 */
	uint32_t	holder_role;	/* an Oid, valid when has_role */
	SchedlockTime locked_at;
	SchedlockTime lock_until;	/* the lease's end; once released, the end of
								 * its lock_at_least_for window */
	SchedlockTime min_until;	/* locked_at + lock_at_least_for */
} SchedlockLease;

/*
 * Whether the session holding a session-bound lease (not known to have
 * ended) still exists.  arg is passed through.
 */
typedef bool (*SchedlockSessionAliveFn) (const SchedlockLease *lease,
										 void *arg);

/* What is wrong with an acquire's two windows. */
typedef enum SchedlockLeaseWindow
{
	SCHEDLOCK_WINDOW_OK = 0,
	SCHEDLOCK_WINDOW_LEAST_NEGATIVE,	/* lock_at_least_for ends before now */
	SCHEDLOCK_WINDOW_LEAST_EXCEEDS_MOST /* ... after lock_at_most_for */
} SchedlockLeaseWindow;

/* Why a token does not hold a lease in force (assert's answer). */
typedef enum SchedlockLeaseLoss
{
	SCHEDLOCK_LEASE_HELD = 0,	/* it does */
	SCHEDLOCK_LEASE_NEVER_ACQUIRED, /* the name has no lease */
	SCHEDLOCK_LEASE_REACQUIRED, /* the name has a later token */
	SCHEDLOCK_LEASE_RELEASED,
	SCHEDLOCK_LEASE_EXPIRED,
	SCHEDLOCK_LEASE_SESSION_ENDED	/* its session has ended */
} SchedlockLeaseLoss;

extern SchedlockLeaseWindow schedlock_lease_window(SchedlockTime now,
												   SchedlockTime until,
												   SchedlockTime min_until);
extern void schedlock_lease_start(SchedlockLease *lease, int64_t token,
								  SchedlockTime now, SchedlockTime until,
								  SchedlockTime min_until, bool session_bound,
								  int32_t holder_pid,
								  SchedlockTime holder_start,
								  uint32_t holder_role);
extern bool schedlock_lease_blocks(const SchedlockLease *lease,
								   SchedlockTime now,
								   SchedlockSessionAliveFn alive, void *arg);
extern bool schedlock_lease_valid(const SchedlockLease *lease,
								  SchedlockTime now,
								  SchedlockSessionAliveFn alive, void *arg);
extern bool schedlock_lease_release(SchedlockLease *lease, int64_t token,
									SchedlockTime now);
extern bool schedlock_lease_extend(SchedlockLease *lease, int64_t token,
								   SchedlockTime now, SchedlockTime until,
								   SchedlockSessionAliveFn alive, void *arg);
extern SchedlockLeaseLoss schedlock_lease_check(const SchedlockLease *lease,
												int64_t token,
												SchedlockTime now,
												SchedlockSessionAliveFn alive,
												void *arg);
extern bool schedlock_lease_held_by(const SchedlockLease *lease,
									int32_t pid, SchedlockTime start);

#endif							/* SCHEDLOCK_LEASE_H */
