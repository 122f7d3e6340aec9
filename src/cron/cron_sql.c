/*-------------------------------------------------------------------------
 *
 * cron_sql.c
 *	  PostgreSQL wrapper of the cron engine: errors, time zones, and the SQL
 *	  functions cron_next() and cron_next_runs().
 *
 * cron.c finds matching wall-clock minutes; this file maps them to instants
 * in a time zone with PostgreSQL's own time zone library, so results agree
 * with AT TIME ZONE.  The rules, for a schedule evaluated "after" instant A:
 *
 *	  - A wall-clock time W has already passed at A when the zone's clock
 *		has shown W (or a later time) at some instant up to A.  So after a
 *		fall-back transition the repeated wall-clock times stay passed until
 *		the clock gets back to where it was: a repeated time fires at its
 *		first occurrence only.
 *	  - The answer is the first instant the clock shows the earliest
 *		matching W not yet passed.  For a W skipped by a spring-forward gap
 *		that is the transition itself: the first instant after the gap.
 *	  - "N seconds" schedules are multiples of N seconds since the Unix
 *		epoch in real time, whatever the zone.
 *
 * A zone's UTC offset is constant between transitions.  We cache, per zone,
 * the segment between two transitions that the last evaluation fell in;
 * while evaluations stay inside it (the common case) no time zone lookup is
 * needed at all.  The caches are backend-local statics keyed by pg_tz
 * pointers, which pg_tzset() keeps valid for the life of the backend.
 *
 * The SQL functions cache the parsed schedules and looked-up zones of the
 * last few distinct arguments in fn_extra.
 *
 * IDENTIFICATION
 *	  src/cron/cron_sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "cron.h"
#include "cron_pg.h"

/* Seconds from 1970-01-01 (Unix epoch) to 2000-01-01 (PostgreSQL epoch). */
#define CRON_EPOCH_DIFF \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

/*
 * No UTC offset in the time zone database exceeds 26 hours, so the instants
 * showing a given wall-clock time, and the transitions that matter for it,
 * lie within this many seconds of it.
 */
#define CRON_ZONE_WINDOW	(48 * SECS_PER_HOUR)

/*
 * Largest UTC offset, either way, of a zone cron schedules may use.  Real
 * zones stay within 16 hours (local mean times of the 19th century
 * included), but a POSIX zone specification such as "AAA+99BBB-99,..." may
 * name offsets up to 167 hours, beyond what CRON_ZONE_WINDOW assumes.
 */
#define CRON_MAX_ZONE_OFFSET	(24 * SECS_PER_HOUR)

/* Transitions checked by schedlock_cron_timezone_problem from each probe. */
#define CRON_ZONE_CHECK_STEPS	4

/* Transitions looked at when finding the segment an instant falls in. */
#define CRON_ZONE_LOOKBACK	(400 * SECS_PER_DAY)

/* Safety bound on loops over transitions. */
#define CRON_ZONE_MAX_STEPS	10000

/* Entries of the per-backend segment cache. */
#define CRON_SEGMENT_CACHE	8

/* Distinct schedules and zones remembered per SQL call site. */
#define CRON_FN_SCHEDULES	16
#define CRON_FN_ZONES		8

/*
 * One stretch of a time zone's history with a constant UTC offset, in Unix
 * seconds.
 */
typedef struct CronZoneSegment
{
	const pg_tz *tz;			/* zone, or NULL for an unused entry */
	int64		start;			/* first instant this entry describes */
	int64		end;			/* next transition, or PG_INT64_MAX */
	long		offset;			/* UTC offset in [start, end), seconds */
	int64		wall_floor;		/* earliest wall time (as seconds) not yet
								 * passed because of a fall-back transition at
								 * or shortly before start, or PG_INT64_MIN */
} CronZoneSegment;

static CronZoneSegment segment_cache[CRON_SEGMENT_CACHE];
static int	segment_cache_next = 0;

