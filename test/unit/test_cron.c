/*-------------------------------------------------------------------------
 *
 * test_cron.c
 *	  Plain C unit tests of the cron parser and search
 *	  (src/cron/cron_parse.c, src/cron/cron_next.c).
 *
 * Build and run (no server needed):
 *	  cc -O2 -Wall -Isrc/cron -Itest/unit -o test_cron test/unit/test_cron.c \
 *		  src/cron/cron_parse.c src/cron/cron_next.c && ./test_cron
 *
 * Prints one line per failure and a summary; exits 1 when anything failed.
 * The expected values are worked out from the calendar by hand
 * (2024-01-01 was a Monday, 2100 is not a leap year, 2000 was).
 *
 * IDENTIFICATION
 *	  test/unit/test_cron.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cron/cron.h"
#include "unit.h"

/*
 * secs
 *		Seconds since 1970 of a UTC date and time.
 */
static int64_t
secs(int y, int mo, int d, int h, int mi, int s)
{
	SchedlockCronTime t = {y, mo, d, h, mi, s};

	return schedlock_cron_seconds_from_time(&t);
}

/*
 * check_next
 *		The next UTC fire time of schedule after a time equals the expected
 *		one (expect_none: there is none).
 */
static void
check_next(const char *schedule, int64_t after, int64_t expected, int expect_none)
{
	SchedlockCronSchedule s;
	SchedlockCronError err;
	int64_t		next = 0;
	char		what[300];
	int			found;

	snprintf(what, sizeof(what), "next of \"%s\" after %lld", schedule, (long long) after);
	if (!schedlock_cron_parse(schedule, &s, &err))
	{
		check(0, what);
		printf("      parse error: %s\n", err.message);
		return;
	}
	found = schedlock_cron_next_utc(&s, after, &next);
	if (expect_none)
		check(!found, what);
	else
	{
		check(found && next == expected, what);
		if (!found || next != expected)
			printf("      got %lld, expected %lld\n", (long long) next, (long long) expected);
	}
}

/*
 * check_reject
 *		The schedule is rejected with an error about the given field whose
 *		message contains the given text.
 */
static void
check_reject(const char *schedule, SchedlockCronField field, const char *in_message)
{
	SchedlockCronSchedule s;
	SchedlockCronError err;
	char		what[300];
	int			ok;

	memset(&err, 0, sizeof(err));
	snprintf(what, sizeof(what), "reject \"%s\"", schedule);
	ok = !schedlock_cron_parse(schedule, &s, &err) && err.field == field &&
		strstr(err.message, in_message) != NULL && err.detail[0] != '\0' &&
		err.hint != NULL;
	check(ok, what);
	if (!ok)
		printf("      field %d, message \"%s\"\n", (int) err.field, err.message);
}

/*
 * check_instead
 *		A refused interval says in its detail what to write instead.
 */
static void
check_instead(const char *schedule, const char *in_detail)
{
	SchedlockCronSchedule s;
	SchedlockCronError err;
	char		what[300];
	int			ok;

	memset(&err, 0, sizeof(err));
	snprintf(what, sizeof(what), "\"%s\" says to write %s", schedule, in_detail);
	ok = !schedlock_cron_parse(schedule, &s, &err) &&
		strstr(err.detail, in_detail) != NULL;
	check(ok, what);
	if (!ok)
		printf("      detail \"%s\"\n", err.detail);
}

/*
 * test_calendar
 *		Leap years, month lengths and day counts.
 */
