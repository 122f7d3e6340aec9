/*-------------------------------------------------------------------------
 *
 * trusted_path.c
 *	  The schemas a job's stored search_path may resolve names in when it
 *	  runs: only those that no role without the rights of the job's role
 *	  can put objects in.
 *
 * A job resolves unqualified names through the search_path stored with it
 * (run_command.c).  A schema in that path that another role owns, or may
 * create objects in, lets that role decide what a name in the job means:
 * a table with a trigger, a function or an operator of the same name, run
 * with the rights of the job's role.  For a job of a superuser in a
 * database owned by an ordinary role, "$user" or public are such schemas.
 *
 * So before each run of an SQL job, the job backend checks every schema of
 * the stored path, as the role the job runs as (runner), and runs the job
 * with a path of the schemas that hold:
 *	- a schema is kept when its owner and every role holding CREATE on it
 *	  have the privileges of runner (has_privs_of_role: runner itself, a
 *	  role runner is a member of, a superuser); pg_database_owner counts
 *	  as the database's owner, and a CREATE grant to PUBLIC keeps it out;
 *	- "$user" is the schema named after runner, checked the same way;
 *	- a schema that does not exist (now) is left out, so that one created
 *	  after the check is not in the path the run uses;
 *	- pg_temp (the backend's own) and pg_catalog (always searched) stay.
 * A schema left out is said once per job and backend, in a WARNING that
 * names the role that could change it.  The run goes on: names the job
 * qualifies, or that resolve in the schemas kept, mean what they meant.
 *
 * IDENTIFICATION
 *	  src/sched/trusted_path.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_namespace.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "trusted_path.h"

/*
 * The jobs already warned about in this backend (job ids), so that a
 * schema left out is said once, not at every run.
 */
#define WARNED_JOBS 64
static int64 warned_jobs[WARNED_JOBS];
static int	nwarned = 0;

/*
 * acting_role
 *		The role that acts as role: the database's owner for
 *		pg_database_owner, else role itself.
 */
static Oid
acting_role(Oid role)
{
	HeapTuple	tup;
	Oid			dba;

	if (role != ROLE_PG_DATABASE_OWNER)
		return role;
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	dba = ((Form_pg_database) GETSTRUCT(tup))->datdba;
	ReleaseSysCache(tup);
	return dba;
}

/*
 * has_runner_rights
 *		Whether role (as acting_role makes it) has the privileges of runner.
 */
static bool
has_runner_rights(Oid role, Oid runner)
{
	role = acting_role(role);
	return OidIsValid(role) && has_privs_of_role(role, runner);
}

/*
 * untrusted_by
 *		Whether schema nsp is untrusted for runner: true, with *who set to a
 *		role that owns it or may create objects in it without runner's
 *		privileges (ACL_ID_PUBLIC, which is InvalidOid, for a grant to
 *		PUBLIC), when it is.
 */
static bool
untrusted_by(Oid nsp, Oid runner, Oid *who)
{
	HeapTuple	tup;
	Oid			owner;
	Datum		datum;
	bool		isnull;
	bool		untrusted = false;

	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	if (!HeapTupleIsValid(tup))
		return false;
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	if (!has_runner_rights(owner, runner))
	{
		*who = owner;
		untrusted = true;
	}
	datum = SysCacheGetAttr(NAMESPACEOID, tup, Anum_pg_namespace_nspacl,
							&isnull);
	if (!untrusted && !isnull)
	{
		Acl		   *acl = DatumGetAclP(datum);
		AclItem    *items = ACL_DAT(acl);
		int			i;

		for (i = 0; i < ACL_NUM(acl); i++)
		{
			if ((ACLITEM_GET_PRIVS(items[i]) & ACL_CREATE) == 0)
				continue;
			if (items[i].ai_grantee == ACL_ID_PUBLIC ||
				!has_runner_rights(items[i].ai_grantee, runner))
			{
				*who = items[i].ai_grantee;
				untrusted = true;
				break;
			}
		}
	}
	ReleaseSysCache(tup);
	return untrusted;
}

/*
 * warn_once
 *		Whether job_id has not been warned about in this backend yet (and
 *		remember it).
 */
static bool
warn_once(int64 job_id)
{
	int			i;

	for (i = 0; i < nwarned; i++)
		if (warned_jobs[i] == job_id)
			return false;
	if (nwarned < WARNED_JOBS)
		warned_jobs[nwarned++] = job_id;
	return true;
}

/*
 * schedlock_trusted_search_path
 *		The search_path job job_id (job_name) runs with when it runs as
 *		runner with the stored path search_path: the schemas of it that are
 *		trusted for runner, in its order (see the file's comment), in cxt.
 *		NULL for NULL (the tables of 1.1: the login's path).
 */
char *
schedlock_trusted_search_path(int64 job_id, const char *job_name,
							  const char *search_path, Oid runner,
							  MemoryContext cxt)
{
	MemoryContext oldcxt;
	char	   *raw;
	List	   *names;
	ListCell   *lc;
	StringInfoData kept;
	StringInfoData left_out;
	Oid			first_who = InvalidOid;
	bool		any_left_out = false;
	char	   *runner_name;

	if (search_path == NULL)
		return NULL;
	oldcxt = MemoryContextSwitchTo(cxt);
	raw = pstrdup(search_path);
	initStringInfo(&kept);
	initStringInfo(&left_out);
	if (!SplitIdentifierString(raw, ',', &names))
		names = NIL;			/* checked as SET does when written; none */
	runner_name = GetUserNameFromId(runner, true);
	foreach(lc, names)
	{
		char	   *name = (char *) lfirst(lc);
		const char *schema = name;
		Oid			nsp;
		Oid			who;

		if (strcmp(name, "$user") == 0)
		{
			if (runner_name == NULL)
				continue;
			schema = runner_name;
		}
		else if (strcmp(name, "pg_temp") == 0 ||
				 strcmp(name, "pg_catalog") == 0)
		{
			appendStringInfo(&kept, "%s%s", kept.len ? ", " : "", name);
			continue;
		}
		nsp = get_namespace_oid(schema, true);
		if (!OidIsValid(nsp))
			continue;
		if (!untrusted_by(nsp, runner, &who))
		{
			appendStringInfo(&kept, "%s%s", kept.len ? ", " : "",
							 quote_identifier(schema));
			continue;
		}
		appendStringInfo(&left_out, "%s%s", left_out.len ? ", " : "",
						 quote_identifier(schema));
		if (!any_left_out)
			first_who = who;
		any_left_out = true;
	}
	if (left_out.len > 0 && warn_once(job_id))
	{
		char	   *who_name = first_who == ACL_ID_PUBLIC ? NULL :
			GetUserNameFromId(acting_role(first_who), true);

		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("job \"%s\" runs without schema %s of its search_path",
						job_name, left_out.data),
				 who_name != NULL ?
				 errdetail("Role \"%s\" can create objects there and lacks the privileges of role \"%s\", which the job runs as.",
						   who_name, runner_name ? runner_name : "?") :
				 errdetail("Every role can create objects there (CREATE is granted to PUBLIC); the job runs as role \"%s\".",
						   runner_name ? runner_name : "?"),
				 errhint("Qualify the names the job uses, or set its search_path to schemas only its role and superusers can create objects in (schedlock.alter_job(job_name => %s, search_path => ...)).",
						 quote_literal_cstr(job_name))));
	}
	MemoryContextSwitchTo(oldcxt);
	return kept.data;
}
