/*-------------------------------------------------------------------------
 *
 * store.c
 *	  The scheduler's data-access layer: what it can do on the tables a
 *	  database has, and what the other store files share (a run's end in
 *	  the log, a job's next_run_at after a failure).
 *
 * Every statement the library runs on the scheduler's tables
 * (schedlock.jobs, job_runs, home) is in this folder, one file per kind of
 * caller:
 *	store_claim.c		claiming due jobs (the job backends)
 *	store_runs.c		recording runs, their outcome and the job's state,
 *						and a NOTIFY run's notification
 *	store_close.c		lost, overdue and @reboot runs, history pruning
 *						(the housekeeper)
 *	store_status.c		due times and counts (the housekeeper, the launcher)
 *	store_notify.c		NOTIFY runs claimed and finished by applications
 *	store_quarantine.c	dispatch errors and the quarantine
 *	store_jobs.c		the job API's writes, and the pg_cron import's reads
 *	store_home.c		copies of a database and their adoption
 *	store_roles.c		the roles of jobs: pg_shdepend, DROP OWNED,
 *						REASSIGN OWNED
 * jobstore.h declares them all; store_int.h holds what only these files
 * share.
 *
 * The library serves the tables of its own release and of the one before
 * (SCHEDLOCK_TABLES_OLDEST_SERVED): schedlock_store_caps says what the
 * store can do on them, and only the files of this folder choose a
 * statement's variant by their release.  Older tables are refused at the
 * doors (schedlock_require_served_tables, and the job backends' look at
 * the extension), so no statement here has a form for them.
 *
 * Every statement that ends runs also counts them in their jobs' run
 * statistics (SCHEDLOCK_RUN_STATS_CTE in jobstore.h), in the same
 * statement.
 *
 * The callers decide; these files only read and write.  What a job does
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
 *	  src/sched/store/store.c
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
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/kept_query.h"
#include "base/settings.h"
#include "jobstore.h"
#include "sched/claim_sql.h"
#include "sched/rules.h"
#include "sched/runlog.h"
#include "sched/sched_shmem.h"
#include "store_int.h"

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
 * What the store can do on this database's tables (schedlock_store_caps),
 * once found; caps_jobs is the OID of schedlock.jobs it was read from.
 * tables_relcache_callback forgets it whenever that table's relcache entry
 * (or every entry) is invalidated, as ALTER EXTENSION schedlock UPDATE's
 * ALTER TABLE and DROP EXTENSION do, in the transaction that changes the
 * table as in every other.
 */
static SchedlockStoreCaps caps;
static Oid	caps_jobs = InvalidOid;
static bool caps_callback_registered = false;

/*
 * tables_relcache_callback
 *		Forget the tables' capabilities when schedlock.jobs may have changed.
 */
static void
tables_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == caps_jobs)
		caps_jobs = InvalidOid;
}

/*
 * tables_release
 *		Which release's tables the extension has in this database.  Every
 *		update adds its columns in one transaction, so one column of
 *		schedlock.jobs tells each release: search_path (1.2, with
 *		job_runs.job_name), last_start_lag (1.1, with the run statistics,
 *		the quarantine and what job_runs says of a run).
 */
static SchedlockTables
tables_release(Oid jobs)
{
	if (get_attnum(jobs, "search_path") != InvalidAttrNumber)
		return SCHEDLOCK_TABLES_1_2;
	if (get_attnum(jobs, "last_start_lag") != InvalidAttrNumber)
		return SCHEDLOCK_TABLES_1_1;
	return SCHEDLOCK_TABLES_1_0;
}

/*
 * tables_release_name
 *		The release of tables, as its users know it.
 */
static const char *
tables_release_name(SchedlockTables release)
{
	switch (release)
	{
		case SCHEDLOCK_TABLES_NONE:
			break;
		case SCHEDLOCK_TABLES_1_0:
			return "1.0";
		case SCHEDLOCK_TABLES_1_1:
			return "1.1";
		case SCHEDLOCK_TABLES_1_2:
			return "1.2";
	}
	return NULL;
}

/*
 * schedlock_store_caps
 *		What the store can do on this database's tables: the one place
 *		where the library, which may be newer than the tables until ALTER
 *		EXTENSION schedlock UPDATE, tells their releases apart.  Filled at
 *		the first call of a transaction after schedlock.jobs changed (and
 *		kept while it does not); release NONE, and nothing served, when
 *		there is no schedlock.jobs (which is not remembered).  The callers
 *		outside this folder read the capabilities, never the release; the
 *		store's files choose their statements' variants from it.  In a
 *		transaction.
 */
const SchedlockStoreCaps *
schedlock_store_caps(void)
{
	Oid			relid;
	bool		current;

	if (OidIsValid(caps_jobs))
		return &caps;
	if (!caps_callback_registered)
	{
		CacheRegisterRelcacheCallback(tables_relcache_callback, (Datum) 0);
		caps_callback_registered = true;
	}
	memset(&caps, 0, sizeof(caps));
	caps.oldest_served_name = tables_release_name(SCHEDLOCK_TABLES_OLDEST_SERVED);
	relid = schedlock_table_oid("jobs");
	if (!OidIsValid(relid))
		return &caps;
	caps.release = tables_release(relid);
	caps.release_name = tables_release_name(caps.release);
	caps.served = caps.release >= SCHEDLOCK_TABLES_OLDEST_SERVED;
	caps.too_old = !caps.served;
	current = caps.release >= SCHEDLOCK_TABLES_1_2;
	caps.run_sets = current;
	caps.approvals = current;
	caps.api_grant = current;
	caps_jobs = relid;
	return &caps;
}

