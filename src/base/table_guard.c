/*-------------------------------------------------------------------------
 *
 * table_guard.c
 *	  schedlock's tables are the extension's: only their owner writes rows,
 *	  locks rows, or takes a lock stronger than ACCESS SHARE on them.
 *
 * Grants are not enough to say so.  PostgreSQL lets any holder of UPDATE,
 * DELETE, TRUNCATE or MAINTAIN take every lock mode with LOCK TABLE (a
 * holder of INSERT ROW EXCLUSIVE), the predefined role pg_write_all_data
 * acts as a holder of INSERT, UPDATE and DELETE on every table, and
 * pg_maintain (PostgreSQL 17) may LOCK, REINDEX and CLUSTER every table.
 * Such a role could rewrite a job's run_as, delete another role's runs, or
 * hold a lock that stops every job of the database.  So, whatever the
 * grants say, for a relation in the schema schedlock:
 *
 *	- a statement that inserts, updates or deletes its rows, or locks them
 *	  (SELECT ... FOR UPDATE and the other row-locking clauses, which ask
 *	  for UPDATE), is refused at the executor's permission check
 *	  (ExecutorCheckPerms_hook; COPY FROM is checked there too);
 *	- LOCK TABLE in any mode above ACCESS SHARE, REINDEX, CLUSTER and
 *	  VACUUM FULL are refused before PostgreSQL runs them (ProcessUtility).
 *
 * unless the role the check is made for has the privileges of the
 * relation's owner: superusers, the extension owner, and schedlock's own
 * statements, which run as the extension owner (owner.c) or as the
 * bootstrap superuser (the scheduler's processes).  What is left to every
 * other role is what cannot be held against schedlock: reading (ACCESS
 * SHARE, which no statement of schedlock's waits for) and, as for any
 * table in a schema it may use, the ROW EXCLUSIVE lock that PostgreSQL's
 * parser takes for a writing statement that is then refused (PREPARE of
 * one keeps it until the transaction ends), which conflicts with no lock
 * schedlock's statements take.
 *
 * The refusal is SQLSTATE 42501, naming the relation and, for the run
 * history and the jobs, the function that does what was attempted.
 *
 * IDENTIFICATION
 *	  src/base/table_guard.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "compat.h"
#include "table_guard.h"

ExecutorCheckPerms_hook_type schedlock_prev_ExecutorCheckPerms = NULL;

/* what a role may not do to schedlock's tables (guard_relation) */
typedef enum GuardAction
{
	GUARD_WRITE,				/* INSERT, UPDATE, DELETE, MERGE, COPY FROM */
	GUARD_ROW_LOCK,				/* SELECT ... FOR UPDATE/SHARE */
	GUARD_LOCK,					/* LOCK TABLE above ACCESS SHARE */
	GUARD_MAINTAIN				/* REINDEX, CLUSTER, VACUUM FULL */
} GuardAction;

/*
 * refused_hint
 *		What to use instead, for the relations users reach for.
 */
static const char *
refused_hint(const char *relname, GuardAction action)
{
	if (action == GUARD_WRITE && strcmp(relname, "job_runs") == 0)
		return "Delete ended runs of your own jobs with schedlock.delete_runs(older_than => '7 days'); schedlock.history_retention prunes every run.";
	if (action == GUARD_WRITE && strcmp(relname, "jobs") == 0)
		return "Use schedlock.schedule_job(), schedlock.alter_job() and schedlock.unschedule_job().";
	if (action == GUARD_WRITE && strcmp(relname, "lock_state") == 0)
		return "Use the schedlock_acquire(), schedlock_extend() and schedlock_release() functions.";
	return "schedlock's tables are written and locked by the extension's own functions only.";
}

/*
 * guard_relation
 *		Refuse (42501) action on relation relid for role userid unless the
 *		relation is not in the schema schedlock or userid has the
 *		privileges of its owner.  With ereport_on_violation false, says
 *		whether it would refuse instead.  One catalog cache look-up for a
 *		relation outside the schema.
 */
static bool
guard_relation(Oid relid, Oid userid, GuardAction action,
			   bool ereport_on_violation)
{
	HeapTuple	tup;
	Form_pg_class cls;
	Oid			nsp;
	Oid			relowner;
	char	   *relname;
	static const char *const verbs[] = {
		[GUARD_WRITE] = "write to",
		[GUARD_ROW_LOCK] = "lock rows of",
		[GUARD_LOCK] = "lock",
		[GUARD_MAINTAIN] = "maintain"
	};

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return true;
	cls = (Form_pg_class) GETSTRUCT(tup);
	nsp = cls->relnamespace;
	relowner = cls->relowner;
	/* the name only for the message: not copied for a write allowed */
	relname = NULL;
	if (nsp == get_namespace_oid("schedlock", true) &&
		!has_privs_of_role(userid, relowner))
		relname = pstrdup(NameStr(cls->relname));
	ReleaseSysCache(tup);

	if (relname == NULL)
		return true;
	if (!ereport_on_violation)
		return false;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s schedlock.%s", verbs[action],
					relname),
			 errdetail("Only the extension owner writes, locks or maintains the tables of schedlock, whatever other privileges a role holds."),
			 errhint("%s", refused_hint(relname, action))));
	return false;				/* not reached */
}

