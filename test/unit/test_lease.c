/*-------------------------------------------------------------------------
 *
 * test_lease.c
 *	  Plain C unit tests of the lease rules (src/lock/lease.c): the
 *	  acquire's windows, blocks and in force, release, extend, assert's
 *	  answer and its order, whose leases a session ends.
 *
 * Build and run (no server needed):
 *	  cc -O2 -Wall -Isrc/base -Isrc/lock -Itest/unit -o test_lease \
 *		  test/unit/test_lease.c src/lock/lease.c && ./test_lease
 *
 * Prints one line per failure and a summary; exits 1 when anything failed.
 * Instants are in microseconds; T is the acquire's now, SEC a second.
 *
 * IDENTIFICATION
 *	  test/unit/test_lease.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "lock/lease.h"
#include "unit.h"

#define SEC		INT64_C(1000000)
#define T		(INT64_C(800000000) * SEC)

#define MY_PID		4242
#define MY_START	(T - 3600 * SEC)
#define ROLE		16384

/* What the session callback answers, and how often it was asked. */
typedef struct AliveProbe
{
	bool		alive;
	int			asked;
} AliveProbe;

/*
 * probe_alive
 *		SchedlockSessionAliveFn of the tests: answers probe->alive and
 *		counts the question.
 */
static bool
probe_alive(const SchedlockLease *lease, void *arg)
{
	AliveProbe *probe = arg;

	(void) lease;
	probe->asked++;
	return probe->alive;
}

/*
 * start
 *		A lease acquired at T with token 100, in force for 60 s, blocking at
 *		least 10 s, bound to (MY_PID, MY_START) when session_bound.
 */
static SchedlockLease
start(bool session_bound)
{
	SchedlockLease lease;

	schedlock_lease_start(&lease, 100, T, T + 60 * SEC, T + 10 * SEC,
						  session_bound, MY_PID, MY_START, ROLE);
	return lease;
}

static void
test_window(void)
{
	/* min_until == now: lock_at_least_for of zero */
	check(schedlock_lease_window(T, T + 60 * SEC, T) == SCHEDLOCK_WINDOW_OK,
		  "window: zero lock_at_least_for is accepted");
	/* min_until == until: the two windows may be equal */
	check(schedlock_lease_window(T, T + 60 * SEC, T + 60 * SEC) ==
		  SCHEDLOCK_WINDOW_OK, "window: at_least == at_most is accepted");
	/* one microsecond before now */
	check(schedlock_lease_window(T, T + 60 * SEC, T - 1) ==
		  SCHEDLOCK_WINDOW_LEAST_NEGATIVE,
		  "window: lock_at_least_for ending before now is refused");
	/* one microsecond after the lease */
	check(schedlock_lease_window(T, T + 60 * SEC, T + 60 * SEC + 1) ==
		  SCHEDLOCK_WINDOW_LEAST_EXCEEDS_MOST,
		  "window: lock_at_least_for past lock_at_most_for is refused");
	/* both wrong: the negative one is named first */
	check(schedlock_lease_window(T, T - 2, T - 1) ==
		  SCHEDLOCK_WINDOW_LEAST_NEGATIVE,
		  "window: a negative lock_at_least_for is named first");
}

static void
test_start(void)
{
	SchedlockLease lease = start(true);

	check(lease.token == 100 && lease.locked_at == T &&
		  lease.lock_until == T + 60 * SEC && lease.min_until == T + 10 * SEC,
		  "start: token and times");
	check(lease.session_bound && lease.holder_pid == MY_PID &&
		  lease.holder_start == MY_START, "start: bound to the session");
	check(lease.has_role && lease.holder_role == ROLE, "start: the role");
	check(!lease.released && !lease.session_ended && lease.released_at == 0,
		  "start: neither released nor ended");
	lease = start(false);
	check(!lease.session_bound && lease.holder_pid == MY_PID,
		  "start: not bound, the session still recorded");
}