/* A schedule parsed at one call site, keyed by its text. */
typedef struct CronCachedSchedule
{
	char	   *text;			/* schedule text (not NUL-terminated) */
	int			len;			/* its length in bytes */
	SchedlockCronSchedule sched;	/* parse result */
} CronCachedSchedule;

/* A zone looked up at one call site, keyed by its name. */
typedef struct CronCachedZone
{
	char	   *name;			/* zone name (not NUL-terminated) */
	int			len;			/* its length in bytes */
	pg_tz	   *tz;				/* pg_tzset() result */
} CronCachedZone;

/* fn_extra of cron_next(), allocated in fn_mcxt. */
typedef struct CronFnCache
{
	int			nschedules;		/* entries used in schedules[] */
	int			next_schedule;	/* entry to replace next */
	CronCachedSchedule schedules[CRON_FN_SCHEDULES];
	int			nzones;			/* entries used in zones[] */
	int			next_zone;		/* entry to replace next */
	CronCachedZone zones[CRON_FN_ZONES];
	char	   *guc_name;		/* schedlock.timezone value guc_tz is for */
	pg_tz	   *guc_tz;			/* its zone */
} CronFnCache;

/* State of cron_next_runs() between calls. */
typedef struct CronRunsState
{
	SchedlockCronSchedule sched;
	pg_tz	   *tz;
	TimestampTz after;			/* the last time returned, or the argument */
} CronRunsState;

PG_FUNCTION_INFO_V1(schedlock_cron_next);
PG_FUNCTION_INFO_V1(schedlock_cron_next_runs);

static bool zone_boundary(const pg_tz *tz, int64 t, long *before,
						  int64 *boundary, long *after);

PGDLLEXPORT Datum schedlock_cron_next(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_cron_next_runs(PG_FUNCTION_ARGS);

/*
 * schedlock_cron_parse_or_error
 *		Parse a schedule, raising ERRCODE_INVALID_PARAMETER_VALUE with the
 *		parser's message, detail and hint when it is not valid.
 */
void
schedlock_cron_parse_or_error(const char *text, SchedlockCronSchedule *out)
{
	SchedlockCronError err;

	if (text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cron schedule must not be null"),
				 errhint("%s", schedlock_cron_field_hint(SCHEDLOCK_CRON_FIELD_SCHEDULE))));

	if (!schedlock_cron_parse(text, out, &err))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", err.message),
				 errdetail("%s", err.detail),
				 errhint("%s", err.hint)));
}

/*
 * schedlock_cron_is_reboot
 *		Whether a parsed schedule is @reboot (it has no fire times).
 */
bool
schedlock_cron_is_reboot(const SchedlockCronSchedule *sched)
{
	return (sched->flags & SCHEDLOCK_CRON_REBOOT) != 0;
}

/*
 * schedlock_cron_timezone_problem
 *		Why tz cannot be used for cron schedules, as an errdetail sentence,
 *		or NULL when it can.  A zone qualifies when PostgreSQL accepts it
 *		(no leap seconds) and every UTC offset it uses lies within
 *		CRON_MAX_ZONE_OFFSET.
 *
 * The offsets are read at the transitions following two probes, the Unix
 * epoch and now.  A zone of the time zone database uses real offsets
 * anyway; a POSIX specification uses at most two, a standard and a
 * daylight saving one, and either probe meets both at its first
 * transition, since such a zone repeats its rules every year.
 */
const char *
schedlock_cron_timezone_problem(pg_tz *tz)
{
	int64		probes[2];
	int			i;

	if (!pg_tz_acceptable(tz))
		return "The zone uses leap seconds, which PostgreSQL does not support.";

	probes[0] = 0;
	probes[1] = (int64) time(NULL);
	for (i = 0; i < lengthof(probes); i++)
	{
		int64		t = probes[i];
		int			step;

		for (step = 0; step < CRON_ZONE_CHECK_STEPS; step++)
		{
			long		before;
			long		after = 0;
			int64		b;
			bool		found = zone_boundary(tz, t, &before, &b, &after);

			if (labs(before) > CRON_MAX_ZONE_OFFSET ||
				(found && labs(after) > CRON_MAX_ZONE_OFFSET))
				return "Cron schedules need a zone whose UTC offsets stay within 24 hours.";
			if (!found)
				break;
			t = b + 1;
		}
	}
	return NULL;
}