static void
test_calendar(void)
{
	check(schedlock_cron_is_leap_year(2000), "2000 is a leap year");
	check(schedlock_cron_is_leap_year(2024), "2024 is a leap year");
	check(!schedlock_cron_is_leap_year(2100), "2100 is not a leap year");
	check(!schedlock_cron_is_leap_year(1900), "1900 is not a leap year");
	check(!schedlock_cron_is_leap_year(2023), "2023 is not a leap year");
	check(schedlock_cron_is_leap_year(0), "year 0 (1 BC) is a leap year");
	check(schedlock_cron_days_in_month(2024, 2) == 29, "Feb 2024 has 29 days");
	check(schedlock_cron_days_in_month(2100, 2) == 28, "Feb 2100 has 28 days");
	check(schedlock_cron_days_in_month(2024, 4) == 30, "April has 30 days");
	check(schedlock_cron_days_in_month(2024, 12) == 31, "December has 31 days");
	check(schedlock_cron_days_from_civil(1970, 1, 1) == 0, "1970-01-01 is day 0");
	check(schedlock_cron_days_from_civil(2000, 1, 1) == 10957, "2000-01-01 is day 10957");
	check(schedlock_cron_days_from_civil(1969, 12, 31) == -1, "1969-12-31 is day -1");
	check(secs(2024, 1, 1, 0, 0, 0) == 1704067200, "2024-01-01 is 1704067200");
	{
		SchedlockCronTime t;

		schedlock_cron_time_from_seconds(-1, &t);
		check(t.year == 1969 && t.month == 12 && t.day == 31 && t.hour == 23 &&
			  t.minute == 59 && t.second == 59, "second -1 is 1969-12-31 23:59:59");
		schedlock_cron_time_from_seconds(secs(2100, 3, 1, 12, 34, 56), &t);
		check(t.year == 2100 && t.month == 3 && t.day == 1 && t.hour == 12 &&
			  t.minute == 34 && t.second == 56, "round trip 2100-03-01 12:34:56");
	}
}

/*
 * test_masks
 *		The bitmasks the parser produces.
 */
static void
test_masks(void)
{
	SchedlockCronSchedule s;
	SchedlockCronError err;

	check(schedlock_cron_parse("*/15 1-3 1,15 jan-mar mon-fri", &s, &err), "parse a full schedule");
	check(s.minutes == ((1ULL << 0) | (1ULL << 15) | (1ULL << 30) | (1ULL << 45)), "minutes */15");
	check(s.hours == 0xE, "hours 1-3");
	check(s.days == ((1u << 1) | (1u << 15)), "days 1,15");
	check(s.months == 0xE, "months jan-mar");
	check(s.weekdays == 0x3E, "weekdays mon-fri");
	check(s.flags == 0, "no star flags");

	check(schedlock_cron_parse("0 0 * * 7", &s, &err) && s.weekdays == 1, "7 is Sunday");
	check(schedlock_cron_parse("0 0 * * 5-7", &s, &err) && s.weekdays == 0x61, "5-7 is Fri-Sun");
	check(schedlock_cron_parse("0 0 * * */2", &s, &err) && s.weekdays == 0x55 &&
		  (s.flags & SCHEDLOCK_CRON_DOW_STAR), "*/2 weekdays are 0,2,4,6 and starred");
	check(schedlock_cron_parse("0 0 $ * *", &s, &err) &&
		  (s.flags & SCHEDLOCK_CRON_LAST_DAY) && s.days == 0, "$ sets LAST_DAY");
	check(schedlock_cron_parse("@reboot", &s, &err) && s.flags == SCHEDLOCK_CRON_REBOOT, "@reboot");
	check(schedlock_cron_parse("45 seconds", &s, &err) &&
		  s.flags == SCHEDLOCK_CRON_INTERVAL && s.interval_seconds == 45, "45 seconds");
	check(schedlock_cron_parse("@weekly", &s, &err) && s.weekdays == 1 &&
		  (s.flags & SCHEDLOCK_CRON_DOM_STAR), "@weekly is Sunday");

	/* wrap-around ranges: on to the end of the field, then from its start */
	check(schedlock_cron_parse("0 13-6 * * *", &s, &err) && s.hours == 0xFFE07F,
		  "hours 13-6 are 13-23 and 0-6");
	check(schedlock_cron_parse("0 22-2 * * *", &s, &err) && s.hours == 0xC00007,
		  "hours 22-2 are 22, 23, 0, 1, 2");
	check(schedlock_cron_parse("0 22-2/2 * * *", &s, &err) &&
		  s.hours == ((1u << 22) | (1u << 0) | (1u << 2)),
		  "hours 22-2/2 are 22, 0, 2: the step walks across the wrap");
	check(schedlock_cron_parse("58-2 * * * *", &s, &err) &&
		  s.minutes == ((1ULL << 58) | (1ULL << 59) | 0x7ULL),
		  "minutes 58-2 are 58, 59, 0, 1, 2");
	check(schedlock_cron_parse("5-3 * * * *", &s, &err) &&
		  s.minutes == (((1ULL << 60) - 1) & ~(1ULL << 4)),
		  "minutes 5-3 are every minute but 4");
	check(schedlock_cron_parse("0 0 28-3 * *", &s, &err) &&
		  s.days == (0xF0000000u | 0xEu), "days 28-3 are 28-31 and 1-3");
	check(schedlock_cron_parse("0 0 1 nov-feb *", &s, &err) &&
		  s.months == ((1u << 11) | (1u << 12) | (1u << 1) | (1u << 2)),
		  "months nov-feb are Nov, Dec, Jan, Feb");
	check(schedlock_cron_parse("0 0 1 dec-jan/2 *", &s, &err) && s.months == (1u << 12),
		  "months dec-jan/2 are December only");
	check(schedlock_cron_parse("0 0 * * fri-mon", &s, &err) && s.weekdays == 0x63,
		  "weekdays fri-mon are Fri, Sat, Sun, Mon");
	check(schedlock_cron_parse("0 0 * * sat-sun", &s, &err) && s.weekdays == 0x41,
		  "weekdays sat-sun are Sat and Sun");
	check(schedlock_cron_parse("0 0 * * mon-sun", &s, &err) && s.weekdays == 0x7F,
		  "weekdays mon-sun are the whole week");
	check(schedlock_cron_parse("0 0 * * 7-2", &s, &err) && s.weekdays == 0x07,
		  "weekdays 7-2 are Sun, Mon, Tue");
	check(schedlock_cron_parse("0 0 * * fri-tue/2", &s, &err) && s.weekdays == 0x25,
		  "weekdays fri-tue/2 are Fri, Sun, Tue");
	check(schedlock_cron_parse("0 0 * * 5-1", &s, &err) && !(s.flags & SCHEDLOCK_CRON_DOW_STAR),
		  "a wrapped weekday range is a restriction, not a star");
	check(schedlock_cron_parse("0 0 * * * ", &s, &err), "trailing blank");
	check(sizeof(SchedlockCronSchedule) <= 24, "schedule struct is compact");
}

