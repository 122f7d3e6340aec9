/*-------------------------------------------------------------------------
 *
 * store_roles.c
 *	  The statements on schedlock.jobs and schedlock.job_runs for the roles
 *	  of jobs (job_roles.c): the roles of deleted jobs, the jobs' rows in
 *	  pg_shdepend compared with the table, and the jobs' part of DROP OWNED
 *	  and REASSIGN OWNED.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_roles.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "base/kept_query.h"
#include "jobstore.h"
#include "store_int.h"

/* The columns of the statements below that give JobRoleDeltas. */
typedef enum DeltaColumn
{
	DELTA_KIND = 1,
	DELTA_ROLE,
	DELTA_N
} DeltaColumn;

/*
 * take_deltas
 *		The rows of the last SPI result, (kind, role, n) in the columns of
 *		DeltaColumn, as JobRoleDeltas; the result is freed.
 */
static JobRoleDelta *
take_deltas(int *n)
{
	JobRoleDelta *deltas = palloc(sizeof(JobRoleDelta) * Max(SPI_processed, 1));

	*n = 0;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		role_null;
		bool		isnull;
		JobRoleDelta *d = &deltas[*n];

		d->kind = DatumGetInt32(SPI_getbinval(tup, desc, DELTA_KIND, &isnull));
		d->role = DatumGetObjectId(SPI_getbinval(tup, desc, DELTA_ROLE, &role_null));
		d->n = DatumGetInt64(SPI_getbinval(tup, desc, DELTA_N, &isnull));
		if (!role_null && !isnull)
			(*n)++;
	}
	SPI_freetuptable(SPI_tuptable);
	return deltas;
}

/*
 * schedlock_removed_jobs_deltas
 *		For the AFTER DELETE statement trigger: the rows to delete, grouped
 *		by kind and role, from the transition table old_jobs.  Connects to
 *		SPI; the caller finishes it after using the deltas.  One scan per role rather
 *		than one per job: a role's rows deleted earlier in the transaction
 *		stay in the index until vacuum, and each later scan would step over
 *		them all.
 */
