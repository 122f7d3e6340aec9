/*-------------------------------------------------------------------------
 *
 * cron_pg.h
 *	  PostgreSQL side of the cron engine: parsing with ereport, time zone
 *	  lookup, and next fire time as a TimestampTz.
 *
 * The scheduler calls these; the SQL functions cron_next() and
 * cron_next_runs() in cron_sql.c are built on them too.
 *
 * IDENTIFICATION
 *	  src/cron/cron_pg.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_CRON_PG_H
#define SCHEDLOCK_CRON_PG_H

#include "postgres.h"

#include "pgtime.h"
#include "utils/timestamp.h"

#include "cron.h"

/* Largest count cron_next_runs() accepts. */
#define SCHEDLOCK_CRON_MAX_RUNS		100000

/*
 * Parse or ereport(ERROR, ERRCODE_INVALID_PARAMETER_VALUE ...).  NULL or
 * empty text is an error.
 */
extern void schedlock_cron_parse_or_error(const char *text, SchedlockCronSchedule *out);

/*
 * Resolve a time zone name (NULL = the schedlock.timezone setting);
 * ereport ERRCODE_INVALID_PARAMETER_VALUE on an unknown zone.  The result
 * stays valid for the life of the backend.
 */
extern pg_tz *schedlock_cron_lookup_timezone(const char *name);

/*
 * WARNING when a zone name is numeric ("+02:00", "UTC+2"), which
 * PostgreSQL reads with the POSIX sign, west positive.
 */
extern void schedlock_cron_warn_numeric_timezone(const char *name);

/*
 * Why a zone cannot be used for cron schedules (an errdetail sentence), or
 * NULL when it can: leap seconds, or UTC offsets beyond 24 hours.
 */
extern const char *schedlock_cron_timezone_problem(pg_tz *tz);

/*
 * Next fire time strictly after 'after' in time zone tz (NULL = the
 * schedlock.timezone setting).  Returns false when there is none: for
 * @reboot, for a non-finite 'after', and when the next time would lie
 * beyond the range of timestamptz.
 */
extern bool schedlock_cron_next_time(const SchedlockCronSchedule *sched,
									 TimestampTz after, pg_tz *tz,
									 TimestampTz *result);

/* true when the schedule is @reboot */
extern bool schedlock_cron_is_reboot(const SchedlockCronSchedule *sched);

#endif							/* SCHEDLOCK_CRON_PG_H */