/*
 * test_pg_cron_dialects
 *		What pg_cron makes of the schedules where it differs from schedlock
 *		(read from its parser: entry.c, get_range and set_range, and
 *		bitstring.h's bit_nset, in 1.4.2, 1.5.2 and 1.6.7).
 */
static void
test_pg_cron_dialects(void)
{
	SchedlockCronSchedule s;
	const SchedlockCronDialect v15 = SCHEDLOCK_CRON_DIALECT_PG_CRON_1_5;
	const SchedlockCronDialect v16 = SCHEDLOCK_CRON_DIALECT_PG_CRON_1_6;

	/* 1.6: from lo to the end of its byte, from the start of hi's byte */
	check(schedlock_cron_parse_dialect("0 13-6 * * *", v16, &s) &&
		  s.hours == (0xE000u | 0x7Fu), "pg_cron 1.6: hours 13-6 are 13-15 and 0-6");
	check(schedlock_cron_parse_dialect("0 22-2 * * *", v16, &s) && s.hours == 0xC00007,
		  "pg_cron 1.6: hours 22-2 are 22, 23, 0, 1, 2");
	check(schedlock_cron_parse_dialect("30-10 * * * *", v16, &s) &&
		  s.minutes == ((1ULL << 30) | (1ULL << 31) | (7ULL << 8)),
		  "pg_cron 1.6: minutes 30-10 are 30, 31, 8, 9, 10");
	check(schedlock_cron_parse_dialect("58-2 * * * *", v16, &s) &&
		  s.minutes == ((1ULL << 58) | (1ULL << 59) | 7ULL),
		  "pg_cron 1.6: minutes 58-2 are 58, 59, 0, 1, 2 (60-63 dropped)");
	check(schedlock_cron_parse_dialect("5-3 * * * *", v16, &s) && s.minutes == 0,
		  "pg_cron 1.6: minutes 5-3 (one byte) are none");
	check(schedlock_cron_parse_dialect("0 0 28-3 * *", v16, &s) &&
		  s.days == (0xF0000000u | 0xEu), "pg_cron 1.6: days 28-3 are 28-31 and 1-3");
	check(schedlock_cron_parse_dialect("0 0 1 nov-feb *", v16, &s) &&
		  s.months == ((1u << 11) | (1u << 12) | (1u << 1) | (1u << 2)),
		  "pg_cron 1.6: months nov-feb are Nov, Dec, Jan, Feb");
	check(schedlock_cron_parse_dialect("0 0 * * fri-mon", v16, &s) && s.weekdays == 0,
		  "pg_cron 1.6: weekdays fri-mon are none");
	check(schedlock_cron_parse_dialect("0 22-2/2 * * *", v16, &s) && s.hours == 0,
		  "pg_cron 1.6: hours 22-2/2 are none");
	check(schedlock_cron_parse_dialect("@yearly", v16, &s) && s.months == 0,
		  "pg_cron 1.6: @yearly has no month");
	check(schedlock_cron_parse_dialect("@annually", v15, &s) && s.months == 2,
		  "pg_cron 1.5: @annually is January");
	check(schedlock_cron_parse_dialect("0 22-2 * * *", v15, &s) && s.hours == 0,
		  "pg_cron 1.5: hours 22-2 are none");
	check(schedlock_cron_parse_dialect("0 1,22-2 * * *", v15, &s) && s.hours == 2,
		  "pg_cron 1.5: hours 1,22-2 are 1");
	check(schedlock_cron_parse_dialect("0 9 * * mon-fri", v16, &s) && s.hours == (1u << 9) &&
		  s.weekdays == 0x3E, "pg_cron 1.6: ordinary ranges as schedlock");
	check(!schedlock_cron_parse_dialect("0 0 30 2 *", v16, &s),
		  "pg_cron dialect: a schedule schedlock refuses is refused");
}

