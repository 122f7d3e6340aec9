/*-------------------------------------------------------------------------
 *
 * store_int.h
 *	  What the files of the scheduler's data-access layer share, and
 *	  nothing outside src/sched/store includes: column readers, and the
 *	  pieces of SQL more than one of their statements is made of.
 *
 * IDENTIFICATION
 *	  src/sched/store/store_int.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_STORE_INT_H
#define SCHEDLOCK_STORE_INT_H

#include "postgres.h"

#include "access/xlog.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapshot.h"

#include "jobstore.h"

/*
 * Whether the tables are those of the library's own release (jobs.search_path,
 * job_runs.job_name, jobs_role_due_idx), not the one before: the choice of a
 * statement's variant, made only in this folder.
 */
static inline bool
store_tables_current(void)
{
	return schedlock_store_caps()->release >= SCHEDLOCK_TABLES_1_2;
}

/* a job's next_run_at by the rules after a change of its timing (store.c) */
extern bool schedlock_job_next_run_at_after(int64 job_id,
											const TimestampTz *new_slot,
											int has_retry,
											TimestampTz retry_at,
											TimestampTz now, bool *has_next,
											TimestampTz *next_run_at);

/* walks of jobs_role_due_idx, tables of release 1.2 (store_claim_scan.c) */
extern int	schedlock_claim_scan(SchedlockClaimKind kind, Oid role,
								 ClaimPosition *pos, TimestampTz horizon,
								 ClaimedJob *jobs, int max, MemoryContext cxt,
								 Snapshot before);
extern bool schedlock_role_next_due(Oid role, TimestampTz *next);
extern int	schedlock_role_due_at(Oid role, TimestampTz at, int max,
								  int *notify);

/* the claimed job's role name, for log lines (store.c) */
extern char *schedlock_claimed_role_name(const ClaimedJob *job,
										 MemoryContext cxt);

/* a run's end in the server log, as schedlock.log_runs asks (store.c) */
extern void schedlock_log_closed_run(SPITupleTable *tuptable, uint64 i,
									 int first);

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
 * attempt, manual), what schedlock_log_closed_run reads (run_id, job_name, status,
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
static inline char *
col_text(HeapTuple tup, TupleDesc desc, int n, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(tup, desc, n);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

static inline Datum
col(HeapTuple tup, TupleDesc desc, int n, bool *isnull)
{
	return SPI_getbinval(tup, desc, n, isnull);
}

/*
 * array_of
 *		A one-dimensional array of n elements of type elemtype (nulls[i]:
 *		element i is NULL), in CurrentMemoryContext.
 */
static inline Datum
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
 * runner_args
 *		Fill values[1..3] with the parameters $2..$4 of RUNNER_GONE: this
 *		database, an unused text, and the current timeline.
 */
static inline void
runner_args(Datum *values)
{
	values[1] = ObjectIdGetDatum(MyDatabaseId);
	values[2] = CStringGetTextDatum("");
	values[3] = Int32GetDatum((int32) GetWALInsertionTimeLine());
}

#endif							/* SCHEDLOCK_STORE_INT_H */
