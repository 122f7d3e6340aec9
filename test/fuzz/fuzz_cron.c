/*-------------------------------------------------------------------------
 *
 * fuzz_cron.c
 *	  libFuzzer harness for the pure C cron engine (src/cron/cron_parse.c,
 *	  src/cron/cron_next.c).
 *
 * Input layout: the first 8 bytes (if present) are an "after" time in
 * seconds since 1970, folded into years 1600-2600; the rest is the schedule
 * text.  For every schedule the parser accepts, the harness follows the
 * next fire times in UTC and aborts when one breaks a property:
 *
 *	  - it is strictly after the previous time;
 *	  - for the five-field form it is on a whole minute and matches every
 *		field (day-of-month/day-of-week rule included);
 *	  - when it is within two days, no minute in between matches;
 *	  - for "N seconds" it is a multiple of N at most N seconds later.
 *
 * Rejected schedules must come with a message, a detail and a hint.
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *		  test/fuzz/fuzz_cron.c src/cron/cron_parse.c src/cron/cron_next.c
 *
 * IDENTIFICATION
 *	  test/fuzz/fuzz_cron.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cron/cron.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * matches
 *		Whether wall-clock minute secs (UTC) matches the schedule, computed
 *		directly from the bitmasks, independently of the search.
 */
static int
matches(const SchedlockCronSchedule *s, int64_t secs)
{
	SchedlockCronTime t;
	int64_t		days;
	int			wday;
	int			last;
	int			dom;
	int			dow;

	schedlock_cron_time_from_seconds(secs, &t);
	days = schedlock_cron_days_from_civil(t.year, t.month, t.day);
	wday = (int) (((days + 4) % 7 + 7) % 7);
	last = schedlock_cron_days_in_month(t.year, t.month);

	if (!(s->minutes >> t.minute & 1) || !(s->hours >> t.hour & 1) ||
		!(s->months >> t.month & 1))
		return 0;
	dom = (s->flags & SCHEDLOCK_CRON_LAST_DAY) ? t.day == last : (int) (s->days >> t.day & 1);
	dow = s->weekdays >> wday & 1;
	if ((s->flags & (SCHEDLOCK_CRON_DOM_STAR | SCHEDLOCK_CRON_DOW_STAR)) == 0)
		return dom || dow;
	return dom && dow;
}

/*
 * LLVMFuzzerTestOneInput
 *		libFuzzer entry point.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	SchedlockCronSchedule s;
	SchedlockCronError err;
	char text[	1200];
	int64_t		after = 1704067200; /* 2024-01-01 */
	int			i;

	if (size >= 8)
	{
		uint64_t	raw;

		memcpy(&raw, data, 8);
		/* fold into 1600-01-01 .. about 2600 */
		after = (int64_t) (raw % UINT64_C(31556952000)) - INT64_C(11676096000);
		data += 8;
		size -= 8;
	}
	if (size >= sizeof(text))
		size = sizeof(text) - 1;
	memcpy(text, data, size);
	text[		size] = '\0';

	if (!schedlock_cron_parse(text, &s, &err))
	{
		if (err.message[0] == '\0' || err.detail[0] == '\0' || err.hint == NULL)
			abort();
		return 0;
	}

	/* no bit outside a field's values, wrap-around ranges included */
	if ((s.minutes >> 60) != 0 || (s.hours >> 24) != 0 || (s.days & 1) != 0 ||
		(s.months & ~UINT16_C(0x1FFE)) != 0 || (s.weekdays >> 7) != 0)
		abort();
	/* pg_cron's readings of an accepted schedule: accepted, bits in range */
	for (i = SCHEDLOCK_CRON_DIALECT_PG_CRON_1_5; i <= SCHEDLOCK_CRON_DIALECT_PG_CRON_1_6; i++)
	{
		SchedlockCronSchedule p;

		if (!schedlock_cron_parse_dialect(text, (SchedlockCronDialect) i, &p) ||
			(p.minutes >> 60) != 0 || (p.hours >> 24) != 0 || (p.days & 1) != 0 ||
			(p.months & ~UINT16_C(0x1FFE)) != 0 || (p.weekdays >> 7) != 0 ||
			p.flags != s.flags)
			abort();
	}

	for (i = 0; i < 4; i++)
	{
		int64_t		next;

		if (!schedlock_cron_next_utc(&s, after, &next))
		{
			/* only @reboot may have no next time this close to now */
			if (!(s.flags & SCHEDLOCK_CRON_REBOOT))
				abort();
			return 0;
		}
		if (s.flags & SCHEDLOCK_CRON_REBOOT)
			abort();
		if (next <= after)
			abort();
		if (s.flags & SCHEDLOCK_CRON_INTERVAL)
		{
			if (next % s.interval_seconds != 0 || next - after > s.interval_seconds)
				abort();
		}
		else
		{
			int64_t		m;

			if (next % 60 != 0 || !matches(&s, next))
				abort();
			if (next - after <= 2 * 86400)
				for (m = (after / 60 + 1) * 60; m < next; m += 60)
					if (m > after && matches(&s, m))
						abort();
		}
		after = next;
	}
	return 0;
}
