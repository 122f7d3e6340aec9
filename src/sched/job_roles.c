/*-------------------------------------------------------------------------
 *
 * job_roles.c
 *	  The roles of a job: a job ties its owner and its run_as role the way
 *	  an object ties its owner (DROP ROLE refuses, DROP OWNED removes,
 *	  REASSIGN OWNED hands over), and a job whose role cannot log in does
 *	  not run.
 *
 * How it works, at length: docs/internals.md, section
 * "The rows in pg_shdepend".
 *
 * IDENTIFICATION
 *	  src/sched/job_roles.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_shdepend.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "commands/user.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "base/kept_query.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/owner.h"
#include "base/primary.h"
#include "job_roles.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"

/* The deptype of a job's rows in pg_shdepend; see the file header. */
#define SCHEDLOCK_JOB_DEPTYPE	SHARED_DEPENDENCY_TABLESPACE

/* The two kinds of rows (also in the SQL below). */
#define JOB_ROLE_OWNER		1
#define JOB_ROLE_RUN_AS		2

PG_FUNCTION_INFO_V1(schedlock_job_roles_trigger);
PG_FUNCTION_INFO_V1(schedlock_sync_job_roles_sql);

PGDLLEXPORT Datum schedlock_job_roles_trigger(PG_FUNCTION_ARGS);
PGDLLEXPORT Datum schedlock_sync_job_roles_sql(PG_FUNCTION_ARGS);

object_access_hook_type schedlock_prev_object_access_hook = NULL;

/*
 * While DROP OWNED or REASSIGN OWNED changes many jobs with one statement,
 * the trigger leaves the rows alone and the statement adjusts them in bulk:
 * row by row, each deletion would step over the rows deleted before it.
 */
static bool job_roles_trigger_off = false;

/* Where this database's rows of a kind point: classid and objid. */
typedef struct JobRowTargets
{
	Oid			extoid;			/* the schedlock extension: owner rows */
	Oid			jobsoid;		/* schedlock.jobs: run_as rows */
} JobRowTargets;

/* The roles one row of schedlock.jobs refers to. */
typedef struct JobRoles
{
	char	   *job_name;
	Oid			owner;
	Oid			run_as;			/* InvalidOid when none or the owner */
} JobRoles;

/* Jobs of one role in one database, for DROP ROLE's message. */
typedef struct JobCount
{
	Oid			dbid;
	char	   *dbname;
	int64		owner;			/* jobs the role owns */
	int64		run_as;			/* jobs that run as the role */
} JobCount;

/*
 * job_row_kind
 *		JOB_ROLE_OWNER or JOB_ROLE_RUN_AS when a pg_shdepend row is one of
 *		schedlock's job rows (of any database), else 0.
 */
static int
job_row_kind(Form_pg_shdepend row)
{
	if (row->refclassid != AuthIdRelationId ||
		row->deptype != SCHEDLOCK_JOB_DEPTYPE ||
		row->objsubid != 0 || !OidIsValid(row->dbid))
		return 0;
	if (row->classid == ExtensionRelationId)
		return JOB_ROLE_OWNER;
	if (row->classid == RelationRelationId)
		return JOB_ROLE_RUN_AS;
	return 0;
}

/*
 * job_row_targets
 *		The objects this database's job rows point at; false when the
 *		extension is not installed here.
 */
static bool
job_row_targets(JobRowTargets *targets)
{
	Oid			nsp;

	targets->extoid = get_extension_oid("schedlock", true);
	nsp = get_namespace_oid("schedlock", true);
	targets->jobsoid = OidIsValid(nsp) ? get_relname_relid("jobs", nsp) : InvalidOid;
	return OidIsValid(targets->extoid) && OidIsValid(targets->jobsoid);
}

/* classid and objid of a kind of row */
#define TARGET_CLASS(kind) \
	((kind) == JOB_ROLE_OWNER ? ExtensionRelationId : RelationRelationId)
#define TARGET_OBJECT(targets, kind) \
	((kind) == JOB_ROLE_OWNER ? (targets)->extoid : (targets)->jobsoid)

/*
 * add_job_role
 *		Record that job job_name refers to role as its owner or run_as role
 *		(kind), unless the role is pinned.  Takes a share lock on the role,
 *		as PostgreSQL does when it records a dependency, so that a
 *		concurrent DROP ROLE either commits first (and the role is reported
 *		missing here) or waits and sees the row.  sdep is pg_shdepend,
 *		opened RowExclusiveLock.
 */