/*
 * test_rejections
 *		Each kind of rejection names the right field.
 */
static void
test_rejections(void)
{
	check_reject("5% * * * *", SCHEDLOCK_CRON_FIELD_MINUTE, "minute");
	check_reject("0 1#2 * * *", SCHEDLOCK_CRON_FIELD_HOUR, "\"1#2\"");
	check_reject("*/2-4 * * * *", SCHEDLOCK_CRON_FIELD_MINUTE, "*/2-4");
	check_reject("0 0 * * * *", SCHEDLOCK_CRON_FIELD_SCHEDULE, "sixth field");
	check_reject("0 0 * *", SCHEDLOCK_CRON_FIELD_SCHEDULE, "missing day-of-week");
	check_reject("*/0 * * * *", SCHEDLOCK_CRON_FIELD_MINUTE, "*/0");
	check_reject("0 0 */31 * *", SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH, "*/31");
	check_reject("0 0 * january *", SCHEDLOCK_CRON_FIELD_MONTH, "january");
	check_reject("0 0 * * monday", SCHEDLOCK_CRON_FIELD_DAY_OF_WEEK, "monday");
	check_reject("5/10 * * * *", SCHEDLOCK_CRON_FIELD_MINUTE, "5/10");
	check_reject("60 * * * *", SCHEDLOCK_CRON_FIELD_MINUTE, "60");
	check_reject("0 0 32 * *", SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH, "32");
	check_reject("0 0 * 13 *", SCHEDLOCK_CRON_FIELD_MONTH, "13");
	check_reject("0 0 * * 8", SCHEDLOCK_CRON_FIELD_DAY_OF_WEEK, "8");
	check_reject("0 0 30 2 *", SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH, "\"30\"");
	check_reject("0 0 31 4 *", SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH, "\"31\"");
	check_reject("0 0 30-31 2 *", SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH, "\"30-31\"");
	check_reject("0 22-2/24 * * *", SCHEDLOCK_CRON_FIELD_HOUR, "22-2/24");
	check_reject("0 22-24 * * *", SCHEDLOCK_CRON_FIELD_HOUR, "22-24");
	check_reject("", SCHEDLOCK_CRON_FIELD_SCHEDULE, "empty");
	check_reject(" \t ", SCHEDLOCK_CRON_FIELD_SCHEDULE, "empty");
	check_reject(NULL, SCHEDLOCK_CRON_FIELD_SCHEDULE, "null");
	check_reject("@daily now", SCHEDLOCK_CRON_FIELD_KEYWORD, "after cron keyword");
	check_reject("@often", SCHEDLOCK_CRON_FIELD_KEYWORD, "@often");
	check_reject("60 seconds", SCHEDLOCK_CRON_FIELD_INTERVAL, "60");
	check_reject("0 seconds", SCHEDLOCK_CRON_FIELD_INTERVAL, "0");
	check_instead("60 seconds", "\"* * * * *\"");
	check_instead("120 seconds", "\"*/2 * * * *\"");
	check_instead("90 seconds", "\"*/5 * * * *\"");
	check_reject("1 minute", SCHEDLOCK_CRON_FIELD_SCHEDULE, "is not a cron schedule");
	check_instead("1 minute", "\"* * * * *\"");
	check_instead("15 minutes", "\"*/15 * * * *\".");
	check_instead("7 mins", "\"*/7 * * * *\" (it restarts at each full hour)");
	check_instead("2 Hours", "\"0 */2 * * *\"");
	check_instead(" 1 day ", "\"0 0 * * *\"");
	check_instead("1 week", "\"0 0 * * 0\"");
	check_instead("3 weeks", "\"*/5 * * * *\"");
	check_reject("5 fortnights", SCHEDLOCK_CRON_FIELD_SCHEDULE, "missing");
	{
		char		longtext[1100];

		memset(longtext, '1', sizeof(longtext) - 1);
		longtext[sizeof(longtext) - 1] = '\0';
		check_reject(longtext, SCHEDLOCK_CRON_FIELD_SCHEDULE, "too long");
	}
	/* OR rule: day 30 never in February, but Mondays are */
	{
		SchedlockCronSchedule s;
		SchedlockCronError err;

		check(schedlock_cron_parse("0 0 30 2 1", &s, &err), "30 2 with a weekday can fire");
		check(schedlock_cron_parse("0 0 29 2 *", &s, &err), "Feb 29 can fire");
	}
}