static void
test_blocks(void)
{
	SchedlockLease lease;
	AliveProbe	probe;

	/* a lease that is not session-bound: its lock_until alone decides */
	lease = start(false);
	memset(&probe, 0, sizeof(probe));
	check(schedlock_lease_blocks(&lease, T + 59 * SEC, probe_alive, &probe),
		  "blocks: before lock_until");
	check(!schedlock_lease_blocks(&lease, T + 60 * SEC, probe_alive, &probe),
		  "blocks: not at lock_until (the end is exclusive)");
	check(probe.asked == 0, "blocks: a lease not bound asks for no session");

	/* session-bound: the session decides, asked only before lock_until */
	lease = start(true);
	probe.alive = true;
	check(schedlock_lease_blocks(&lease, T + SEC, probe_alive, &probe) &&
		  probe.asked == 1, "blocks: session alive, asked once");
	probe.alive = false;
	check(!schedlock_lease_blocks(&lease, T + SEC, probe_alive, &probe),
		  "blocks: session gone");
	probe.asked = 0;
	check(!schedlock_lease_blocks(&lease, T + 61 * SEC, probe_alive, &probe) &&
		  probe.asked == 0, "blocks: expired, the session not asked");

	/* the shared-memory store knows the end without a callback */
	lease = start(true);
	check(schedlock_lease_blocks(&lease, T + SEC, NULL, NULL),
		  "blocks: no callback, not ended: alive");
	lease.session_ended = true;
	probe.alive = true;
	probe.asked = 0;
	check(!schedlock_lease_blocks(&lease, T + SEC, probe_alive, &probe) &&
		  probe.asked == 0, "blocks: session_ended wins over the callback");

	/* in force: not released and blocking */
	lease = start(true);
	probe.alive = true;
	check(schedlock_lease_valid(&lease, T + SEC, probe_alive, &probe),
		  "valid: a fresh lease");
	probe.alive = false;
	check(!schedlock_lease_valid(&lease, T + SEC, probe_alive, &probe),
		  "valid: not when its session is gone");
}

static void
test_release(void)
{
	SchedlockLease lease;
	AliveProbe	probe;

	/* wrong token: nothing changes */
	lease = start(true);
	check(!schedlock_lease_release(&lease, 99, T + SEC) && !lease.released &&
		  lease.lock_until == T + 60 * SEC, "release: wrong token changes nothing");

	/* within lock_at_least_for: blocks until min_until, whatever the session */
	check(schedlock_lease_release(&lease, 100, T + 4 * SEC),
		  "release: right token");
	check(lease.released && lease.released_at == T + 4 * SEC &&
		  lease.lock_until == T + 10 * SEC && !lease.session_bound,
		  "release: window to min_until, no longer session-bound");
	probe.alive = false;
	probe.asked = 0;
	check(schedlock_lease_blocks(&lease, T + 9 * SEC, probe_alive, &probe) &&
		  probe.asked == 0,
		  "release: the window blocks though the session is gone");
	check(!schedlock_lease_blocks(&lease, T + 10 * SEC, probe_alive, &probe),
		  "release: the window ends at min_until");
	/* a released row still marked session-bound (written so by SQL) */
	lease.session_bound = true;
	check(schedlock_lease_blocks(&lease, T + 9 * SEC, probe_alive, &probe) &&
		  probe.asked == 0,
		  "release: the window blocks though the row says session-bound");
	check(!schedlock_lease_valid(&lease, T + 5 * SEC, probe_alive, &probe),
		  "release: a released lease is not in force");

	/* twice: the second is refused and keeps the first's times */
	check(!schedlock_lease_release(&lease, 100, T + 6 * SEC) &&
		  lease.released_at == T + 4 * SEC && lease.lock_until == T + 10 * SEC,
		  "release: twice is refused");

	/* after min_until: lock_until is now, so it blocks nobody */
	lease = start(false);
	check(schedlock_lease_release(&lease, 100, T + 30 * SEC) &&
		  lease.lock_until == T + 30 * SEC &&
		  !schedlock_lease_blocks(&lease, T + 30 * SEC, NULL, NULL),
		  "release: after the window, it ends now");

	/* an expired lease is still released (the caller gets true) */
	lease = start(false);
	check(schedlock_lease_release(&lease, 100, T + 90 * SEC) &&
		  lease.lock_until == T + 90 * SEC,
		  "release: of an expired lease ends it at now");
}

