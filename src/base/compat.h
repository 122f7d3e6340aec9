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
 *	  src/base/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_COMPAT_H
#define SCHEDLOCK_COMPAT_H

#include "access/genam.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/lock.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/relcache.h"

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
 * schedlock_am_background_worker()
 *		Whether this process is a background worker (the launcher, a job
 *		backend or a housekeeper).  PostgreSQL 17 replaced the
 *		IsBackgroundWorker variable by AmBackgroundWorkerProcess().
 */
#if PG_VERSION_NUM >= 170000
#define schedlock_am_background_worker()	AmBackgroundWorkerProcess()
#else
#define schedlock_am_background_worker()	(IsBackgroundWorker)
#endif

/*
 * The varlena macros (VARSIZE_ANY_EXHDR, VARDATA_ANY, ...): postgres.h
 * carried them until PostgreSQL 16 moved them to varatt.h.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * MAX_BACKENDS, the most processes a server can have: postmaster.h
 * declared it until PostgreSQL 18 moved it to storage/procnumber.h.
 */
#if PG_VERSION_NUM >= 180000
#include "storage/procnumber.h"
#else
#include "postmaster/postmaster.h"
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

/*
 * schedlock_database_aclcheck(dboid, roleid, mode)
 *		pg_database_aclcheck; PostgreSQL 16 replaced the per-catalog
 *		pg_*_aclcheck functions by object_aclcheck.
 */
#if PG_VERSION_NUM >= 160000
#define schedlock_database_aclcheck(dboid, roleid, mode) \
	object_aclcheck(DatabaseRelationId, (dboid), (roleid), (mode))
#else
#define schedlock_database_aclcheck(dboid, roleid, mode) \
	pg_database_aclcheck((dboid), (roleid), (mode))
#endif

/*
 * schedlock_member_of_role(member, role)
 *		Whether member is a member of role in the sense of pg_has_role(...,
 *		'MEMBER').  PostgreSQL 16 split membership into inheriting the
 *		role's privileges and being allowed to SET ROLE to it.
 */
#if PG_VERSION_NUM >= 160000
#define schedlock_member_of_role(member, role) \
	(has_privs_of_role((member), (role)) || member_can_set_role((member), (role)))
#else
#define schedlock_member_of_role(member, role) \
	is_member_of_role((member), (role))
#endif

/*
 * schedlock_lock_held_by_me(tag, mode)
 *		LockHeldByMe for exactly that mode; PostgreSQL 17 added an "or
 *		stronger" argument.
 */
#if PG_VERSION_NUM >= 170000
#define schedlock_lock_held_by_me(tag, mode)	LockHeldByMe((tag), (mode), false)
#else
#define schedlock_lock_held_by_me(tag, mode)	LockHeldByMe((tag), (mode))
#endif

/*
 * schedlock_try_session_lock_quietly(tag, mode)
 *		A conditional session-level lock that reports "not available"
 *		instead of raising an error when the lock table is full (safe
 *		inside an abort callback); PostgreSQL 18 added a logLockFailure
 *		argument to LockAcquireExtended.
 */
#if PG_VERSION_NUM >= 180000
#define schedlock_try_session_lock_quietly(tag, mode) \
	LockAcquireExtended((tag), (mode), true, true, false, NULL, false)
#else
#define schedlock_try_session_lock_quietly(tag, mode) \
	LockAcquireExtended((tag), (mode), true, true, false, NULL)
#endif

/*
 * schedlock_local_beentry(i)
 *		The i-th (1-based) entry of the local copy of the backend status
 *		array; renamed in PostgreSQL 16.
 */
#if PG_VERSION_NUM >= 160000
#define schedlock_local_beentry(i)	pgstat_get_local_beentry_by_index(i)
#else
#define schedlock_local_beentry(i)	pgstat_fetch_stat_local_beentry(i)
#endif

/*
 * schedlock_relation_primary_key_index(rel)
 *		The OID of rel's primary key index; PostgreSQL 18 added a
 *		deferrable_ok argument (a deferrable primary key is not wanted).
 */
#if PG_VERSION_NUM >= 180000
#define schedlock_relation_primary_key_index(rel) \
	RelationGetPrimaryKeyIndex((rel), false)
#else
#define schedlock_relation_primary_key_index(rel) \
	RelationGetPrimaryKeyIndex(rel)
#endif