/*
 * test_next
 *		Next fire times in UTC.
 */
static void
test_next(void)
{
	int64_t		jan1 = secs(2024, 1, 1, 0, 0, 0);

	check_next("* * * * *", jan1, jan1 + 60, 0);
	check_next("* * * * *", jan1 + 30, jan1 + 60, 0);
	check_next("0 0 1 1 *", jan1, secs(2025, 1, 1, 0, 0, 0), 0);
	check_next("0 0 1 1 *", jan1 - 1, jan1, 0);
	check_next("0 0 29 2 *", secs(2096, 3, 1, 0, 0, 0), secs(2104, 2, 29, 0, 0, 0), 0);
	check_next("0 0 29 2 *", secs(1999, 3, 1, 0, 0, 0), secs(2000, 2, 29, 0, 0, 0), 0);
	check_next("0 0 $ 2 *", secs(2100, 1, 1, 0, 0, 0), secs(2100, 2, 28, 0, 0, 0), 0);
	check_next("0 0 $ * *", secs(2024, 1, 31, 0, 0, 0), secs(2024, 2, 29, 0, 0, 0), 0);
	check_next("0 0 $ * *", secs(2024, 3, 31, 0, 0, 0), secs(2024, 4, 30, 0, 0, 0), 0);
	check_next("0 0 * * 0", jan1, secs(2024, 1, 7, 0, 0, 0), 0);
	check_next("0 0 * * 7", jan1, secs(2024, 1, 7, 0, 0, 0), 0);
	check_next("0 9 * * mon-fri", secs(2024, 1, 5, 9, 0, 0), secs(2024, 1, 8, 9, 0, 0), 0);
	check_next("0 0 13 * 5", secs(2024, 1, 12, 0, 0, 0), secs(2024, 1, 13, 0, 0, 0), 0);
	check_next("0 0 */2 * 1", jan1, secs(2024, 1, 15, 0, 0, 0), 0);
	check_next("0 0 31 * *", secs(2024, 3, 31, 0, 0, 0), secs(2024, 5, 31, 0, 0, 0), 0);
	check_next("*/7 * * * *", secs(2024, 1, 1, 0, 56, 0), secs(2024, 1, 1, 1, 0, 0), 0);
	check_next("0 */6 * * *", secs(2024, 1, 1, 18, 0, 0), secs(2024, 1, 2, 0, 0, 0), 0);
	check_next("@weekly", jan1, secs(2024, 1, 7, 0, 0, 0), 0);
	check_next("0 22-2 * * *", secs(2024, 1, 1, 3, 0, 0), secs(2024, 1, 1, 22, 0, 0), 0);
	check_next("0 22-2 * * *", secs(2024, 1, 1, 23, 0, 0), secs(2024, 1, 2, 0, 0, 0), 0);
	check_next("0 0 28-3 * *", secs(2024, 2, 4, 0, 0, 0), secs(2024, 2, 28, 0, 0, 0), 0);
	check_next("0 0 28-3 * *", secs(2024, 2, 29, 0, 0, 0), secs(2024, 3, 1, 0, 0, 0), 0);
	check_next("0 0 1 nov-feb *", secs(2024, 2, 1, 0, 0, 0), secs(2024, 11, 1, 0, 0, 0), 0);

	/*
	 * 2024-01-05 was a Friday; the next of fri-mon after Monday 8th is Fri
	 * 12th
	 */
	check_next("0 0 * * fri-mon", secs(2024, 1, 8, 0, 0, 0), secs(2024, 1, 12, 0, 0, 0), 0);
	check_next("@reboot", jan1, 0, 1);
	check_next("30 seconds", jan1, jan1 + 30, 0);
	check_next("59 seconds", jan1, jan1 + 5, 0);	/* 1704067200 % 59 == 54 */
	check_next("7 seconds", -1, 0, 0);
	check_next("7 seconds", -8, -7, 0);
	check_next("0 0 1 1 *", secs(1969, 6, 1, 0, 0, 0), 0, 0);
	check_next("0 12 * * *", secs(-100, 1, 1, 12, 0, 0), secs(-100, 1, 2, 12, 0, 0), 0);
}