/*
 * schedlock_cron_lookup_timezone
 *		Resolve a zone name the way the TimeZone setting does; NULL means the
 *		schedlock.timezone setting.  Zones cron schedules cannot use (see
 *		schedlock_cron_timezone_problem) are refused.
 */
pg_tz *
schedlock_cron_lookup_timezone(const char *name)
{
	pg_tz	   *tz;
	const char *problem;

	if (name == NULL)
		name = schedlock_timezone != NULL ? schedlock_timezone : "UTC";

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone must not be empty"),
				 errhint("Use an IANA time zone name such as \"UTC\" or \"Europe/Prague\"; the view pg_timezone_names lists them.")));

	tz = pg_tzset(name);
	if (tz == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", name),
				 errhint("Use an IANA time zone name such as \"UTC\" or \"Europe/Prague\"; the view pg_timezone_names lists them.")));
	if (!pg_tz_acceptable(tz))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" is not supported", name),
				 errdetail("The zone uses leap seconds, which PostgreSQL does not support."),
				 errhint("Use the zone of the same name without the \"right/\" prefix.")));
	problem = schedlock_cron_timezone_problem(tz);
	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" is not supported", name),
				 errdetail("%s", problem),
				 errhint("Use an IANA time zone name such as \"UTC\" or \"Europe/Prague\"; the view pg_timezone_names lists them.")));
	return tz;
}

/*
 * format_offset
 *		"UTC+02:00" of an offset in seconds east of Greenwich.
 */
static void
format_offset(char *buf, size_t len, long east)
{
	long		a = east < 0 ? -east : east;

	snprintf(buf, len, "UTC%c%02ld:%02ld", east < 0 ? '-' : '+',
			 a / 3600, a / 60 % 60);
}

/*
 * schedlock_cron_warn_numeric_timezone
 *		Warn when a job's time zone is numeric ("+02:00", "UTC+2", "-5"):
 *		PostgreSQL reads such a zone as a POSIX specification, whose offsets
 *		are positive west of Greenwich, the opposite of ISO 8601.  The zone
 *		has been looked up already.
 */
void
schedlock_cron_warn_numeric_timezone(const char *name)
{
	const char *p = name;
	pg_tz	   *tz;
	long		gmtoff;
	char		reading[32];
	char		iso[32];

	while (*p == ' ' || *p == '\t')
		p++;
	if (pg_strncasecmp(p, "UTC", 3) == 0 || pg_strncasecmp(p, "GMT", 3) == 0)
		p += 3;
	if (*p != '+' && *p != '-' && !(*p >= '0' && *p <= '9'))
		return;

	tz = schedlock_cron_lookup_timezone(name);
	if (!pg_get_timezone_offset(tz, &gmtoff))
	{
		ereport(WARNING,
				(errmsg("time zone \"%s\" is read as a POSIX time zone specification",
						name),
				 errdetail("In a POSIX specification a positive offset lies west of Greenwich, the opposite of ISO 8601."),
				 errhint("Name a place instead, such as \"Europe/Prague\"; the view pg_timezone_names lists them.")));
		return;
	}
	if (gmtoff == 0)
		return;
	format_offset(reading, sizeof(reading), gmtoff);
	format_offset(iso, sizeof(iso), -gmtoff);
	if (gmtoff % 3600 == 0 && gmtoff / 3600 >= -14 && gmtoff / 3600 <= 12)
		ereport(WARNING,
				(errmsg("time zone \"%s\" is %s, not %s", name, reading, iso),
				 errdetail("PostgreSQL reads a numeric time zone as a POSIX specification, in which a positive offset lies west of Greenwich, the opposite of ISO 8601."),
				 errhint("For %s name a place, such as \"Europe/Prague\", or write \"Etc/GMT%+ld\" (whose sign is POSIX too).",
						 iso, gmtoff / 3600)));
	else
		ereport(WARNING,
				(errmsg("time zone \"%s\" is %s, not %s", name, reading, iso),
				 errdetail("PostgreSQL reads a numeric time zone as a POSIX specification, in which a positive offset lies west of Greenwich, the opposite of ISO 8601."),
				 errhint("For %s name a place instead; the view pg_timezone_names lists the zones and their offsets.",
						 iso)));
}