static void
add_job_role(Relation sdep, const JobRowTargets *targets, int kind, Oid role,
			 const char *job_name)
{
	Datum		values[Natts_pg_shdepend];
	bool		nulls[Natts_pg_shdepend];
	HeapTuple	tup;

	if (!OidIsValid(role) || IsPinnedObject(AuthIdRelationId, role))
		return;
	LockSharedObject(AuthIdRelationId, role, 0, AccessShareLock);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the %s of job \"%s\" does not exist",
						kind == JOB_ROLE_OWNER ? "owner" : "run_as role", job_name),
				 errdetail("There is no role with OID %u; it may have been dropped concurrently.",
						   role)));

	memset(nulls, false, sizeof(nulls));
	values[Anum_pg_shdepend_dbid - 1] = ObjectIdGetDatum(MyDatabaseId);
	values[Anum_pg_shdepend_classid - 1] = ObjectIdGetDatum(TARGET_CLASS(kind));
	values[Anum_pg_shdepend_objid - 1] = ObjectIdGetDatum(TARGET_OBJECT(targets, kind));
	values[Anum_pg_shdepend_objsubid - 1] = Int32GetDatum(0);
	values[Anum_pg_shdepend_refclassid - 1] = ObjectIdGetDatum(AuthIdRelationId);
	values[Anum_pg_shdepend_refobjid - 1] = ObjectIdGetDatum(role);
	values[Anum_pg_shdepend_deptype - 1] = CharGetDatum(SCHEDLOCK_JOB_DEPTYPE);
	tup = heap_form_tuple(RelationGetDescr(sdep), values, nulls);
	CatalogTupleInsert(sdep, tup);
	heap_freetuple(tup);
}

/*
 * remove_job_role
 *		Delete up to count rows of this database of that kind that refer to
 *		role; fewer when there are fewer (a pinned role has none).  Returns
 *		how many it deleted.  sdep is pg_shdepend, opened RowExclusiveLock.
 */
static int64
remove_job_role(Relation sdep, const JobRowTargets *targets, int kind,
				Oid role, int64 count)
{
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	int64		removed = 0;

	ScanKeyInit(&key[0], Anum_pg_shdepend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(AuthIdRelationId));
	ScanKeyInit(&key[1], Anum_pg_shdepend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(role));
	scan = systable_beginscan(sdep, SharedDependReferenceIndexId, true,
							  NULL, 2, key);
	while (removed < count && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_shdepend row = (Form_pg_shdepend) GETSTRUCT(tup);

		if (job_row_kind(row) != kind || row->dbid != MyDatabaseId ||
			row->objid != TARGET_OBJECT(targets, kind))
			continue;
		CatalogTupleDelete(sdep, &tup->t_self);
		removed++;
	}
	systable_endscan(scan);
	return removed;
}

/*
 * remove_all_job_roles
 *		Delete every job row of this database (TRUNCATE of the jobs).
 */
static void
remove_all_job_roles(Relation sdep, const JobRowTargets *targets)
{
	int			kind;

	for (kind = JOB_ROLE_OWNER; kind <= JOB_ROLE_RUN_AS; kind++)
	{
		ScanKeyData key[4];
		SysScanDesc scan;
		HeapTuple	tup;

		ScanKeyInit(&key[0], Anum_pg_shdepend_dbid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(MyDatabaseId));
		ScanKeyInit(&key[1], Anum_pg_shdepend_classid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(TARGET_CLASS(kind)));
		ScanKeyInit(&key[2], Anum_pg_shdepend_objid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(TARGET_OBJECT(targets, kind)));
		ScanKeyInit(&key[3], Anum_pg_shdepend_objsubid, BTEqualStrategyNumber,
					F_INT4EQ, Int32GetDatum(0));
		scan = systable_beginscan(sdep, SharedDependDependerIndexId, true,
								  NULL, 4, key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			if (job_row_kind((Form_pg_shdepend) GETSTRUCT(tup)) == kind)
				CatalogTupleDelete(sdep, &tup->t_self);
		}
		systable_endscan(scan);
	}
}

/*
 * apply_job_role_deltas
 *		Add or delete job rows as the n deltas say (one per kind and role:
 *		n rows to add or delete).  Roles to add that do not exist (any
 *		more) are skipped: their jobs fail when they run.  Returns how many
 *		rows changed.
 */