/*
 * schedlock_table_guard_check_perms
 *		ExecutorCheckPerms_hook: refuse a statement that writes or locks
 *		rows of a relation in the schema schedlock for a role without its
 *		owner's privileges; then the hook it replaced decides.  Rights are
 *		checked for the entry's checkAsUser when set (a view's owner), as
 *		PostgreSQL checks them.
 */
bool
schedlock_table_guard_check_perms(SCHEDLOCK_PERMS_HOOK_PARAMS)
{
	ListCell   *lc;

	foreach(lc, SCHEDLOCK_PERMS_HOOK_LIST)
	{
		Oid			relid;
		AclMode		perms;
		Oid			userid;

		if (!schedlock_perm_entry(lfirst(lc), &relid, &perms, &userid))
			continue;
		if ((perms & (ACL_INSERT | ACL_UPDATE | ACL_DELETE)) == 0)
			continue;
		if (!OidIsValid(userid))
			userid = GetUserId();

		/*
		 * A row-locking clause asks for UPDATE of a relation it only reads; a
		 * statement that changes rows asks for INSERT or DELETE, or for
		 * UPDATE together with the columns it updates.
		 */
		if (!guard_relation(relid, userid,
							schedlock_perm_entry_writes(lfirst(lc), perms) ?
							GUARD_WRITE : GUARD_ROW_LOCK,
							ereport_on_violation))
			return false;
	}
	if (schedlock_prev_ExecutorCheckPerms)
		return schedlock_prev_ExecutorCheckPerms(SCHEDLOCK_PERMS_HOOK_ARGS);
	return true;
}

/*
 * guard_rangevar
 *		guard_relation for a relation a utility statement names; a name
 *		that does not resolve is left to PostgreSQL to report.
 */
static void
guard_rangevar(RangeVar *rv, GuardAction action)
{
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);

	if (OidIsValid(relid))
		(void) guard_relation(relid, GetUserId(), action, true);
}

/*
 * vacuum_is_full
 *		Whether VACUUM's options ask for FULL.
 */
static bool
vacuum_is_full(VacuumStmt *stmt)
{
	ListCell   *lc;

	if (!stmt->is_vacuumcmd)
		return false;
	foreach(lc, stmt->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, "full") == 0)
			return opt->arg == NULL || defGetBoolean(opt);
	}
	return false;
}

/*
 * schedlock_table_guard_utility
 *		From the ProcessUtility hook, before PostgreSQL runs the statement:
 *		refuse LOCK TABLE above ACCESS SHARE, REINDEX (of a table or an
 *		index), CLUSTER and VACUUM FULL of a relation in the schema
 *		schedlock for a role without its owner's privileges.  REINDEX
 *		and CLUSTER may run in a transaction block and keep their lock to
 *		its end; VACUUM FULL holds ACCESS EXCLUSIVE for as long as it
 *		rewrites the table.
 */
void
schedlock_table_guard_utility(Node *parsetree)
{
	ListCell   *lc;

	switch (nodeTag(parsetree))
	{
		case T_LockStmt:
			{
				LockStmt   *stmt = (LockStmt *) parsetree;

				if (stmt->mode <= AccessShareLock)
					return;
				foreach(lc, stmt->relations)
					guard_rangevar(lfirst_node(RangeVar, lc), GUARD_LOCK);
				break;
			}
		case T_ReindexStmt:
			{
				ReindexStmt *stmt = (ReindexStmt *) parsetree;

				if (stmt->relation != NULL &&
					(stmt->kind == REINDEX_OBJECT_TABLE ||
					 stmt->kind == REINDEX_OBJECT_INDEX))
				{
					Oid			relid = RangeVarGetRelid(stmt->relation,
														 NoLock, true);

					/* an index is guarded through its table */
					if (OidIsValid(relid) && stmt->kind == REINDEX_OBJECT_INDEX)
						relid = IndexGetRelation(relid, true);
					if (OidIsValid(relid))
						(void) guard_relation(relid, GetUserId(),
											  GUARD_MAINTAIN, true);
				}
				break;
			}
		case T_ClusterStmt:
			{
				ClusterStmt *stmt = (ClusterStmt *) parsetree;

				if (stmt->relation != NULL)
					guard_rangevar(stmt->relation, GUARD_MAINTAIN);
				break;
			}
		case T_VacuumStmt:
			{
				VacuumStmt *stmt = (VacuumStmt *) parsetree;

				if (!vacuum_is_full(stmt))
					return;
				foreach(lc, stmt->rels)
				{
					VacuumRelation *vrel = lfirst_node(VacuumRelation, lc);

					if (vrel->relation != NULL)
						guard_rangevar(vrel->relation, GUARD_MAINTAIN);
				}
				break;
			}
		default:
			break;
	}
}