/*
 * schedlock_require_served_tables
 *		Refuse fname (55000) on tables older than the library serves: their
 *		jobs wait, untouched, for ALTER EXTENSION schedlock UPDATE.  In a
 *		transaction.
 */
void
schedlock_require_served_tables(const char *fname)
{
	const SchedlockStoreCaps *c = schedlock_store_caps();

	if (c->too_old)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot execute %s() on the tables of schedlock %s",
						fname, c->release_name),
				 errdetail("This version of the library serves the tables of schedlock %s and later; no job of this database runs until the extension is updated.",
						   c->oldest_served_name),
				 errhint("Run ALTER EXTENSION schedlock UPDATE.")));
}

/*
 * schedlock_claimed_role_name
 *		The name of the role a claimed job runs as (run_as, else its owner),
 *		in cxt, for log lines; "?" for a role that is gone.
 */
char *
schedlock_claimed_role_name(const ClaimedJob *job, MemoryContext cxt)
{
	char	   *role = GetUserNameFromId(OidIsValid(job->run_as) ?
										 job->run_as : job->owner, true);

	return MemoryContextStrdup(cxt, role ? role : "?");
}

/*
 * schedlock_failures_only
 *		Whether a job whose record_runs column is record_runs (NULL: the
 *		setting's) keeps only its failed, timed-out and lost runs.
 */
bool
schedlock_failures_only(const char *record_runs)
{
	SchedlockRecordRuns value;

	if (record_runs == NULL)
		return schedlock_record_runs == SCHEDLOCK_RECORD_RUNS_FAILURES;
	return schedlock_record_runs_parse(record_runs, &value) &&
		value == SCHEDLOCK_RECORD_RUNS_FAILURES;
}

/*
 * schedlock_log_closed_run
 *		Log row i of tuptable, whose columns from first on are those of
 *		ENDED_RUNS_SELECT from run_id on, as schedlock.log_runs asks.
 */
void
schedlock_log_closed_run(SPITupleTable *tuptable, uint64 i, int first)
{
	HeapTuple	tup = tuptable->vals[i];
	TupleDesc	desc = tuptable->tupdesc;
	bool		isnull;
	int64		run_id = DatumGetInt64(SPI_getbinval(tup, desc, first, &isnull));
	Datum		duration = SPI_getbinval(tup, desc, first + 5, &isnull);
	char	   *text;
	SchedlockRunStatus status;

	if (schedlock_log_runs == SCHEDLOCK_LOG_RUNS_NONE)
		return;
	text = SPI_getvalue(tup, desc, first + 2);

	if (text == NULL || !schedlock_run_status_parse(text, strlen(text), &status))
		elog(ERROR, "unknown status \"%s\" of run " INT64_FORMAT,
			 text ? text : "", run_id);
	schedlock_log_run_end(SPI_getvalue(tup, desc, first + 1),
						  SPI_getvalue(tup, desc, first + 6), run_id,
						  status,
						  SPI_getvalue(tup, desc, first + 3),
						  SPI_getvalue(tup, desc, first + 4),
						  isnull ? NULL : DatumGetIntervalP(duration));
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
 *		The next_run_at of the row read_job_timing read, by
 *		schedlock_rule_next_run_at, with its next slot replaced by *new_slot
 *		unless that is NULL, and its pending retry by the given one when
 *		has_retry is not -1 (0: none, 1: retry_at).  False when it has none
 *		(NULL), as while the job is disabled.
 */
static bool
timing_next_run_at_after(const TimestampTz *new_slot, int has_retry,
						 TimestampTz retry_at, TimestampTz now,
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
									  new_slot != NULL || !slot_null,
									  new_slot != NULL ? *new_slot :
									  slot_null ? 0 : DatumGetTimestampTz(slot),
									  has_retry != 0, retry_at,
									  manual_null ? 0 : DatumGetInt32(manual),
									  now, next_run_at);
}

static bool
timing_next_run_at(int has_retry, TimestampTz retry_at, TimestampTz now,
				   TimestampTz *next_run_at)
{
	return timing_next_run_at_after(NULL, has_retry, retry_at, now,
									next_run_at);
}

/*
 * schedlock_job_next_run_at_after
 *		Lock job job_id's row and work out by the rules what its next_run_at
 *		becomes once its next slot is *new_slot (unless NULL) and its
 *		pending retry retry_at (when has_retry is 1; 0: none, -1: the one
 *		it has): *has_next false when it has none.  False when the job does
 *		not exist.  The caller writes the row.  Connected to SPI;
 *		SPI_tuptable is the row read.
 */
bool
schedlock_job_next_run_at_after(int64 job_id, const TimestampTz *new_slot,
								int has_retry, TimestampTz retry_at,
								TimestampTz now, bool *has_next,
								TimestampTz *next_run_at)
{
	if (!read_job_timing(job_id))
		return false;
	*has_next = timing_next_run_at_after(new_slot, has_retry, retry_at, now,
										 next_run_at);
	return true;
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