/*
 * test_local_edges
 *		schedlock_cron_next_local on invalid input and at the end of the
 *		supported years.
 */
static void
test_local_edges(void)
{
	SchedlockCronSchedule s;
	SchedlockCronError err;
	SchedlockCronTime bad = {2023, 2, 29, 0, 0, 0};
	SchedlockCronTime late = {SCHEDLOCK_CRON_MAX_YEAR, 12, 31, 23, 59, 0};
	SchedlockCronTime next;

	schedlock_cron_parse("* * * * *", &s, &err);
	check(!schedlock_cron_next_local(&s, &bad, &next), "Feb 29 2023 is not a valid start");
	check(!schedlock_cron_next_local(&s, &late, &next), "no time after the last supported year");
	schedlock_cron_parse("30 seconds", &s, &err);
	check(!schedlock_cron_next_local(&s, &bad, &next), "interval schedules have no wall time");
}

/*
 * test_speed
 *		A schedule that fires once a year (and one that fires once in 28
 *		years) must answer in microseconds: no minute-by-minute scan.
 */
static void
test_speed(void)
{
	SchedlockCronSchedule yearly;
	SchedlockCronSchedule rare;
	SchedlockCronError err;
	int64_t		t = secs(2024, 1, 1, 0, 0, 1);
	int64_t		next;
	clock_t		start;
	double		per_call_us;
	int			i;
	int			n = 200000;

	schedlock_cron_parse("59 23 31 12 *", &yearly, &err);
	schedlock_cron_parse("0 0 * 2 */7", &rare, &err);	/* Feb Sundays */
	start = clock();
	for (i = 0; i < n; i++)
	{
		schedlock_cron_next_utc(&yearly, t + i * 600, &next);
		schedlock_cron_next_utc(&rare, t + i * 600, &next);
	}
	per_call_us = (double) (clock() - start) / CLOCKS_PER_SEC * 1e6 / (2.0 * n);
	printf("next-time search: %.3f us per call\n", per_call_us);
	check(per_call_us < 5.0, "a yearly schedule answers in microseconds");
}

/*
 * main
 *		Run every group and report.
 */
int
main(void)
{
	test_calendar();
	test_masks();
	test_rejections();
	test_pg_cron_dialects();
	test_next();
	test_local_edges();
	test_speed();
	return unit_report("test_cron");
}