JobRoleDelta *
schedlock_removed_jobs_deltas(TriggerData *trigdata, int *n)
{
	int			nestlevel;

	SPI_connect();
	if (SPI_register_trigger_data(trigdata) != SPI_OK_TD_REGISTER)
		elog(ERROR, "could not read the deleted jobs");
	nestlevel = schedlock_trusted_path_begin();
	if (SPI_execute("SELECT 1, o.owner::pg_catalog.oid, "
					"       OPERATOR(pg_catalog.-) pg_catalog.count(*) "
					"  FROM old_jobs o GROUP BY 2 "
					"UNION ALL "
					"SELECT 2, o.run_as::pg_catalog.oid, "
					"       OPERATOR(pg_catalog.-) pg_catalog.count(*) "
					"  FROM old_jobs o "
					" WHERE o.run_as::pg_catalog.oid OPERATOR(pg_catalog.<>) "
					"       o.owner::pg_catalog.oid "
					" GROUP BY 2", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the deleted jobs");
	schedlock_trusted_path_end(nestlevel);
	return take_deltas(n);
}

/*
 * schedlock_job_roles_diff
 *		Compare this database's job rows in pg_shdepend (deptype 't', the
 *		owner rows on the extension extoid, the run_as rows on the table
 *		jobsoid: see job_roles.c) with schedlock.jobs:
 *		one result row (kind, role, n) for each kind and role with rows to
 *		add (n > 0) or delete (n < 0).  Rows are only wanted for existing,
 *		unpinned roles.  Caller is connected to SPI and runs as the
 *		extension owner with a trusted search_path.
 */
JobRoleDelta *
schedlock_job_roles_diff(Oid extoid, Oid jobsoid, int *n)
{
	Oid			types[7] = {OIDOID, OIDOID, OIDOID, OIDOID, OIDOID, OIDOID, OIDOID};
	Datum		values[7];

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = ObjectIdGetDatum(ExtensionRelationId);
	values[2] = ObjectIdGetDatum(extoid);
	values[3] = ObjectIdGetDatum(RelationRelationId);
	values[4] = ObjectIdGetDatum(jobsoid);
	values[5] = ObjectIdGetDatum(AuthIdRelationId);
	values[6] = ObjectIdGetDatum(FirstUnpinnedObjectId);
	if (SPI_execute_with_args("SELECT s.kind, s.role, s.n FROM ("
							  " SELECT x.kind, x.role, pg_catalog.sum(x.n)::pg_catalog.int8 AS n FROM ("
							  "  SELECT 1 AS kind, j.owner::pg_catalog.oid AS role, 1 AS n "
							  "    FROM schedlock.jobs j "
							  "  UNION ALL "
							  "  SELECT 2, j.run_as::pg_catalog.oid, 1 "
							  "    FROM schedlock.jobs j "
							  "   WHERE j.run_as::pg_catalog.oid OPERATOR(pg_catalog.<>) "
							  "         j.owner::pg_catalog.oid "
							  "  UNION ALL "
							  "  SELECT CASE WHEN d.classid OPERATOR(pg_catalog.=) $2 THEN 1 ELSE 2 END, "
							  "         d.refobjid, -1 "
							  "    FROM pg_catalog.pg_shdepend d "
							  "   WHERE d.dbid OPERATOR(pg_catalog.=) $1 "
							  "     AND ((d.classid OPERATOR(pg_catalog.=) $2 "
							  "           AND d.objid OPERATOR(pg_catalog.=) $3) "
							  "          OR (d.classid OPERATOR(pg_catalog.=) $4 "
							  "              AND d.objid OPERATOR(pg_catalog.=) $5)) "
							  "     AND d.objsubid OPERATOR(pg_catalog.=) 0 "
							  "     AND d.refclassid OPERATOR(pg_catalog.=) $6 "
							  "     AND d.deptype OPERATOR(pg_catalog.=) 't'"
							  " ) x GROUP BY x.kind, x.role"
							  ") s "
							  "WHERE s.n OPERATOR(pg_catalog.<) 0 "
							  "   OR (s.n OPERATOR(pg_catalog.>) 0 "
							  "       AND s.role OPERATOR(pg_catalog.>=) $7 "
							  "       AND EXISTS (SELECT FROM pg_catalog.pg_roles r "
							  "                    WHERE r.oid OPERATOR(pg_catalog.=) s.role))",
							  7, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not compare the job roles with the jobs");
	return take_deltas(n);
}

/*
 * schedlock_reassign_jobs
 *		REASSIGN OWNED BY roles TO newrole, for the jobs: owner, run_as and
 *		the owner of their runs.  A job name that newrole would then have
 *		twice is an error and changes nothing.  Connected to SPI, as the
 *		extension owner, with the trigger off.
 */
JobRoleDelta *
schedlock_reassign_jobs(Datum roles, Oid newrole, int *n)
{
	Oid			types[2] = {OIDARRAYOID, OIDOID};
	Datum		values[2] = {roles, ObjectIdGetDatum(newrole)};

	/* the jobs stay as they are read here until the end */
	if (SPI_execute_with_args("SELECT 1 FROM schedlock.jobs "
							  " WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  "    OR run_as::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  "   FOR UPDATE",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the jobs to reassign");

	if (SPI_execute_with_args("SELECT j.job_name, pg_catalog.string_agg("
							  "         pg_catalog.quote_ident(j.owner::pg_catalog.text), ', ' "
							  "         ORDER BY j.owner::pg_catalog.text) "
							  "  FROM schedlock.jobs j "
							  " WHERE j.owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  "    OR j.owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2 "
							  " GROUP BY j.job_name "
							  "HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1 "
							  " ORDER BY j.job_name LIMIT 1",
							  2, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not look for clashing job names");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("role \"%s\" would own two jobs named \"%s\"",
						GetUserNameFromId(newrole, false),
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errdetail("Roles %s each have a job of that name, and job names are unique per owner.",
						   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
				 errhint("Unschedule one of the jobs (schedule it again under another name if it is still needed), then run REASSIGN OWNED again.")));

	/* a run's owner is its job's; the runs of unscheduled jobs go too */
	if (SPI_execute_with_args("UPDATE schedlock.job_runs r "
							  "   SET owner = $2::pg_catalog.regrole "
							  " WHERE r.owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not reassign job runs");
	if (SPI_execute_with_args("WITH u AS ("
							  " UPDATE schedlock.jobs j "
							  "    SET owner = CASE WHEN j.owner::pg_catalog.oid "
							  "                          OPERATOR(pg_catalog.=) ANY ($1) "
							  "                     THEN $2::pg_catalog.regrole ELSE j.owner END, "
							  "        run_as = CASE WHEN j.run_as::pg_catalog.oid "
							  "                           OPERATOR(pg_catalog.=) ANY ($1) "
							  "                      THEN $2::pg_catalog.regrole ELSE j.run_as END "
							  "   FROM schedlock.jobs o "
							  "  WHERE o.job_id OPERATOR(pg_catalog.=) j.job_id "
							  "    AND (o.owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  "         OR o.run_as::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)) "
							  " RETURNING o.owner::pg_catalog.oid AS o_owner, "
							  "           o.run_as::pg_catalog.oid AS o_run_as, "
							  "           j.owner::pg_catalog.oid AS n_owner, "
							  "           j.run_as::pg_catalog.oid AS n_run_as) "
							  "SELECT x.kind, x.role, pg_catalog.sum(x.n)::pg_catalog.int8 FROM ("
							  " SELECT 1 AS kind, u.o_owner AS role, -1 AS n FROM u "
							  " UNION ALL SELECT 2, u.o_run_as, -1 FROM u "
							  "  WHERE u.o_run_as OPERATOR(pg_catalog.<>) u.o_owner "
							  " UNION ALL SELECT 1, u.n_owner, 1 FROM u "
							  " UNION ALL SELECT 2, u.n_run_as, 1 FROM u "
							  "  WHERE u.n_run_as OPERATOR(pg_catalog.<>) u.n_owner"
							  ") x GROUP BY x.kind, x.role "
							  "HAVING pg_catalog.sum(x.n) OPERATOR(pg_catalog.<>) 0",
							  2, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not reassign jobs");
	return take_deltas(n);
}

/*
 * schedlock_drop_jobs
 *		DROP OWNED BY roles, for the jobs: delete the jobs they own and the
 *		jobs that run as one of them, with their runs, and the runs the
 *		roles own of jobs unscheduled before (release 1.2 keeps a job's
 *		runs when it is unscheduled; before, ON DELETE CASCADE took them).
 *		Connected to SPI, as the extension owner, with the trigger off.
 */
JobRoleDelta *
schedlock_drop_jobs(Datum roles, int *n)
{
	Oid			types[1] = {OIDARRAYOID};
	Datum		values[1] = {roles};

	if (store_tables_current() &&
		SPI_execute_with_args("DELETE FROM schedlock.job_runs "
							  "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  "   OR job_id OPERATOR(pg_catalog.=) ANY ("
							  "     SELECT job_id FROM schedlock.jobs "
							  "      WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  "         OR run_as::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1))",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not drop runs");
	if (SPI_execute_with_args("WITH d AS ("
							  " DELETE FROM schedlock.jobs "
							  "  WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  "     OR run_as::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
							  " RETURNING owner::pg_catalog.oid AS owner, "
							  "           run_as::pg_catalog.oid AS run_as) "
							  "SELECT 1, d.owner, OPERATOR(pg_catalog.-) pg_catalog.count(*) "
							  "  FROM d GROUP BY d.owner "
							  "UNION ALL "
							  "SELECT 2, d.run_as, OPERATOR(pg_catalog.-) pg_catalog.count(*) "
							  "  FROM d WHERE d.run_as OPERATOR(pg_catalog.<>) d.owner "
							  " GROUP BY d.run_as",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not drop jobs");
	return take_deltas(n);
}
