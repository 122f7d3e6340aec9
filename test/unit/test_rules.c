/*-------------------------------------------------------------------------
 *
 * test_rules.c
 *	  Plain C unit tests of the scheduling rules (src/sched/rules.c): misfire,
 *	  overlap, next_run_at, retry and backoff, the dispatch hold; and the
 *	  names and sets of a run's statuses (src/sched/run_status.c).
 *
 * Build and run (no server needed):
 *	  bash test/unit/run.sh test_rules src/sched/rules.c src/sched/run_status.c \
 *		  src/cron/cron_parse.c src/cron/cron_next.c -lm
 *
 * Prints one line per failure and a summary; exits 1 when anything failed.
 * Every expected value is worked out by hand in the comment of its row
 * (instants in microseconds; MIN is one minute of them).
 *
 * IDENTIFICATION
 *	  test/unit/test_rules.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cron/cron.h"
#include "sched/rules.h"
#include "sched/run_status.h"
#include "unit.h"

#define SEC		INT64_C(1000000)
#define MIN		(60 * SEC)
#define HOUR	(60 * MIN)

/*
 * next_periodic
 *		Slot callback: the slots are the multiples of *(int64_t *) arg.
 */
static bool
next_periodic(const void *arg, SchedlockTime after, SchedlockTime *next)
{
	int64_t		period = *(const int64_t *) arg;
	int64_t		q = after / period;

	/* C division truncates towards zero: round down before the epoch */
	if (after % period != 0 && after < 0)
		q--;
	*next = (q + 1) * period;
	return true;
}

/* A list of slots, ascending, for next_listed. */
typedef struct SlotList
{
	int			n;
	SchedlockTime slots[8];
} SlotList;

/*
 * next_listed
 *		Slot callback: the first listed slot after the instant, if any.
 */
static bool
next_listed(const void *arg, SchedlockTime after, SchedlockTime *next)
{
	const SlotList *list = arg;
	int			i;

	for (i = 0; i < list->n; i++)
	{
		if (list->slots[i] > after)
		{
			*next = list->slots[i];
			return true;
		}
	}
	return false;
}

/*
 * next_cron_utc
 *		Slot callback: the cron engine's next fire time of the parsed
 *		schedule arg in UTC (instants counted from 1970 here).
 */
static bool
next_cron_utc(const void *arg, SchedlockTime after, SchedlockTime *next)
{
	int64_t		secs;

	/* strictly after: a fraction of a second rounds down to its second */
	if (!schedlock_cron_next_utc(arg, after / SEC, &secs))
		return false;
	*next = secs * SEC;
	return true;
}

/* One case of the slot rule, with a periodic schedule. */
typedef struct SlotCase
{
	const char *what;
	int64_t		period;
	SchedlockTime slot;
	SchedlockTime now;
	SchedlockMisfire misfire;
	SchedlockSlotAction action;
	bool		has_next;
	SchedlockTime next;
	const char *message;
} SlotCase;

/*
 * check_slot
 *		Run the slot rule with the given callback and compare the answer.
 */
static void
check_slot(const char *what, SchedlockTime slot, SchedlockTime now,
		   SchedlockMisfire misfire, bool reboot, SchedlockNextSlotFn fn,
		   const void *arg, SchedlockSlotAction action, bool has_next,
		   SchedlockTime next, const char *message)
{
	SchedlockSlotPlan plan;
	int			ok;

	memset(&plan, 0x7f, sizeof(plan));
	schedlock_rule_due_slot(slot, now, misfire, reboot, fn, arg, &plan);
	ok = plan.action == action && plan.has_next == has_next &&
		(!has_next || plan.next == next) &&
		strcmp(plan.message, message) == 0;
	check(ok, what);
	if (!ok)
		printf("      got action %d, has_next %d, next %lld, message \"%s\"\n",
			   (int) plan.action, (int) plan.has_next, (long long) plan.next,
			   plan.message);
}

/*
 * test_slots
 *		The misfire policies on a once-a-minute schedule, at and around the
 *		boundary, and run_all's limits.
 */
