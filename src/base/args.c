/*-------------------------------------------------------------------------
 *
 * args.c
 *	  Checks of SQL function arguments shared by the lock functions
 *	  (lock.c) and the job API (job_api.c): names and the sign of intervals.
 *
 * IDENTIFICATION
 *	  src/base/args.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "args.h"
#include "compat.h"
#include "settings.h"

/*
 * schedlock_name_arg
 *		Fetch and validate a name argument (a lock's or a job's): not null,
 *		not empty, at most SCHEDLOCK_MAX_NAME_LENGTH characters.  what names
 *		the argument in the messages.
 */
char *
schedlock_name_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	text	   *t;
	int			nchars;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	t = PG_GETARG_TEXT_PP(argno);
	if (VARSIZE_ANY_EXHDR(t) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));
	nchars = pg_mbstrlen_with_len(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	if (nchars > SCHEDLOCK_MAX_NAME_LENGTH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is too long", what),
				 errdetail("The name has %d characters; the limit is %d.",
						   nchars, SCHEDLOCK_MAX_NAME_LENGTH)));
	return text_to_cstring(t);
}

/*
 * schedlock_interval_sign
 *		-1, 0 or 1 as the interval is negative, zero or positive (months are
 *		counted as 30 days, as interval comparison does).
 */
int
schedlock_interval_sign(Interval *iv)
{
	Interval	zero;

	memset(&zero, 0, sizeof(zero));
	return DatumGetInt32(DirectFunctionCall2(interval_cmp,
											 IntervalPGetDatum(iv),
											 IntervalPGetDatum(&zero)));
}
