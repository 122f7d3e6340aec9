/*-------------------------------------------------------------------------
 *
 * cron_next.c
 *	  The next-fire-time search of a parsed cron schedule, and the calendar
 *	  it counts on, in plain C.
 *
 * The search finds the next matching wall-clock minute by jumping a field
 * at a time (month, then day, then hour, then minute) with bit operations,
 * so even a schedule that fires once in decades answers in microseconds.
 *
 * Nothing here knows about time zones or PostgreSQL; see cron_sql.c.
 *
 * IDENTIFICATION
 *	  src/cron/cron_next.c
 *
 *-------------------------------------------------------------------------
 */
#include "cron.h"

#include <string.h>

#define SECS_PER_DAY	INT64_C(86400)

/* Earliest year the calendar helpers and the search accept. */
#define CRON_MIN_YEAR	(-4800)

/*
 * schedlock_cron_is_leap_year
 *		Gregorian leap year rule (2000 is a leap year, 2100 is not).
 */
bool
schedlock_cron_is_leap_year(int year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

/*
 * schedlock_cron_days_in_month
 *		Length of a month (1-12) in a year.
 */
int
schedlock_cron_days_in_month(int year, int month)
{
	static const int lengths[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (month == 2 && schedlock_cron_is_leap_year(year))
		return 29;
	return lengths[month - 1];
}

/*
 * schedlock_cron_days_from_civil
 *		Days from 1970-01-01 to the given proleptic Gregorian date, using
 *		400-year eras so that negative years work too.
 */
int64_t
schedlock_cron_days_from_civil(int year, int month, int day)
{
	int64_t		y = (int64_t) year - (month <= 2 ? 1 : 0);
	int64_t		era = (y >= 0 ? y : y - 399) / 400;
	int64_t		yoe = y - era * 400;	/* 0..399 */
	int64_t		mp = (month + 9) % 12;	/* March = 0 */
	int64_t		doy = (153 * mp + 2) / 5 + day - 1;
	int64_t		doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

/*
 * civil_from_days
 *		Inverse of schedlock_cron_days_from_civil.
 */
static void
civil_from_days(int64_t days, int *year, int *month, int *day)
{
	int64_t		z = days + 719468;
	int64_t		era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t		doe = z - era * 146097;
	int64_t		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t		mp = (5 * doy + 2) / 153;
	int			m = (int) (mp < 10 ? mp + 3 : mp - 9);

	*day = (int) (doy - (153 * mp + 2) / 5 + 1);
	*month = m;
	*year = (int) (yoe + era * 400 + (m <= 2 ? 1 : 0));
}

/*
 * floor_div
 *		Integer division rounding towards minus infinity (b > 0).
 */
static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t		q = a / b;

	if ((a % b) < 0)
		q--;
	return q;
}

/*
 * schedlock_cron_time_from_seconds
 *		Broken-down UTC time of a count of seconds since 1970-01-01.  The
 *		caller keeps secs within the years CRON_MIN_YEAR..MAX_YEAR.
 */
void
schedlock_cron_time_from_seconds(int64_t secs, SchedlockCronTime *tm)
{
	int64_t		days = floor_div(secs, SECS_PER_DAY);
	int64_t		rem = secs - days * SECS_PER_DAY;

	civil_from_days(days, &tm->year, &tm->month, &tm->day);
	tm->hour = (int) (rem / 3600);
	tm->minute = (int) (rem / 60 % 60);
	tm->second = (int) (rem % 60);
}

/*
 * schedlock_cron_seconds_from_time
 *		Seconds since 1970-01-01 of a broken-down time taken as UTC.
 */
int64_t
schedlock_cron_seconds_from_time(const SchedlockCronTime *tm)
{
	return schedlock_cron_days_from_civil(tm->year, tm->month, tm->day) * SECS_PER_DAY +
		tm->hour * 3600 + tm->minute * 60 + tm->second;
}

/*
 * weekday_of
 *		Day of the week (0 = Sunday) of a date.
 */
static int
weekday_of(int year, int month, int day)
{
	int64_t		days = schedlock_cron_days_from_civil(year, month, day);
	int64_t		w = (days + 4) % 7; /* 1970-01-01 was a Thursday */

	return (int) (w < 0 ? w + 7 : w);
}

/*
 * day_mask
 *		Bitmask (bits 1-31) of the days of a month the schedule matches,
 *		applying the day-of-month / day-of-week rule: when both fields are
 *		restricted (neither began with '*'), a day matches if either does;
 *		otherwise it must match both.
 */
static uint32_t
day_mask(const SchedlockCronSchedule *s, int year, int month)
{
	int			ndays = schedlock_cron_days_in_month(year, month);
	uint32_t	valid = (uint32_t) (((UINT64_C(1) << (ndays + 1)) - 1) & ~UINT64_C(1));
	uint32_t	dom;
	uint32_t	dow;
	uint32_t	week = 0;
	int			first = weekday_of(year, month, 1);
	int			k;

	if (s->flags & SCHEDLOCK_CRON_LAST_DAY)
		dom = UINT32_C(1) << ndays;
	else
		dom = s->days & valid;

	/* bit k of week: day k+1 falls on a matching weekday */
	for (k = 0; k < 7; k++)
		if (s->weekdays & (1u << ((first + k) % 7)))
			week |= 1u << k;
	dow = (uint32_t) (((uint64_t) week | ((uint64_t) week << 7) | ((uint64_t) week << 14) |
					   ((uint64_t) week << 21) | ((uint64_t) week << 28)) << 1) & valid;

	if ((s->flags & (SCHEDLOCK_CRON_DOM_STAR | SCHEDLOCK_CRON_DOW_STAR)) == 0)
		return dom | dow;
	return dom & dow;
}

/*
 * lowest_bit
 *		Index of the lowest set bit of a non-zero mask.
 */
static int
lowest_bit(uint64_t mask)
{
	return __builtin_ctzll(mask);
}

/*
 * schedlock_cron_never_fires
 *		Whether a five-field schedule can never match any day: the day must
 *		match the day-of-month field (day-of-week began with '*') and no
 *		selected month ever has a selected day.  February counts as having
 *		29 days; the weekday rule cannot make a day impossible, since every
 *		date falls on every weekday over the 400-year Gregorian cycle.
 */
bool
schedlock_cron_never_fires(const SchedlockCronSchedule *s)
{
	static const int longest[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			m;

	if (s->flags & SCHEDLOCK_CRON_LAST_DAY)
		return false;
	if ((s->flags & (SCHEDLOCK_CRON_DOM_STAR | SCHEDLOCK_CRON_DOW_STAR)) == 0)
		return false;			/* either field may match */
	for (m = 1; m <= 12; m++)
	{
		uint32_t	valid = (uint32_t) (((UINT64_C(1) << (longest[m] + 1)) - 1) & ~UINT64_C(1));

		if ((s->months & (1u << m)) && (s->days & valid))
			return false;
	}
	return true;
}

/*
 * valid_time
 *		Whether a broken-down time is a real date and time in the years the
 *		search supports.
 */
static bool
valid_time(const SchedlockCronTime *t)
{
	if (t->year < CRON_MIN_YEAR || t->year > SCHEDLOCK_CRON_MAX_YEAR)
		return false;
	if (t->month < 1 || t->month > 12)
		return false;
	if (t->day < 1 || t->day > schedlock_cron_days_in_month(t->year, t->month))
		return false;
	return t->hour >= 0 && t->hour <= 23 && t->minute >= 0 && t->minute <= 59 &&
		t->second >= 0 && t->second <= 60;
}

/*
 * schedlock_cron_next_local
 *		Find the first wall-clock minute strictly after *after matching a
 *		five-field schedule.  Each step moves to the next candidate month,
 *		then day (one bitmask per month), then hour, then minute, so the
 *		loop runs a handful of times per month or year skipped.
 */
bool
schedlock_cron_next_local(const SchedlockCronSchedule *s,
						  const SchedlockCronTime *after,
						  SchedlockCronTime *next)
{
	int			y,
				mo,
				d,
				h,
				mi;
	int			start_year;

	if (s->flags & (SCHEDLOCK_CRON_REBOOT | SCHEDLOCK_CRON_INTERVAL))
		return false;
	if (s->minutes == 0 || s->hours == 0 || s->months == 0 ||
		(s->days == 0 && !(s->flags & SCHEDLOCK_CRON_LAST_DAY)) || s->weekdays == 0)
		return false;
	if (!valid_time(after))
		return false;

	y = after->year;
	mo = after->month;
	d = after->day;
	h = after->hour;
	mi = after->minute + 1;		/* the search is strictly after */
	start_year = y;

	for (;;)
	{
		uint64_t	m;

		/* normalise carries from the steps below */
		if (mi > 59)
		{
			mi = 0;
			h++;
		}
		if (h > 23)
		{
			h = 0;
			mi = 0;
			d++;
		}
		if (d > 31)
		{
			d = 1;
			h = 0;
			mi = 0;
			mo++;
		}
		if (mo > 12)
		{
			mo = 1;
			d = 1;
			h = 0;
			mi = 0;
			y++;
		}
		/* 400 years repeat the calendar; past that nothing will match */
		if (y > SCHEDLOCK_CRON_MAX_YEAR || y > start_year + 401)
			return false;

		/* month */
		m = (uint64_t) s->months >> mo;
		if (m == 0)
		{
			mo = 13;			/* next year */
			continue;
		}
		if ((m & 1) == 0)
		{
			mo += lowest_bit(m);
			d = 1;
			h = 0;
			mi = 0;
		}

		/* day */
		m = (uint64_t) day_mask(s, y, mo) >> d;
		if (m == 0)
		{
			d = 32;				/* next month */
			continue;
		}
		if ((m & 1) == 0)
		{
			d += lowest_bit(m);
			h = 0;
			mi = 0;
		}

		/* hour */
		m = (uint64_t) s->hours >> h;
		if (m == 0)
		{
			h = 24;				/* next day */
			continue;
		}
		if ((m & 1) == 0)
		{
			h += lowest_bit(m);
			mi = 0;
		}

		/* minute */
		m = s->minutes >> mi;
		if (m == 0)
		{
			mi = 60;			/* next hour */
			continue;
		}
		mi += lowest_bit(m);

		next->year = y;
		next->month = mo;
		next->day = d;
		next->hour = h;
		next->minute = mi;
		next->second = 0;
		return true;
	}
}

/*
 * schedlock_cron_next_interval
 *		Next multiple of interval_seconds (counted from the Unix epoch)
 *		strictly after after_secs.
 */
bool
schedlock_cron_next_interval(const SchedlockCronSchedule *s,
							 int64_t after_secs, int64_t * next_secs)
{
	int64_t		n;

	if (!(s->flags & SCHEDLOCK_CRON_INTERVAL) ||
		s->interval_seconds < 1 || s->interval_seconds > 59)
		return false;
	if (after_secs > INT64_MAX - 60 || after_secs < INT64_MIN + 60)
		return false;
	n = s->interval_seconds;
	*next_secs = (floor_div(after_secs, n) + 1) * n;
	return true;
}

/*
 * schedlock_cron_next_utc
 *		Next fire time strictly after after_secs with wall-clock time in UTC.
 */
bool
schedlock_cron_next_utc(const SchedlockCronSchedule *s, int64_t after_secs,
						int64_t * next_secs)
{
	SchedlockCronTime after;
	SchedlockCronTime next;
	int64_t		min_secs;
	int64_t		max_secs;

	if (s->flags & SCHEDLOCK_CRON_REBOOT)
		return false;
	if (s->flags & SCHEDLOCK_CRON_INTERVAL)
		return schedlock_cron_next_interval(s, after_secs, next_secs);
	min_secs = schedlock_cron_days_from_civil(CRON_MIN_YEAR, 1, 1) * SECS_PER_DAY;
	max_secs = schedlock_cron_days_from_civil(SCHEDLOCK_CRON_MAX_YEAR, 1, 1) * SECS_PER_DAY;
	if (after_secs < min_secs || after_secs >= max_secs)
		return false;
	schedlock_cron_time_from_seconds(after_secs, &after);
	if (!schedlock_cron_next_local(s, &after, &next))
		return false;
	*next_secs = schedlock_cron_seconds_from_time(&next);
	return true;
}