static int64
apply_job_role_deltas(const JobRowTargets *targets, const JobRoleDelta *deltas,
					  int n)
{
	Relation	sdep;
	int64		changed = 0;

	if (n == 0)
		return 0;
	sdep = table_open(SharedDependRelationId, RowExclusiveLock);
	for (int i = 0; i < n; i++)
	{
		int			kind = deltas[i].kind;
		Oid			role = deltas[i].role;
		int64		count = deltas[i].n;

		if (!OidIsValid(role))
			continue;
		if (count < 0)
			changed += remove_job_role(sdep, targets, kind, role, -count);
		else if (!IsPinnedObject(AuthIdRelationId, role))
		{
			LockSharedObject(AuthIdRelationId, role, 0, AccessShareLock);
			if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
				continue;
			for (; count > 0; count--, changed++)
				add_job_role(sdep, targets, kind, role, "?");
		}
	}
	table_close(sdep, RowExclusiveLock);
	CommandCounterIncrement();
	return changed;
}

/*
 * read_job_roles
 *		The roles a row of schedlock.jobs refers to.
 */
static void
read_job_roles(Relation rel, HeapTuple tup, JobRoles *roles)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		isnull;
	Datum		d;

	roles->job_name = SPI_getvalue(tup, desc, SPI_fnumber(desc, "job_name"));
	d = heap_getattr(tup, SPI_fnumber(desc, "owner"), desc, &isnull);
	roles->owner = isnull ? InvalidOid : DatumGetObjectId(d);
	d = heap_getattr(tup, SPI_fnumber(desc, "run_as"), desc, &isnull);
	roles->run_as = isnull ? InvalidOid : DatumGetObjectId(d);
	if (roles->run_as == roles->owner)
		roles->run_as = InvalidOid;
}

/*
 * schedlock_job_roles_trigger
 *		Trigger on schedlock.jobs that keeps the jobs' rows in pg_shdepend
 *		in step with the table: AFTER INSERT or UPDATE OF owner, run_as FOR
 *		EACH ROW; AFTER DELETE FOR EACH STATEMENT with the transition table
 *		old_jobs; AFTER TRUNCATE.
 */
Datum
schedlock_job_roles_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	JobRowTargets targets;
	Relation	sdep;
	JobRoles	before;
	JobRoles	after;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!job_row_targets(&targets) ||
		RelationGetRelid(trigdata->tg_relation) != targets.jobsoid ||
		(TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) &&
		 (TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) || trigdata->tg_oldtable == NULL)) ||
		(!TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) &&
		 !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event) &&
		 !TRIGGER_FIRED_FOR_ROW(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("schedlock.job_roles_trigger() may only run as an AFTER trigger of schedlock.jobs")));
	if (job_roles_trigger_off)
		return PointerGetDatum(NULL);

	if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
	{
		JobRoleDelta *deltas;
		int			n;

		deltas = schedlock_removed_jobs_deltas(trigdata, &n);
		(void) apply_job_role_deltas(&targets, deltas, n);
		SPI_finish();
		return PointerGetDatum(NULL);
	}

	sdep = table_open(SharedDependRelationId, RowExclusiveLock);
	if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		remove_all_job_roles(sdep, &targets);
	else if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
	{
		read_job_roles(trigdata->tg_relation, trigdata->tg_trigtuple, &after);
		add_job_role(sdep, &targets, JOB_ROLE_OWNER, after.owner, after.job_name);
		add_job_role(sdep, &targets, JOB_ROLE_RUN_AS, after.run_as, after.job_name);
	}
	else
	{
		/* UPDATE: an unchanged role keeps its row */
		read_job_roles(trigdata->tg_relation, trigdata->tg_trigtuple, &before);
		read_job_roles(trigdata->tg_relation, trigdata->tg_newtuple, &after);
		if (before.owner != after.owner)
		{
			(void) remove_job_role(sdep, &targets, JOB_ROLE_OWNER, before.owner, 1);
			add_job_role(sdep, &targets, JOB_ROLE_OWNER, after.owner, after.job_name);
		}
		if (before.run_as != after.run_as)
		{
			if (OidIsValid(before.run_as))
				(void) remove_job_role(sdep, &targets, JOB_ROLE_RUN_AS, before.run_as, 1);
			add_job_role(sdep, &targets, JOB_ROLE_RUN_AS, after.run_as, after.job_name);
		}
	}
	table_close(sdep, RowExclusiveLock);

	/* the next row's changes must not find the rows deleted here */
	if (!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		CommandCounterIncrement();
	return PointerGetDatum(NULL);
}

