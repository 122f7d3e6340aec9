/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  The extension owner, and the switch to it that the SQL API and the
 *	  workers' bookkeeping write the scheduler's tables as.
 *
 * IDENTIFICATION
 *	  src/base/owner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "compat.h"
#include "kept_query.h"
#include "owner.h"
#include "settings.h"

/*
 * owner_by_key
 *		The owner of the extension that index indexid finds with key
 *		(attnum, proc, value) in pg_extension, or InvalidOid: no SQL, so
 *		nothing the caller's search_path or rights could change.
 */
static Oid
owner_by_key(Oid indexid, AttrNumber attnum, RegProcedure proc, Datum value)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, attnum, BTEqualStrategyNumber, proc, value);
	scan = systable_beginscan(rel, indexid, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return owner;
}

/*
 * schedlock_extension_owner
 *		The role that owns the extension (and so the scheduler's tables),
 *		read from pg_extension through its name index.
 */
Oid
schedlock_extension_owner(void)
{
	Oid			owner = owner_by_key(ExtensionNameIndexId,
									 Anum_pg_extension_extname, F_NAMEEQ,
									 CStringGetDatum("schedlock"));

	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"schedlock\" is not installed in this database")));
	return owner;
}

/*
 * schedlock_extension_owner_of
 *		The owner of the extension with OID extoid, or InvalidOid when
 *		there is none.
 */
Oid
schedlock_extension_owner_of(Oid extoid)
{
	return owner_by_key(ExtensionOidIndexId, Anum_pg_extension_oid, F_OIDEQ,
						ObjectIdGetDatum(extoid));
}

/*
 * schedlock_begin_as_owner / schedlock_end_as_owner
 *		Switch to the extension owner for writing the scheduler's tables,
 *		and back.  In between, search_path is "pg_catalog, pg_temp" (a GUC
 *		nest level of schedlock_trusted_path_begin), whatever the caller
 *		set: the caller chooses nothing but argument values.  In a user's
 *		session (the SQL API: unschedule_job, alter_job, ...), lock waits
 *		are bounded there too, by schedlock.bookkeeping_lock_timeout unless
 *		the session's lock_timeout is shorter, so that a call never waits
 *		without end behind a lock on schedlock's tables or a job's row: it
 *		fails with 55P03 and changes nothing.  (The scheduler's processes
 *		bound theirs themselves: see kept_query.c.)  An error in between is
 *		undone by the (sub)transaction abort.
 */
void
schedlock_begin_as_owner(Oid *save_uid, int *save_sec, int *save_nestlevel)
{
	Oid			owner = schedlock_extension_owner();

	GetUserIdAndSecContext(save_uid, save_sec);
	*save_nestlevel = schedlock_trusted_path_begin();
	if (!schedlock_am_background_worker() &&
		(LockTimeout == 0 || LockTimeout > schedlock_bookkeeping_lock_timeout))
	{
		char		timeout[32];

		snprintf(timeout, sizeof(timeout), "%d",
				 schedlock_bookkeeping_lock_timeout);
		(void) set_config_option("lock_timeout", timeout, PGC_SUSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
								 false);
	}
	SetUserIdAndSecContext(owner, *save_sec | SECURITY_LOCAL_USERID_CHANGE);
}

void
schedlock_end_as_owner(Oid save_uid, int save_sec, int save_nestlevel)
{
	SetUserIdAndSecContext(save_uid, save_sec);
	schedlock_trusted_path_end(save_nestlevel);
}