static void
test_slots(void)
{
	static const SlotCase cases[] = {
		/* next slot 3 min is after now 2.5 min: on time, next 3 min */
		{"on time", MIN, 2 * MIN, 2 * MIN + 30 * SEC, SCHEDLOCK_MISFIRE_RUN_ONCE,
		SCHEDLOCK_SLOT_RUN, true, 3 * MIN, ""},
		/* now = slot: on time */
		{"on time, now is the slot", MIN, 2 * MIN, 2 * MIN, SCHEDLOCK_MISFIRE_SKIP,
		SCHEDLOCK_SLOT_RUN, true, 3 * MIN, ""},
		/* next slot 3 min is 1 us after now: still on time */
		{"1 us before the next slot", MIN, 2 * MIN, 3 * MIN - 1, SCHEDLOCK_MISFIRE_SKIP,
		SCHEDLOCK_SLOT_RUN, true, 3 * MIN, ""},
		/* now is exactly the next slot 3 min: two slots due, a misfire */
		{"run_once at exactly the boundary", MIN, 2 * MIN, 3 * MIN, SCHEDLOCK_MISFIRE_RUN_ONCE,
		SCHEDLOCK_SLOT_RUN, true, 4 * MIN, "catch-up run for missed slots (misfire run_once)"},
		{"skip at exactly the boundary", MIN, 2 * MIN, 3 * MIN, SCHEDLOCK_MISFIRE_SKIP,
		SCHEDLOCK_SLOT_SKIP, true, 4 * MIN, "missed slot skipped (misfire skip)"},
		/* run_all: slots 2 and 3 min due, runs 2, next 3 */
		{"run_all at exactly the boundary", MIN, 2 * MIN, 3 * MIN, SCHEDLOCK_MISFIRE_RUN_ALL,
		SCHEDLOCK_SLOT_RUN, true, 3 * MIN, ""},
		/* 2 .. 5 min due at 5.5 min; next after now is 6 min */
		{"run_once, four missed", MIN, 2 * MIN, 5 * MIN + 30 * SEC, SCHEDLOCK_MISFIRE_RUN_ONCE,
		SCHEDLOCK_SLOT_RUN, true, 6 * MIN, "catch-up run for missed slots (misfire run_once)"},
		{"skip, four missed", MIN, 2 * MIN, 5 * MIN + 30 * SEC, SCHEDLOCK_MISFIRE_SKIP,
		SCHEDLOCK_SLOT_SKIP, true, 6 * MIN, "missed slot skipped (misfire skip)"},
		{"run_all, four missed", MIN, 2 * MIN, 5 * MIN + 30 * SEC, SCHEDLOCK_MISFIRE_RUN_ALL,
		SCHEDLOCK_SLOT_RUN, true, 3 * MIN, ""},
		/* slots 0 .. 99 min due: 100, the limit, all run */
		{"run_all, exactly the limit", MIN, 0, 99 * MIN, SCHEDLOCK_MISFIRE_RUN_ALL,
		SCHEDLOCK_SLOT_RUN, true, 1 * MIN, ""},
		/* slots 0 .. 100 min due: 101; latest 100 are 1 .. 100, skip 0 */
		{"run_all, one over the limit", MIN, 0, 100 * MIN, SCHEDLOCK_MISFIRE_RUN_ALL,
			SCHEDLOCK_SLOT_SKIP, true, 1 * MIN,
		"misfire run_all: 101 missed slots, only the latest 100 are run"},
		/* slots 0 .. 249 min due: latest 100 are 150 .. 249 */
		{"run_all, 250 missed", MIN, 0, 249 * MIN + 59 * SEC, SCHEDLOCK_MISFIRE_RUN_ALL,
			SCHEDLOCK_SLOT_SKIP, true, 150 * MIN,
		"misfire run_all: 250 missed slots, only the latest 100 are run"},

		/*
		 * a slot every microsecond, 2,000,001 due: counting stops at
		 * 1,000,000 iterations, and the job goes on after now
		 */
		{"run_all, counting stops", 1, 0, 2000000, SCHEDLOCK_MISFIRE_RUN_ALL,
			SCHEDLOCK_SLOT_SKIP, true, 2000001,
		"misfire run_all: 1000000 missed slots, only the latest 100 are run"},
		/* negative instants (before the epoch) work the same */
		{"skip before the epoch", MIN, -10 * MIN, -7 * MIN - 1, SCHEDLOCK_MISFIRE_SKIP,
		SCHEDLOCK_SLOT_SKIP, true, -7 * MIN, "missed slot skipped (misfire skip)"},
	};
	int			i;

	for (i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		const SlotCase *c = &cases[i];

		check_slot(c->what, c->slot, c->now, c->misfire, false, next_periodic,
				   &c->period, c->action, c->has_next, c->next, c->message);
	}

	/* @reboot: the slot runs, there is no next one, whatever the policy */
	{
		int64_t		period = MIN;

		check_slot("@reboot, late", 0, 10 * MIN, SCHEDLOCK_MISFIRE_SKIP, true,
				   next_periodic, &period, SCHEDLOCK_SLOT_RUN, false, 0, "");
	}
}

