/*-------------------------------------------------------------------------
 *
 * store_jobs.c
 *	  The job API's writes (job_api.c): jobs created, changed, found,
 *	  queued and deleted, as the extension owner.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_jobs.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/kept_query.h"
#include "jobstore.h"
#include "sched/claim_sql.h"
#include "sched/rules.h"
#include "sched/runlog.h"
#include "sched/sched_shmem.h"
#include "store_int.h"

/*
 * def_params
 *		Fill SPI parameters $3 .. $14 from a definition (see the queries).
 */
static void
def_params(const JobDef *def, Datum *values, char *nulls)
{
	values[2] = CStringGetTextDatum(def->schedule);
	values[3] = def->command ? CStringGetTextDatum(def->command) : (Datum) 0;
	nulls[3] = def->command ? ' ' : 'n';
	values[4] = def->channel ? CStringGetTextDatum(def->channel) : (Datum) 0;
	nulls[4] = def->channel ? ' ' : 'n';
	values[5] = def->has_payload ? def->payload : (Datum) 0;
	nulls[5] = def->has_payload ? ' ' : 'n';
	values[6] = CStringGetTextDatum(def->timezone);
	values[7] = def->timeout ? IntervalPGetDatum(def->timeout) : (Datum) 0;
	nulls[7] = def->timeout ? ' ' : 'n';
	values[8] = Int32GetDatum(def->max_attempts);
	values[9] = IntervalPGetDatum(def->retry_delay);
	values[10] = CStringGetTextDatum(def->misfire);
	values[11] = BoolGetDatum(def->atomic);
	values[12] = BoolGetDatum(def->enabled);
	values[13] = ObjectIdGetDatum(def->run_as);
	nulls[13] = OidIsValid(def->run_as) ? ' ' : 'n';
}

/* Types of the parameters of the job write statements, $1 .. $17. */
static Oid	write_types[17] = {
	TEXTOID, REGROLEOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID,
	INTERVALOID, INT4OID, INTERVALOID, TEXTOID, BOOLOID, BOOLOID, REGROLEOID,
	BOOLOID, TIMESTAMPTZOID, TIMESTAMPTZOID
};

/*
 * What the upsert sets when it replaces a job's definition, and what it
 * returns.  A pending retry and a quarantine are forgotten; the run
 * statistics and queued run_job() calls are kept.
 */
#define UPSERT_SET \
	"ON CONFLICT (owner, job_name) DO UPDATE SET " \
	"  schedule = EXCLUDED.schedule, command = EXCLUDED.command, " \
	"  notify_channel = EXCLUDED.notify_channel, " \
	"  payload = EXCLUDED.payload, timezone = EXCLUDED.timezone, " \
	"  timeout = EXCLUDED.timeout, " \
	"  max_attempts = EXCLUDED.max_attempts, " \
	"  retry_delay = EXCLUDED.retry_delay, " \
	"  misfire = EXCLUDED.misfire, atomic = EXCLUDED.atomic, " \
	"  enabled = EXCLUDED.enabled, run_as = EXCLUDED.run_as, " \
	"  reboot = EXCLUDED.reboot, next_slot = EXCLUDED.next_slot, " \
	"  retry_slot = NULL, retry_attempt = NULL, retry_at = NULL, " \
	"  dispatch_errors = 0, dispatch_error_at = NULL, " \
	"quarantine_reason = NULL, "
#define UPSERT_RETURNING \
	"  next_run_at = EXCLUDED.next_run_at " \
	"RETURNING job_id, manual_pending"

/* whether the job of alias v runs as its owner (and needs no approval) */
#define RUNS_AS_OWNER(v, owner) \
	"(" v ".run_as IS NULL OR " v ".run_as OPERATOR(pg_catalog.=) " owner ")"

/*
 * schedlock_upsert_job
 *		Create job job_name of role owner from def, or replace the
 *		definition of the one it has: its next slot is slot (none unless
 *		has_slot), and so is its next_run_at while enabled (NULL while
 *		disabled), and a pending retry and a quarantine are forgotten.  The
 *		run statistics of a job it replaces are kept.  On the current
 *		tables the same statement sets its search_path and its approval, as
 *		schedlock_job_written does (approver is valid when a superuser
 *		writes it); on the tables of 1.1, which have neither, it writes the
 *		definition only.  *manual_pending gets the job's queued run_job()
 *		calls.  Returns the job id.  As the extension owner.
 */
