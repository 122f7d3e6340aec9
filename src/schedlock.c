/*-------------------------------------------------------------------------
 *
 * schedlock.c
 *	  Module entry point: GUC definitions and hook installation.
 *
 * schedlock must be loaded through shared_preload_libraries, because it owns
 * shared memory and background workers.  _PG_init refuses any other way of
 * loading it, defines the schedlock.* settings and reserves the prefix.
 *
 * IDENTIFICATION
 *	  src/schedlock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/guc.h"

#include "schedlock.h"

PG_MODULE_MAGIC;

/* Default time zone for cron schedules (schedlock.timezone). */
char	   *schedlock_timezone = NULL;

PGDLLEXPORT void _PG_init(void);

/*
 * check_schedlock_timezone
 *		GUC check hook: accept only time zones PostgreSQL itself accepts for
 *		its TimeZone setting (IANA names, abbreviations are not enough).
 */
static bool
check_schedlock_timezone(char **newval, void **extra, GucSource source)
{
	pg_tz	   *tz;

	if (*newval == NULL || (*newval)[0] == '\0')
	{
		GUC_check_errdetail("The time zone must not be empty.");
		return false;
	}
	tz = pg_tzset(*newval);
	if (tz == NULL)
	{
		GUC_check_errdetail("Time zone \"%s\" is not known.", *newval);
		return false;
	}
	if (!pg_tz_acceptable(tz))
	{
		GUC_check_errdetail("Time zone \"%s\" uses leap seconds, which PostgreSQL does not support.",
							*newval);
		return false;
	}
	return true;
}

/*
 * schedlock_check_preloaded
 *		Raise an error unless we are being loaded by shared_preload_libraries.
 */
void
schedlock_check_preloaded(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("schedlock must be loaded via shared_preload_libraries"),
				 errhint("Add schedlock to the shared_preload_libraries setting in postgresql.conf and restart the server.")));
}

/*
 * _PG_init
 *		Module load callback.
 */
void
_PG_init(void)
{
	schedlock_check_preloaded();

	DefineCustomStringVariable("schedlock.timezone",
							   "Time zone in which cron schedules are evaluated when a job or call names none.",
							   "Any IANA time zone name PostgreSQL accepts.",
							   &schedlock_timezone,
							   "UTC",
							   PGC_USERSET,
							   0,
							   check_schedlock_timezone,
							   NULL,
							   NULL);

#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("schedlock");
#else
	EmitWarningsOnPlaceholders("schedlock");
#endif

	schedlock_lock_init();
}