/*
 * zone_boundary
 *		The first transition of tz at or after instant t (Unix seconds):
 *		returns true and sets *boundary, *before and *after (the offsets on
 *		either side).  Returns false when there is none, setting *before to
 *		the offset at t.
 */
static bool
zone_boundary(const pg_tz *tz, int64 t, long *before, int64 *boundary,
			  long *after)
{
	pg_time_t	pt = (pg_time_t) t;
	pg_time_t	b = 0;
	int			before_isdst;
	int			after_isdst;
	int			r;

	r = pg_next_dst_boundary(&pt, before, &before_isdst, &b, after,
							 &after_isdst, tz);
	if (r == 1 && b >= pt)
	{
		*boundary = (int64) b;
		return true;
	}
	if (r < 0)
	{
		/* "cannot happen" per the time zone library; ask for the offset */
		struct pg_tm *tm = pg_localtime(&pt, tz);

		*before = tm != NULL ? tm->tm_gmtoff : 0;
	}
	return false;
}

/*
 * wall_floor_at
 *		The earliest wall-clock time (seconds, wall time taken as UTC) not
 *		yet shown by the clock of tz at instant t because a fall-back
 *		transition shortly before t made the clock repeat times it had
 *		already shown; PG_INT64_MIN when there is no such transition.
 */
static int64
wall_floor_at(const pg_tz *tz, int64 t)
{
	int64		floor = PG_INT64_MIN;
	int64		probe = t - CRON_ZONE_WINDOW;
	int64		b;
	long		before;
	long		after;
	int			steps = 0;

	while (steps++ < CRON_ZONE_MAX_STEPS &&
		   zone_boundary(tz, probe, &before, &b, &after) && b <= t)
	{
		if (after < before && b + before > floor)
			floor = b + before;
		probe = b + 1;
	}
	return floor;
}

/*
 * zone_segment
 *		The cached segment of tz containing instant t, computing and caching
 *		it when necessary.
 */
static const CronZoneSegment *
zone_segment(const pg_tz *tz, int64 t)
{
	CronZoneSegment *seg;
	int64		probe;
	int64		start;
	int64		b;
	long		before;
	long		after;
	long		offset;
	bool		found;
	bool		have_start = false;
	int			steps = 0;
	int			i;

	for (i = 0; i < CRON_SEGMENT_CACHE; i++)
	{
		seg = &segment_cache[i];
		if (seg->tz == tz && t >= seg->start && t < seg->end)
			return seg;
	}

	/*
	 * Walk the transitions of the last CRON_ZONE_LOOKBACK seconds up to t.
	 * Without one, the entry starts CRON_ZONE_WINDOW after the probe, so that
	 * no transition it does not know about can matter inside it.
	 */
	probe = t - CRON_ZONE_LOOKBACK;
	start = probe + CRON_ZONE_WINDOW;
	found = zone_boundary(tz, probe, &before, &b, &after);
	offset = before;
	while (found && b <= t && steps++ < CRON_ZONE_MAX_STEPS)
	{
		start = b;
		have_start = true;
		offset = after;
		found = zone_boundary(tz, b + 1, &before, &b, &after);
	}

	seg = &segment_cache[segment_cache_next];
	segment_cache_next = (segment_cache_next + 1) % CRON_SEGMENT_CACHE;
	seg->tz = tz;
	seg->start = start;
	seg->end = found ? b : PG_INT64_MAX;
	seg->offset = offset;
	seg->wall_floor = have_start ? wall_floor_at(tz, start) : PG_INT64_MIN;
	return seg;
}

