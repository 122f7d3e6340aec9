/*-------------------------------------------------------------------------
 *
 * jobstore.c
 *	  The statements the scheduler runs on its tables, schedlock.jobs and
 *	  schedlock.job_runs: claiming a due job and advancing it, recording
 *	  runs and their outcome, failures and retries, lost and overdue runs,
 *	  history pruning, the next wakeup, and the run bookkeeping of the SQL
 *	  API (notify_api.c).
 *
 * Every statement that ends runs also counts them in their jobs' run
 * statistics (release 1.1: SCHEDLOCK_RUN_STATS_CTE in jobstore.h), in the
 * same statement; on the tables of 1.0 it runs without.
 *
 * The callers decide; this file only reads and writes.  What a job does
 * next (its next slot, retry, next_run_at) is worked out by the scheduling
 * rules (rules.c) from what is read here, and written back here.  The
 * worker's claim statements are the text of claim_sql.h (which
 * test/isolation/fill-specs.sh puts into the job_claim spec).
 *
 * Every function expects to be called in a transaction, connected to SPI,
 * as a role that may write the scheduler's tables (a worker's bootstrap
 * superuser, or the extension owner in the SQL API: see notify_api.c).  Every
 * statement names its tables with their schema and its operators as
 * OPERATOR(pg_catalog.x).
 *
 * IDENTIFICATION
 *	  src/sched/jobstore.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "kept_query.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "claim_sql.h"
#include "compat.h"
#include "job_api.h"
#include "jobstore.h"
#include "rules.h"
#include "runlog.h"
#include "sched_shmem.h"
#include "schedlock.h"

/*
 * Whether the job backend that ran a SQL run marked running (job_runs row
 * r) is gone.  Its backend publishes the job it runs in shared memory from
 * before the run's row can commit until after its outcome has
 * (schedlock.job_worker_pid, sched_shmem.c), so a run whose recorded pid is not
 * the one running its job now is lost: the backend ended, or the server
 * restarted (shared memory starts empty).  A run recorded on another
 * timeline ($4) ran on the server before a failover.  $2 and $3 are not
 * used (the statements keep their parameter lists).
 */
#define RUNNER_GONE(r) \
	"(" r ".worker_pid IS NULL OR " r ".started_at IS NULL " \
	" OR COALESCE(" r ".timeline OPERATOR(pg_catalog.<>) $4, true) " \
	" OR " r ".worker_pid IS DISTINCT FROM schedlock.job_worker_pid(" r ".job_id)) "

/*
 * The columns a statement that ends runs returns from its UPDATE of
 * job_runs r (a common table expression "e"), finished being the time it
 * ends them at: what close_runs_failed reads (job_id, scheduled_for,
 * attempt, manual), what log_closed_run reads (run_id, job_name, status,
 * sqlstate, message, duration: NULL for a run that never started, and the
 * role the job runs as), and what SCHEDLOCK_RUN_STATS_CTE (jobstore.h)
 * counts.  The statement's main query, ENDED_RUNS_SELECT, hands on the
 * first eleven.
 */
#define ENDED_RUN_COLUMNS(r, finished) \
	r ".job_id, " r ".scheduled_for, " r ".attempt, " r ".manual, " \
	r ".run_id, (SELECT j.job_name FROM schedlock.jobs j " \
	"  WHERE j.job_id OPERATOR(pg_catalog.=) " r ".job_id) AS job_name, " \
	r ".status, " r ".sqlstate, " r ".message, " \
	finished " OPERATOR(pg_catalog.-) " r ".started_at AS duration, " \
	"(SELECT pg_catalog.pg_get_userbyid(COALESCE(j.run_as, j.owner)::pg_catalog.oid) " \
	"  FROM schedlock.jobs j " \
	"  WHERE j.job_id OPERATOR(pg_catalog.=) " r ".job_id) AS job_role, " \
	r ".started_at, " r ".finished_at"
#define ENDED_RUNS_SELECT \
	"SELECT e.job_id, e.scheduled_for, e.attempt, e.manual, e.run_id, " \
	"  e.job_name, e.status, e.sqlstate, e.message, e.duration, " \
	"  e.job_role FROM e"


/* Fetchers for the claim statement's columns. */
static char *
col_text(HeapTuple tup, TupleDesc desc, int n, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(tup, desc, n);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

static Datum
col(HeapTuple tup, TupleDesc desc, int n, bool *isnull)
{
	return SPI_getbinval(tup, desc, n, isnull);
}

/*
 * array_of
 *		A one-dimensional array of n elements of type elemtype (nulls[i]:
 *		element i is NULL), in CurrentMemoryContext.
 */
static Datum
array_of(Datum *elems, bool *nulls, int n, Oid elemtype)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int16		typlen;
	bool		typbyval;
	char		typalign;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
											  elemtype, typlen, typbyval,
											  typalign));
}

/*
 * read_claimed_job
 *		Copy claimed row number row out of SPI memory, into cxt, with the
 *		name of the role the job runs as.
 */
static void
read_claimed_job(ClaimedJob *job, uint64 row, MemoryContext cxt)
{
	HeapTuple	tup = SPI_tuptable->vals[row];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	Datum		d;

	job->job_id = DatumGetInt64(col(tup, desc, 1, &isnull));
	job->job_name = col_text(tup, desc, 2, cxt);
	job->owner = DatumGetObjectId(col(tup, desc, 3, &isnull));
	job->schedule = col_text(tup, desc, 4, cxt);
	job->command = col_text(tup, desc, 5, cxt);
	job->channel = col_text(tup, desc, 6, cxt);
	job->payload = col_text(tup, desc, 7, cxt);
	job->timezone = col_text(tup, desc, 8, cxt);
	d = col(tup, desc, 9, &isnull);
	/* whole milliseconds, rounded up: a timeout never becomes "none" */
	job->timeout_ms = isnull ? 0 : (int) Min(ceil(DatumGetFloat8(d)), (double) INT_MAX);
	job->misfire = col_text(tup, desc, 10, cxt);
	job->atomic = DatumGetBool(col(tup, desc, 11, &isnull));
	d = col(tup, desc, 12, &isnull);
	job->run_as = isnull ? InvalidOid : DatumGetObjectId(d);
	job->reboot = DatumGetBool(col(tup, desc, 13, &isnull));
	d = col(tup, desc, 14, &isnull);
	job->has_next_slot = !isnull;
	job->next_slot = isnull ? 0 : DatumGetTimestampTz(d);
	d = col(tup, desc, 15, &isnull);
	job->has_retry = !isnull;
	job->retry_slot = isnull ? 0 : DatumGetTimestampTz(d);
	d = col(tup, desc, 16, &isnull);
	job->retry_attempt = isnull ? 1 : DatumGetInt32(d);
	d = col(tup, desc, 17, &isnull);
	job->retry_at = isnull ? 0 : DatumGetTimestampTz(d);
	job->manual_pending = DatumGetInt32(col(tup, desc, 18, &isnull));
	/* 19: next_run_at, read by schedlock_claim_job */
	ItemPointerCopy((ItemPointer) DatumGetPointer(col(tup, desc, 20, &isnull)), &job->ctid);
	job->failures = DatumGetInt32(col(tup, desc, 21, &isnull));
	job->search_path = col_text(tup, desc, 22, cxt);
	job->failures_only = schedlock_failures_only(col_text(tup, desc, 23, cxt));
	{
		char	   *role = GetUserNameFromId(OidIsValid(job->run_as) ?
											 job->run_as : job->owner, true);

		job->role_name = MemoryContextStrdup(cxt, role ? role : "?");
	}
}

/*
 * schedlock_failures_only
 *		Whether a job whose record_runs column is record_runs (NULL: the
 *		setting's) keeps only its failed, timed-out and lost runs.
 */
bool
schedlock_failures_only(const char *record_runs)
{
	if (record_runs == NULL)
		return schedlock_record_runs == SCHEDLOCK_RECORD_RUNS_FAILURES;
	return strcmp(record_runs, "failures") == 0;
}

/* The claim statements: see claim_sql.h. */
static SchedlockQuery claim_query = {
	SCHEDLOCK_CLAIM_SQL,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID}
};
static SchedlockQuery claim_notify_query = {
	SCHEDLOCK_CLAIM_NOTIFY_SQL,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID}
};
static SchedlockQuery claim_atomic_query = {
	SCHEDLOCK_CLAIM_ATOMIC_SQL,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID}
};
static SchedlockQuery claim_query_1_1 = {
	SCHEDLOCK_CLAIM_SQL_1_1,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID}
};
static SchedlockQuery claim_notify_query_1_1 = {
	SCHEDLOCK_CLAIM_NOTIFY_SQL_1_1,
	4, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID}
};

/*
 * schedlock_claim_job
 *		Run the claim statement of the given kind for the jobs of role from
 *		position *pos as of now; on success read the claimed job into *job
 *		(its strings in cxt), move *pos to it and return true.  In a
 *		transaction, connected to SPI.
 */