/*
 * schedlock_sync_job_roles
 *		Make this database's job rows in pg_shdepend match schedlock.jobs,
 *		and return how many rows it added or deleted.  Nothing is locked
 *		unless something differs; then the jobs table is locked against
 *		writers (SHARE ROW EXCLUSIVE) and the comparison repeated, so that
 *		no concurrent change is undone.  Jobs whose role no longer exists
 *		are left without a row (they fail when they run).  Runs as the
 *		extension owner.  In a transaction.
 */
int64
schedlock_sync_job_roles(void)
{
	JobRowTargets targets;
	Oid			save_uid;
	int			save_sec;
	int			nestlevel;
	int64		changed = 0;
	JobRoleDelta *deltas;
	int			n;

	if (!job_row_targets(&targets))
		return 0;
	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &nestlevel);
	(void) schedlock_job_roles_diff(targets.extoid, targets.jobsoid, &n);
	if (n > 0)
	{
		LockRelationOid(targets.jobsoid, ShareRowExclusiveLock);
		deltas = schedlock_job_roles_diff(targets.extoid, targets.jobsoid, &n);
		changed = apply_job_role_deltas(&targets, deltas, n);
	}
	schedlock_end_as_owner(save_uid, save_sec, nestlevel);
	SPI_finish();

	if (changed > 0)
		ereport(LOG,
				(errmsg("schedlock rebuilt %lld records of jobs on roles",
						(long long) changed)));
	return changed;
}

/*
 * schedlock_sync_job_roles_sql
 *		SQL: schedlock.sync_job_roles() -> bigint
 *
 * Rebuilds the records of this database's jobs in pg_shdepend (see
 * schedlock_sync_job_roles); not executable by PUBLIC.
 */
Datum
schedlock_sync_job_roles_sql(PG_FUNCTION_ARGS)
{
	schedlock_require_writable("schedlock.sync_job_roles");
	PG_RETURN_INT64(schedlock_sync_job_roles());
}

/*
 * compare_job_counts
 *		qsort comparator: by database name.
 */
static int
compare_job_counts(const void *a, const void *b)
{
	return strcmp(((const JobCount *) a)->dbname,
				  ((const JobCount *) b)->dbname);
}

/*
 * check_drop_role
 *		Refuse to drop a role that owns jobs, or that jobs run as, in any
 *		database: SQLSTATE 2BP01 and a detail with one line per database
 *		and kind, like PostgreSQL's own for objects.  Called by DROP ROLE
 *		after its permission checks; takes the lock DROP ROLE is about to
 *		take, so that no job can be scheduled for the role meanwhile.
 */
static void
check_drop_role(Oid roleid)
{
	Relation	sdep;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	JobCount   *counts = NULL;
	int			ncounts = 0;
	int			allocated = 0;
	int			nnamed = 0;
	int			i;
	StringInfoData detail;

	LockSharedObject(AuthIdRelationId, roleid, 0, AccessExclusiveLock);

	sdep = table_open(SharedDependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_shdepend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(AuthIdRelationId));
	ScanKeyInit(&key[1], Anum_pg_shdepend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(roleid));
	scan = systable_beginscan(sdep, SharedDependReferenceIndexId, true,
							  NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_shdepend row = (Form_pg_shdepend) GETSTRUCT(tup);
		int			kind = job_row_kind(row);
		JobCount   *c = NULL;

		if (kind == 0)
			continue;
		for (i = 0; i < ncounts; i++)
			if (counts[i].dbid == row->dbid)
				c = &counts[i];
		if (c == NULL)
		{
			if (ncounts == allocated)
			{
				allocated = allocated ? allocated * 2 : 8;
				counts = counts ? repalloc(counts, allocated * sizeof(JobCount)) :
					palloc(allocated * sizeof(JobCount));
			}
			c = &counts[ncounts++];
			c->dbid = row->dbid;
			c->dbname = NULL;
			c->owner = c->run_as = 0;
		}
		if (kind == JOB_ROLE_OWNER)
			c->owner++;
		else
			c->run_as++;
	}
	systable_endscan(scan);
	table_close(sdep, AccessShareLock);
	if (ncounts == 0)
		return;

	/* a database dropped meanwhile took its rows with it */
	for (i = 0; i < ncounts; i++)
	{
		char	   *name = get_database_name(counts[i].dbid);

		if (name != NULL)
		{
			counts[nnamed] = counts[i];
			counts[nnamed++].dbname = name;
		}
	}
	if (nnamed == 0)
		return;
	qsort(counts, nnamed, sizeof(JobCount), compare_job_counts);

	initStringInfo(&detail);
	for (i = 0; i < nnamed; i++)
	{
		if (counts[i].owner > 0)
			appendStringInfo(&detail, "%sowner of %lld %s in database %s",
							 detail.len > 0 ? "\n" : "",
							 (long long) counts[i].owner,
							 counts[i].owner == 1 ? "job" : "jobs",
							 counts[i].dbname);
		if (counts[i].run_as > 0)
			appendStringInfo(&detail, "%srun_as of %lld %s in database %s",
							 detail.len > 0 ? "\n" : "",
							 (long long) counts[i].run_as,
							 counts[i].run_as == 1 ? "job" : "jobs",
							 counts[i].dbname);
	}
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("role \"%s\" cannot be dropped because some objects depend on it",
					GetUserNameFromId(roleid, false)),
			 errdetail_internal("%s", detail.data),
			 errhint("In each database named, run REASSIGN OWNED BY or DROP OWNED BY for the role, or remove the jobs with schedlock.unschedule_job().")));
}