/*
 * fire_instant
 *		The first instant at which the clock of tz shows wall-clock time
 *		wall (seconds, wall time taken as UTC) or a later time: the first of
 *		the instants showing it, or, for a time skipped by a gap, the
 *		transition that skips it.
 */
static int64
fire_instant(const pg_tz *tz, int64 wall)
{
	int64		lo = PG_INT64_MIN;
	int64		hi;
	int64		b = 0;
	long		offset;
	long		before;
	long		after;
	bool		found;
	int			steps = 0;

	found = zone_boundary(tz, wall - CRON_ZONE_WINDOW, &offset, &b, &after);
	for (;;)
	{
		int64		candidate = wall - offset;

		hi = found ? b : PG_INT64_MAX;
		if (candidate >= lo && candidate < hi)
			return candidate;
		if (!found || b > wall + CRON_ZONE_WINDOW || steps++ >= CRON_ZONE_MAX_STEPS)
			break;
		/* a gap: the clock jumps from b + offset to b + after */
		if (after > offset && b + offset <= wall && wall < b + after)
			return b;
		offset = after;
		lo = b;
		found = zone_boundary(tz, b + 1, &before, &b, &after);
	}
	/* schedlock_cron_timezone_problem keeps such zones out */
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("could not map wall-clock time to an instant in time zone \"%s\"",
					pg_get_timezone_name((pg_tz *) tz)),
			 errdetail("The zone's UTC offsets or transitions lie beyond what cron schedules support."),
			 errhint("Use an IANA time zone name such as \"UTC\" or \"Europe/Prague\"; the view pg_timezone_names lists them.")));
	return 0;					/* keep the compiler quiet */
}

/*
 * unix_to_timestamptz
 *		Convert Unix seconds to a TimestampTz; false when out of range.
 */
static bool
unix_to_timestamptz(int64 secs, TimestampTz *result)
{
	int64		pgsecs;

	if (secs > PG_INT64_MAX / 2 || secs < PG_INT64_MIN / 2)
		return false;
	pgsecs = secs - CRON_EPOCH_DIFF;
	if (pgsecs > END_TIMESTAMP / USECS_PER_SEC ||
		pgsecs < MIN_TIMESTAMP / USECS_PER_SEC)
		return false;
	*result = pgsecs * USECS_PER_SEC;
	return IS_VALID_TIMESTAMP(*result);
}

/*
 * schedlock_cron_next_time
 *		Next fire time strictly after 'after' (see the file header for the
 *		DST rules).  Fire times are whole seconds, so "strictly after" is the
 *		same as "after the whole second containing 'after'".
 */
bool
schedlock_cron_next_time(const SchedlockCronSchedule *sched, TimestampTz after,
						 pg_tz *tz, TimestampTz *result)
{
	int64		a;
	int64		wmin;
	int64		next;
	const CronZoneSegment *seg;
	int			tries;

	if (sched->flags & SCHEDLOCK_CRON_REBOOT)
		return false;
	if (TIMESTAMP_NOT_FINITE(after))
		return false;

	/* whole Unix seconds, rounding towards minus infinity */
	a = after / USECS_PER_SEC;
	if (after % USECS_PER_SEC < 0)
		a--;
	a += CRON_EPOCH_DIFF;

	if (sched->flags & SCHEDLOCK_CRON_INTERVAL)
	{
		if (!schedlock_cron_next_interval(sched, a, &next))
			return false;
		return unix_to_timestamptz(next, result);
	}

	if (tz == NULL)
		tz = schedlock_cron_lookup_timezone(NULL);

	seg = zone_segment(tz, a);
	wmin = a + seg->offset + 1;
	if (seg->wall_floor > wmin)
		wmin = seg->wall_floor;

	for (tries = 0; tries < 100; tries++)
	{
		SchedlockCronTime from;
		SchedlockCronTime match;
		int64		wall;

		/* cron.c searches strictly after a time: one second before wmin */
		schedlock_cron_time_from_seconds(wmin - 1, &from);
		if (!schedlock_cron_next_local(sched, &from, &match))
			return false;
		wall = schedlock_cron_seconds_from_time(&match);

		next = wall - seg->offset;
		if (next >= seg->end)
			next = fire_instant(tz, wall);
		if (next > a)
			return unix_to_timestamptz(next, result);
		/* cannot happen given how wmin was chosen; step past it anyway */
		wmin = wall + 1;
	}
	elog(ERROR, "could not find the next fire time of a cron schedule");
	return false;				/* keep the compiler quiet */
}