static void
test_extend(void)
{
	SchedlockLease lease;
	AliveProbe	probe = {true, 0};

	lease = start(true);
	check(schedlock_lease_extend(&lease, 100, T + 30 * SEC, T + 90 * SEC,
								 probe_alive, &probe) &&
		  lease.lock_until == T + 90 * SEC, "extend: in force, renewed");
	/* may shorten too: lock_until is now + lock_at_most_for */
	check(schedlock_lease_extend(&lease, 100, T + 31 * SEC, T + 32 * SEC,
								 probe_alive, &probe) &&
		  lease.lock_until == T + 32 * SEC, "extend: may shorten the lease");
	check(!schedlock_lease_extend(&lease, 101, T + 31 * SEC, T + 99 * SEC,
								  probe_alive, &probe) &&
		  lease.lock_until == T + 32 * SEC, "extend: wrong token changes nothing");
	check(!schedlock_lease_extend(&lease, 100, T + 32 * SEC, T + 99 * SEC,
								  probe_alive, &probe) &&
		  lease.lock_until == T + 32 * SEC, "extend: not once expired");
	lease = start(true);
	probe.alive = false;
	check(!schedlock_lease_extend(&lease, 100, T + SEC, T + 99 * SEC,
								  probe_alive, &probe),
		  "extend: not when its session is gone");
	lease = start(false);
	(void) schedlock_lease_release(&lease, 100, T + SEC);
	check(!schedlock_lease_extend(&lease, 100, T + 2 * SEC, T + 99 * SEC,
								  NULL, NULL) &&
		  lease.lock_until == T + 10 * SEC,
		  "extend: not once released, even inside its window");
}

static void
test_check(void)
{
	SchedlockLease lease;
	AliveProbe	probe = {true, 0};

	check(schedlock_lease_check(NULL, 100, T, NULL, NULL) ==
		  SCHEDLOCK_LEASE_NEVER_ACQUIRED, "check: no lease");
	lease = start(true);
	check(schedlock_lease_check(&lease, 100, T + SEC, probe_alive, &probe) ==
		  SCHEDLOCK_LEASE_HELD, "check: held");
	check(schedlock_lease_check(&lease, 99, T + SEC, probe_alive, &probe) ==
		  SCHEDLOCK_LEASE_REACQUIRED, "check: another token");
	check(schedlock_lease_check(&lease, 100, T + 60 * SEC, probe_alive, &probe) ==
		  SCHEDLOCK_LEASE_EXPIRED, "check: expired at lock_until");
	probe.alive = false;
	check(schedlock_lease_check(&lease, 100, T + SEC, probe_alive, &probe) ==
		  SCHEDLOCK_LEASE_SESSION_ENDED, "check: session gone");
	/* the order: a later token is named before release, expiry, session */
	(void) schedlock_lease_release(&lease, 100, T + SEC);
	check(schedlock_lease_check(&lease, 7, T + 99 * SEC, probe_alive, &probe) ==
		  SCHEDLOCK_LEASE_REACQUIRED, "check: another token comes first");
	check(schedlock_lease_check(&lease, 100, T + 99 * SEC, probe_alive, &probe) ==
		  SCHEDLOCK_LEASE_RELEASED, "check: released before expired");
	lease = start(true);
	lease.session_ended = true;
	check(schedlock_lease_check(&lease, 100, T + 99 * SEC, NULL, NULL) ==
		  SCHEDLOCK_LEASE_EXPIRED, "check: expired before the session's end");
	check(schedlock_lease_check(&lease, 100, T + SEC, NULL, NULL) ==
		  SCHEDLOCK_LEASE_SESSION_ENDED, "check: session_ended");
	lease = start(false);
	probe.alive = false;
	probe.asked = 0;
	check(schedlock_lease_check(&lease, 100, T + SEC, probe_alive, &probe) ==
		  SCHEDLOCK_LEASE_HELD && probe.asked == 0,
		  "check: a lease not bound asks for no session");
}

static void
test_held_by(void)
{
	SchedlockLease lease = start(true);

	check(schedlock_lease_held_by(&lease, MY_PID, MY_START),
		  "held_by: this session's lease");
	check(!schedlock_lease_held_by(&lease, MY_PID, MY_START + 1),
		  "held_by: a reused pid is another session");
	check(!schedlock_lease_held_by(&lease, MY_PID + 1, MY_START),
		  "held_by: another pid");
	lease.session_ended = true;
	check(!schedlock_lease_held_by(&lease, MY_PID, MY_START),
		  "held_by: not once its session ended");
	lease = start(false);
	check(!schedlock_lease_held_by(&lease, MY_PID, MY_START),
		  "held_by: not a lease that is not bound");
	lease = start(true);
	(void) schedlock_lease_release(&lease, 100, T + SEC);
	check(!schedlock_lease_held_by(&lease, MY_PID, MY_START),
		  "held_by: not once released");
}

int
main(void)
{
	test_window();
	test_start();
	test_blocks();
	test_release();
	test_extend();
	test_check();
	test_held_by();
	return unit_report("test_lease");
}