/*
 * schedlock_index_beginscan(heap, index, snapshot, nkeys, norderbys)
 *		Begin a scan of an index with amgettuple; PostgreSQL 18 added an
 *		instrumentation argument (none is kept here).
 */
#if PG_VERSION_NUM >= 180000
#define schedlock_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define schedlock_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/*
 * schedlock_wait_event_idle()
 *		The wait event of a worker sleeping until its next job.  PostgreSQL 17
 *		offers named custom wait events (WaitEventExtensionNew: shown as
 *		wait_event "SchedlockIdle" of type "Extension"); before 17 every
 *		extension waits on PG_WAIT_EXTENSION ("Extension").  The event is
 *		registered on first use, once per process.
 */
#if PG_VERSION_NUM >= 170000
static inline uint32
schedlock_wait_event_idle(void)
{
	static uint32 event = 0;

	if (event == 0)
		event = WaitEventExtensionNew("SchedlockIdle");
	return event;
}

/* ... and of a job backend waiting for the others of its wave to start */
static inline uint32
schedlock_wait_event_start_wave(void)
{
	static uint32 event = 0;

	if (event == 0)
		event = WaitEventExtensionNew("SchedlockStartWave");
	return event;
}
#else
#define schedlock_wait_event_idle() PG_WAIT_EXTENSION
#define schedlock_wait_event_start_wave() PG_WAIT_EXTENSION
#endif

/*
 * SCHEDLOCK_MY_LXID
 *		This backend's local transaction id (needs storage/proc.h): a field
 *		of PGPROC's virtual transaction id from PostgreSQL 17 on.
 */
#if PG_VERSION_NUM >= 170000
#define SCHEDLOCK_MY_LXID	(MyProc->vxid.lxid)
#else
#define SCHEDLOCK_MY_LXID	(MyProc->lxid)
#endif

/*
 * The executor's permission check (ExecutorCheckPerms_hook): PostgreSQL 16
 * moved what a statement asks of each relation from its range table
 * entries to a list of RTEPermissionInfo, passed beside the range table.
 * A hook is declared with SCHEDLOCK_PERMS_HOOK_PARAMS, walks
 * SCHEDLOCK_PERMS_HOOK_LIST, and passes SCHEDLOCK_PERMS_HOOK_ARGS on.
 * schedlock_perm_entry(entry, &relid, &perms, &checkasuser) reads one
 * entry (false for an entry that is not a relation's);
 * schedlock_perm_entry_writes(entry, perms) says whether the statement
 * changes the relation's rows (INSERT, DELETE, or UPDATE of columns),
 * rather than only locking them (a row-locking clause asks for UPDATE and
 * names no column).
 */
#if PG_VERSION_NUM >= 160000
#define SCHEDLOCK_PERMS_HOOK_PARAMS \
	List *rangeTable, List *rtePermInfos, bool ereport_on_violation
#define SCHEDLOCK_PERMS_HOOK_ARGS rangeTable, rtePermInfos, ereport_on_violation
#define SCHEDLOCK_PERMS_HOOK_LIST rtePermInfos
typedef RTEPermissionInfo SchedlockPermEntry;
#else
#define SCHEDLOCK_PERMS_HOOK_PARAMS List *rangeTable, bool ereport_on_violation
#define SCHEDLOCK_PERMS_HOOK_ARGS rangeTable, ereport_on_violation
#define SCHEDLOCK_PERMS_HOOK_LIST rangeTable
typedef RangeTblEntry SchedlockPermEntry;
#endif

static inline bool
schedlock_perm_entry(void *entry, Oid *relid, AclMode *perms, Oid *checkasuser)
{
	SchedlockPermEntry *e = (SchedlockPermEntry *) entry;

#if PG_VERSION_NUM < 160000
	if (e->rtekind != RTE_RELATION)
		return false;
#endif
	*relid = e->relid;
	*perms = e->requiredPerms;
	*checkasuser = e->checkAsUser;
	return OidIsValid(e->relid);
}

static inline bool
schedlock_perm_entry_writes(void *entry, AclMode perms)
{
	SchedlockPermEntry *e = (SchedlockPermEntry *) entry;

	return (perms & (ACL_INSERT | ACL_DELETE)) != 0 ||
		!bms_is_empty(e->updatedCols);
}

#endif							/* SCHEDLOCK_COMPAT_H */