/*
 * test_slot_lists
 *		Schedules whose slots are not evenly spaced (as around a DST
 *		change, which the cron engine works out) or end.
 */
static void
test_slot_lists(void)
{
	/*
	 * "30 2 * * *" in Europe/Berlin around 2024-03-31 (spring forward: 02:30
	 * does not exist and the engine gives 03:00 CEST) and 2024-10-27 (fall
	 * back), as UTC instants: 03-30 01:30, 03-31 01:00, 04-01 00:30; the gaps
	 * are 23.5 h and 23.5 h.
	 */
	SlotList	spring = {3, {25 * HOUR + 30 * MIN, 49 * HOUR, 72 * HOUR + 30 * MIN}};

	/* fall back: 10-26 00:30 UTC (CEST), 10-27 01:30 UTC (CET): 25 h */
	SlotList	autumn = {2, {30 * MIN, 25 * HOUR + 30 * MIN}};
	SlotList	ending = {2, {10 * MIN, 20 * MIN}};
	SchedlockCronSchedule daily;
	SchedlockCronError err;

	check_slot("DST: 1 us before a slot 23.5 h on", spring.slots[0],
			   spring.slots[1] - 1, SCHEDLOCK_MISFIRE_SKIP, false, next_listed,
			   &spring, SCHEDLOCK_SLOT_RUN, true, spring.slots[1], "");
	check_slot("DST: at a slot 23.5 h on", spring.slots[0], spring.slots[1],
			   SCHEDLOCK_MISFIRE_SKIP, false, next_listed, &spring,
			   SCHEDLOCK_SLOT_SKIP, true, spring.slots[2],
			   "missed slot skipped (misfire skip)");
	check_slot("DST: 24 h later is before a slot 25 h on", autumn.slots[0],
			   autumn.slots[0] + 24 * HOUR, SCHEDLOCK_MISFIRE_SKIP, false,
			   next_listed, &autumn, SCHEDLOCK_SLOT_RUN, true, autumn.slots[1], "");
	check_slot("DST: run_all over a 25 h day", autumn.slots[0],
			   autumn.slots[1], SCHEDLOCK_MISFIRE_RUN_ALL, false, next_listed,
			   &autumn, SCHEDLOCK_SLOT_RUN, true, autumn.slots[1], "");
	/* the last slot, long past: on time (no later slot), and no next */
	check_slot("last slot of a schedule", ending.slots[1], 100 * MIN,
			   SCHEDLOCK_MISFIRE_SKIP, false, next_listed, &ending,
			   SCHEDLOCK_SLOT_RUN, false, 0, "");
	/* the slot before the last, both past: skip it, none after now */
	check_slot("misfire with no slot after now", ending.slots[0], 100 * MIN,
			   SCHEDLOCK_MISFIRE_SKIP, false, next_listed, &ending,
			   SCHEDLOCK_SLOT_SKIP, false, 0, "missed slot skipped (misfire skip)");
	/* run_all over the end of a schedule: both run */
	check_slot("run_all up to the end of a schedule", ending.slots[0], 100 * MIN,
			   SCHEDLOCK_MISFIRE_RUN_ALL, false, next_listed, &ending,
			   SCHEDLOCK_SLOT_RUN, true, ending.slots[1], "");

	/*
	 * With the cron engine: "0 0 * * *" in UTC, due 2024-01-01 00:00
	 * (1704067200), now 2024-01-03 12:00: skip, next 2024-01-04 00:00.
	 */
	if (!schedlock_cron_parse("0 0 * * *", &daily, &err))
		check(0, "parse 0 0 * * *");
	check_slot("cron engine: daily, skip", INT64_C(1704067200) * SEC,
			   (INT64_C(1704067200) + 2 * 86400 + 12 * 3600) * SEC,
			   SCHEDLOCK_MISFIRE_SKIP, false, next_cron_utc, &daily,
			   SCHEDLOCK_SLOT_SKIP, true, (INT64_C(1704067200) + 3 * 86400) * SEC,
			   "missed slot skipped (misfire skip)");
	check_slot("cron engine: daily, on time", INT64_C(1704067200) * SEC,
			   (INT64_C(1704067200) + 86400) * SEC - 1,
			   SCHEDLOCK_MISFIRE_SKIP, false, next_cron_utc, &daily,
			   SCHEDLOCK_SLOT_RUN, true, (INT64_C(1704067200) + 86400) * SEC, "");
}