int64
schedlock_upsert_job(const char *job_name, Oid owner, const JobDef *def,
					 bool reboot, bool has_slot, TimestampTz slot,
					 const char *search_path, Oid approver,
					 int32 *manual_pending)
{
	static SchedlockQuery q = {
		"INSERT INTO schedlock.jobs AS j (job_name, owner, "
		"  schedule, command, notify_channel, payload, timezone, "
		"  timeout, max_attempts, retry_delay, misfire, atomic, "
		"  enabled, run_as, reboot, next_slot, next_run_at, "
		"  search_path, approved_by, approval) "
		"SELECT v.job_name, v.owner, v.schedule, v.command, v.notify_channel, "
		"  v.payload, v.timezone, v.timeout, v.max_attempts, v.retry_delay, "
		"  v.misfire, v.atomic, v.enabled, v.run_as, v.reboot, v.next_slot, "
		"  CASE WHEN v.enabled THEN v.next_slot END, $17, "
		"  CASE WHEN " RUNS_AS_OWNER("v", "v.owner") " THEN NULL ELSE $18 END, "
		"  CASE WHEN " RUNS_AS_OWNER("v", "v.owner") " OR $18 IS NULL THEN NULL "
		"    ELSE " SCHEDLOCK_APPROVAL_SQL("v", "$17") " END "
		"FROM (VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
		"  $13, $14, $15, $16)) AS v(job_name, owner, schedule, command, "
		"  notify_channel, payload, timezone, timeout, max_attempts, "
		"  retry_delay, misfire, atomic, enabled, run_as, reboot, next_slot) "
		UPSERT_SET
		"  search_path = EXCLUDED.search_path, "
		"  approved_by = CASE WHEN " RUNS_AS_OWNER("EXCLUDED", "j.owner") " THEN NULL "
		"    WHEN $18 IS NOT NULL THEN $18 ELSE j.approved_by END, "
		"  approval = CASE WHEN " RUNS_AS_OWNER("EXCLUDED", "j.owner") " THEN NULL "
		"    WHEN $18 IS NOT NULL THEN EXCLUDED.approval ELSE j.approval END, "
		UPSERT_RETURNING,
		18, {TEXTOID, REGROLEOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID,
			INTERVALOID, INT4OID, INTERVALOID, TEXTOID, BOOLOID, BOOLOID,
		REGROLEOID, BOOLOID, TIMESTAMPTZOID, TEXTOID, REGROLEOID}
	};
	static SchedlockQuery q_1_1 = {
		"INSERT INTO schedlock.jobs AS j (job_name, owner, "
		"  schedule, command, notify_channel, payload, timezone, "
		"  timeout, max_attempts, retry_delay, misfire, atomic, "
		"  enabled, run_as, reboot, next_slot, next_run_at) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
		"  $12, $13, $14, $15, $16, CASE WHEN $13 THEN $16 END) "
		UPSERT_SET UPSERT_RETURNING,
		16, {TEXTOID, REGROLEOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID,
			INTERVALOID, INT4OID, INTERVALOID, TEXTOID, BOOLOID, BOOLOID,
		REGROLEOID, BOOLOID, TIMESTAMPTZOID}
	};
	Datum		values[18];
	char		nulls[18];
	bool		isnull;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(job_name);
	values[1] = ObjectIdGetDatum(owner);
	def_params(def, values, nulls);
	values[14] = BoolGetDatum(reboot);
	values[15] = TimestampTzGetDatum(slot);
	nulls[15] = has_slot ? ' ' : 'n';
	values[16] = search_path ? CStringGetTextDatum(search_path) : (Datum) 0;
	nulls[16] = search_path ? ' ' : 'n';
	values[17] = ObjectIdGetDatum(approver);
	nulls[17] = OidIsValid(approver) ? ' ' : 'n';

	if (schedlock_query_run(store_tables_current() ? &q : &q_1_1, values,
							nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not write job \"%s\"", job_name);
	*manual_pending = DatumGetInt32(col(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 2, &isnull));
	return DatumGetInt64(col(SPI_tuptable->vals[0],
							 SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * schedlock_job_written
 *		After the SQL API wrote job job_id: set its search_path (unless
 *		NULL), renew or clear its approval, and, unless the job is
 *		disabled, have the backend of its role, or the launcher, look at the
 *		role's jobs when the transaction commits
 *		(schedlock_note_due_at_commit).  A job that runs as its owner has no
 *		approval; one that runs as another role (run_as) keeps the approval
 *		it has unless approver is valid (a superuser made the change), in
 *		which case the approval becomes approver's, of the job as it now is
 *		(SCHEDLOCK_APPROVAL_SQL).  The search_path and the approval only on
 *		the tables of 1.2, which have the columns.  As the extension owner.
 */
void
schedlock_job_written(int64 job_id, const char *search_path, Oid approver)
{
	static SchedlockQuery set_q = {
		"UPDATE schedlock.jobs j SET search_path = COALESCE($2, j.search_path), "
		"  approved_by = CASE WHEN " RUNS_AS_OWNER("j", "j.owner") " THEN NULL "
		"    WHEN $3 IS NOT NULL THEN $3 ELSE j.approved_by END, "
		"  approval = CASE WHEN " RUNS_AS_OWNER("j", "j.owner") " THEN NULL "
		"    WHEN $3 IS NOT NULL THEN "
		SCHEDLOCK_APPROVAL_SQL("j", "COALESCE($2, j.search_path)")
		"    ELSE j.approval END "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"RETURNING (COALESCE(run_as, owner)::pg_catalog.oid), next_run_at, enabled",
		3, {INT8OID, TEXTOID, REGROLEOID}
	};
	static SchedlockQuery read_q = {
		"SELECT (COALESCE(run_as, owner)::pg_catalog.oid), next_run_at, enabled "
		"FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	bool		isnull;
	Oid			role;

	values[0] = Int64GetDatum(job_id);
	values[1] = search_path ? CStringGetTextDatum(search_path) : (Datum) 0;
	nulls[1] = search_path ? ' ' : 'n';
	values[2] = ObjectIdGetDatum(approver);
	nulls[2] = OidIsValid(approver) ? ' ' : 'n';
	if (store_tables_current())
	{
		if (schedlock_query_run(&set_q, values, nulls, false, 0) != SPI_OK_UPDATE_RETURNING)
			elog(ERROR, "could not write the search_path of job " INT64_FORMAT, job_id);
	}
	/* not read-only: the row was written by this transaction's last command */
	else if (schedlock_query_run(&read_q, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	if (SPI_processed != 1)
		return;
	role = DatumGetObjectId(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								1, &isnull));
	(void) col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);

	/*
	 * The role's backend looks at its jobs at once: the transaction may still
	 * change the row (a superuser's UPDATE of next_run_at), and a backend
	 * that finds its next job beyond its idle time leaves at once.
	 */
	if (!isnull)
		schedlock_note_due_at_commit(role, DT_NOBEGIN);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_set_record_runs
 *		Set which runs of job job_id are kept: "all", "failures", or NULL
 *		for schedlock.record_runs.  As the extension owner, on the tables of
 *		release 1.2 (else 55000).
 */
void
schedlock_set_record_runs(int64 job_id, const char *record_runs)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET record_runs = $2 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		2, {INT8OID, TEXTOID}
	};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	if (!store_tables_current())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("record_runs needs the tables of schedlock 1.2"),
				 errhint("Run ALTER EXTENSION schedlock UPDATE.")));
	values[0] = Int64GetDatum(job_id);
	values[1] = record_runs ? CStringGetTextDatum(record_runs) : (Datum) 0;
	nulls[1] = record_runs ? ' ' : 'n';
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not set record_runs of job " INT64_FORMAT, job_id);
}

/*
 * schedlock_update_job
 *		Write def as the definition of job job_id (named job_name, for the
 *		message).  When reslot, its next slot becomes slot (none unless
 *		has_slot) and a pending retry is forgotten; enabling it releases a
 *		quarantine.  The caller sets next_run_at after
 *		(schedlock_recompute_next_run).  As the extension owner.
 */
void
schedlock_update_job(int64 job_id, const char *job_name, const JobDef *def,
					 bool reboot, bool reslot, bool has_slot,
					 TimestampTz slot)
{
	Datum		values[17];
	char		nulls[17];

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(job_id);
	def_params(def, values, nulls);
	values[14] = BoolGetDatum(reboot);
	values[15] = BoolGetDatum(reslot);
	if (has_slot)
		values[1] = TimestampTzGetDatum(slot);
	else
	{
		values[1] = (Datum) 0;
		nulls[1] = 'n';
	}
	{
		Oid			types[17];

		memcpy(types, write_types, sizeof(types));
		types[0] = INT8OID;
		types[1] = TIMESTAMPTZOID;
		types[15] = BOOLOID;
		/* enabling the job releases a quarantine */
		if (SPI_execute_with_args("UPDATE schedlock.jobs SET "
								  "  schedule = $3, command = $4, notify_channel = $5, "
								  "  payload = $6, timezone = $7, timeout = $8, "
								  "  max_attempts = $9, retry_delay = $10, misfire = $11, "
								  "  atomic = $12, enabled = $13, run_as = $14, reboot = $15, "
								  "  next_slot = CASE WHEN $16 THEN $2 ELSE next_slot END, "
								  "  retry_slot = CASE WHEN $16 THEN NULL ELSE retry_slot END, "
								  "  retry_attempt = CASE WHEN $16 THEN NULL ELSE retry_attempt END, "
								  "  retry_at = CASE WHEN $16 THEN NULL ELSE retry_at END "
								  "  , dispatch_errors = CASE WHEN $13 THEN 0 ELSE dispatch_errors END, "
								  "  dispatch_error_at = CASE WHEN $13 THEN NULL ELSE dispatch_error_at END, "
								  "  quarantine_reason = CASE WHEN $13 THEN NULL ELSE quarantine_reason END "
								  "WHERE job_id OPERATOR(pg_catalog.=) $1",
								  16, types, values, nulls, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not update job \"%s\"", job_name);
	}
}

/*
 * The columns schedlock_lock_job reads, in the order of LockedColumn; the
 * tables of 1.1 have no search_path (the last).
 */
#define LOCK_JOB_COLUMNS \
	"job_id, owner::pg_catalog.oid, schedule, command, notify_channel, " \
	"payload, timezone, timeout, max_attempts, retry_delay, misfire, " \
	"atomic, enabled, run_as::pg_catalog.oid"
#define LOCK_JOB_COLUMNS_1_2	LOCK_JOB_COLUMNS ", search_path"

typedef enum LockedColumn
{
	LJ_JOB_ID = 1,
	LJ_OWNER,
	LJ_SCHEDULE,
	LJ_COMMAND,
	LJ_CHANNEL,
	LJ_PAYLOAD,
	LJ_TIMEZONE,
	LJ_TIMEOUT,
	LJ_MAX_ATTEMPTS,
	LJ_RETRY_DELAY,
	LJ_MISFIRE,
	LJ_ATOMIC,
	LJ_ENABLED,
	LJ_RUN_AS,
	LJ_SEARCH_PATH				/* tables of 1.2 */
} LockedColumn;

/*
 * schedlock_lock_job
 *		Look up the caller's job by name, lock its row and read it into
 *		*job (in the caller's memory context); a superuser may also name
 *		another role's job when only one role has a job of that name.
 *		Raises 42704 when there is none.  Caller is connected to SPI and
 *		runs as the extension owner; caller is the calling role.  Returns
 *		the job's id.
 */
int64
schedlock_lock_job(const char *job_name, Oid caller, StoredJob *job)
{
	Oid			types[2] = {TEXTOID, REGROLEOID};
	Datum		values[2];
	const char *columns = store_tables_current() ?
		LOCK_JOB_COLUMNS_1_2 : LOCK_JOB_COLUMNS;
	char	   *query;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	values[0] = CStringGetTextDatum(job_name);
	values[1] = ObjectIdGetDatum(caller);
	query = psprintf("SELECT %s FROM schedlock.jobs "
					 "WHERE job_name OPERATOR(pg_catalog.=) $1 "
					 "  AND owner OPERATOR(pg_catalog.=) $2 FOR UPDATE", columns);
	if (SPI_execute_with_args(query, 2, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job \"%s\"", job_name);
	if (SPI_processed == 0 && superuser_arg(caller))
	{
		query = psprintf("SELECT %s FROM schedlock.jobs "
						 "WHERE job_name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
						 columns);
		if (SPI_execute_with_args(query, 1, types, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read job \"%s\"", job_name);
		if (SPI_processed > 1)
			ereport(ERROR,
					(errcode(ERRCODE_AMBIGUOUS_PARAMETER),
					 errmsg("job name \"%s\" is ambiguous", job_name),
					 errdetail("Several roles have a job of that name."),
					 errhint("SET ROLE to the job's owner first.")));
	}
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("job \"%s\" does not exist", job_name),
				 errhint("Jobs are visible only to the role that scheduled them.")));

	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	/* copies, in the current memory context: the tuple is freed below */
	memset(job, 0, sizeof(*job));
	job->job_id = DatumGetInt64(SPI_getbinval(tup, desc, LJ_JOB_ID, &isnull));
	job->owner = DatumGetObjectId(SPI_getbinval(tup, desc, LJ_OWNER, &isnull));
	job->def.schedule = SPI_getvalue(tup, desc, LJ_SCHEDULE);
	job->def.command = SPI_getvalue(tup, desc, LJ_COMMAND);
	job->def.channel = SPI_getvalue(tup, desc, LJ_CHANNEL);
	d = SPI_getbinval(tup, desc, LJ_PAYLOAD, &isnull);
	job->def.has_payload = !isnull;
	job->def.payload = isnull ? (Datum) 0 : datumCopy(d, false, -1);
	job->def.timezone = SPI_getvalue(tup, desc, LJ_TIMEZONE);
	d = SPI_getbinval(tup, desc, LJ_TIMEOUT, &isnull);
	job->def.timeout = isnull ? NULL :
		DatumGetIntervalP(datumCopy(d, false, sizeof(Interval)));
	job->def.max_attempts = DatumGetInt32(SPI_getbinval(tup, desc,
														LJ_MAX_ATTEMPTS,
														&isnull));
	d = SPI_getbinval(tup, desc, LJ_RETRY_DELAY, &isnull);
	job->def.retry_delay = isnull ? NULL :
		DatumGetIntervalP(datumCopy(d, false, sizeof(Interval)));
	job->def.misfire = SPI_getvalue(tup, desc, LJ_MISFIRE);
	job->def.atomic = DatumGetBool(SPI_getbinval(tup, desc, LJ_ATOMIC, &isnull));
	job->def.enabled = DatumGetBool(SPI_getbinval(tup, desc, LJ_ENABLED, &isnull));
	d = SPI_getbinval(tup, desc, LJ_RUN_AS, &isnull);
	job->def.run_as = isnull ? InvalidOid : DatumGetObjectId(d);
	job->search_path = store_tables_current() ?
		SPI_getvalue(tup, desc, LJ_SEARCH_PATH) : NULL;
	SPI_freetuptable(SPI_tuptable);
	return job->job_id;
}

/*
 * schedlock_queue_run
 *		Queue a run_job() run of job job_id (named job_name, for the
 *		message) scheduled for now; the caller sets next_run_at after.
 *		Returns the run id.  As the extension owner.
 */
int64
schedlock_queue_run(int64 job_id, const char *job_name, TimestampTz now)
{
	Oid			types[2] = {INT8OID, TIMESTAMPTZOID};
	Datum		values[2];
	int64		run_id;
	bool		isnull;

	values[0] = Int64GetDatum(job_id);
	values[1] = TimestampTzGetDatum(now);
	if (SPI_execute_with_args(store_tables_current() ?
							  "INSERT INTO schedlock.job_runs (job_id, owner, "
							  "  scheduled_for, attempt, manual, status, job_name) "
							  "SELECT job_id, owner, $2, 1, true, " SCHEDLOCK_RUN_SQL(QUEUED) ", job_name "
							  "  FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1 "
							  "RETURNING run_id" :
							  "INSERT INTO schedlock.job_runs (job_id, owner, "
							  "  scheduled_for, attempt, manual, status) "
							  "SELECT job_id, owner, $2, 1, true, " SCHEDLOCK_RUN_SQL(QUEUED) " "
							  "  FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1 "
							  "RETURNING run_id",
							  2, types, values, NULL, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not queue a run of job \"%s\"", job_name);
	run_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	if (SPI_execute_with_args("UPDATE schedlock.jobs "
							  "SET manual_pending = manual_pending OPERATOR(pg_catalog.+) 1 "
							  "WHERE job_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not queue a run of job \"%s\"", job_name);
	return run_id;
}

/*
 * delete_jobs
 *		Delete the jobs "where" selects (a condition on schedlock.jobs with
 *		parameters $1..$nargs); returns how many.  Their history stays
 *		(release 1.2): a run in progress finishes and is recorded, a
 *		run_job() run not yet started is closed as skipped, and every run
 *		keeps the job's name.  As the extension owner, connected to SPI.
 */
static uint64
delete_jobs(const char *where, int nargs, Oid *types, Datum *values)
{
	char	   *sql;
	bool		isnull;

	if (!store_tables_current())
	{
		sql = psprintf("DELETE FROM schedlock.jobs WHERE %s", where);
		if (SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not delete a job");
		return SPI_processed;
	}
	sql = psprintf("WITH d AS (DELETE FROM schedlock.jobs WHERE %s "
				   "  RETURNING job_id, job_name), "
				   "u AS (UPDATE schedlock.job_runs r SET "
				   "  job_name = COALESCE(r.job_name, d.job_name), "
				   "  status = CASE WHEN r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(QUEUED) " "
				   "    THEN " SCHEDLOCK_RUN_SQL(SKIPPED) " ELSE r.status END, "
				   "  finished_at = CASE WHEN r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(QUEUED) " "
				   "    THEN pg_catalog.now() ELSE r.finished_at END, "
				   "  message = CASE WHEN r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(QUEUED) " "
				   "    THEN 'the job was unscheduled before the run started' "
				   "    ELSE r.message END "
				   "  FROM d WHERE r.job_id OPERATOR(pg_catalog.=) d.job_id "
				   "    AND (r.job_name IS NULL "
				   "         OR r.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(QUEUED) ")) "
				   "SELECT pg_catalog.count(*) FROM d", where);
	if (SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not delete a job");
	return (uint64) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 1,
												&isnull));
}

/*
 * schedlock_delete_job
 *		Delete role owner's job job_name (see delete_jobs).  False when it
 *		has none.  As the extension owner.
 */
bool
schedlock_delete_job(const char *job_name, Oid owner)
{
	Oid			types[2] = {TEXTOID, REGROLEOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(job_name);
	values[1] = ObjectIdGetDatum(owner);
	return delete_jobs("job_name OPERATOR(pg_catalog.=) $1 "
					   "AND owner OPERATOR(pg_catalog.=) $2",
					   2, types, values) > 0;
}

/*
 * schedlock_delete_job_by_id
 *		Delete job job_id (see delete_jobs) when role owner owns it or
 *		any_owner.  False when there is no such job.  As the extension
 *		owner.
 */
bool
schedlock_delete_job_by_id(int64 job_id, Oid owner, bool any_owner)
{
	Oid			types[3] = {INT8OID, REGROLEOID, BOOLOID};
	Datum		values[3];

	values[0] = Int64GetDatum(job_id);
	values[1] = ObjectIdGetDatum(owner);
	values[2] = BoolGetDatum(any_owner);
	return delete_jobs("job_id OPERATOR(pg_catalog.=) $1 "
					   "AND ($3 OR owner OPERATOR(pg_catalog.=) $2)",
					   3, types, values) > 0;
}

/*
 * schedlock_delete_job_id
 *		Delete job job_id (see delete_jobs).  As the extension owner.
 */
void
schedlock_delete_job_id(int64 job_id, const char *job_name)
{
	Oid			t1[1] = {INT8OID};
	Datum		v1[1] = {Int64GetDatum(job_id)};

	(void) delete_jobs("job_id OPERATOR(pg_catalog.=) $1", 1, t1, v1);
}

/*
 * schedlock_find_job_like
 *		The job of owner named job_name, if any: returns its id (0: none)
 *		and sets *same to whether it has this schedule, command and time
 *		zone (what the pg_cron import would give it).  Not read-only: the
 *		query takes a snapshot of its own, so it sees jobs other sessions
 *		committed since the calling transaction began (the import's
 *		report_raced).  Connected to SPI.
 */
int64
schedlock_find_job_like(Oid owner, const char *job_name, const char *schedule,
						const char *command, const char *timezone, bool *same)
{
	Oid			types[5] = {REGROLEOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[5];
	bool		isnull;
	int			nestlevel;
	int64		job_id = 0;

	values[0] = ObjectIdGetDatum(owner);
	values[1] = CStringGetTextDatum(job_name);
	values[2] = CStringGetTextDatum(schedule);
	values[3] = CStringGetTextDatum(command);
	values[4] = CStringGetTextDatum(timezone);
	nestlevel = schedlock_trusted_path_begin();
	if (SPI_execute_with_args("SELECT j.job_id, "
							  "  j.schedule OPERATOR(pg_catalog.=) $3 "
							  "  AND j.command IS NOT DISTINCT FROM $4 "
							  "  AND j.timezone IS NOT DISTINCT FROM $5 "
							  "FROM schedlock.jobs j "
							  "WHERE j.owner OPERATOR(pg_catalog.=) $1 "
							  "  AND j.job_name OPERATOR(pg_catalog.=) $2",
							  5, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up job \"%s\"", job_name);
	schedlock_trusted_path_end(nestlevel);
	*same = false;
	if (SPI_processed == 1)
	{
		job_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1, &isnull));
		*same = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	}
	return job_id;
}

/*
 * schedlock_job_created_here
 *		Whether the job job_id was created by this transaction: its
 *		created_at is this transaction's start.  The pg_cron import looks
 *		for a job of the name first and creates one only when there is none;
 *		a job of that name another session schedules meanwhile (not yet
 *		committed when the import looked) is found instead by schedule_job's
 *		upsert, which waits for that session and then replaces the job's
 *		definition.  Connected to SPI.
 */
bool
schedlock_job_created_here(int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	bool		here;
	int			nestlevel;

	values[0] = Int64GetDatum(job_id);
	nestlevel = schedlock_trusted_path_begin();
	if (SPI_execute_with_args("SELECT j.created_at OPERATOR(pg_catalog.=) pg_catalog.now() "
							  "FROM schedlock.jobs j "
							  "WHERE j.job_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up job " INT64_FORMAT, job_id);
	schedlock_trusted_path_end(nestlevel);
	here = SPI_processed == 1 &&
		DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
								   SPI_tuptable->tupdesc, 1, &isnull));
	return here;
}

/*
 * schedlock_approval_holds
 *		Whether job job_id, which runs as a role other than its owner, still
 *		runs what a superuser approved: its approval was given by a role that
 *		is a superuser now, and is of the job as it is now (every field that
 *		changes what the job does or resolves, SCHEDLOCK_APPROVAL_SQL).  Sets
 *		*approver to the role that gave it (InvalidOid: none).  As the
 *		extension owner or a superuser, in the transaction that claimed the
 *		job.
 */
bool
schedlock_approval_holds(int64 job_id, Oid *approver)
{
	static SchedlockQuery q = {
		"SELECT j.approved_by::pg_catalog.oid, "
		"  COALESCE(a.rolsuper, false) AND j.approval OPERATOR(pg_catalog.=) "
		SCHEDLOCK_APPROVAL_SQL("j", "j.search_path")
		"  FROM schedlock.jobs j "
		"  LEFT JOIN pg_catalog.pg_authid a "
		"    ON a.oid OPERATOR(pg_catalog.=) j.approved_by::pg_catalog.oid "
		" WHERE j.job_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[1];
	bool		isnull;
	bool		holds;
	Datum		d;

	values[0] = Int64GetDatum(job_id);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the approval of job " INT64_FORMAT, job_id);
	*approver = InvalidOid;
	if (SPI_processed != 1)
		return false;
	d = col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		*approver = DatumGetObjectId(d);
	d = col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	holds = !isnull && DatumGetBool(d);
	SPI_freetuptable(SPI_tuptable);
	return holds;
}

/*
 * schedlock_pause_job
 *		Disable job job_id with reason as its quarantine_reason (shown as
 *		stopped_reason in schedlock.job_status): it has no next run until
 *		alter_job(..., enabled => true).  As the extension owner.
 */
void
schedlock_pause_job(int64 job_id, const char *reason)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET enabled = false, quarantine_reason = $2, "
		"  next_run_at = NULL "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		2, {INT8OID, TEXTOID}
	};
	Datum		values[2];

	values[0] = Int64GetDatum(job_id);
	values[1] = CStringGetTextDatum(reason);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not pause job " INT64_FORMAT, job_id);
}
