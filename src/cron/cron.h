/*-------------------------------------------------------------------------
 *
 * cron.h
 *	  Cron schedule parser (cron_parse.c) and next-fire-time search
 *	  (cron_next.c), in plain C.
 *
 * This header and those files depend on nothing but the C library, so the
 * parser and the wall-clock arithmetic can be unit-tested and fuzzed
 * without a server.  Time zones are not handled here: the search works on local
 * wall-clock time (a proleptic Gregorian calendar without DST), and the
 * PostgreSQL wrapper (cron_sql.c, cron_pg.h) maps wall-clock times to
 * instants with PostgreSQL's own time zone library.
 *
 * A schedule is one of
 *	  - five fields "minute hour day-of-month month day-of-week",
 *	  - a keyword (@yearly, @annually, @monthly, @weekly, @daily, @midnight,
 *		@hourly, @reboot, and @restart as an alias of @reboot),
 *	  - the interval form "N seconds" / "N second" with N from 1 to 59.
 *
 * IDENTIFICATION
 *	  src/cron/cron.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_CRON_H
#define SCHEDLOCK_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Flags of SchedlockCronSchedule.flags */
#define SCHEDLOCK_CRON_DOM_STAR		0x01	/* day-of-month field began with
											 * '*' */
#define SCHEDLOCK_CRON_DOW_STAR		0x02	/* day-of-week field began with
											 * '*' */
#define SCHEDLOCK_CRON_LAST_DAY		0x04	/* day-of-month field was "$" */
#define SCHEDLOCK_CRON_REBOOT		0x08	/* @reboot: no wall-clock times */
#define SCHEDLOCK_CRON_INTERVAL		0x10	/* "N seconds": see
											 * interval_seconds */

/* Longest schedule text accepted, in bytes. */
#define SCHEDLOCK_CRON_MAX_LENGTH	1000

/*
 * Latest year the wall-clock search looks at.  PostgreSQL timestamps end in
 * year 294276; the wrapper checks the exact limit.
 */
#define SCHEDLOCK_CRON_MAX_YEAR		294277

/*
 * A parsed schedule.  Bit n of each mask is set when value n matches.
 * For the five-field form every mask is non-empty; for @reboot and the
 * interval form the masks are all zero.
 */
typedef struct SchedlockCronSchedule
{
	uint64_t	minutes;		/* bits 0-59 */
	uint32_t	hours;			/* bits 0-23 */
	uint32_t	days;			/* bits 1-31 (unused when LAST_DAY) */
	uint16_t	months;			/* bits 1-12 */
	uint8_t		weekdays;		/* bits 0-6, 0 = Sunday */
	uint8_t		flags;			/* SCHEDLOCK_CRON_* flags above */
	uint8_t		interval_seconds;	/* 1-59 with SCHEDLOCK_CRON_INTERVAL */
} SchedlockCronSchedule;

/* The part of a schedule an error is about. */
typedef enum SchedlockCronField
{
	SCHEDLOCK_CRON_FIELD_SCHEDULE = 0,	/* the schedule as a whole */
	SCHEDLOCK_CRON_FIELD_MINUTE,
	SCHEDLOCK_CRON_FIELD_HOUR,
	SCHEDLOCK_CRON_FIELD_DAY_OF_MONTH,
	SCHEDLOCK_CRON_FIELD_MONTH,
	SCHEDLOCK_CRON_FIELD_DAY_OF_WEEK,
	SCHEDLOCK_CRON_FIELD_KEYWORD,
	SCHEDLOCK_CRON_FIELD_INTERVAL
} SchedlockCronField;

/*
 * Why a schedule was rejected.  message is lower case without a final
 * period; detail is a full sentence; hint (a static string) lists the forms
 * the field accepts.  All three are meant for ereport's errmsg, errdetail
 * and errhint.
 */
typedef struct SchedlockCronError
{
	SchedlockCronField field;
	char		message[256];
	char		detail[512];
	const char *hint;
} SchedlockCronError;

/*
 * A broken-down wall-clock time in the proleptic Gregorian calendar.
 * year is astronomical (0 is 1 BC); month 1-12; day 1-31; hour 0-23;
 * minute and second 0-59.
 */
typedef struct SchedlockCronTime
{
	int			year;
	int			month;
	int			day;
	int			hour;
	int			minute;
	int			second;
} SchedlockCronTime;

/*
 * How a schedule is read.  schedlock's own reading; or pg_cron's, which
 * differs for wrap-around ranges ("22-2", "fri-mon") and @yearly: up to 1.5
 * a range whose first value is above its last selects nothing, 1.6 selects
 * part of it by accident (see set_pg_cron_wrapped_range in cron_parse.c), and 1.6
 * never runs @yearly / @annually.  The import of pg_cron jobs compares them.
 */
typedef enum SchedlockCronDialect
{
	SCHEDLOCK_CRON_DIALECT_SCHEDLOCK = 0,
	SCHEDLOCK_CRON_DIALECT_PG_CRON_1_5, /* pg_cron 1.0 to 1.5 */
	SCHEDLOCK_CRON_DIALECT_PG_CRON_1_6	/* pg_cron 1.6 */
} SchedlockCronDialect;

/* Parse text (NUL-terminated); on failure fill *err and return false. */
extern bool schedlock_cron_parse(const char *text, SchedlockCronSchedule *out,
								 SchedlockCronError *err);

/*
 * The masks a pg_cron release makes of a schedule schedlock accepts (they
 * may be empty: pg_cron never runs it); false when schedlock refuses it.
 */
extern bool schedlock_cron_parse_dialect(const char *text,
										 SchedlockCronDialect dialect,
										 SchedlockCronSchedule *out);

/* Text naming the accepted forms of a field (used as an error hint). */
extern const char *schedlock_cron_field_hint(SchedlockCronField field);

/*
 * First wall-clock minute matching the five-field schedule strictly after
 * *after (seconds of *after are honoured: 10:00:30 is after 10:00).  Returns
 * false for @reboot, for interval schedules, for an invalid *after, and when
 * no match exists before SCHEDLOCK_CRON_MAX_YEAR.
 */
extern bool schedlock_cron_next_local(const SchedlockCronSchedule *sched,
									  const SchedlockCronTime *after,
									  SchedlockCronTime *next);

/*
 * Next slot of an interval schedule strictly after after_secs (seconds
 * since 1970-01-01 00:00:00 UTC): the next multiple of interval_seconds.
 * Returns false unless the schedule is an interval schedule.
 */
extern bool schedlock_cron_next_interval(const SchedlockCronSchedule *sched,
										 int64_t after_secs, int64_t * next_secs);

/*
 * Next fire time strictly after after_secs when wall-clock time is UTC
 * (seconds since the Unix epoch in and out).  Handles the five-field,
 * keyword and interval forms; false for @reboot or when there is none.
 */
extern bool schedlock_cron_next_utc(const SchedlockCronSchedule *sched,
									int64_t after_secs, int64_t * next_secs);

/*
 * Whether a five-field schedule can never match any day (the parser
 * refuses such a schedule).
 */
extern bool schedlock_cron_never_fires(const SchedlockCronSchedule *s);

/* Calendar helpers (days and seconds counted from 1970-01-01). */
extern bool schedlock_cron_is_leap_year(int year);
extern int	schedlock_cron_days_in_month(int year, int month);
extern int64_t schedlock_cron_days_from_civil(int year, int month, int day);
extern void schedlock_cron_time_from_seconds(int64_t secs, SchedlockCronTime *tm);
extern int64_t schedlock_cron_seconds_from_time(const SchedlockCronTime *tm);

#endif							/* SCHEDLOCK_CRON_H */