/*
 * test_misfire_names
 *		The policy names, and what an unknown one counts as.
 */
static void
test_misfire_names(void)
{
	static const struct
	{
		const char *text;
		bool		known;
		SchedlockMisfire policy;
	}			cases[] = {
		{"run_once", true, SCHEDLOCK_MISFIRE_RUN_ONCE},
		{"skip", true, SCHEDLOCK_MISFIRE_SKIP},
		{"run_all", true, SCHEDLOCK_MISFIRE_RUN_ALL},
		{"RUN_ALL", false, SCHEDLOCK_MISFIRE_RUN_ONCE},
		{"skip ", false, SCHEDLOCK_MISFIRE_RUN_ONCE},
		{"", false, SCHEDLOCK_MISFIRE_RUN_ONCE},
		{NULL, false, SCHEDLOCK_MISFIRE_RUN_ONCE},
	};
	int			i;

	for (i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		SchedlockMisfire p = SCHEDLOCK_MISFIRE_RUN_ALL;
		char		what[100];
		bool		known = schedlock_misfire_parse(cases[i].text, &p);

		snprintf(what, sizeof(what), "misfire \"%s\"",
				 cases[i].text ? cases[i].text : "(null)");
		check(known == cases[i].known && p == cases[i].policy, what);
	}
}

/*
 * test_overlap
 *		A run in progress makes the slot a skipped row.
 */
static void
test_overlap(void)
{
	const char *m = schedlock_rule_overlap(true);

	check(m != NULL && strcmp(m, "the previous run was still in progress (overlap)") == 0,
		  "overlap: skipped while the previous run is in progress");
	check(schedlock_rule_overlap(false) == NULL, "overlap: runs otherwise");
}

/*
 * test_claim_serves
 *		A claim serves a queued run_job() call, then a due retry, then a due
 *		slot.
 */
