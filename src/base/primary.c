/*-------------------------------------------------------------------------
 *
 * primary.c
 *	  Locks, jobs and runs change on the primary only.  Every SQL function
 *	  that changes them refuses a standby with the same error (25006,
 *	  "cannot execute NAME() during recovery", a hint to connect to the
 *	  primary); one that writes also refuses a read-only transaction, with
 *	  the same code, before it has done anything.
 *
 *	  NAME is the function as a user calls it: schema-qualified where the
 *	  function lives in schema schedlock, bare where it lives in the
 *	  extension's schema (schedlock_acquire, schedlock_claim_run).
 *
 * IDENTIFICATION
 *	  src/base/primary.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"

#include "primary.h"

/*
 * schedlock_require_primary
 *		ERROR on a standby: funcname() changes or asserts state that only
 *		the primary holds.
 */
void
schedlock_require_primary(const char *funcname)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s() during recovery", funcname),
				 errhint("schedlock's locks, jobs and runs change on the primary server only; connect to it instead of a standby.")));
}

/*
 * schedlock_require_writable
 *		ERROR on a standby and in a read-only transaction: funcname()
 *		writes.
 */
void
schedlock_require_writable(const char *funcname)
{
	schedlock_require_primary(funcname);
	PreventCommandIfReadOnly(psprintf("%s()", funcname));
}
