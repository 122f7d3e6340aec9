/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  The lease rules of schedlock's locks, in plain C (see lease.h).
 *
 * A lease keeps other acquirers out while its lock_until lies ahead and,
 * when it is bound to a session, that session exists.  A release ends the
 * lease at once but leaves the lock blocked until its lock_at_least_for
 * window ends (greatest(now, min_until)), whatever becomes of the session.
 * A token holds the lock while it is the lease's token and the lease is in
 * force: not released, not expired, its session (if bound) alive.  Only a
 * lease in force can be extended; a release needs the right token and a
 * lease not released yet, but not one in force: releasing an expired lease
 * still ends it, and starts its lock_at_least_for window.
 *
 * IDENTIFICATION
 *	  src/lock/lease.c
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "lease.h"

/*
 * session_alive
 *		Whether the session of a session-bound lease still exists: not when
 *		its store saw it exit, else as the store's callback says (alive when
 *		there is none).
 */
static bool
session_alive(const SchedlockLease *lease, SchedlockSessionAliveFn alive,
			  void *arg)
{
	if (lease->session_ended)
		return false;
	return alive == NULL || alive(lease, arg);
}

/*
 * schedlock_lease_window
 *		Check an acquire's two windows, both ending at instants worked out
 *		from one now: the lock_at_least_for window (to min_until) must not
 *		end before now nor after the lease (until).
 */
SchedlockLeaseWindow
schedlock_lease_window(SchedlockTime now, SchedlockTime until,
					   SchedlockTime min_until)
{
	if (min_until < now)
		return SCHEDLOCK_WINDOW_LEAST_NEGATIVE;
	if (min_until > until)
		return SCHEDLOCK_WINDOW_LEAST_EXCEEDS_MOST;
	return SCHEDLOCK_WINDOW_OK;
}

/*
 * schedlock_lease_start
 *		Fill *lease with the lease an acquire at now hands out: token, in
 *		force until until, blocking at least until min_until, bound to the
 *		session (holder_pid, holder_start) when session_bound, held by the
 *		role holder_role.
 */
void
schedlock_lease_start(SchedlockLease *lease, int64_t token, SchedlockTime now,
					  SchedlockTime until, SchedlockTime min_until,
					  bool session_bound, int32_t holder_pid,
					  SchedlockTime holder_start, uint32_t holder_role)
{
	memset(lease, 0, sizeof(*lease));
	lease->token = token;
	lease->session_bound = session_bound;
	lease->holder_pid = holder_pid;
	lease->holder_start = holder_start;
	lease->has_role = true;
	lease->holder_role = holder_role;
	lease->locked_at = now;
	lease->lock_until = until;
	lease->min_until = min_until;
}

/*
 * schedlock_lease_blocks
 *		Whether the lease keeps a new acquirer out at now: its lock_until
 *		lies ahead and it is released (the lock_at_least_for window), not
 *		session-bound, or bound to a session that still exists.
 */
bool
schedlock_lease_blocks(const SchedlockLease *lease, SchedlockTime now,
					   SchedlockSessionAliveFn alive, void *arg)
{
	if (lease->lock_until <= now)
		return false;
	if (lease->released || !lease->session_bound)
		return true;
	return session_alive(lease, alive, arg);
}

/*
 * schedlock_lease_valid
 *		Whether the lease is in force at now: not released, and blocking.
 */
bool
schedlock_lease_valid(const SchedlockLease *lease, SchedlockTime now,
					  SchedlockSessionAliveFn alive, void *arg)
{
	return !lease->released && schedlock_lease_blocks(lease, now, alive, arg);
}

/*
 * schedlock_lease_release
 *		End the lease held with token at now: it blocks until
 *		greatest(now, min_until) and no longer depends on its session.
 *		False, changing nothing, when token is not the lease's or the lease
 *		was released already.  The caller reads lock_until > now as "the
 *		lock_at_least_for window still blocks".
 */
bool
schedlock_lease_release(SchedlockLease *lease, int64_t token,
						SchedlockTime now)
{
	if (lease->token != token || lease->released)
		return false;
	lease->released = true;
	lease->released_at = now;
	lease->lock_until = lease->min_until > now ? lease->min_until : now;
	lease->session_bound = false;
	return true;
}

/*
 * schedlock_lease_extend
 *		Renew the lease held with token to until (now + lock_at_most_for).
 *		False, changing nothing, when token is not the lease's or the lease
 *		is not in force at now.
 */
bool
schedlock_lease_extend(SchedlockLease *lease, int64_t token,
					   SchedlockTime now, SchedlockTime until,
					   SchedlockSessionAliveFn alive, void *arg)
{
	if (lease->token != token || !schedlock_lease_valid(lease, now, alive, arg))
		return false;
	lease->lock_until = until;
	return true;
}

/*
 * schedlock_lease_check
 *		Whether token holds a lease in force at now, and if not, the first
 *		reason in this order: the name has no lease (lease is NULL), a later
 *		acquire, a release, the lease's end, its session's end.
 */
SchedlockLeaseLoss
schedlock_lease_check(const SchedlockLease *lease, int64_t token,
					  SchedlockTime now, SchedlockSessionAliveFn alive,
					  void *arg)
{
	if (lease == NULL)
		return SCHEDLOCK_LEASE_NEVER_ACQUIRED;
	if (lease->token != token)
		return SCHEDLOCK_LEASE_REACQUIRED;
	if (lease->released)
		return SCHEDLOCK_LEASE_RELEASED;
	if (lease->lock_until <= now)
		return SCHEDLOCK_LEASE_EXPIRED;
	if (lease->session_bound && !session_alive(lease, alive, arg))
		return SCHEDLOCK_LEASE_SESSION_ENDED;
	return SCHEDLOCK_LEASE_HELD;
}

/*
 * schedlock_lease_held_by
 *		Whether the lease is bound to the session (pid, start), not released,
 *		and that session is not known to have ended: a lease the session
 *		ends when it ends its session-bound leases.
 */
bool
schedlock_lease_held_by(const SchedlockLease *lease, int32_t pid,
						SchedlockTime start)
{
	return lease->session_bound && !lease->released &&
		!lease->session_ended &&
		lease->holder_pid == pid && lease->holder_start == start;
}