/*
 * schedlock_roles_object_access
 *		object_access_hook: DROP ROLE asks before it drops a role (after its
 *		own permission checks, before its own dependency check).
 */
void
schedlock_roles_object_access(ObjectAccessType access, Oid classId, Oid objectId,
							  int subId, void *arg)
{
	if (schedlock_prev_object_access_hook)
		schedlock_prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == AuthIdRelationId)
		check_drop_role(objectId);
}

/*
 * schedlock_owned_jobs
 *		The jobs' part of DROP OWNED and REASSIGN OWNED in this database.
 *		Called by the utility hook after PostgreSQL has run the statement:
 *		its permission checks (the caller has the privileges of every role
 *		named) have passed and the roles exist.  An error here rolls the
 *		whole statement back.
 */
void
schedlock_owned_jobs(Node *parsetree)
{
	JobRowTargets targets;
	List	   *roleids;
	ListCell   *lc;
	Datum	   *elems;
	int			n = 0;
	Datum		roles;
	Oid			save_uid;
	int			save_sec;
	int			nestlevel;
	JobRoleDelta *taken = NULL;
	int			ntaken = 0;

	if (!job_row_targets(&targets))
		return;
	if (IsA(parsetree, DropOwnedStmt))
		roleids = roleSpecsToIds(((DropOwnedStmt *) parsetree)->roles);
	else
		roleids = roleSpecsToIds(((ReassignOwnedStmt *) parsetree)->roles);
	elems = palloc(sizeof(Datum) * Max(list_length(roleids), 1));
	foreach(lc, roleids)
		elems[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	roles = PointerGetDatum(construct_array(elems, n, OIDOID, sizeof(Oid),
											true, TYPALIGN_INT));

	SPI_connect();
	schedlock_begin_as_owner(&save_uid, &save_sec, &nestlevel);
	job_roles_trigger_off = true;
	PG_TRY();
	{
		if (IsA(parsetree, DropOwnedStmt))
			taken = schedlock_drop_jobs(roles, &ntaken);
		else
		{
			taken = schedlock_reassign_jobs(roles,
											get_rolespec_oid(((ReassignOwnedStmt *) parsetree)->newrole,
															 false),
											&ntaken);
			/* the jobs run as another role now: its queue learns at commit */
			schedlock_wake_workers_at_commit();
		}
	}
	PG_FINALLY();
	{
		job_roles_trigger_off = false;
	}
	PG_END_TRY();
	(void) apply_job_role_deltas(&targets, taken, ntaken);
	schedlock_end_as_owner(save_uid, save_sec, nestlevel);
	SPI_finish();
}

/*
 * role_error
 *		An ErrorData in cxt for the worker to record as a run's outcome.
 */
static ErrorData *
role_error(MemoryContext cxt, int sqlerrcode, const char *message)
{
	ErrorData  *error = MemoryContextAllocZero(cxt, sizeof(ErrorData));

	error->elevel = ERROR;
	error->sqlerrcode = sqlerrcode;
	error->message = MemoryContextStrdup(cxt, message);
	error->assoc_context = cxt;
	return error;
}

/*
 * check_login
 *		Whether role could log in to this database now; if not, the error
 *		saying why (what names the role in the message: "job owner", ...).
 */
static ErrorData *
check_login(Oid role, const char *what, MemoryContext cxt)
{
	HeapTuple	tup;
	Form_pg_authid form;
	char	   *name;
	Datum		until;
	bool		isnull;
	ErrorData  *error = NULL;

	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	if (!HeapTupleIsValid(tup))
		return role_error(cxt, ERRCODE_UNDEFINED_OBJECT,
						  psprintf("%s (role with OID %u) does not exist", what, role));
	form = (Form_pg_authid) GETSTRUCT(tup);
	name = pstrdup(NameStr(form->rolname));
	until = SysCacheGetAttr(AUTHOID, tup, Anum_pg_authid_rolvaliduntil, &isnull);
	if (!form->rolcanlogin)
		error = role_error(cxt, ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION,
						   psprintf("%s \"%s\" is not permitted to log in", what, name));
	else if (!isnull && DatumGetTimestampTz(until) < GetCurrentTimestamp())
		error = role_error(cxt, ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION,
						   psprintf("%s \"%s\" has expired: its VALID UNTIL time %s has passed",
									what, name, timestamptz_to_str(DatumGetTimestampTz(until))));
	ReleaseSysCache(tup);
	if (error == NULL &&
		schedlock_database_aclcheck(MyDatabaseId, role, ACL_CONNECT) != ACLCHECK_OK)
		error = role_error(cxt, ERRCODE_INSUFFICIENT_PRIVILEGE,
						   psprintf("%s \"%s\" has no CONNECT privilege on database \"%s\"",
									what, name, get_database_name(MyDatabaseId)));
	return error;
}

/*
 * schedlock_check_job_role
 *		Whether a job of owner, running as run_as (InvalidOid: the owner),
 *		may run now: both roles must exist and be able to log in to this
 *		database (LOGIN, VALID UNTIL not passed, CONNECT privilege).
 *		Returns NULL, or the error to record as the run's outcome (SQLSTATE
 *		42704, 28000 or 42501), allocated in cxt.  The worker calls it in
 *		the claiming transaction, before a command runs or a notification
 *		is sent.
 */
ErrorData *
schedlock_check_job_role(Oid owner, Oid run_as, MemoryContext cxt)
{
	ErrorData  *error = check_login(owner, "job owner", cxt);

	if (error == NULL && OidIsValid(run_as) && run_as != owner)
		error = check_login(run_as, "run_as role", cxt);
	return error;
}

/*
 * schedlock_check_job_approval
 *		Whether job job_id of owner, running as run_as (InvalidOid: the
 *		owner), runs what a superuser approved (schedlock_approval_holds):
 *		always for a job that runs as its owner.  If not, the job is paused
 *		(disabled, with a stopped_reason saying who must approve it again)
 *		and the error to record as the run's outcome (42501) is returned,
 *		allocated in cxt; the command does not run.  Whatever changed the
 *		job (the API, a direct write, a restore), it runs as run_as only as
 *		approved.  On the tables of 1.2 (with approvals), as the extension
 *		owner, in the transaction that claimed the job.
 */
ErrorData *
schedlock_check_job_approval(int64 job_id, const char *job_name, Oid owner,
							 Oid run_as, MemoryContext cxt)
{
	Oid			approver;
	char	   *run_as_name;
	char	   *reason;
	ErrorData  *error;

	if (!OidIsValid(run_as) || run_as == owner ||
		!schedlock_store_caps()->approvals ||
		schedlock_approval_holds(job_id, &approver))
		return NULL;
	run_as_name = GetUserNameFromId(run_as, true);
	reason = psprintf("unapproved: the job runs as role \"%s\", and %s; a superuser approves it again with schedlock.alter_job(job_name => %s, run_as => %s), or its owner clears run_as",
					  run_as_name ? run_as_name : "?",
					  !OidIsValid(approver) ? "no superuser approved that" :
					  !superuser_arg(approver) ?
					  psprintf("role \"%s\", which approved that, is no longer a superuser",
							   GetUserNameFromId(approver, true) ?
							   GetUserNameFromId(approver, true) : "?") :
					  "it changed since a superuser approved that",
					  quote_literal_cstr(job_name),
					  quote_literal_cstr(run_as_name ? run_as_name : "?"));
	schedlock_pause_job(job_id, reason);
	error = role_error(cxt, ERRCODE_INSUFFICIENT_PRIVILEGE,
					   psprintf("job \"%s\" was not run as role \"%s\": its approval does not cover it",
								job_name, run_as_name ? run_as_name : "?"));
	error->detail = MemoryContextStrdup(cxt, reason);
	ereport(WARNING,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("schedlock paused job \"%s\" in database \"%s\"",
					job_name, get_database_name(MyDatabaseId)),
			 errdetail("%s", reason)));
	return error;
}
