/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every difference between the PostgreSQL versions schedlock supports.
 *
 * schedlock supports PostgreSQL 15, 16, 17 and 18.  The minimum is 15: the
 * 1.0 install script creates a security_invoker view, and the module needs
 * shmem_request_hook, MarkGUCPrefixReserved, GetWALInsertionTimeLine and
 * pg_analyze_and_rewrite_fixedparams, all of which PostgreSQL 15 introduced.
 *
 * Where a server API differs between supported versions, the .c files call
 * the schedlock_* name defined here, and only this header tests
 * PG_VERSION_NUM.  Include it after postgres.h; it includes the headers
 * that declare the functions it wraps.
 *
 * IDENTIFICATION
 *	  src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_COMPAT_H
#define SCHEDLOCK_COMPAT_H

#include "catalog/pg_database.h"
#include "tcop/pquery.h"
#include "utils/acl.h"

#if PG_VERSION_NUM < 150000
#error "schedlock requires PostgreSQL 15 or later"
#endif

/*
 * schedlock_database_ownercheck(dboid, roleid)
 *		Whether roleid owns (or is a member of the owner of) database dboid.
 *		PostgreSQL 16 replaced the per-catalog pg_*_ownercheck functions by
 *		object_ownercheck.
 */
#if PG_VERSION_NUM >= 160000
#define schedlock_database_ownercheck(dboid, roleid) \
	object_ownercheck(DatabaseRelationId, (dboid), (roleid))
#else
#define schedlock_database_ownercheck(dboid, roleid) \
	pg_database_ownercheck((dboid), (roleid))
#endif

/*
 * schedlock_portal_run(portal, count, isTopLevel, dest, altdest, qc)
 *		PortalRun for a portal that is run once, to completion.  PostgreSQL
 *		18 dropped the run_once argument (it was always true in practice).
 */
#if PG_VERSION_NUM >= 180000
#define schedlock_portal_run(portal, count, isTopLevel, dest, altdest, qc) \
	PortalRun((portal), (count), (isTopLevel), (dest), (altdest), (qc))
#else
#define schedlock_portal_run(portal, count, isTopLevel, dest, altdest, qc) \
	PortalRun((portal), (count), (isTopLevel), true, (dest), (altdest), (qc))
#endif

#endif							/* SCHEDLOCK_COMPAT_H */