static void
test_claim_serves(void)
{
	static const struct
	{
		const char *what;
		int32_t		manual;
		bool		has_retry;
		SchedlockTime retry_at;
		bool		has_slot;
		SchedlockTime slot;
		SchedlockTime now;
		SchedlockClaimServes expected;
	}			cases[] = {
		{"run_job() first", 1, true, 10, true, 10, 50, SCHEDLOCK_SERVES_RUN_JOB},
		{"run_job() even when nothing else is due", 3, false, 0, false, 0, 50, SCHEDLOCK_SERVES_RUN_JOB},
		{"a due retry before a due slot", 0, true, 40, true, 30, 50, SCHEDLOCK_SERVES_RETRY},
		{"a retry due exactly now", 0, true, 50, true, 30, 50, SCHEDLOCK_SERVES_RETRY},
		{"a retry 1 us ahead waits: the slot", 0, true, 51, true, 30, 50, SCHEDLOCK_SERVES_SLOT},
		{"a slot due exactly now", 0, false, 0, true, 50, 50, SCHEDLOCK_SERVES_SLOT},
		{"nothing due yet", 0, true, 60, true, 70, 50, SCHEDLOCK_SERVES_NOTHING},
		{"no slot, no retry", 0, false, 0, false, 0, 50, SCHEDLOCK_SERVES_NOTHING},
		{"negative queue counts as none", -1, false, 0, true, 10, 50, SCHEDLOCK_SERVES_SLOT},
	};
	int			i;

	for (i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
		check(schedlock_rule_claim_serves(cases[i].manual, cases[i].has_retry,
										  cases[i].retry_at, cases[i].has_slot,
										  cases[i].slot, cases[i].now) == cases[i].expected,
			  cases[i].what);
}

/*
 * test_next_run_at
 *		The earliest of next slot, retry and queued run_job() calls; none
 *		while the job is disabled, whatever it has.
 */
static void
test_next_run_at(void)
{
	static const struct
	{
		const char *what;
		bool		enabled;
		bool		has_slot;
		SchedlockTime slot;
		bool		has_retry;
		SchedlockTime retry_at;
		int32_t		manual;
		SchedlockTime now;
		bool		has;
		SchedlockTime expected;
	}			cases[] = {
		{"nothing: not due", true, false, 0, false, 0, 0, 50, false, 0},
		{"slot only", true, true, 100, false, 0, 0, 50, true, 100},
		{"retry only", true, false, 0, true, 70, 0, 50, true, 70},
		{"retry before the slot", true, true, 100, true, 70, 0, 50, true, 70},
		{"retry after the slot", true, true, 100, true, 170, 0, 50, true, 100},
		{"queued run_job: now", true, true, 100, true, 70, 1, 50, true, 50},
		{"queued run_job, slot earlier than now", true, true, 40, false, 0, 2, 50, true, 40},
		{"queued run_job only", true, false, 0, false, 0, 1, 50, true, 50},
		{"no queued run_job (0)", true, false, 0, false, 0, 0, 50, false, 0},
		{"negative queue counts as none", true, true, 100, false, 0, -1, 50, true, 100},
		{"equal slot and retry", true, true, 100, true, 100, 0, 50, true, 100},
		{"largest instant", true, true, INT64_MAX, false, 0, 0, 50, true, INT64_MAX},
		{"disabled: slot kept apart, not due", false, true, 100, false, 0, 0, 50, false, 0},
		{"disabled with a retry: not due", false, true, 100, true, 70, 0, 50, false, 0},
		{"disabled with queued run_job: not due", false, false, 0, false, 0, 1, 50, false, 0},
		{"disabled one-off instant in the past: not due", false, true, 10, false, 0, 0, 50, false, 0},
	};
	int			i;

	for (i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		SchedlockTime t = -1;
		bool		has = schedlock_rule_next_run_at(cases[i].enabled,
													 cases[i].has_slot, cases[i].slot,
													 cases[i].has_retry, cases[i].retry_at,
													 cases[i].manual, cases[i].now, &t);

		check(has == cases[i].has && (!has || t == cases[i].expected), cases[i].what);
	}
}

/*
 * test_retry
 *		Attempt numbers, backoff, its floor and caps, and the overflow
 *		guard.
 */
static void
test_retry(void)
{
	static const struct
	{
		int32_t		attempt;
		double		delay;
		int64_t		expected;	/* microseconds */
	}			delays[] = {
		{1, 0, 1 * SEC},		/* retry_delay 0 counts as 1 s */
		{1, 0.5, 1 * SEC},		/* below 1 s too */
		{1, -5, 1 * SEC},		/* negative (a hand-written row) too */
		{2, 0, 2 * SEC},		/* 1 s * 2 */
		{1, 10, 10 * SEC},		/* 10 s * 2^0 */
		{2, 10, 20 * SEC},		/* 10 s * 2^1 */
		{3, 10, 40 * SEC},		/* 10 s * 2^2 */
		{4, 1.25, 10 * SEC},	/* 1.25 s * 8 */
		{1, 1.5, 1500000},		/* 1.5 s */
		{1, 0.0000015, 1 * SEC},	/* floor */
		{17, 1, 65536 * SEC},	/* 2^16 s, under a day */
		{18, 1, 86400 * SEC},	/* 2^17 s = 131072 s: capped at 1 day */
		{1, 86400, 86400 * SEC},	/* the longest retry_delay accepted */
		{2, 86400, 86400 * SEC},	/* doubled: capped */
		{1, 1e300, 86400 * SEC},	/* a huge release 1.0 value: capped */
		{21, 0.01, 86400 * SEC},	/* 1 s * 2^20 = 1048576 s: capped */
		{1000000, 0.01, 86400 * SEC},	/* exponent stops at 20: capped */
		{0, 10, 10 * SEC},		/* attempt 0 counts as 1 */
		{21, 0.0001, 86400 * SEC},	/* exponent 20 (not 21): capped */
	};
	static const struct
	{
		const char *what;
		int32_t		attempt;
		int32_t		max_attempts;
		double		delay;
		SchedlockTime failed_at;
		bool		retried;
		int32_t		next_attempt;
		SchedlockTime retry_at;
	}			retries[] = {
		{"first failure of three attempts", 1, 3, 10, 1000, true, 2, 1000 + 10 * SEC},
		{"second failure of three attempts", 2, 3, 10, 1000, true, 3, 1000 + 20 * SEC},
		{"last attempt failed: no retry", 3, 3, 10, 1000, false, 0, 0},
		{"attempt past max_attempts: no retry", 4, 3, 10, 1000, false, 0, 0},
		{"max_attempts 1: no retry", 1, 1, 10, 1000, false, 0, 0},
		{"run_job() run (attempt 0): no retry", 0, 3, 10, 1000, false, 0, 0},
		{"negative attempt: no retry", -1, 3, 10, 1000, false, 0, 0},
		{"largest max_attempts", INT32_MAX - 1, INT32_MAX, 1, 0, true, INT32_MAX, 86400 * SEC},
		{"retry time saturates", 1, 3, 10, INT64_MAX - 5, true, 2, INT64_MAX},
		{"retry before the epoch", 1, 2, 0, -5 * SEC, true, 2, -4 * SEC},
	};
	int			i;

	for (i = 0; i < (int) (sizeof(delays) / sizeof(delays[0])); i++)
	{
		int64_t		got = schedlock_rule_retry_delay(delays[i].attempt, delays[i].delay);
		char		what[120];

		snprintf(what, sizeof(what), "backoff of attempt %d, retry_delay %g s",
				 (int) delays[i].attempt, delays[i].delay);
		check(got == delays[i].expected, what);
		if (got != delays[i].expected)
			printf("      got %lld us\n", (long long) got);
	}
	check(schedlock_rule_retry_delay(1, NAN) == 86400 * SEC,
		  "backoff of a NaN retry_delay is the cap");

	for (i = 0; i < (int) (sizeof(retries) / sizeof(retries[0])); i++)
	{
		int32_t		next = -7;
		SchedlockTime at = -7;
		bool		retried = schedlock_rule_retry(retries[i].attempt,
												   retries[i].max_attempts,
												   retries[i].delay,
												   retries[i].failed_at,
												   &next, &at);

		check(retried == retries[i].retried &&
			  (!retried || (next == retries[i].next_attempt &&
							at == retries[i].retry_at)),
			  retries[i].what);
		if (retried && (next != retries[i].next_attempt || at != retries[i].retry_at))
			printf("      got attempt %d at %lld\n", (int) next, (long long) at);
	}

	check(schedlock_rule_failed_attempt(true, 5) == 0,
		  "a run_job() run counts as attempt 0");
	check(schedlock_rule_failed_attempt(false, 5) == 5,
		  "a scheduled run counts as its attempt");
}

/*
 * test_quarantine
 *		The hold after each dispatch error in a row, and the quarantine.
 */
static void
test_quarantine(void)
{
	static const struct
	{
		int			breaks;
		int			hold_ms;
	}			holds[] = {
		{-5, 1000}, {0, 1000}, {1, 1000}, {2, 2000}, {3, -1}, {4, -1}, {1000, -1},
	};
	static const struct
	{
		const char *what;
		int			breaks;
		SchedlockTime now;
		bool		has_next;
		SchedlockTime next_run_at;
		bool		held;
		SchedlockTime until;
	}			cases[] = {
		{"first error: 1 s", 1, 1000, true, 500, true, 1000 + 1 * SEC},
		{"second error: 2 s", 2, 1000, true, 500, true, 1000 + 2 * SEC},
		{"not due: held from now", 1, 1000, false, 0, true, 1000 + 1 * SEC},
		{"next_run_at later than the hold stays", 1, 1000, true, 10 * SEC, true, 10 * SEC},
		{"third error: quarantined, not before now", 3, 1000, true, 500, false, 1000},
		{"quarantined, later next_run_at stays", 3, 1000, true, 9000, false, 9000},
		{"quarantined, not due", 3, 1000, false, 0, false, 1000},
		{"hold saturates", 2, INT64_MAX - 10, false, 0, true, INT64_MAX},
	};
	int			i;

	check(schedlock_rule_dispatch_breaks(false, 0) == 1, "first dispatch error: 1 in a row");
	check(schedlock_rule_dispatch_breaks(false, 2) == 3, "third dispatch error in a row: 3");
	check(schedlock_rule_dispatch_breaks(true, 2) == 1, "a run recorded since: 1 again");
	check(schedlock_rule_dispatch_breaks(false, INT32_MAX) == INT32_MAX,
		  "the count of dispatch errors stops at its largest");
	for (i = 0; i < (int) (sizeof(holds) / sizeof(holds[0])); i++)
	{
		char		what[80];

		snprintf(what, sizeof(what), "hold after %d errors in a row", holds[i].breaks);
		check(schedlock_quarantine_hold_ms(holds[i].breaks) == holds[i].hold_ms, what);
	}
	for (i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		SchedlockTime until = -1;
		bool		held = schedlock_rule_dispatch_hold(cases[i].breaks, cases[i].now,
														cases[i].has_next,
														cases[i].next_run_at, &until);

		check(held == cases[i].held && until == cases[i].until, cases[i].what);
		if (until != cases[i].until)
			printf("      got %lld\n", (long long) until);
	}
}

/*
 * test_run_statuses
 *		The names of a run's statuses and their sets (run_status.c).
 */
static void
test_run_statuses(void)
{
	static const struct
	{
		const char *name;
		bool		in_progress;
	}			statuses[SCHEDLOCK_RUN_NSTATUSES] = {
		/* in the order of SchedlockRunStatus */
		{"queued", false},
		{"pending", true},
		{"running", true},
		{"succeeded", false},
		{"failed", false},
		{"timed_out", false},
		{"lost", false},
		{"skipped", false},
	};
	static const char *const not_statuses[] = {
		"", "Running", "run", "runningx", "timed-out", "canceled", "queued "
	};
	SchedlockRunStatus st;

	for (int i = 0; i < SCHEDLOCK_RUN_NSTATUSES; i++)
	{
		char		what[80];
		const char *name = statuses[i].name;

		snprintf(what, sizeof(what), "status %d is named %s", i, name);
		check(strcmp(schedlock_run_status_name((SchedlockRunStatus) i), name) == 0, what);
		snprintf(what, sizeof(what), "%s parses back to status %d", name, i);
		check(schedlock_run_status_parse(name, strlen(name), &st) && (int) st == i, what);
		snprintf(what, sizeof(what), "%s: in progress or not", name);
		check(schedlock_run_status_in_progress(st) == statuses[i].in_progress, what);
	}
	for (int i = 0; i < (int) (sizeof(not_statuses) / sizeof(not_statuses[0])); i++)
	{
		char		what[80];

		snprintf(what, sizeof(what), "\"%s\" is no status", not_statuses[i]);
		check(!schedlock_run_status_parse(not_statuses[i], strlen(not_statuses[i]), &st), what);
	}
	/* a text datum's bytes are not terminated: only len of them count */
	check(schedlock_run_status_parse("lostXYZ", 4, &st) && st == SCHEDLOCK_RUN_LOST,
		  "the first 4 bytes of lostXYZ are lost");
	check(strcmp(schedlock_run_status_name((SchedlockRunStatus) SCHEDLOCK_RUN_NSTATUSES), "?") == 0,
		  "a value beyond the enum has no name");
	check(strcmp(SCHEDLOCK_RUN_SQL(TIMED_OUT), "'timed_out'") == 0,
		  "SCHEDLOCK_RUN_SQL(TIMED_OUT) is the literal 'timed_out'");
	check(strcmp(SCHEDLOCK_RUN_IN_PROGRESS_SQL, "'{pending,running}'") == 0,
		  "the in-progress set as an SQL array literal");
	check(strcmp(SCHEDLOCK_RUN_OPEN_SQL, "'{queued,pending,running}'") == 0,
		  "the open set as an SQL array literal");
}

/*
 * main
 *		Run every group; exit 1 when anything failed.
 */
int
main(void)
{
	test_slots();
	test_slot_lists();
	test_misfire_names();
	test_overlap();
	test_claim_serves();
	test_next_run_at();
	test_retry();
	test_quarantine();
	test_run_statuses();
	return unit_report("test_rules");
}
