/*-------------------------------------------------------------------------
 *
 * store_home.c
 *	  The statements on schedlock.home, and on the jobs of another home, for
 *	  copies of a database and their adoption (copies.c).
 *
 * schedlock.home has one row: the home_id jobs are scheduled under and the
 * database it was made in.  The statements every pass or every inserted job
 * row runs go through plans prepared once per backend and kept
 * (schedlock_query_run).
 *
 * IDENTIFICATION
 *	  src/sched/store/store_home.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"

#include "base/kept_query.h"
#include "jobstore.h"
#include "sched/rules.h"
#include "store_int.h"

/* The statements run for every pass or every job row, kept. */
static SchedlockQuery read_home_q = {
	"SELECT home_id, datoid, restored_jobs FROM schedlock.home", 0, {InvalidOid}
};
static SchedlockQuery read_home_id_q = {
	"SELECT home_id FROM schedlock.home", 0, {InvalidOid}
};
static SchedlockQuery mark_restored_q = {
	"UPDATE schedlock.home SET restored_jobs = true WHERE NOT restored_jobs",
	0, {InvalidOid}
};

/*
 * uuid_copy
 *		A copy of column col of row 0 of the last SPI result, a uuid, in the
 *		current memory context.
 */
static Datum
uuid_copy(int col)
{
	bool		isnull;

	return datumCopy(SPI_getbinval(SPI_tuptable->vals[0],
								   SPI_tuptable->tupdesc, col, &isnull),
					 false, UUID_LEN);
}

/*
 * schedlock_home_table_exists
 *		Whether schedlock.home exists (not before ALTER EXTENSION schedlock
 *		UPDATE TO '1.1').  In a transaction.
 */
bool
schedlock_home_table_exists(void)
{
	Oid			nsp = get_namespace_oid("schedlock", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("home", nsp));
}

/*
 * schedlock_home_read
 *		Read the home row: its home_id (a copy), the database it names and
 *		whether jobs of another home were loaded; false when the table has
 *		no row.  The check of every pass: one row, through a kept plan.
 *		Connected to SPI.
 */
bool
schedlock_home_read(Datum *home_id, Oid *datoid, bool *restored)
{
	bool		isnull;

	if (schedlock_query_run(&read_home_q, NULL, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read schedlock.home");
	if (SPI_processed != 1)
		return false;
	*home_id = uuid_copy(1);
	*datoid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 2, &isnull));
	*restored = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 3, &isnull));
	return true;
}

/*
 * schedlock_home_id
 *		The home row's home_id (a copy) into *home_id; false when there is
 *		none.  Through a kept plan (run for every inserted job row).
 *		Connected to SPI.
 */