/*
 * check_after
 *		Reject a NULL or infinite "after" argument of the SQL functions.
 */
static TimestampTz
check_after(FunctionCallInfo fcinfo, int argno)
{
	TimestampTz after;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("after must not be null"),
				 errhint("Leave the argument out to use now().")));
	after = PG_GETARG_TIMESTAMPTZ(argno);
	if (TIMESTAMP_NOT_FINITE(after))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("after must be a finite timestamp"),
				 errdetail("There is no fire time after infinity or before -infinity.")));
	return after;
}

/*
 * fn_cache_schedule
 *		The parsed schedule for a text argument, from the call site's cache
 *		when it was seen recently.  Parse errors are raised, not cached.
 */
static const SchedlockCronSchedule *
fn_cache_schedule(FmgrInfo *flinfo, CronFnCache *cache, text *arg)
{
	const char *data = VARDATA_ANY(arg);
	int			len = VARSIZE_ANY_EXHDR(arg);
	CronCachedSchedule *entry;
	SchedlockCronSchedule sched;
	char	   *str;
	int			i;

	for (i = 0; i < cache->nschedules; i++)
	{
		entry = &cache->schedules[i];
		if (entry->len == len && memcmp(entry->text, data, len) == 0)
			return &entry->sched;
	}

	str = text_to_cstring(arg);
	schedlock_cron_parse_or_error(str, &sched);
	pfree(str);

	if (cache->nschedules < CRON_FN_SCHEDULES)
		entry = &cache->schedules[cache->nschedules++];
	else
	{
		entry = &cache->schedules[cache->next_schedule];
		cache->next_schedule = (cache->next_schedule + 1) % CRON_FN_SCHEDULES;
		pfree(entry->text);
	}
	entry->text = MemoryContextAlloc(flinfo->fn_mcxt, len > 0 ? len : 1);
	memcpy(entry->text, data, len);
	entry->len = len;
	entry->sched = sched;
	return &entry->sched;
}

/*
 * fn_cache_zone
 *		The zone for a text argument (NULL = schedlock.timezone), from the
 *		call site's cache when it was seen recently.
 */
static pg_tz *
fn_cache_zone(FmgrInfo *flinfo, CronFnCache *cache, text *arg)
{
	CronCachedZone *entry;
	const char *data;
	char	   *str;
	pg_tz	   *tz;
	int			len;
	int			i;

	if (arg == NULL)
	{
		const char *guc = schedlock_timezone != NULL ? schedlock_timezone : "UTC";

		if (cache->guc_name == NULL || strcmp(cache->guc_name, guc) != 0)
		{
			tz = schedlock_cron_lookup_timezone(guc);
			if (cache->guc_name != NULL)
				pfree(cache->guc_name);
			cache->guc_name = MemoryContextStrdup(flinfo->fn_mcxt, guc);
			cache->guc_tz = tz;
		}
		return cache->guc_tz;
	}

	data = VARDATA_ANY(arg);
	len = VARSIZE_ANY_EXHDR(arg);
	for (i = 0; i < cache->nzones; i++)
	{
		entry = &cache->zones[i];
		if (entry->len == len && memcmp(entry->name, data, len) == 0)
			return entry->tz;
	}

	str = text_to_cstring(arg);
	tz = schedlock_cron_lookup_timezone(str);
	pfree(str);

	if (cache->nzones < CRON_FN_ZONES)
		entry = &cache->zones[cache->nzones++];
	else
	{
		entry = &cache->zones[cache->next_zone];
		cache->next_zone = (cache->next_zone + 1) % CRON_FN_ZONES;
		pfree(entry->name);
	}
	entry->name = MemoryContextAlloc(flinfo->fn_mcxt, len > 0 ? len : 1);
	memcpy(entry->name, data, len);
	entry->len = len;
	entry->tz = tz;
	return tz;
}