bool
schedlock_claim_job(SchedlockClaimKind kind, Oid role, ClaimPosition *pos,
					TimestampTz now, ClaimedJob *job, MemoryContext cxt)
{
	bool		v12 = schedlock_jobs_have_search_path();
	SchedlockQuery *q;
	Datum		values[4];
	bool		isnull;

	if (kind == SCHEDLOCK_CLAIM_NOTIFY)
		q = v12 ? &claim_notify_query : &claim_notify_query_1_1;
	else if (kind == SCHEDLOCK_CLAIM_ATOMIC)
	{
		if (!v12)
			return false;
		q = &claim_atomic_query;
	}
	else
		q = v12 ? &claim_query : &claim_query_1_1;
	values[0] = TimestampTzGetDatum(now);
	values[1] = TimestampTzGetDatum(pos->next_run_at);
	values[2] = Int64GetDatum(pos->job_id);
	values[3] = ObjectIdGetDatum(role);
	if (schedlock_query_run(q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not claim due jobs");
	if (SPI_processed == 0)
		return false;
	read_claimed_job(job, 0, cxt);
	pos->job_id = job->job_id;
	pos->next_run_at = DatumGetTimestampTz(col(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 19,
											   &isnull));
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/*
 * schedlock_claim_notify_jobs
 *		Claim up to max of the role's NOTIFY jobs due as of now from
 *		position *pos in one statement, read them into jobs[] (strings in
 *		cxt), move *pos to the last and return how many.  Tables of release
 *		1.2 only (the caller checks).  In a transaction, connected to SPI.
 */
int
schedlock_claim_notify_jobs(Oid role, ClaimPosition *pos, TimestampTz now,
							ClaimedJob *jobs, int max, MemoryContext cxt)
{
	static SchedlockQuery q = {
		SCHEDLOCK_CLAIM_NOTIFY_MANY_SQL,
		5, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, OIDOID, INT8OID}
	};
	Datum		values[5];
	bool		isnull;
	uint64		n;

	Assert(max > 0 && schedlock_jobs_have_search_path());
	values[0] = TimestampTzGetDatum(now);
	values[1] = TimestampTzGetDatum(pos->next_run_at);
	values[2] = Int64GetDatum(pos->job_id);
	values[3] = ObjectIdGetDatum(role);
	values[4] = Int64GetDatum((int64) max);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not claim due jobs");
	n = Min(SPI_processed, (uint64) max);
	for (uint64 i = 0; i < n; i++)
		read_claimed_job(&jobs[i], i, cxt);
	if (n > 0)
	{
		pos->job_id = jobs[n - 1].job_id;
		pos->next_run_at = DatumGetTimestampTz(col(SPI_tuptable->vals[n - 1],
												   SPI_tuptable->tupdesc, 19,
												   &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return (int) n;
}

/*
 * first_timestamp
 *		Run the read-only query q (one timestamptz column) with values and
 *		put its first row's value into *at; false when it returned no row.
 *		what names the query in the error raised when it fails.
 */
static bool
first_timestamp(SchedlockQuery *q, Datum *values, TimestampTz *at,
				const char *what)
{
	bool		isnull;
	bool		found;

	if (schedlock_query_run(q, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not %s", what);
	found = SPI_processed > 0;
	if (found)
		*at = DatumGetTimestampTz(col(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * schedlock_next_role_wakeup
 *		The earliest next_run_at of the enabled jobs of role (the role they
 *		run as), into *next; false when it has none.
 */
bool
schedlock_next_role_wakeup(Oid role, TimestampTz *next)
{
	static SchedlockQuery q = {
		"SELECT next_run_at FROM schedlock.jobs "
		"WHERE enabled AND next_run_at IS NOT NULL "
		"  AND (COALESCE(run_as, owner)::pg_catalog.oid) OPERATOR(pg_catalog.=) $1 "
		"ORDER BY next_run_at LIMIT 1",
		1, {OIDOID}
	};
	Datum		values[1] = {ObjectIdGetDatum(role)};

	return first_timestamp(&q, values, next, "compute the next wakeup");
}

/*
 * schedlock_roles_due
 *		Every role with enabled jobs and its earliest next_run_at; *n gets
 *		their number, the array is made in cxt.
 */
SchedlockRoleDue *
schedlock_roles_due(int *n, MemoryContext cxt)
{
	static SchedlockQuery q = {
		"SELECT (COALESCE(run_as, owner)::pg_catalog.oid), "
		"  pg_catalog.min(next_run_at) "
		"FROM schedlock.jobs WHERE enabled AND next_run_at IS NOT NULL "
		"GROUP BY 1",
		0, {InvalidOid}
	};
	SchedlockRoleDue *dues;
	uint64		i;

	if (schedlock_query_run(&q, NULL, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the roles' next runs");
	dues = MemoryContextAlloc(cxt, sizeof(SchedlockRoleDue) *
							  Max(SPI_processed, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		dues[i].role = DatumGetObjectId(col(SPI_tuptable->vals[i],
											SPI_tuptable->tupdesc, 1,
											&isnull));
		dues[i].due_at = DatumGetTimestampTz(col(SPI_tuptable->vals[i],
												 SPI_tuptable->tupdesc, 2,
												 &isnull));
	}
	*n = (int) SPI_processed;
	SPI_freetuptable(SPI_tuptable);
	return dues;
}

/*
 * schedlock_overdue_jobs
 *		The enabled jobs of role (the role they run as) whose next_run_at is
 *		at or before 'before', earliest first, at most max of them, into
 *		jobs (names in cxt).  Returns how many.
 */
int
schedlock_overdue_jobs(Oid role, TimestampTz before,
					   SchedlockOverdueJob *jobs, int max, MemoryContext cxt)
{
	static SchedlockQuery q = {
		"SELECT job_id, job_name, next_run_at FROM schedlock.jobs "
		"WHERE enabled "
		"  AND (COALESCE(run_as, owner)::pg_catalog.oid) OPERATOR(pg_catalog.=) $1 "
		"  AND next_run_at OPERATOR(pg_catalog.<=) $2 "
		"ORDER BY next_run_at, job_id LIMIT $3",
		3, {OIDOID, TIMESTAMPTZOID, INT4OID}
	};
	Datum		values[3];
	uint64		i;
	int			n;

	values[0] = ObjectIdGetDatum(role);
	values[1] = TimestampTzGetDatum(before);
	values[2] = Int32GetDatum(max);
	if (schedlock_query_run(&q, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read overdue jobs");
	n = (int) Min(SPI_processed, (uint64) max);
	for (i = 0; i < (uint64) n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		jobs[i].job_id = DatumGetInt64(col(tup, desc, 1, &isnull));
		jobs[i].job_name = col_text(tup, desc, 2, cxt);
		jobs[i].next_run_at = DatumGetTimestampTz(col(tup, desc, 3, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * schedlock_count_jobs
 *		Count the database's jobs: all, enabled, those whose last run failed
 *		(consecutive_failures above 0) and the quarantined ones (tables of
 *		1.1 on).
 */
void
schedlock_count_jobs(SchedlockJobCounts *counts)
{
	static SchedlockQuery q = {
		"SELECT pg_catalog.count(*)::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE enabled))::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE consecutive_failures "
		"    OPERATOR(pg_catalog.>) 0))::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE quarantine_reason IS NOT NULL))::pg_catalog.int4 "
		"FROM schedlock.jobs",
		0, {InvalidOid}
	};
	static SchedlockQuery q_1_0 = {
		"SELECT pg_catalog.count(*)::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE enabled))::pg_catalog.int4, "
		"  (pg_catalog.count(*) FILTER (WHERE consecutive_failures "
		"    OPERATOR(pg_catalog.>) 0))::pg_catalog.int4, 0 "
		"FROM schedlock.jobs",
		0, {InvalidOid}
	};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	if (schedlock_query_run(schedlock_jobs_have_quarantine() ? &q : &q_1_0,
							NULL, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the jobs");
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	counts->njobs = DatumGetInt32(col(tup, desc, 1, &isnull));
	counts->nenabled = DatumGetInt32(col(tup, desc, 2, &isnull));
	counts->nfailing = DatumGetInt32(col(tup, desc, 3, &isnull));
	counts->nquarantined = DatumGetInt32(col(tup, desc, 4, &isnull));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_next_deadline
 *		The earliest deadline of a NOTIFY run still open, into *next; false
 *		when there is none.
 */
bool
schedlock_next_deadline(TimestampTz *next)
{
	static SchedlockQuery q = {
		"SELECT deadline FROM schedlock.job_runs "
		"WHERE deadline IS NOT NULL "
		"  AND status OPERATOR(pg_catalog.=) ANY ('{pending,running}') "
		"ORDER BY deadline LIMIT 1",
		0, {InvalidOid}
	};

	return first_timestamp(&q, NULL, next, "find the next deadline");
}

/*
 * schedlock_oldest_finished_run
 *		finished_at of the oldest finished run in the history, into *at;
 *		false when there is none.
 */
bool
schedlock_oldest_finished_run(TimestampTz *at)
{
	static SchedlockQuery q = {
		"SELECT finished_at FROM schedlock.job_runs "
		"WHERE finished_at IS NOT NULL ORDER BY finished_at LIMIT 1",
		0, {InvalidOid}
	};

	return first_timestamp(&q, NULL, at, "look at the run history");
}

/*
 * schedlock_table_oid
 *		The OID of table relname of schema schedlock, or InvalidOid when
 *		there is none.  In a transaction.
 */
Oid
schedlock_table_oid(const char *relname)
{
	Oid			nsp = get_namespace_oid("schedlock", true);

	return OidIsValid(nsp) ? get_relname_relid(relname, nsp) : InvalidOid;
}

/*
 * The release of the tables, once found; tables_jobs is the OID of
 * schedlock.jobs it was read from.  tables_relcache_callback forgets it
 * whenever that table's relcache entry (or every entry) is invalidated, as
 * ALTER EXTENSION schedlock UPDATE's ALTER TABLE and DROP EXTENSION do, in
 * the transaction that changes the table as in every other.
 */
static SchedlockTables tables_release = SCHEDLOCK_TABLES_NONE;
static Oid	tables_jobs = InvalidOid;
static bool tables_callback_registered = false;

/*
 * tables_relcache_callback
 *		Forget the tables' release when schedlock.jobs may have changed.
 */
static void
tables_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == tables_jobs)
	{
		tables_release = SCHEDLOCK_TABLES_NONE;
		tables_jobs = InvalidOid;
	}
}

/*
 * schedlock_tables_release
 *		Which release's tables the extension has in this database: the one
 *		place where the library, which may be newer than the tables until
 *		ALTER EXTENSION schedlock UPDATE, tells them apart.  Every update
 *		adds its columns in one transaction, so one column of schedlock.jobs
 *		tells each release: search_path (1.2, with job_runs.job_name),
 *		last_start_lag (1.1, with the run statistics, the quarantine and
 *		what job_runs says of a run).  NONE when there is no
 *		schedlock.jobs (which is not remembered).  In a transaction.
 */
SchedlockTables
schedlock_tables_release(void)
{
	Oid			relid;

	if (tables_release != SCHEDLOCK_TABLES_NONE)
		return tables_release;
	if (!tables_callback_registered)
	{
		CacheRegisterRelcacheCallback(tables_relcache_callback, (Datum) 0);
		tables_callback_registered = true;
	}
	relid = schedlock_table_oid("jobs");
	if (!OidIsValid(relid))
		return SCHEDLOCK_TABLES_NONE;
	if (get_attnum(relid, "search_path") != InvalidAttrNumber)
		tables_release = SCHEDLOCK_TABLES_1_2;
	else if (get_attnum(relid, "last_start_lag") != InvalidAttrNumber)
		tables_release = SCHEDLOCK_TABLES_1_1;
	else
		tables_release = SCHEDLOCK_TABLES_1_0;
	tables_jobs = relid;
	return tables_release;
}

/*
 * log_closed_run
 *		Log row i of tuptable, whose columns from first on are those of
 *		ENDED_RUNS_SELECT from run_id on, as schedlock.log_runs asks.
 */
static void
log_closed_run(SPITupleTable *tuptable, uint64 i, int first)
{
	HeapTuple	tup = tuptable->vals[i];
	TupleDesc	desc = tuptable->tupdesc;
	bool		isnull;
	int64		run_id = DatumGetInt64(SPI_getbinval(tup, desc, first, &isnull));
	Datum		duration = SPI_getbinval(tup, desc, first + 5, &isnull);

	if (schedlock_log_runs == SCHEDLOCK_LOG_RUNS_NONE)
		return;
	schedlock_log_run_end(SPI_getvalue(tup, desc, first + 1),
						  SPI_getvalue(tup, desc, first + 6), run_id,
						  SPI_getvalue(tup, desc, first + 2),
						  SPI_getvalue(tup, desc, first + 3),
						  SPI_getvalue(tup, desc, first + 4),
						  isnull ? NULL : DatumGetIntervalP(duration));
}

/*
 * close_runs_failed
 *		For every row returned by the last SPI statement (job_id,
 *		scheduled_for, attempt, manual, then the rest of
 *		ENDED_RUNS_SELECT's columns), log it
 *		per schedlock.log_runs, count a failure and schedule its retry.
 *		Inside a transaction, connected to SPI.
 */
static void run_lost_slot_again(int64 job_id, TimestampTz slot, int32 attempt,
								TimestampTz now);

static bool unheard_run(int64 job_id);

static void
close_runs_failed(TimestampTz now, bool lost)
{
	SPITupleTable *tuptable = SPI_tuptable;
	uint64		n = SPI_processed;
	uint64		i;

	for (i = 0; i < n; i++)
	{
		bool		isnull;
		int64		job_id = DatumGetInt64(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 1, &isnull));
		TimestampTz slot = DatumGetTimestampTz(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 2, &isnull));
		int32		attempt = DatumGetInt32(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 3, &isnull));
		bool		manual = DatumGetBool(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 4, &isnull));
		char	   *message = SPI_getvalue(tuptable->vals[i], tuptable->tupdesc, 9);

		/* an unclaimed NOTIFY run past the warning is not logged */
		if (lost || message == NULL ||
			strcmp(message, SCHEDLOCK_UNCLAIMED_MESSAGE) != 0 ||
			!unheard_run(job_id))
			log_closed_run(tuptable, i, 5);
		schedlock_run_failed(job_id, slot,
							 schedlock_rule_failed_attempt(manual, attempt), now);
		if (lost && !manual)
			run_lost_slot_again(job_id, slot, attempt, now);
	}
}

/*
 * unheard_run
 *		A run of NOTIFY job job_id expired unclaimed (before its failure is
 *		counted).  When it makes SCHEDLOCK_UNHEARD_RUNS failures in a row,
 *		WARNING that no application claims the job's runs; past that the
 *		streak's runs are not logged one by one: returns true for them.
 *		job_status.stopped_reason says so while the streak lasts.  Caller
 *		is connected to SPI, as the extension owner.
 */
static bool
unheard_run(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT consecutive_failures OPERATOR(pg_catalog.+) 1, job_name, "
		"  notify_channel, "
		"  pg_catalog.pg_get_userbyid(COALESCE(run_as, owner)::pg_catalog.oid), "
		"  timeout::pg_catalog.text "
		"FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};
	SPITupleTable *saved = SPI_tuptable;
	uint64		saved_n = SPI_processed;
	bool		isnull;
	int64		streak = 0;
	bool		quiet = false;

	/* not read-only: the statement that closed the run changed the job */
	if (schedlock_query_run(&q, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		streak = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		if (streak == SCHEDLOCK_UNHEARD_RUNS)
			ereport(WARNING,
					(errmsg("schedlock NOTIFY job \"%s\" of role \"%s\" in database \"%s\": no application claimed its last %d runs",
							SPI_getvalue(tup, desc, 2), SPI_getvalue(tup, desc, 4),
							get_database_name(MyDatabaseId),
							SCHEDLOCK_UNHEARD_RUNS),
					 errdetail("Each run was notified on channel \"%s\" and expired unclaimed after its timeout (%s). Its further unclaimed runs are not logged until one is claimed; schedlock.job_status.stopped_reason says so meanwhile.",
							   SPI_getvalue(tup, desc, 3),
							   SPI_getvalue(tup, desc, 5)),
					 errhint("Start an application that LISTENs on the channel, catches up with schedlock_pending_runs() and claims the runs, or unschedule the job.")));
		quiet = streak > SCHEDLOCK_UNHEARD_RUNS;
	}
	SPI_tuptable = saved;
	SPI_processed = saved_n;
	return quiet;
}

/*
 * run_lost_slot_again
 *		A lost run of an atomic job committed nothing of its command: the
 *		command, its outcome and the run's end commit in one transaction,
 *		and only the claim of a run claimed before its instant commits
 *		before it (worker.c, commit_early_claim).  So the slot has not run:
 *		have it run again now, as its next attempt (a slot's attempt is
 *		recorded once), whatever max_attempts allows.  Does nothing for a
 *		non-atomic job (its command may have committed work) or a disabled
 *		one.  Caller is connected to SPI.
 */
static void
run_lost_slot_again(int64 job_id, TimestampTz slot, int32 attempt,
					TimestampTz now)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET retry_slot = $2, retry_attempt = $3, "
		"  retry_at = $4, next_run_at = LEAST(next_run_at, $4) "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 AND atomic AND enabled",
		4, {INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID}
	};
	Datum		values[4];

	values[0] = Int64GetDatum(job_id);
	values[1] = TimestampTzGetDatum(slot);
	values[2] = Int32GetDatum(attempt + 1);
	values[3] = TimestampTzGetDatum(now);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not run a lost slot of job " INT64_FORMAT " again",
			 job_id);
}

/*
 * runner_args
 *		Fill values[1..3] with the parameters $2..$4 of RUNNER_GONE: this
 *		database, an unused text, and the current timeline.
 */
static void
runner_args(Datum *values)
{
	values[1] = ObjectIdGetDatum(MyDatabaseId);
	values[2] = CStringGetTextDatum("");
	values[3] = Int32GetDatum((int32) GetWALInsertionTimeLine());
}

/*
 * schedlock_close_lost_runs
 *		Close as lost the SQL runs marked running whose worker is gone (see
 *		RUNNER_GONE), and retry them per policy.  Returns how many it
 *		closed.  In a transaction, connected to SPI.
 */
#define LOST_RUNS_SQL(set_duration) \
	"UPDATE schedlock.job_runs r SET status = 'lost', " \
	"  finished_at = $1, " set_duration \
	"  message = 'the job backend running it ended before the run finished " \
	"(it was stopped or terminated, or the server crashed, restarted or failed over)' " \
	"WHERE r.run_id OPERATOR(pg_catalog.=) ANY (" \
	"    SELECT x.run_id FROM schedlock.job_runs x " \
	"    WHERE x.status OPERATOR(pg_catalog.=) 'running' " \
	"      AND x.claimed_at IS NULL AND " RUNNER_GONE("x") \
	"    FOR UPDATE SKIP LOCKED) " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$1")

uint64
schedlock_close_lost_runs(void)
{
	static SchedlockQuery q = {
		"WITH e AS ("
		LOST_RUNS_SQL("duration = $1 OPERATOR(pg_catalog.-) r.started_at, ")
		"), " SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT,
		4, {TIMESTAMPTZOID, OIDOID, TEXTOID, INT4OID}
	};
	static SchedlockQuery q_1_0 = {
		"WITH e AS (" LOST_RUNS_SQL("") ") " ENDED_RUNS_SELECT,
		4, {TIMESTAMPTZOID, OIDOID, TEXTOID, INT4OID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[4];
	uint64		closed;

	values[0] = TimestampTzGetDatum(now);
	runner_args(values);
	if (schedlock_query_run(schedlock_jobs_have_stats() ? &q : &q_1_0,
							values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not close lost runs");
	closed = SPI_processed;
	/* one line per lost run, by schedlock.log_runs */
	close_runs_failed(now, true);
	return closed;
}

/*
 * schedlock_fire_reboot_jobs
 *		Make every enabled @reboot job due now.  In a transaction, connected
 *		to SPI.
 */
void
schedlock_fire_reboot_jobs(TimestampTz now)
{
	Oid			types[1] = {TIMESTAMPTZOID};
	Datum		values[1];
	int			nestlevel;

	nestlevel = schedlock_trusted_path_begin();
	values[0] = TimestampTzGetDatum(now);
	if (SPI_execute_with_args("UPDATE schedlock.jobs SET next_slot = $1, "
							  "  next_run_at = LEAST($1, next_run_at) "
							  "WHERE reboot AND enabled",
							  1, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not fire @reboot jobs");
	schedlock_trusted_path_end(nestlevel);
}

/*
 * schedlock_next_queued_run
 *		The oldest queued run_job() run of the job: its run id and
 *		scheduled_for.  False when there is none.  In a transaction,
 *		connected to SPI.
 */
bool
schedlock_next_queued_run(int64 job_id, int64 *run_id,
						  TimestampTz *scheduled_for)
{
	static SchedlockQuery q = {
		"SELECT run_id, scheduled_for FROM schedlock.job_runs "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"  AND status OPERATOR(pg_catalog.=) 'queued' "
		"ORDER BY run_id LIMIT 1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read queued runs");
	if (SPI_processed != 1)
		return false;
	*run_id = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*scheduled_for = DatumGetTimestampTz(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	return true;
}

/*
 * schedlock_expire_runs
 *		Close NOTIFY runs not claimed, or not finished, by their deadline
 *		(at or before now) as timed out, and retry them per policy: at most
 *		EXPIRE_BATCH_ROWS.  Returns how many it closed.  In a transaction,
 *		connected to SPI.
 */
#define EXPIRE_RUNS_SQL(set_duration) \
	"UPDATE schedlock.job_runs r SET status = 'timed_out', " \
	"  finished_at = $1, deadline = NULL, " set_duration \
	"  message = CASE WHEN r.status OPERATOR(pg_catalog.=) 'pending' " \
	"    THEN '" SCHEDLOCK_UNCLAIMED_MESSAGE "' " \
	"    ELSE 'not finished within the timeout' END " \
	"WHERE r.run_id OPERATOR(pg_catalog.=) ANY (" \
	"    SELECT x.run_id FROM schedlock.job_runs x " \
	"    WHERE x.status OPERATOR(pg_catalog.=) ANY ('{pending,running}') " \
	"      AND x.deadline OPERATOR(pg_catalog.<=) $1 " \
	"    ORDER BY x.deadline LIMIT " CppAsString2(EXPIRE_BATCH_ROWS) \
	"    FOR UPDATE SKIP LOCKED) " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$1")

uint64
schedlock_expire_runs(TimestampTz now)
{
	/* a run that was never claimed has no start, and no duration */
	static SchedlockQuery q = {
		"WITH e AS ("
		EXPIRE_RUNS_SQL("duration = $1 OPERATOR(pg_catalog.-) r.started_at, ")
		"), " SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT,
		1, {TIMESTAMPTZOID}
	};
	static SchedlockQuery q_1_0 = {
		"WITH e AS (" EXPIRE_RUNS_SQL("") ") " ENDED_RUNS_SELECT,
		1, {TIMESTAMPTZOID}
	};
	Datum		values[1] = {TimestampTzGetDatum(now)};
	uint64		closed;

	if (schedlock_query_run(schedlock_jobs_have_stats() ? &q : &q_1_0,
							values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not close overdue runs");
	closed = SPI_processed;
	close_runs_failed(now, false);
	return closed;
}

/*
 * schedlock_prune_runs
 *		Delete the PRUNE_BATCH_ROWS oldest runs (at most) that finished
 *		more than retention_mins minutes before now, at or after *from;
 *		move *from to the last one deleted (every run that finished before
 *		it is gone: runs finish at the time they are recorded, so none
 *		older arrives later; one loaded by hand is found by the next
 *		housekeeping pass).  Returns how many it deleted.  In a
 *		transaction, connected to SPI.
 */
uint64
schedlock_prune_runs(TimestampTz now, int retention_mins, TimestampTz *from)
{
	static SchedlockQuery q = {
		"WITH d AS (DELETE FROM schedlock.job_runs "
		"  WHERE run_id OPERATOR(pg_catalog.=) ANY ("
		"    SELECT run_id FROM schedlock.job_runs "
		"    WHERE finished_at OPERATOR(pg_catalog.>=) $3 "
		"      AND finished_at OPERATOR(pg_catalog.<) "
		"        ($1 OPERATOR(pg_catalog.-) "
		"         pg_catalog.make_interval(mins => $2)) "
		"    ORDER BY finished_at LIMIT " CppAsString2(PRUNE_BATCH_ROWS) ") "
		"  RETURNING finished_at) "
		"SELECT pg_catalog.count(*), pg_catalog.max(finished_at) FROM d",
		3, {TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID}
	};
	Datum		values[3];
	uint64		deleted;
	bool		isnull;
	Datum		last;

	values[0] = TimestampTzGetDatum(now);
	values[1] = Int32GetDatum(retention_mins);
	values[2] = TimestampTzGetDatum(*from);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not prune run history");
	deleted = (uint64) DatumGetInt64(col(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	last = col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (!isnull)
		*from = DatumGetTimestampTz(last);
	SPI_freetuptable(SPI_tuptable);
	return deleted;
}

/*
 * The advanced state of a claimed job as six statement parameters, in this
 * order: next_slot, retry_slot, retry_attempt, retry_at, manual_pending,
 * next_run_at (as of now).  Every statement that advances a job takes them
 * so (schedlock_save_job_state, schedlock_record_ended_run,
 * schedlock_publish_notify_runs).
 */
#define JOB_STATE_NPARAMS 6

static void
job_state_params(ClaimedJob *job, TimestampTz now, Datum *values,
				 char *nulls)
{
	TimestampTz next_run_at;

	values[0] = TimestampTzGetDatum(job->next_slot);
	nulls[0] = job->has_next_slot ? ' ' : 'n';
	values[1] = TimestampTzGetDatum(job->retry_slot);
	values[2] = Int32GetDatum(job->retry_attempt);
	values[3] = TimestampTzGetDatum(job->retry_at);
	nulls[1] = nulls[2] = nulls[3] = job->has_retry ? ' ' : 'n';
	values[4] = Int32GetDatum(job->manual_pending);
	nulls[4] = ' ';
	/* the claim found the job enabled, and holds its row */
	nulls[5] = schedlock_rule_next_run_at(true,
										  job->has_next_slot, job->next_slot,
										  job->has_retry, job->retry_at,
										  job->manual_pending, now,
										  &next_run_at) ? ' ' : 'n';
	values[5] = TimestampTzGetDatum(next_run_at);
}

/*
 * The outcome of a run as six statement parameters, in this order:
 * sqlstate, message, detail, hint, result_status, notices.  error: the
 * run's error, or NULL when it succeeded (then the message is
 * default_message, which may be NULL); result_status: the command tag of
 * the last statement ("" or NULL: none); notices: its captured output, or
 * NULL.  *state and *message get the SQLSTATE (NULL on success) and the
 * message, for the log line.
 */
#define RUN_OUTCOME_NPARAMS 6

static void
run_outcome_params(ErrorData *error, const char *default_message,
				   const char *result_status, const char *notices,
				   Datum *values, char *nulls, char **state,
				   const char **message)
{
	memset(nulls, 'n', RUN_OUTCOME_NPARAMS);
	*state = NULL;
	*message = default_message;
	if (error)
	{
		/* unpack_sql_state returns a static buffer that ereport reuses */
		*state = pstrdup(unpack_sql_state(error->sqlerrcode));
		*message = error->message ? error->message : "unknown error";
		values[0] = CStringGetTextDatum(*state);
		nulls[0] = ' ';
		if (error->detail)
		{
			values[2] = CStringGetTextDatum(error->detail);
			nulls[2] = ' ';
		}
		if (error->hint)
		{
			values[3] = CStringGetTextDatum(error->hint);
			nulls[3] = ' ';
		}
	}
	if (*message != NULL)
	{
		values[1] = CStringGetTextDatum(*message);
		nulls[1] = ' ';
	}
	if (result_status != NULL && result_status[0] != '\0')
	{
		values[4] = CStringGetTextDatum(result_status);
		nulls[4] = ' ';
	}
	if (notices != NULL)
	{
		values[5] = CStringGetTextDatum(notices);
		nulls[5] = ' ';
	}
}

/*
 * schedlock_save_job_state
 *		Write the advanced next_slot, retry and queue state of the job and
 *		its next_run_at (schedlock_rule_next_run_at).
 */
void
schedlock_save_job_state(ClaimedJob *job, TimestampTz now)
{
	/* the row this transaction has locked: found by its ctid, no index */
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET next_slot = $2, "
		"  retry_slot = $3, retry_attempt = $4, retry_at = $5, "
		"  manual_pending = $6, next_run_at = $7 "
		"WHERE ctid OPERATOR(pg_catalog.=) $8 "
		"  AND job_id OPERATOR(pg_catalog.=) $1",
		8, {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		INT4OID, TIMESTAMPTZOID, TIDOID}
	};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(job->job_id);
	job_state_params(job, now, &values[1], &nulls[1]);
	values[7] = PointerGetDatum(&job->ctid);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not advance job " INT64_FORMAT, job->job_id);
}

/*
 * schedlock_run_in_progress
 *		Whether a run of the job is pending or running (overlap); a run
 *		whose job backend is gone is not, and is closed as lost here
 *		(schedlock_close_lost_runs), so that it does not wait for the
 *		database's next housekeeping.
 */
bool
schedlock_run_in_progress(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT COALESCE(pg_catalog.bool_or(NOT s.gone), false), "
		"  COALESCE(pg_catalog.bool_or(s.gone), false) "
		"FROM (SELECT (x.status OPERATOR(pg_catalog.=) 'running' "
		"    AND x.claimed_at IS NULL AND " RUNNER_GONE("x") ") AS gone "
		"  FROM schedlock.job_runs x "
		"  WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"    AND x.status OPERATOR(pg_catalog.=) ANY ('{pending,running}')) s",
		4, {INT8OID, OIDOID, TEXTOID, INT4OID}
	};
	Datum		values[4];
	bool		isnull;
	bool		live;
	bool		gone;

	values[0] = Int64GetDatum(job_id);
	runner_args(values);

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not look for runs in progress");
	live = DatumGetBool(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
							&isnull));
	gone = DatumGetBool(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
							&isnull));
	SPI_freetuptable(SPI_tuptable);
	if (gone)
		(void) schedlock_close_lost_runs();
	return live;
}

/*
 * schedlock_open_runs_among
 *		For the n claimed jobs of jobs[], whether a run of each is pending
 *		or running (the overlap rule's question, as schedlock_run_in_progress
 *		asks it of one job, which also closes the runs of a backend that is
 *		gone), into open[]; one statement.  It runs after the claim, whose
 *		row locks stand: any run of those jobs was made by a transaction
 *		that held the lock before, and has committed, so this statement's
 *		snapshot sees it (the claim's own snapshot may be older).  A
 *		subquery with LIMIT rather than EXISTS, which the planner may turn
 *		into a hash of every open run (thousands pending after a burst).
 */
void
schedlock_open_runs_among(ClaimedJob *jobs, int n, bool *open)
{
	static SchedlockQuery q = {
		"SELECT (SELECT true FROM schedlock.job_runs x "
		"  WHERE x.job_id OPERATOR(pg_catalog.=) u.job_id "
		"    AND x.status OPERATOR(pg_catalog.=) ANY ('{pending,running}') "
		"  LIMIT 1) IS NOT NULL "
		"FROM pg_catalog.unnest($1) WITH ORDINALITY AS u(job_id, i) "
		"ORDER BY u.i",
		1, {INT8ARRAYOID}
	};
	Datum	   *ids = palloc(sizeof(Datum) * n);
	Datum		values[1];
	bool		isnull;

	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(jobs[i].job_id);
	values[0] = array_of(ids, NULL, n, INT8OID);
	/* not read-only: a snapshot of its own, taken now */
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != (uint64) n)
		elog(ERROR, "could not look for runs in progress");
	for (int i = 0; i < n; i++)
		open[i] = DatumGetBool(col(SPI_tuptable->vals[i],
								   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * schedlock_run_may_defer
 *		Whether a run of the job for this slot's attempt can be recorded
 *		only once it has ended, together with the job's advanced state
 *		(schedlock_record_ended_run): no run of the job is pending or
 *		running, none is left by a backend that is gone (closing it changes
 *		the job), and the slot's attempt has no row yet.  If so, returns the
 *		run's id, taken from the sequence now (so that a log line before the
 *		run names it), else 0.  One statement, looking at the job's open
 *		runs and at the unique key.
 */
int64
schedlock_run_may_defer(int64 job_id, TimestampTz scheduled_for,
						int32 attempt)
{
	static SchedlockQuery q = {
		"SELECT pg_catalog.nextval('schedlock.job_runs_run_id_seq'::pg_catalog.regclass) "
		"WHERE NOT EXISTS (SELECT FROM schedlock.job_runs x "
		"    WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"      AND x.status OPERATOR(pg_catalog.=) ANY ('{pending,running}')) "
		"  AND NOT EXISTS (SELECT FROM schedlock.job_runs x "
		"    WHERE x.job_id OPERATOR(pg_catalog.=) $1 "
		"      AND x.scheduled_for OPERATOR(pg_catalog.=) $2 "
		"      AND x.attempt OPERATOR(pg_catalog.=) $3)",
		3, {INT8OID, TIMESTAMPTZOID, INT4OID}
	};
	Datum		values[3];
	bool		isnull;
	int64		run_id = 0;

	values[0] = Int64GetDatum(job_id);
	values[1] = TimestampTzGetDatum(scheduled_for);
	values[2] = Int32GetDatum(attempt);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not look for runs in progress");
	if (SPI_processed == 1)
		run_id = DatumGetInt64(col(SPI_tuptable->vals[0],
								   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return run_id;
}

/*
 * schedlock_record_run
 *		Insert the run's row (or turn the queued run_job() row into it) with
 *		the given status.  Returns the run id, or 0 when the slot's attempt
 *		exists already (the unique key refused it).
 */
int64
schedlock_record_run(ClaimedJob *job, ClaimPlan *plan, const char *status,
					 TimestampTz now, TimestampTz deadline, bool has_deadline)
{
	static SchedlockQuery update_queued = {
		"UPDATE schedlock.job_runs SET status = $5, "
		"  started_at = CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' "
		"    THEN NULL ELSE $6 END, "
		"  finished_at = CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' "
		"    THEN $6 END, "
		"  worker_pid = $7, timeline = $8, message = $9, deadline = $10 "
		"WHERE run_id OPERATOR(pg_catalog.=) $1 "
		"  AND status OPERATOR(pg_catalog.=) 'queued' "
		"RETURNING run_id",
		10, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID}
	};
	/* the tables of 1.1 have no job_runs.job_name ($11 unused) */
	static SchedlockQuery insert_1_1 = {
		"INSERT INTO schedlock.job_runs (job_id, owner, "
		"  scheduled_for, attempt, status, started_at, "
		"  finished_at, worker_pid, timeline, message, deadline) "
		"VALUES ($1, $2, $3, $4, $5, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' THEN NULL ELSE $6 END, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' THEN $6 END, "
		"  $7, $8, $9, $10) "
		"ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"RETURNING run_id",
		11, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID}
	};
	static SchedlockQuery insert = {
		"INSERT INTO schedlock.job_runs (job_id, owner, "
		"  scheduled_for, attempt, status, started_at, "
		"  finished_at, worker_pid, timeline, message, deadline, job_name) "
		"VALUES ($1, $2, $3, $4, $5, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' THEN NULL ELSE $6 END, "
		"  CASE WHEN $5 OPERATOR(pg_catalog.=) 'skipped' THEN $6 END, "
		"  $7, $8, $9, $10, $11) "
		"ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"RETURNING run_id",
		11, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID}
	};
	Datum		values[11];
	char		nulls[11];
	bool		isnull;
	bool		finished = (strcmp(status, "skipped") == 0);
	int			rc;
	int64		run_id;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(plan->manual_run_id ? plan->manual_run_id : job->job_id);
	values[1] = ObjectIdGetDatum(job->owner);
	values[2] = TimestampTzGetDatum(plan->scheduled_for);
	values[3] = Int32GetDatum(plan->attempt);
	values[4] = CStringGetTextDatum(status);
	values[5] = TimestampTzGetDatum(now);
	values[6] = Int32GetDatum(finished ? 0 : MyProcPid);
	nulls[6] = finished ? 'n' : ' ';
	values[7] = Int32GetDatum((int32) GetWALInsertionTimeLine());
	values[8] = plan->message ? CStringGetTextDatum(plan->message) : (Datum) 0;
	nulls[8] = plan->message ? ' ' : 'n';
	values[9] = TimestampTzGetDatum(deadline);
	nulls[9] = has_deadline ? ' ' : 'n';
	values[10] = CStringGetTextDatum(job->job_name);

	rc = schedlock_query_run(plan->manual_run_id ? &update_queued :
							 schedlock_runs_have_job_name() ? &insert : &insert_1_1,
							 values, nulls, false, 0);
	if (rc != SPI_OK_INSERT_RETURNING && rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not record a run of job " INT64_FORMAT, job->job_id);
	if (SPI_processed != 1)
		return 0;
	run_id = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return run_id;
}

/*
 * schedlock_publish_notify_runs
 *		For n claimed NOTIFY jobs whose plan is to run their slot (no queued
 *		run_job() row, no run in progress: see dispatch_notify_batch in
 *		worker.c), in one statement: write each job's advanced state as of
 *		horizon (schedlock_save_job_state), record its run as pending since
 *		now with its claim deadline (schedlock_record_run), and queue its
 *		notification (delivered when the transaction commits), in the order
 *		of the jobs.  A slot's attempt that has a row already is neither
 *		recorded nor notified, as with schedlock_record_run.  Tables of
 *		release 1.2, connected to SPI, in a transaction.
 */
void
schedlock_publish_notify_runs(ClaimedJob *jobs, ClaimPlan *plans,
							  TimestampTz *deadlines, int n,
							  TimestampTz now, TimestampTz horizon)
{
	/* the second column counts the notifications, which makes them happen */
	static SchedlockQuery q = {
		"WITH u AS MATERIALIZED (SELECT * FROM ROWS FROM ("
		"    pg_catalog.unnest($1), pg_catalog.unnest($2), "
		"    pg_catalog.unnest($3), pg_catalog.unnest($4), "
		"    pg_catalog.unnest($5), pg_catalog.unnest($6), "
		"    pg_catalog.unnest($7), pg_catalog.unnest($8), "
		"    pg_catalog.unnest($9), pg_catalog.unnest($10), "
		"    pg_catalog.unnest($11), pg_catalog.unnest($12), "
		"    pg_catalog.unnest($13), pg_catalog.unnest($14), "
		"    pg_catalog.unnest($15)) "
		"  WITH ORDINALITY AS u(job_id, tid, next_slot, retry_slot, "
		"    retry_attempt, retry_at, manual_pending, next_run_at, owner, "
		"    scheduled_for, attempt, message, deadline, job_name, channel, i)), "
		"j AS (UPDATE schedlock.jobs t SET next_slot = u.next_slot, "
		"    retry_slot = u.retry_slot, retry_attempt = u.retry_attempt, "
		"    retry_at = u.retry_at, manual_pending = u.manual_pending, "
		"    next_run_at = u.next_run_at "
		"  FROM u WHERE t.ctid OPERATOR(pg_catalog.=) u.tid "
		"    AND t.job_id OPERATOR(pg_catalog.=) u.job_id "
		"  RETURNING t.job_id), "
		"r AS (INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, "
		"    attempt, status, started_at, worker_pid, timeline, message, "
		"    deadline, job_name) "
		"  SELECT u.job_id, u.owner::pg_catalog.regrole, u.scheduled_for, "
		"    u.attempt, 'pending', $16, $17, $18, u.message, u.deadline, "
		"    u.job_name FROM u ORDER BY u.i "
		"  ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"  RETURNING run_id, job_id, scheduled_for, attempt) "
		"SELECT (SELECT pg_catalog.count(*) FROM j), "
		"  (SELECT pg_catalog.count(*) FROM (SELECT "
		SCHEDLOCK_NOTIFY_RUN_SQL("u.channel", "u.job_name", "r.job_id",
								 "r.run_id", "r.scheduled_for", "r.attempt")
		"    FROM r JOIN u USING (job_id) ORDER BY u.i) s)",
		18, {INT8ARRAYOID, TIDARRAYOID, TIMESTAMPTZARRAYOID,
			TIMESTAMPTZARRAYOID, INT4ARRAYOID, TIMESTAMPTZARRAYOID,
			INT4ARRAYOID, TIMESTAMPTZARRAYOID, OIDARRAYOID,
			TIMESTAMPTZARRAYOID, INT4ARRAYOID, TEXTARRAYOID,
			TIMESTAMPTZARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
		TIMESTAMPTZOID, INT4OID, INT4OID}
	};
	/* the columns of u, $1 to $15 */
	enum
	{
		U_JOB_ID, U_TID, U_NEXT_SLOT, U_RETRY_SLOT, U_RETRY_ATTEMPT,
		U_RETRY_AT, U_MANUAL_PENDING, U_NEXT_RUN_AT, U_OWNER,
		U_SCHEDULED_FOR, U_ATTEMPT, U_MESSAGE, U_DEADLINE, U_JOB_NAME,
		U_CHANNEL, U_NCOLS
	};
	static const Oid elemtypes[U_NCOLS] = {
		INT8OID, TIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID,
		TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, OIDOID, TIMESTAMPTZOID,
		INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID
	};
	Datum	   *elems[U_NCOLS];
	bool	   *elnulls[U_NCOLS];
	Datum		values[18];
	bool		isnull;
	int64		advanced;

	Assert(n > 0);
	for (int c = 0; c < U_NCOLS; c++)
	{
		elems[c] = palloc(sizeof(Datum) * n);
		elnulls[c] = palloc0(sizeof(bool) * n);
	}
	for (int i = 0; i < n; i++)
	{
		ClaimedJob *job = &jobs[i];
		ClaimPlan  *plan = &plans[i];
		Datum		state[JOB_STATE_NPARAMS];
		char		state_nulls[JOB_STATE_NPARAMS];

		Assert(plan->kind == PLAN_RUN && plan->manual_run_id == 0);
		elems[U_JOB_ID][i] = Int64GetDatum(job->job_id);
		elems[U_TID][i] = PointerGetDatum(&job->ctid);
		/* U_NEXT_SLOT to U_NEXT_RUN_AT, in job_state_params' order */
		job_state_params(job, horizon, state, state_nulls);
		for (int c = 0; c < JOB_STATE_NPARAMS; c++)
		{
			elems[U_NEXT_SLOT + c][i] = state[c];
			elnulls[U_NEXT_SLOT + c][i] = (state_nulls[c] == 'n');
		}
		elems[U_OWNER][i] = ObjectIdGetDatum(job->owner);
		elems[U_SCHEDULED_FOR][i] = TimestampTzGetDatum(plan->scheduled_for);
		elems[U_ATTEMPT][i] = Int32GetDatum(plan->attempt);
		elems[U_MESSAGE][i] = plan->message ?
			CStringGetTextDatum(plan->message) : (Datum) 0;
		elnulls[U_MESSAGE][i] = plan->message == NULL;
		elems[U_DEADLINE][i] = TimestampTzGetDatum(deadlines[i]);
		elems[U_JOB_NAME][i] = CStringGetTextDatum(job->job_name);
		elems[U_CHANNEL][i] = CStringGetTextDatum(job->channel);
	}
	for (int c = 0; c < U_NCOLS; c++)
		values[c] = array_of(elems[c], elnulls[c], n, elemtypes[c]);
	values[15] = TimestampTzGetDatum(now);
	values[16] = Int32GetDatum(MyProcPid);
	values[17] = Int32GetDatum((int32) GetWALInsertionTimeLine());

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not publish NOTIFY runs");
	advanced = DatumGetInt64(col(SPI_tuptable->vals[0],
								 SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (advanced != n)
		elog(ERROR, "could not advance %d jobs (advanced " INT64_FORMAT ")",
			 n, advanced);
}

/*
 * schedlock_record_outcome
 *		Close a run as succeeded or failed (error), with what the run said:
 *		the error's SQLSTATE, message, detail and hint, its duration, the
 *		command tag of its last statement (result_status, may be NULL or
 *		"") and its captured output (notices, may be NULL), and count it in
 *		the job's statistics, all in one statement; log it per
 *		schedlock.log_runs, and update the job's failure count and retry
 *		(a success resets the count in that statement).  Connected to SPI,
 *		in a transaction.
 */
void
schedlock_record_outcome(ClaimedJob *job, ClaimPlan *plan, int64 run_id,
						 ErrorData *error, const char *result_status,
						 const char *notices)
{
	static SchedlockQuery q = {
		"WITH e AS ("
		"UPDATE schedlock.job_runs r SET status = $2, "
		"  finished_at = $3, sqlstate = $4, "
		"  message = COALESCE($5, message), detail = $6, hint = $7, "
		"  duration = $3 OPERATOR(pg_catalog.-) started_at, "
		"  result_status = $8, notices = $9 "
		"WHERE run_id OPERATOR(pg_catalog.=) $1 "
		"RETURNING " ENDED_RUN_COLUMNS("r", "$3") "), "
		SCHEDLOCK_RUN_STATS_ONE_CTE "SELECT e.duration FROM e",
		9, {INT8OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID, TEXTOID}
	};
	static SchedlockQuery q_1_0 = {
		"UPDATE schedlock.job_runs SET status = $2, "
		"  finished_at = $3, sqlstate = $4, "
		"  message = COALESCE($5, message) "
		"WHERE run_id OPERATOR(pg_catalog.=) $1 "
		"RETURNING $3 OPERATOR(pg_catalog.-) started_at",
		5, {INT8OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	char	   *state;
	const char *message;
	Datum		duration = (Datum) 0;
	bool		isnull = true;
	bool		stats = schedlock_jobs_have_stats();

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(error ? "failed" : "succeeded");
	values[2] = TimestampTzGetDatum(now);
	/* $4 to $9; a success keeps the message the run's row has */
	run_outcome_params(error, NULL, result_status, notices, &values[3],
					   &nulls[3], &state, &message);
	if (schedlock_query_run(stats ? &q : &q_1_0, values, nulls, false, 0) !=
		(stats ? SPI_OK_SELECT : SPI_OK_UPDATE_RETURNING))
		elog(ERROR, "could not record the outcome of run " INT64_FORMAT, run_id);
	if (SPI_processed == 1)
		duration = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								 1, &isnull);
	schedlock_log_run_end(job->job_name, job->role_name, run_id,
						  error ? "failed" : "succeeded", state, message,
						  isnull ? NULL : DatumGetIntervalP(duration));
	if (error)
	{
		schedlock_run_failed(job->job_id, plan->scheduled_for,
							 schedlock_rule_failed_attempt(plan->manual_run_id != 0,
														   plan->attempt),
							 now);
	}
	else if (job->failures != 0 && !stats)
		schedlock_run_succeeded(job->job_id);
	if (error == NULL && job->failures_only)
		schedlock_forget_run(run_id);
}

/*
 * schedlock_record_ended_run
 *		Record a run that has ended in the claiming transaction, and the
 *		job's advanced state with it (plan->deferred: schedlock_save_job_state
 *		was not called), in one statement: the run's row is inserted as it
 *		ended, and the job's row gets its next slot, retry and next_run_at as
 *		of the claim's horizon, and the run counted in its statistics.  A
 *		command that changed its own job's row (schedlock.alter_job of its
 *		own job: the row is no longer the version claimed, at plan's ctid)
 *		keeps what it wrote there, as it would have had the job been
 *		advanced before it ran; a slot it left due is found recorded when it
 *		is claimed again, and is not run twice.  The rest is as
 *		schedlock_record_outcome: the log line, and a failure's count and
 *		retry.  Returns the run id.  A row of the slot's attempt that
 *		appeared meanwhile (schedlock_run_may_defer found none) is an error:
 *		the run's effects must not commit beside it.
 */
int64
schedlock_record_ended_run(ClaimedJob *job, ClaimPlan *plan,
						   TimestampTz started_at,
						   ErrorData *error, const char *result_status,
						   const char *notices)
{
	static SchedlockQuery q = {
		"WITH e AS ("
		"INSERT INTO schedlock.job_runs (run_id, job_id, owner, "
		"  scheduled_for, attempt, status, started_at, finished_at, "
		"  worker_pid, timeline, message, sqlstate, detail, hint, duration, "
		"  result_status, notices, job_name) "
		"VALUES ($24, $1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $10, $12, $13, "
		"  $7 OPERATOR(pg_catalog.-) $6, $14, $15, $16) "
		"ON CONFLICT (job_id, scheduled_for, attempt) DO NOTHING "
		"RETURNING run_id, job_id, status, started_at, finished_at, "
		"  scheduled_for, duration) "
		"UPDATE schedlock.jobs j SET "
		"  next_slot = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $17 ELSE j.next_slot END, "
		"  retry_slot = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $18 ELSE j.retry_slot END, "
		"  retry_attempt = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $19 ELSE j.retry_attempt END, "
		"  retry_at = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $20 ELSE j.retry_at END, "
		"  manual_pending = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $21 ELSE j.manual_pending END, "
		"  next_run_at = CASE WHEN j.ctid OPERATOR(pg_catalog.=) $23 "
		"    THEN $22 ELSE j.next_run_at END, "
		SCHEDLOCK_RUN_STATS_ONE_SET
		"FROM e "
		"WHERE j.job_id OPERATOR(pg_catalog.=) e.job_id "
		"RETURNING e.run_id, e.duration",
		24, {INT8OID, REGROLEOID, TIMESTAMPTZOID, INT4OID, TEXTOID,
			TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID,
			TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
			TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
			INT4OID, TIMESTAMPTZOID, TIDOID, INT8OID}
	};
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[24];
	char		nulls[24];
	char	   *state;
	const char *message;
	Datum		duration;
	bool		isnull;
	int64		run_id;

	Assert(plan->deferred && plan->manual_run_id == 0 && plan->run_id != 0);
	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(job->job_id);
	values[1] = ObjectIdGetDatum(job->owner);
	values[2] = TimestampTzGetDatum(plan->scheduled_for);
	values[3] = Int32GetDatum(plan->attempt);
	values[4] = CStringGetTextDatum(error ? "failed" : "succeeded");
	values[5] = TimestampTzGetDatum(started_at);
	values[6] = TimestampTzGetDatum(now);
	values[7] = Int32GetDatum(MyProcPid);
	values[8] = Int32GetDatum((int32) GetWALInsertionTimeLine());
	/* $10 to $15; a success keeps the slot's note (catch-up) */
	run_outcome_params(error, plan->message, result_status, notices,
					   &values[9], &nulls[9], &state, &message);
	values[15] = CStringGetTextDatum(job->job_name);
	/* $17 to $22: the job's state, as schedlock_save_job_state writes it */
	job_state_params(job, plan->horizon, &values[16], &nulls[16]);
	values[22] = PointerGetDatum(&job->ctid);
	values[23] = Int64GetDatum(plan->run_id);

	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not record a run of job " INT64_FORMAT, job->job_id);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("a run of job %s for its slot at %s attempt %d was recorded by another process",
						quote_literal_cstr(job->job_name),
						timestamptz_to_str(plan->scheduled_for), plan->attempt)));
	run_id = DatumGetInt64(col(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	duration = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
							 &isnull);
	schedlock_log_run_end(job->job_name, job->role_name, run_id,
						  error ? "failed" : "succeeded", state,
						  error ? message : NULL,
						  isnull ? NULL : DatumGetIntervalP(duration));
	SPI_freetuptable(SPI_tuptable);
	if (error)
		schedlock_run_failed(job->job_id, plan->scheduled_for,
							 schedlock_rule_failed_attempt(false, plan->attempt),
							 now);
	return run_id;
}

/*
 * schedlock_forget_run
 *		Delete the record of a run that need not be kept (record_runs =
 *		failures: a succeeded run, once its statistics are counted).
 */
void
schedlock_forget_run(int64 run_id)
{
	static SchedlockQuery q = {
		"DELETE FROM schedlock.job_runs WHERE run_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(run_id)};

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete run " INT64_FORMAT, run_id);
}

/*
 * read_job_timing
 *		Read and lock (FOR NO KEY UPDATE, as an UPDATE of the row would) the
 *		job's max_attempts, retry_delay in seconds (as EXTRACT(epoch FROM
 *		...)), next slot, pending retry time, count of queued run_job()
 *		calls and enabled, into SPI_tuptable (columns 1 to 6).  False when
 *		the job does not exist (any more).  Caller is connected to SPI.
 */
static bool
read_job_timing(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT max_attempts, "
		"  pg_catalog.date_part('epoch', retry_delay)::pg_catalog.float8, "
		"  next_slot, retry_at, manual_pending, enabled "
		"FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"FOR NO KEY UPDATE",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	return SPI_processed == 1;
}

/*
 * timing_column
 *		Column n of the row read_job_timing read; *isnull says if NULL.
 */
static Datum
timing_column(int n, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, n, isnull);
}

/*
 * timing_next_run_at
 *		The next_run_at of the row read_job_timing read, with its pending
 *		retry replaced by the given one when has_retry is not -1 (0: none,
 *		1: retry_at), by schedlock_rule_next_run_at.  False when it has none
 *		(NULL), as while the job is disabled.
 */
static bool
timing_next_run_at(int has_retry, TimestampTz retry_at, TimestampTz now,
				   TimestampTz *next_run_at)
{
	bool		slot_null;
	bool		retry_null;
	bool		manual_null;
	Datum		slot = timing_column(3, &slot_null);
	Datum		old_retry = timing_column(4, &retry_null);
	Datum		manual = timing_column(5, &manual_null);
	bool		enabled_null;
	Datum		enabled = timing_column(6, &enabled_null);

	if (has_retry < 0)
	{
		has_retry = !retry_null;
		retry_at = retry_null ? 0 : DatumGetTimestampTz(old_retry);
	}
	return schedlock_rule_next_run_at(!enabled_null && DatumGetBool(enabled),
									  !slot_null,
									  slot_null ? 0 : DatumGetTimestampTz(slot),
									  has_retry != 0, retry_at,
									  manual_null ? 0 : DatumGetInt32(manual),
									  now, next_run_at);
}

/*
 * schedlock_recompute_next_run
 *		Set the job's next_run_at from its next slot, pending retry and
 *		queued run_job() calls (schedlock_rule_next_run_at).  Caller is
 *		connected to SPI.
 */
void
schedlock_recompute_next_run(int64 job_id, TimestampTz now)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET next_run_at = $2 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		2, {INT8OID, TIMESTAMPTZOID}
	};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	TimestampTz next_run_at;

	if (!read_job_timing(job_id))
		return;
	values[0] = Int64GetDatum(job_id);
	nulls[1] = timing_next_run_at(-1, 0, now, &next_run_at) ? ' ' : 'n';
	values[1] = TimestampTzGetDatum(next_run_at);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the next run of job " INT64_FORMAT, job_id);
}

/*
 * schedlock_run_failed
 *		Count a failed (or timed out, or lost) attempt of a slot and, while
 *		attempts are left, schedule the next one after an exponential
 *		backoff (schedlock_rule_retry, rules.c), and set the job's
 *		next_run_at.  attempt 0 means "no retry" (runs asked for with
 *		run_job: schedlock_rule_failed_attempt).  Caller is connected to SPI.
 */
void
schedlock_run_failed(int64 job_id, TimestampTz scheduled_for, int32 attempt,
					 TimestampTz now)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET "
		"  consecutive_failures = consecutive_failures OPERATOR(pg_catalog.+) 1, "
		"  retry_slot = CASE WHEN $2 THEN $3 ELSE retry_slot END, "
		"  retry_attempt = CASE WHEN $2 THEN $4 ELSE retry_attempt END, "
		"  retry_at = CASE WHEN $2 THEN $5 ELSE retry_at END, "
		"  next_run_at = $6 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		6, {INT8OID, BOOLOID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		TIMESTAMPTZOID}
	};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	Datum		d;
	int32		max_attempts;
	double		retry_delay;
	bool		retried;
	int32		next_attempt = 0;
	TimestampTz retry_at = 0;
	TimestampTz next_run_at;

	if (!read_job_timing(job_id))
		return;
	d = timing_column(1, &isnull);
	max_attempts = isnull ? 0 : DatumGetInt32(d);
	d = timing_column(2, &isnull);
	retry_delay = isnull ? 0 : DatumGetFloat8(d);
	retried = schedlock_rule_retry(attempt, max_attempts, retry_delay, now,
								   &next_attempt, &retry_at);

	values[0] = Int64GetDatum(job_id);
	values[1] = BoolGetDatum(retried);
	values[2] = TimestampTzGetDatum(scheduled_for);
	values[3] = Int32GetDatum(next_attempt);
	values[4] = TimestampTzGetDatum(retry_at);
	nulls[5] = timing_next_run_at(retried ? 1 : -1, retry_at, now,
								  &next_run_at) ? ' ' : 'n';
	values[5] = TimestampTzGetDatum(next_run_at);
	if (schedlock_query_run(&q, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record a failure of job " INT64_FORMAT, job_id);
}

/*
 * schedlock_run_succeeded
 *		Reset the job's count of consecutive failures.  Caller is connected
 *		to SPI.
 */
void
schedlock_run_succeeded(int64 job_id)
{
	static SchedlockQuery q = {
		"UPDATE schedlock.jobs SET consecutive_failures = 0 "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"  AND consecutive_failures OPERATOR(pg_catalog.<>) 0",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};

	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record a success of job " INT64_FORMAT, job_id);
}

/*
 * schedlock_run_owner
 *		The role that owns a run (its job's owner), or InvalidOid when there
 *		is no such run.
 */
Oid
schedlock_run_owner(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	Oid			owner = InvalidOid;

	if (SPI_execute_with_args("SELECT owner::pg_catalog.oid FROM schedlock.job_runs "
							  "WHERE run_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read run " INT64_FORMAT, run_id);
	if (SPI_processed == 1)
	{
		bool		isnull;

		owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
	}
	return owner;
}

/*
 * schedlock_claim_pending_run
 *		Turn a pending run of a NOTIFY job into running, claimed by
 *		claimed_by (may be NULL) at now by this backend, with its deadline
 *		from the job's timeout (at most SCHEDLOCK_MAX_TIMEOUT_SECS, default
 *		SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT s).  True when this call claimed
 *		it.  When payload is not NULL, the job's payload is copied there (in
 *		the caller's memory context; *payload_null when the job has none or
 *		the claim failed).
 */
bool
schedlock_claim_pending_run(int64 run_id, const char *claimed_by,
							TimestampTz now, Datum *payload,
							bool *payload_null)
{
	Oid			types[4] = {INT8OID, TEXTOID, TIMESTAMPTZOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		claimed;

	values[0] = Int64GetDatum(run_id);
	values[1] = claimed_by ? CStringGetTextDatum(claimed_by) : (Datum) 0;
	if (claimed_by == NULL)
		nulls[1] = 'n';
	values[2] = TimestampTzGetDatum(now);
	values[3] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args("UPDATE schedlock.job_runs r SET status = 'running', "
							  "  claimed_by = $2, claimed_at = $3, started_at = $3, "
							  "  worker_pid = $4, "
							  "  deadline = $3 OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => "
							  "    CASE WHEN j.timeout IS NULL THEN "
							  CppAsString2(SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT)
							  "    ELSE LEAST(pg_catalog.date_part('epoch', j.timeout), "
							  CppAsString2(SCHEDLOCK_MAX_TIMEOUT_SECS) ") END) "
							  "FROM schedlock.jobs j "
							  "WHERE r.run_id OPERATOR(pg_catalog.=) $1 "
							  "  AND r.status OPERATOR(pg_catalog.=) 'pending' "
							  "  AND j.job_id OPERATOR(pg_catalog.=) r.job_id "
							  "RETURNING j.payload",
							  4, types, values, nulls, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not claim run " INT64_FORMAT, run_id);
	claimed = (SPI_processed == 1);
	if (payload != NULL)
	{
		*payload_null = true;
		if (claimed)
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1,
										  payload_null);

			/* copied out of SPI memory, into the caller's context */
			if (!*payload_null)
				*payload = SPI_datumTransfer(d, false, -1);
		}
	}
	return claimed;
}

/*
 * job_failures_only
 *		Whether job job_id keeps only its failed runs (record_runs, tables
 *		of release 1.2; the setting's value on older tables).
 */
static bool
job_failures_only(int64 job_id)
{
	static SchedlockQuery q = {
		"SELECT record_runs FROM schedlock.jobs "
		"WHERE job_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[1] = {Int64GetDatum(job_id)};
	char	   *value = NULL;

	if (!schedlock_jobs_have_search_path())
		return schedlock_failures_only(NULL);
	if (schedlock_query_run(&q, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	if (SPI_processed == 1)
		value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return schedlock_failures_only(value);
}

/*
 * schedlock_finish_running_run
 *		Close a running run of a NOTIFY job as succeeded or failed at now,
 *		with message (may be NULL), and update its job's statistics,
 *		failure count and retry.  False when the run is not running (any
 *		more).
 */
bool
schedlock_finish_running_run(int64 run_id, bool succeeded,
							 const char *message, TimestampTz now)
{
#define FINISH_RUN_SQL(set_duration) \
	"UPDATE schedlock.job_runs r SET " \
	"  status = CASE WHEN $2 THEN 'succeeded' ELSE 'failed' END, " \
	"  finished_at = $4, deadline = NULL, message = $3 " set_duration \
	"WHERE r.run_id OPERATOR(pg_catalog.=) $1 " \
	"  AND r.status OPERATOR(pg_catalog.=) 'running' " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$4")
	Oid			types[4] = {INT8OID, BOOLOID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		finished;
	bool		stats = schedlock_jobs_have_stats();

	values[0] = Int64GetDatum(run_id);
	values[1] = BoolGetDatum(succeeded);
	values[2] = message ? CStringGetTextDatum(message) : (Datum) 0;
	if (message == NULL)
		nulls[2] = 'n';
	values[3] = TimestampTzGetDatum(now);
	if (SPI_execute_with_args(stats ?
							  "WITH e AS ("
							  FINISH_RUN_SQL(", duration = $4 OPERATOR(pg_catalog.-) r.started_at ")
							  "), " SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT :
							  "WITH e AS (" FINISH_RUN_SQL("") ") " ENDED_RUNS_SELECT,
							  4, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not finish run " INT64_FORMAT, run_id);
	finished = (SPI_processed == 1);
	if (finished)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		job_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		TimestampTz slot = DatumGetTimestampTz(SPI_getbinval(tup, desc, 2, &isnull));
		int32		attempt = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		bool		manual = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));

		log_closed_run(SPI_tuptable, 0, 5);

		/* with the statistics, a success was counted by the statement */
		if (succeeded && !stats)
			schedlock_run_succeeded(job_id);
		else if (succeeded && job_failures_only(job_id))
			schedlock_forget_run(run_id);
		else if (!succeeded)
			schedlock_run_failed(job_id, slot,
								 schedlock_rule_failed_attempt(manual, attempt),
								 now);
	}
	return finished;
}

/*
 * schedlock_fail_dispatch_runs
 *		Close the SQL runs this worker left running (a dispatch that failed
 *		in the worker's own bookkeeping) as failed at now, with the error's
 *		SQLSTATE and message, and count them in their jobs' statistics.
 */
void
schedlock_fail_dispatch_runs(TimestampTz now, const char *state,
							 const char *message)
{
#define FAIL_DISPATCH_SQL(set_duration) \
	"UPDATE schedlock.job_runs r SET status = 'failed', " \
	"  finished_at = $1, sqlstate = $2, message = $3, " \
	"  deadline = NULL " set_duration \
	"WHERE r.status OPERATOR(pg_catalog.=) 'running' " \
	"  AND r.worker_pid OPERATOR(pg_catalog.=) $4 " \
	"  AND r.claimed_at IS NULL " \
	"RETURNING " ENDED_RUN_COLUMNS("r", "$1")
	Oid			types[4] = {TIMESTAMPTZOID, TEXTOID, TEXTOID, INT4OID};
	Datum		values[4];
	uint64		i;

	values[0] = TimestampTzGetDatum(now);
	values[1] = CStringGetTextDatum(state);
	values[2] = CStringGetTextDatum(message);
	values[3] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args(schedlock_jobs_have_stats() ?
							  "WITH e AS ("
							  FAIL_DISPATCH_SQL(", duration = $1 OPERATOR(pg_catalog.-) r.started_at ")
							  "), " SCHEDLOCK_RUN_STATS_CTE ENDED_RUNS_SELECT :
							  "WITH e AS (" FAIL_DISPATCH_SQL("") ") " ENDED_RUNS_SELECT,
							  4, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not close the runs of a failed dispatch");
	for (i = 0; i < SPI_processed; i++)
		log_closed_run(SPI_tuptable, i, 5);
}

/*
 * schedlock_read_dispatch_errors
 *		Lock the job's row and read its dispatch errors in a row (*errors),
 *		whether a run of it was recorded, or succeeded, since the last one
 *		(*run_since: a succeeded run is not kept under record_runs =
 *		failures, but its time is in jobs.last_success_at), its name and
 *		the role it runs as (palloc'd), and next_run_at.  False when the
 *		job does not exist or is quarantined already.  Needs the quarantine
 *		columns of release 1.1 (schedlock_jobs_have_quarantine).
 */
bool
schedlock_read_dispatch_errors(int64 job_id, bool *run_since, int32 *errors,
							   char **job_name, char **role_name,
							   bool *has_next_run_at, TimestampTz *next_run_at)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	if (SPI_execute_with_args("SELECT EXISTS ("
							  "    SELECT 1 FROM schedlock.job_runs r "
							  "    WHERE r.job_id OPERATOR(pg_catalog.=) j.job_id "
							  "      AND GREATEST(r.started_at, r.finished_at) "
							  "          OPERATOR(pg_catalog.>) j.dispatch_error_at) "
							  "  OR COALESCE(j.last_success_at OPERATOR(pg_catalog.>) j.dispatch_error_at, false), "
							  "  j.dispatch_errors, "
							  "  j.job_name, j.quarantine_reason IS NOT NULL, "
							  "  j.next_run_at, "
							  "  pg_catalog.pg_get_userbyid(COALESCE(j.run_as, j.owner)::pg_catalog.oid) "
							  "FROM schedlock.jobs j "
							  "WHERE j.job_id OPERATOR(pg_catalog.=) $1 FOR UPDATE OF j",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job " INT64_FORMAT, job_id);
	if (SPI_processed != 1)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	if (DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull)))
		return false;
	*run_since = DatumGetBool(SPI_getbinval(tup, desc, 1, &isnull));
	*errors = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	*job_name = SPI_getvalue(tup, desc, 3);
	d = SPI_getbinval(tup, desc, 5, &isnull);
	*has_next_run_at = !isnull;
	*next_run_at = isnull ? 0 : DatumGetTimestampTz(d);
	*role_name = SPI_getvalue(tup, desc, 6);
	return true;
}

/*
 * schedlock_save_dispatch_error
 *		Record the job's breaks-th dispatch error in a row, at now: hold it
 *		until hold_until (its next_run_at), and when reason is not NULL,
 *		quarantine it (disabled, with the reason, and so no next_run_at).
 */
void
schedlock_save_dispatch_error(int64 job_id, int breaks, TimestampTz now,
							  TimestampTz hold_until, const char *reason)
{
	Oid			types[5] = {INT8OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(job_id);
	values[1] = Int32GetDatum(breaks);
	values[2] = TimestampTzGetDatum(now);
	values[3] = TimestampTzGetDatum(hold_until);
	if (reason != NULL)
		values[4] = CStringGetTextDatum(reason);
	else
		nulls[4] = 'n';
	if (SPI_execute_with_args("UPDATE schedlock.jobs SET dispatch_errors = $2, "
							  "  dispatch_error_at = $3, "
							  "  enabled = enabled AND $5 IS NULL, "
							  "  quarantine_reason = $5, "
							  "  next_run_at = CASE WHEN enabled AND $5 IS NULL "
							  "    THEN $4 END "
							  "WHERE job_id OPERATOR(pg_catalog.=) $1",
							  5, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record a dispatch error of job " INT64_FORMAT, job_id);
}

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
 * schedlock_upsert_job
 *		Create job job_name of role owner from def, or replace the
 *		definition of the one it has: its next slot is slot (none unless
 *		has_slot), and so is its next_run_at while enabled (NULL while
 *		disabled), and a pending retry and a quarantine are forgotten.  The
 *		run statistics of a job it replaces are kept.  *manual_pending gets the job's queued run_job()
 *		calls.  Returns the job id.  As the extension owner.
 */
int64
schedlock_upsert_job(const char *job_name, Oid owner, const JobDef *def,
					 bool reboot, bool has_slot, TimestampTz slot,
					 int32 *manual_pending)
{
	Datum		values[17];
	char		nulls[17];
	bool		isnull;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(job_name);
	values[1] = ObjectIdGetDatum(owner);
	def_params(def, values, nulls);
	values[14] = BoolGetDatum(reboot);
	values[15] = TimestampTzGetDatum(slot);
	nulls[15] = has_slot ? ' ' : 'n';

	/* the upsert releases a quarantine (on the tables of 1.1) */
	if (SPI_execute_with_args(psprintf("INSERT INTO schedlock.jobs AS j (job_name, owner, "
							  "  schedule, command, notify_channel, payload, timezone, "
							  "  timeout, max_attempts, retry_delay, misfire, atomic, "
							  "  enabled, run_as, reboot, next_slot, next_run_at) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
							  "  $12, $13, $14, $15, $16, CASE WHEN $13 THEN $16 END) "
							  "ON CONFLICT (owner, job_name) DO UPDATE SET "
							  "  schedule = EXCLUDED.schedule, command = EXCLUDED.command, "
							  "  notify_channel = EXCLUDED.notify_channel, "
							  "  payload = EXCLUDED.payload, timezone = EXCLUDED.timezone, "
							  "  timeout = EXCLUDED.timeout, "
							  "  max_attempts = EXCLUDED.max_attempts, "
							  "  retry_delay = EXCLUDED.retry_delay, "
							  "  misfire = EXCLUDED.misfire, atomic = EXCLUDED.atomic, "
							  "  enabled = EXCLUDED.enabled, run_as = EXCLUDED.run_as, "
							  "  reboot = EXCLUDED.reboot, next_slot = EXCLUDED.next_slot, "
							  "  retry_slot = NULL, retry_attempt = NULL, retry_at = NULL, "
							  "  %s"
							  "  next_run_at = EXCLUDED.next_run_at "
							  "RETURNING job_id, manual_pending",
									   schedlock_jobs_have_quarantine() ?
									   "dispatch_errors = 0, dispatch_error_at = NULL, "
									   "quarantine_reason = NULL, " : ""),
							  16, write_types, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not write job \"%s\"", job_name);
	*manual_pending = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 2, &isnull));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * schedlock_job_written
 *		After the SQL API wrote job job_id: set its search_path (unless
 *		NULL; on tables that have the column), and, unless the job is
 *		disabled, have the backend of its role, or the launcher, look at the
 *		role's jobs when the transaction commits
 *		(schedlock_note_due_at_commit).  As the extension owner.
 */
void
schedlock_job_written(int64 job_id, const char *search_path)
{
	static SchedlockQuery set_q = {
		"UPDATE schedlock.jobs SET search_path = COALESCE($2, search_path) "
		"WHERE job_id OPERATOR(pg_catalog.=) $1 "
		"RETURNING (COALESCE(run_as, owner)::pg_catalog.oid), next_run_at, enabled",
		2, {INT8OID, TEXTOID}
	};
	static SchedlockQuery read_q = {
		"SELECT (COALESCE(run_as, owner)::pg_catalog.oid), next_run_at, enabled "
		"FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1",
		1, {INT8OID}
	};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	bool		isnull;
	Oid			role;

	values[0] = Int64GetDatum(job_id);
	values[1] = search_path ? CStringGetTextDatum(search_path) : (Datum) 0;
	nulls[1] = search_path ? ' ' : 'n';
	if (schedlock_jobs_have_search_path())
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
	 * The role's backend looks at its jobs at once: the transaction may
	 * still change the row (a superuser's UPDATE of next_run_at), and a
	 * backend that finds its next job beyond its idle time leaves at once.
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

	if (!schedlock_jobs_have_search_path())
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
		/* enabling the job releases a quarantine (on the tables of 1.1) */
		if (SPI_execute_with_args(psprintf("UPDATE schedlock.jobs SET "
								  "  schedule = $3, command = $4, notify_channel = $5, "
								  "  payload = $6, timezone = $7, timeout = $8, "
								  "  max_attempts = $9, retry_delay = $10, misfire = $11, "
								  "  atomic = $12, enabled = $13, run_as = $14, reboot = $15, "
								  "  next_slot = CASE WHEN $16 THEN $2 ELSE next_slot END, "
								  "  retry_slot = CASE WHEN $16 THEN NULL ELSE retry_slot END, "
								  "  retry_attempt = CASE WHEN $16 THEN NULL ELSE retry_attempt END, "
								  "  retry_at = CASE WHEN $16 THEN NULL ELSE retry_at END "
								  "  %s"
								  "WHERE job_id OPERATOR(pg_catalog.=) $1",
										   schedlock_jobs_have_quarantine() ?
										   ", dispatch_errors = CASE WHEN $13 THEN 0 ELSE dispatch_errors END, "
										   "  dispatch_error_at = CASE WHEN $13 THEN NULL ELSE dispatch_error_at END, "
										   "  quarantine_reason = CASE WHEN $13 THEN NULL ELSE quarantine_reason END " : ""),
								  16, types, values, nulls, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not update job \"%s\"", job_name);
	}
}

/*
 * schedlock_find_job
 *		Look up the caller's job by name and lock its row; a superuser may
 *		also name another role's job when only one role has a job of that
 *		name.  Raises 42704 when there is none.  Caller is connected to SPI
 *		and runs as the extension owner; caller is the calling role.
 *		Leaves the row in SPI_tuptable: job_id, then the given columns.
 */
int64
schedlock_find_job(const char *job_name, Oid caller, const char *columns)
{
	Oid			types[2] = {TEXTOID, REGROLEOID};
	Datum		values[2];
	char	   *query;
	bool		isnull;

	values[0] = CStringGetTextDatum(job_name);
	values[1] = ObjectIdGetDatum(caller);
	query = psprintf("SELECT job_id, %s FROM schedlock.jobs "
					 "WHERE job_name OPERATOR(pg_catalog.=) $1 "
					 "  AND owner OPERATOR(pg_catalog.=) $2 FOR UPDATE", columns);
	if (SPI_execute_with_args(query, 2, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read job \"%s\"", job_name);
	if (SPI_processed == 0 && superuser_arg(caller))
	{
		query = psprintf("SELECT job_id, %s FROM schedlock.jobs "
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
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
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
	if (SPI_execute_with_args(schedlock_runs_have_job_name() ?
							  "INSERT INTO schedlock.job_runs (job_id, owner, "
							  "  scheduled_for, attempt, manual, status, job_name) "
							  "SELECT job_id, owner, $2, 1, true, 'queued', job_name "
							  "  FROM schedlock.jobs WHERE job_id OPERATOR(pg_catalog.=) $1 "
							  "RETURNING run_id" :
							  "INSERT INTO schedlock.job_runs (job_id, owner, "
							  "  scheduled_for, attempt, manual, status) "
							  "SELECT job_id, owner, $2, 1, true, 'queued' "
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

	if (!schedlock_runs_have_job_name())
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
				   "  status = CASE WHEN r.status OPERATOR(pg_catalog.=) 'queued' "
				   "    THEN 'skipped' ELSE r.status END, "
				   "  finished_at = CASE WHEN r.status OPERATOR(pg_catalog.=) 'queued' "
				   "    THEN pg_catalog.now() ELSE r.finished_at END, "
				   "  message = CASE WHEN r.status OPERATOR(pg_catalog.=) 'queued' "
				   "    THEN 'the job was unscheduled before the run started' "
				   "    ELSE r.message END "
				   "  FROM d WHERE r.job_id OPERATOR(pg_catalog.=) d.job_id "
				   "    AND (r.job_name IS NULL "
				   "         OR r.status OPERATOR(pg_catalog.=) 'queued')) "
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