bool
schedlock_home_id(Datum *home_id)
{
	bool		isnull;
	Datum		id;

	if (schedlock_query_run(&read_home_id_q, NULL, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read schedlock.home");
	if (SPI_processed != 1)
		return false;
	id = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
					   &isnull);
	if (isnull)
		return false;
	*home_id = datumCopy(id, false, UUID_LEN);
	return true;
}

/*
 * schedlock_jobs_exist
 *		Whether schedlock.jobs has a row.  Connected to SPI.
 */
bool
schedlock_jobs_exist(void)
{
	if (SPI_execute("SELECT 1 FROM schedlock.jobs LIMIT 1", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read schedlock.jobs");
	return SPI_processed > 0;
}

/*
 * schedlock_home_move_in
 *		A copy without jobs takes a home of its own: a new home_id, this
 *		database, no restored jobs (unless the row names this database
 *		already).  Connected to SPI.
 */
void
schedlock_home_move_in(void)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	if (SPI_execute_with_args("UPDATE schedlock.home SET "
							  "  home_id = pg_catalog.gen_random_uuid(), "
							  "  datoid = $1, restored_jobs = false, "
							  "  since = pg_catalog.now() "
							  "WHERE datoid OPERATOR(pg_catalog.<>) $1",
							  1, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update schedlock.home");
}

/*
 * schedlock_pause_foreign_jobs
 *		Make every job of another home than home_id not due; returns how
 *		many.  Connected to SPI.
 */
uint64
schedlock_pause_foreign_jobs(Datum home_id)
{
	Oid			types[1] = {UUIDOID};
	Datum		values[1];

	values[0] = home_id;
	if (SPI_execute_with_args("UPDATE schedlock.jobs SET next_run_at = NULL "
							  "WHERE home_id OPERATOR(pg_catalog.<>) $1",
							  1, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not pause jobs of another home");
	return SPI_processed;
}

/*
 * schedlock_foreign_jobs_exist
 *		Whether a job of another home than home_id is left.  Connected to
 *		SPI.
 */
bool
schedlock_foreign_jobs_exist(Datum home_id)
{
	Oid			types[1] = {UUIDOID};
	Datum		values[1];

	values[0] = home_id;
	if (SPI_execute_with_args("SELECT 1 FROM schedlock.jobs "
							  "WHERE home_id OPERATOR(pg_catalog.<>) $1 LIMIT 1",
							  1, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read schedlock.jobs");
	return SPI_processed > 0;
}

/*
 * schedlock_home_lock
 *		Lock the home row (a restore still loading jobs holds it: the
 *		trigger wrote it).  Connected to SPI.
 */
void
schedlock_home_lock(void)
{
	if (SPI_execute("SELECT 1 FROM schedlock.home FOR UPDATE",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock schedlock.home");
}

/*
 * schedlock_home_clear_restored
 *		No job of another home is left to protect: clear the home row's
 *		restored_jobs.  Connected to SPI.
 */
void
schedlock_home_clear_restored(void)
{
	if (SPI_execute("UPDATE schedlock.home SET restored_jobs = false",
					false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update schedlock.home");
}

/*
 * schedlock_home_mark_restored
 *		Set restored_jobs unless it is set: a job row of another home was
 *		loaded.  Through a kept plan (run for every such row).  Connected to
 *		SPI.
 */
void
schedlock_home_mark_restored(void)
{
	if (schedlock_query_run(&mark_restored_q, NULL, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update schedlock.home");
}

/*
 * schedlock_home_lock_read
 *		Lock the home row and read its home_id (a copy) and database; false
 *		when the table does not have its one row.  Connected to SPI.
 */
bool
schedlock_home_lock_read(Datum *home_id, Oid *datoid)
{
	bool		isnull;

	if (SPI_execute("SELECT home_id, datoid FROM schedlock.home FOR UPDATE",
					false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		return false;
	*home_id = uuid_copy(1);
	*datoid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 2, &isnull));
	return true;
}

/*
 * schedlock_home_renew
 *		Give the home row a new home_id and this database; returns the new
 *		home_id (a copy).  Connected to SPI.
 */
Datum
schedlock_home_renew(void)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	if (SPI_execute_with_args("UPDATE schedlock.home SET "
							  "  home_id = pg_catalog.gen_random_uuid(), datoid = $1, "
							  "  since = pg_catalog.now() "
							  "RETURNING home_id",
							  1, types, values, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update schedlock.home");
	return uuid_copy(1);
}

/* Jobs to adopt read per fetch of the cursor. */
#define ADOPT_BATCH_ROWS	1000

/* The columns of the jobs to adopt, in the order of AdoptColumn. */
#define ADOPT_COLUMNS "job_id, schedule, timezone, next_slot, enabled"
typedef enum AdoptColumn
{
	ADOPT_JOB_ID = 1,
	ADOPT_SCHEDULE,
	ADOPT_TIMEZONE,
	ADOPT_NEXT_SLOT,
	ADOPT_ENABLED
} AdoptColumn;

struct SchedlockAdoptScan
{
	Portal		portal;
	SPITupleTable *batch;		/* the rows of the last fetch */
	uint64		n;				/* how many */
	uint64		next;			/* the next one to hand out */
};

/*
 * schedlock_adopt_scan_begin
 *		Open a scan of the jobs to adopt, each locked: every job when all,
 *		else those of another home than home_id, by job_id.  Connected to
 *		SPI; the scan lives in the SPI procedure's memory.
 */
SchedlockAdoptScan *
schedlock_adopt_scan_begin(Datum home_id, bool all)
{
	Oid			types[2] = {UUIDOID, BOOLOID};
	Datum		values[2];
	SchedlockAdoptScan *scan = palloc0(sizeof(SchedlockAdoptScan));

	values[0] = home_id;
	values[1] = BoolGetDatum(all);
	scan->portal = SPI_cursor_open_with_args(NULL,
											 "SELECT " ADOPT_COLUMNS " FROM schedlock.jobs "
											 "WHERE $2 OR home_id OPERATOR(pg_catalog.<>) $1 "
											 "ORDER BY job_id FOR UPDATE",
											 2, types, values, NULL, false, 0);
	return scan;
}

/*
 * schedlock_adopt_scan_next
 *		The next job to adopt into *job (its strings palloc'd), false after
 *		the last.  Fetches ADOPT_BATCH_ROWS rows at a time, and takes an
 *		interrupt between fetches.
 */
bool
schedlock_adopt_scan_next(SchedlockAdoptScan *scan, JobToAdopt *job)
{
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		next_slot;

	if (scan->next >= scan->n)
	{
		if (scan->batch != NULL)
			SPI_freetuptable(scan->batch);
		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(scan->portal, true, ADOPT_BATCH_ROWS);
		scan->batch = SPI_tuptable;
		scan->n = SPI_processed;
		scan->next = 0;
		if (scan->n == 0)
			return false;
	}
	tup = scan->batch->vals[scan->next++];
	desc = scan->batch->tupdesc;
	job->job_id = DatumGetInt64(col(tup, desc, ADOPT_JOB_ID, &isnull));
	job->schedule = SPI_getvalue(tup, desc, ADOPT_SCHEDULE);
	job->timezone = SPI_getvalue(tup, desc, ADOPT_TIMEZONE);
	next_slot = col(tup, desc, ADOPT_NEXT_SLOT, &isnull);
	job->has_next_slot = !isnull;
	job->next_slot = isnull ? 0 : DatumGetTimestampTz(next_slot);
	job->enabled = DatumGetBool(col(tup, desc, ADOPT_ENABLED, &isnull));
	return true;
}

/*
 * schedlock_adopt_scan_end
 *		Close the scan.
 */
void
schedlock_adopt_scan_end(SchedlockAdoptScan *scan)
{
	if (scan->batch != NULL)
		SPI_freetuptable(scan->batch);
	SPI_cursor_close(scan->portal);
	pfree(scan);
}

/*
 * schedlock_prepare_adoption
 *		Plan schedlock_adopt_job's two statements once per adoption.
 *		Connected to SPI.  (job_runs.duration came with 1.1, as
 *		schedlock_adopt_jobs() did: it is there when this runs.)
 */
void
schedlock_prepare_adoption(SPIPlanPtr *plans)
{
	/* the runs it closes as lost count in the job's statistics */
	static const char *const sql[2] = {
		"UPDATE schedlock.jobs SET home_id = $2, "
		"  next_slot = $3, next_run_at = $4, "
		"  retry_slot = NULL, retry_attempt = NULL, retry_at = NULL, "
		"  manual_pending = 0 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		"WITH e AS (UPDATE schedlock.job_runs SET "
		"  status = CASE WHEN status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(QUEUED) " "
		"    THEN " SCHEDLOCK_RUN_SQL(SKIPPED) " ELSE " SCHEDLOCK_RUN_SQL(LOST) " END, "
		"  finished_at = $2, deadline = NULL, "
		"  duration = $2 OPERATOR(pg_catalog.-) started_at, "
		"  message = 'open in the database the job was copied from; closed by schedlock_adopt_jobs()' "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"  AND status OPERATOR(pg_catalog.=) ANY (" SCHEDLOCK_RUN_OPEN_SQL "::pg_catalog.text[]) "
		"RETURNING job_id, run_id, status, started_at, finished_at, scheduled_for), "
		SCHEDLOCK_RUN_STATS_CTE "SELECT 1"
	};
	Oid			types[2][4] = {{INT8OID, UUIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
	{INT8OID, TIMESTAMPTZOID}};
	int			i;

	for (i = 0; i < 2; i++)
	{
		plans[i] = SPI_prepare(sql[i], i == 0 ? 4 : 2, types[i]);
		if (plans[i] == NULL)
			elog(ERROR, "could not prepare \"%s\": %s",
				 sql[i], SPI_result_code_string(SPI_result));
	}
}

/*
 * schedlock_adopt_job
 *		Make job (read by the scan of the jobs to adopt) one of home_id's:
 *		it goes on from slot (none when !has_slot), with no pending retry or
 *		run_job() call, its next_run_at by the rules, and its runs left open
 *		in the database it came from are closed at now.  plans: from
 *		schedlock_prepare_adoption.  Connected to SPI, as the extension
 *		owner.
 */
void
schedlock_adopt_job(SPIPlanPtr *plans, const JobToAdopt *job, Datum home_id,
					bool has_slot, TimestampTz slot, TimestampTz now)
{
	int64		job_id = job->job_id;
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	TimestampTz next_run_at;

	values[0] = Int64GetDatum(job_id);
	values[1] = home_id;
	values[2] = TimestampTzGetDatum(slot);
	if (!has_slot)
		nulls[2] = 'n';
	if (!schedlock_rule_next_run_at(job->enabled, has_slot, slot, false, 0, 0,
									now, &next_run_at))
		nulls[3] = 'n';
	values[3] = TimestampTzGetDatum(next_run_at);
	if (SPI_execute_plan(plans[0], values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not adopt job " INT64_FORMAT, job_id);

	values[1] = TimestampTzGetDatum(now);
	if (SPI_execute_plan(plans[1], values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not close the open runs of job " INT64_FORMAT, job_id);
}