/*
 * schedlock_cron_next
 *		SQL: cron_next(schedule text, after timestamptz DEFAULT now(),
 *		timezone text DEFAULT NULL) RETURNS timestamptz
 *
 * NULL for @reboot and when the next time is beyond timestamptz's range.
 * The function is declared CALLED ON NULL INPUT so that a NULL schedule
 * raises an error instead of silently giving NULL.
 */
Datum
schedlock_cron_next(PG_FUNCTION_ARGS)
{
	CronFnCache *cache = (CronFnCache *) fcinfo->flinfo->fn_extra;
	const SchedlockCronSchedule *sched;
	TimestampTz after;
	TimestampTz result;
	pg_tz	   *tz;

	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(CronFnCache));
		fcinfo->flinfo->fn_extra = cache;
	}

	if (PG_ARGISNULL(0))
		schedlock_cron_parse_or_error(NULL, NULL);
	sched = fn_cache_schedule(fcinfo->flinfo, cache, PG_GETARG_TEXT_PP(0));
	after = check_after(fcinfo, 1);
	tz = fn_cache_zone(fcinfo->flinfo, cache,
					   PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2));

	if (!schedlock_cron_next_time(sched, after, tz, &result))
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(result);
}

/*
 * schedlock_cron_next_runs
 *		SQL: cron_next_runs(schedule text, count int, after timestamptz
 *		DEFAULT now(), timezone text DEFAULT NULL) RETURNS SETOF timestamptz
 *
 * The next count fire times, in order; fewer when the schedule is @reboot
 * or runs past the end of timestamptz.  count must be 0 to
 * SCHEDLOCK_CRON_MAX_RUNS.
 */
Datum
schedlock_cron_next_runs(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	CronRunsState *state;
	TimestampTz next;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcontext;
		char	   *str;
		int32		count;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		state = palloc0(sizeof(CronRunsState));

		if (PG_ARGISNULL(0))
			schedlock_cron_parse_or_error(NULL, NULL);
		str = text_to_cstring(PG_GETARG_TEXT_PP(0));
		schedlock_cron_parse_or_error(str, &state->sched);

		if (PG_ARGISNULL(1))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("count must not be null")));
		count = PG_GETARG_INT32(1);
		if (count < 0 || count > SCHEDLOCK_CRON_MAX_RUNS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("count %d is out of range", count),
					 errdetail("count must be between 0 and %d.", SCHEDLOCK_CRON_MAX_RUNS)));

		state->after = check_after(fcinfo, 2);
		if (PG_ARGISNULL(3))
			state->tz = schedlock_cron_lookup_timezone(NULL);
		else
		{
			str = text_to_cstring(PG_GETARG_TEXT_PP(3));
			state->tz = schedlock_cron_lookup_timezone(str);
		}

		funcctx->max_calls = (uint64) count;
		funcctx->user_fctx = state;
		MemoryContextSwitchTo(oldcontext);
	}

	funcctx = SRF_PERCALL_SETUP();
	state = (CronRunsState *) funcctx->user_fctx;

	if (funcctx->call_cntr < funcctx->max_calls &&
		schedlock_cron_next_time(&state->sched, state->after, state->tz, &next))
	{
		state->after = next;
		SRF_RETURN_NEXT(funcctx, TimestampTzGetDatum(next));
	}
	SRF_RETURN_DONE(funcctx);
}
