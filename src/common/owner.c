/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  The extension owner, and the switch to it that the SQL API and the
 *	  workers' bookkeeping write the scheduler's tables as.
 *
 * IDENTIFICATION
 *	  src/common/owner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "kept_query.h"
#include "owner.h"

/*
 * schedlock_extension_owner
 *		The role that owns the extension (and so the scheduler's tables),
 *		read from pg_extension through its name index: no SQL, so nothing
 *		the caller's search_path or rights could change.
 */
Oid
schedlock_extension_owner(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("schedlock"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"schedlock\" is not installed in this database")));
	return owner;
}

/*
 * schedlock_begin_as_owner / schedlock_end_as_owner
 *		Switch to the extension owner for writing the scheduler's tables,
 *		and back.  In between, search_path is "pg_catalog, pg_temp" (a GUC
 *		nest level of schedlock_trusted_path_begin), whatever the caller
 *		set: the caller chooses nothing but argument values.  An error in
 *		between is undone by the (sub)transaction abort.
 */
void
schedlock_begin_as_owner(Oid *save_uid, int *save_sec, int *save_nestlevel)
{
	Oid			owner = schedlock_extension_owner();

	GetUserIdAndSecContext(save_uid, save_sec);
	*save_nestlevel = schedlock_trusted_path_begin();
	SetUserIdAndSecContext(owner, *save_sec | SECURITY_LOCAL_USERID_CHANGE);
}

void
schedlock_end_as_owner(Oid save_uid, int save_sec, int save_nestlevel)
{
	SetUserIdAndSecContext(save_uid, save_sec);
	schedlock_trusted_path_end(save_nestlevel);
}
