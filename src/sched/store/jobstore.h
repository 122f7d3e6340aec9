/*-------------------------------------------------------------------------
 *
 * jobstore.h
 *	  The statements on schedlock.jobs and schedlock.job_runs that the
 *	  scheduler runs (src/sched/store), and the claimed job they pass around.
 *
 * IDENTIFICATION
 *	  src/sched/store/jobstore.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_JOBSTORE_H
#define SCHEDLOCK_JOBSTORE_H

#include "postgres.h"

#include "executor/spi.h"
#include "storage/itemptr.h"
#include "utils/elog.h"
#include "utils/palloc.h"
#include "utils/timestamp.h"

#include "sched/run_status.h"

/* Deadline of a NOTIFY run without a timeout of its own, in seconds. */
#define SCHEDLOCK_NOTIFY_DEFAULT_TIMEOUT	300

/*
 * Bounds of a job's timeout, in seconds, so that no deadline can leave the
 * range of timestamptz: at least 1 ms and at most 24 days
 * (statement_timeout takes at most INT_MAX ms, 24.8 days).  The bounds of
 * retry_delay, the run_all limit and the quarantine's count are the
 * scheduling rules' (rules.h).  Intervals are measured as EXTRACT(epoch
 * FROM ...).
 */
#define SCHEDLOCK_MAX_TIMEOUT_SECS		2073600 /* 24 days */

/*
 * Overdue NOTIFY runs closed per call of schedlock_expire_runs, and rows
 * deleted per call of schedlock_prune_runs.
 */
#define EXPIRE_BATCH_ROWS	100
#define PRUNE_BATCH_ROWS	1000

/*
 * A NOTIFY run nobody claimed by its deadline ends timed_out with this
 * message.  SCHEDLOCK_UNHEARD_RUNS of them in a row draw one WARNING and a
 * stopped_reason in schedlock.job_status (the view repeats both values).
 */
#define SCHEDLOCK_UNCLAIMED_MESSAGE "not claimed within the timeout"
#define SCHEDLOCK_UNHEARD_RUNS 3

/*
 * What a superuser approves when it makes a job run as another role
 * (run_as): the job's owner and run_as, and every field that changes what
 * the job does or resolves (schedule, time zone, command, notify_channel,
 * payload, atomic, search_path), as one digest of row alias j, with
 * search_path given as an expression.  The digest is kept in
 * schedlock.jobs.approval beside approved_by; the job backend compares it
 * with the job as claimed before the job runs (schedlock_approval_holds).
 * schedlock.approval_digest is the SQL side of the same rule.
 */
#define SCHEDLOCK_APPROVAL_SQL(j, search_path) \
	" schedlock.approval_digest(" j ".owner::pg_catalog.oid, " \
	j ".run_as::pg_catalog.oid, " j ".schedule, " j ".timezone, " \
	j ".command, " j ".notify_channel, " j ".payload, " j ".atomic, " \
	search_path ") "

/*
 * The run statistics of a job (release 1.1), kept on its row of
 * schedlock.jobs: a common table expression "s" to follow a common table
 * expression "e" that ends runs, in the same statement.  e returns the
 * ended runs' job_id, run_id, status, started_at, finished_at and
 * scheduled_for; skipped slots are not runs and are left out.  Per job, the
 * counts and the sum of the durations grow by the runs that ended, and the
 * "last" columns take the values of the run that ended last (finished_at,
 * then run_id); a success resets consecutive_failures (a failure counts
 * there through schedlock_run_failed).
 */
#define SCHEDLOCK_RUN_STATS_LAST(x) \
	"(pg_catalog.array_agg(" x " ORDER BY e.finished_at DESC, e.run_id DESC))[1]"
#define SCHEDLOCK_RUN_STATS_CTE \
	"s AS (UPDATE schedlock.jobs j SET " \
	"  total_runs = j.total_runs OPERATOR(pg_catalog.+) a.n, " \
	"  succeeded_runs = j.succeeded_runs OPERATOR(pg_catalog.+) a.ok, " \
	"  failed_runs = j.failed_runs OPERATOR(pg_catalog.+) " \
	"    (a.n OPERATOR(pg_catalog.-) a.ok), " \
	"  total_duration = j.total_duration OPERATOR(pg_catalog.+) a.duration, " \
	"  last_duration = a.last_duration, " \
	"  last_start_lag = a.last_start_lag, " \
	"  last_success_at = COALESCE(a.last_success_at, j.last_success_at), " \
	"  consecutive_failures = CASE WHEN a.last_succeeded THEN 0 " \
	"    ELSE j.consecutive_failures END " \
	"  FROM (SELECT e.job_id, pg_catalog.count(*) AS n, " \
	"      pg_catalog.count(*) FILTER (WHERE e.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SUCCEEDED) ") AS ok, " \
	"      COALESCE(pg_catalog.sum(e.finished_at OPERATOR(pg_catalog.-) e.started_at), " \
	"        '0'::pg_catalog.interval) AS duration, " \
	"      " SCHEDLOCK_RUN_STATS_LAST("e.finished_at OPERATOR(pg_catalog.-) e.started_at") " AS last_duration, " \
	"      " SCHEDLOCK_RUN_STATS_LAST("e.started_at OPERATOR(pg_catalog.-) e.scheduled_for") " AS last_start_lag, " \
	"      " SCHEDLOCK_RUN_STATS_LAST("e.status") " OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SUCCEEDED) " AS last_succeeded, " \
	"      pg_catalog.max(e.finished_at) FILTER (WHERE e.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SUCCEEDED) ") " \
	"        AS last_success_at " \
	"    FROM e WHERE e.status OPERATOR(pg_catalog.<>) " SCHEDLOCK_RUN_SQL(SKIPPED) " GROUP BY e.job_id) a " \
	"  WHERE j.job_id OPERATOR(pg_catalog.=) a.job_id) "

/*
 * The same counting for a statement whose "e" ends exactly one run that is
 * not a skipped slot (a worker's outcome of a run, schedlock_record_outcome):
 * no aggregate, which costs that per-run statement about a third of its
 * time.  It must count as SCHEDLOCK_RUN_STATS_CTE does.  The SET list is
 * shared with the statement that records a run and advances its job at
 * once (schedlock_record_ended_run).
 */
#define SCHEDLOCK_RUN_STATS_ONE_SET \
	"  total_runs = j.total_runs OPERATOR(pg_catalog.+) 1, " \
	"  succeeded_runs = j.succeeded_runs OPERATOR(pg_catalog.+) " \
	"    CASE WHEN e.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SUCCEEDED) " THEN 1 ELSE 0 END, " \
	"  failed_runs = j.failed_runs OPERATOR(pg_catalog.+) " \
	"    CASE WHEN e.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SUCCEEDED) " THEN 0 ELSE 1 END, " \
	"  total_duration = j.total_duration OPERATOR(pg_catalog.+) " \
	"    COALESCE(e.finished_at OPERATOR(pg_catalog.-) e.started_at, " \
	"      '0'::pg_catalog.interval), " \
	"  last_duration = e.finished_at OPERATOR(pg_catalog.-) e.started_at, " \
	"  last_start_lag = e.started_at OPERATOR(pg_catalog.-) e.scheduled_for, " \
	"  last_success_at = CASE WHEN e.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SUCCEEDED) " " \
	"    THEN e.finished_at ELSE j.last_success_at END, " \
	"  consecutive_failures = CASE WHEN e.status OPERATOR(pg_catalog.=) " SCHEDLOCK_RUN_SQL(SUCCEEDED) " " \
	"    THEN 0 ELSE j.consecutive_failures END "
#define SCHEDLOCK_RUN_STATS_ONE_CTE \
	"s AS (UPDATE schedlock.jobs j SET " SCHEDLOCK_RUN_STATS_ONE_SET \
	"  FROM e WHERE j.job_id OPERATOR(pg_catalog.=) e.job_id) "

/*
 * Which release's tables the extension has in a database.  The library
 * serves those of its own release and of the one before until ALTER
 * EXTENSION schedlock UPDATE, each statement of the store in the form those
 * tables take; older ones it refuses, with a hint to update (and no job of
 * the database runs).
 */
typedef enum SchedlockTables
{
	SCHEDLOCK_TABLES_NONE = 0,	/* no schedlock.jobs */
	SCHEDLOCK_TABLES_1_0,
	SCHEDLOCK_TABLES_1_1,		/* run statistics, quarantine, run detail */
	SCHEDLOCK_TABLES_1_2		/* jobs.search_path; job_runs.job_name and no
								 * foreign key to jobs: the history stays when
								 * a job is unscheduled */
} SchedlockTables;

/* the oldest tables the library serves */
#define SCHEDLOCK_TABLES_OLDEST_SERVED SCHEDLOCK_TABLES_1_1

/*
 * What the store can do on a database's tables (schedlock_store_caps, filled
 * once per transaction, kept while schedlock.jobs is unchanged).  Callers
 * outside src/sched/store read the capabilities; only the store's files read
 * the release (store_tables_current in store_int.h).
 */
typedef struct SchedlockStoreCaps
{
	SchedlockTables release;	/* the store's files only */
	const char *release_name;	/* "1.1", for messages; NULL: no tables */
	const char *oldest_served_name; /* SCHEDLOCK_TABLES_OLDEST_SERVED's */
	bool		served;			/* in the window: jobs run, the API works */
	bool		too_old;		/* before the window: refused, nothing runs */
	bool		run_sets;		/* sets of runs claimed and recorded in one
								 * statement, records deferred until a run has
								 * ended, claims ahead of an instant */
	bool		approvals;		/* run_as runs what a superuser approved */
	bool		api_grant;		/* the job API is granted by INSERT on
								 * schedlock.jobs (before: EXECUTE) */
} SchedlockStoreCaps;

extern const SchedlockStoreCaps *schedlock_store_caps(void);
extern void schedlock_require_served_tables(const char *fname);

/* A claimed job, copied out of SPI memory into the worker's run memory. */
typedef struct ClaimedJob
{
	int64		job_id;
	char	   *job_name;
	Oid			owner;
	char	   *schedule;
	char	   *command;		/* NULL for a NOTIFY job */
	char	   *channel;
	char	   *payload;		/* jsonb as text, or NULL */
	char	   *timezone;
	int			timeout_ms;		/* 0: none */
	char	   *misfire;
	bool		atomic;
	Oid			run_as;			/* InvalidOid: owner */
	bool		reboot;
	bool		has_next_slot;
	TimestampTz next_slot;
	bool		has_retry;
	TimestampTz retry_slot;
	int32		retry_attempt;
	TimestampTz retry_at;
	int32		manual_pending;
	ItemPointerData ctid;		/* the locked row version */
	int32		failures;		/* consecutive_failures */
	char	   *search_path;	/* NULL: the login's (tables of 1.1) */
	char	   *role_name;		/* the role it runs as, for log lines */
	bool		failures_only;	/* keep only failed runs (record_runs) */

	/*
	 * What the claim statement saw of the job's runs, for
	 * schedlock_run_may_defer: valid only when runs_seen (the general claim
	 * of release 1.2's tables, and the claimed row version older than the
	 * statement's snapshot).
	 */
	bool		runs_seen;
	bool		run_open;		/* a run pending or running */
	bool		slot_rows;		/* a row of seen_slot, of any attempt */
	TimestampTz seen_slot;		/* next_slot as claimed (DT_NOBEGIN: NULL) */
} ClaimedJob;

/* What the claim decided to do with the job. */
typedef enum PlanKind
{
	PLAN_NOTHING,				/* nothing due after all */
	PLAN_RUN,					/* run (scheduled_for, attempt) */
	PLAN_SKIP					/* record (scheduled_for) as skipped */
} PlanKind;

typedef struct ClaimPlan
{
	PlanKind	kind;
	TimestampTz scheduled_for;
	int32		attempt;
	TimestampTz due_at;			/* may not start before: slot or retry_at */
	int64		manual_run_id;	/* the queued run_job() run, or 0 */
	const char *message;		/* why, for catch-up and skipped rows */
	bool		deferred;		/* the job's advanced state and the run are
								 * written together once the run has ended
								 * (schedlock_record_ended_run) */
	TimestampTz horizon;		/* deferred: the claim's horizon, which the
								 * job's next_run_at is computed as of */
	int64		run_id;			/* deferred: the run's id, taken ahead */
} ClaimPlan;

/*
 * An atomic run that has ended in the claiming transaction and is not
 * recorded yet (schedlock_record_ended_runs): its job and deferred plan,
 * and what the run said.
 */
typedef struct SchedlockEndedRun
{
	ClaimedJob *job;
	ClaimPlan  *plan;
	TimestampTz started_at;
	TimestampTz finished_at;
	ErrorData  *error;			/* NULL: it succeeded */
	const char *result_status;	/* its last statement's command tag, or "" */
	const char *notices;		/* its captured output, or NULL */
} SchedlockEndedRun;

/* Where a pass's next claim scan starts; see claim_sql.h. */
typedef struct ClaimPosition
{
	TimestampTz next_run_at;
	int64		job_id;
} ClaimPosition;

/* A job's definition, as given or as stored. */
typedef struct JobDef
{
	char	   *schedule;
	char	   *command;		/* NULL for a NOTIFY job */
	char	   *channel;		/* NULL for an SQL job */
	Datum		payload;		/* jsonb; valid when has_payload */
	bool		has_payload;
	char	   *timezone;		/* never NULL once resolved */
	Interval   *timeout;		/* NULL: none */
	int32		max_attempts;
	Interval   *retry_delay;
	char	   *misfire;
	bool		atomic;
	bool		enabled;
	Oid			run_as;			/* InvalidOid: the owner */
} JobDef;

/* A job's row as the job API reads it before it changes it. */
typedef struct StoredJob
{
	int64		job_id;
	Oid			owner;
	JobDef		def;
	char	   *search_path;	/* NULL: none, or the tables of 1.1 */
} StoredJob;

/* Which of the claim statements of claim_sql.h a claim runs. */
typedef enum SchedlockClaimKind
{
	SCHEDLOCK_CLAIM_ANY,		/* SCHEDLOCK_CLAIM_SQL */
	SCHEDLOCK_CLAIM_NOTIFY,		/* SCHEDLOCK_CLAIM_NOTIFY_SQL */
	SCHEDLOCK_CLAIM_ATOMIC		/* SCHEDLOCK_CLAIM_ATOMIC_SQL (1.2 tables) */
} SchedlockClaimKind;

/* A role with enabled jobs, and its earliest next_run_at. */
typedef struct SchedlockRoleDue
{
	Oid			role;
	TimestampTz due_at;
} SchedlockRoleDue;

/* A database's jobs as a housekeeper counts them (schedlock_count_jobs). */
typedef struct SchedlockJobCounts
{
	int32		njobs;
	int32		nenabled;
	int32		nfailing;		/* consecutive_failures above 0 */
	int32		nquarantined;
} SchedlockJobCounts;

/* An enabled job due since next_run_at (schedlock_overdue_jobs). */
typedef struct SchedlockOverdueJob
{
	int64		job_id;
	char	   *job_name;
	TimestampTz next_run_at;
} SchedlockOverdueJob;

/* claiming and advancing a job (the job backends) */
extern bool schedlock_claim_job(SchedlockClaimKind kind, Oid role,
								ClaimPosition *pos, TimestampTz now,
								ClaimedJob *job, MemoryContext cxt);
extern int	schedlock_claim_jobs(SchedlockClaimKind kind, Oid role,
								 ClaimPosition *pos, TimestampTz now,
								 ClaimedJob *jobs, int max,
								 MemoryContext cxt);
extern bool schedlock_failures_only(const char *record_runs);
extern void schedlock_forget_run(int64 run_id);
extern bool schedlock_next_role_wakeup(Oid role, TimestampTz *next);
extern int	schedlock_jobs_due_at(Oid role, TimestampTz at, int max,
								  int *notify);
extern SchedlockRoleDue *schedlock_roles_due(int *n, MemoryContext cxt);
extern int	schedlock_overdue_jobs(Oid role, TimestampTz before,
								   SchedlockOverdueJob *jobs, int max,
								   MemoryContext cxt);
extern bool schedlock_next_deadline(TimestampTz *next);
extern void schedlock_count_jobs(SchedlockJobCounts *counts);
extern bool schedlock_oldest_finished_run(TimestampTz *at);
extern bool schedlock_next_queued_run(int64 job_id, int64 *run_id,
									  TimestampTz *scheduled_for);
extern void schedlock_save_job_state(ClaimedJob *job, TimestampTz now);
extern bool schedlock_run_in_progress(int64 job_id);
extern void schedlock_open_runs_among(ClaimedJob *jobs, int n, bool *open);
extern int64 schedlock_run_may_defer(const ClaimedJob *job,
									 TimestampTz scheduled_for, int32 attempt);
extern void schedlock_runs_may_defer(const int64 *job_ids,
									 const TimestampTz *slots,
									 const int32 *attempts, int n,
									 int64 *run_ids);
extern void schedlock_fire_reboot_jobs(TimestampTz now);

/* recording runs (the workers) */
extern int64 schedlock_record_run(ClaimedJob *job, ClaimPlan *plan,
								  SchedlockRunStatus status, TimestampTz now,
								  TimestampTz deadline, bool has_deadline);
extern void schedlock_publish_notify_runs(ClaimedJob *jobs, ClaimPlan *plans,
										  TimestampTz *deadlines, int n,
										  TimestampTz now,
										  TimestampTz horizon);
extern void schedlock_record_outcome(ClaimedJob *job, ClaimPlan *plan,
									 int64 run_id, ErrorData *error,
									 const char *result_status,
									 const char *notices);
extern int64 schedlock_record_ended_run(ClaimedJob *job, ClaimPlan *plan,
										TimestampTz started_at,
										ErrorData *error,
										const char *result_status,
										const char *notices);
extern bool schedlock_record_ended_runs(SchedlockEndedRun *runs, int n);
extern bool schedlock_record_outcomes(SchedlockEndedRun *runs,
									  const int64 *run_ids, int n);
extern int	schedlock_skip_unscheduled_runs(const int64 *job_ids,
											const int64 *run_ids, int n,
											bool *skipped);
extern uint64 schedlock_close_lost_runs(void);
extern uint64 schedlock_expire_runs(TimestampTz now);
extern uint64 schedlock_prune_runs(TimestampTz now, int retention_mins,
								   TimestampTz *from);

/* failures, retries and next_run_at (the workers and the SQL API) */
extern void schedlock_run_failed(int64 job_id, TimestampTz scheduled_for,
								 int32 attempt, TimestampTz now);
extern Oid	schedlock_table_oid(const char *relname);

extern void schedlock_recompute_next_run(int64 job_id, TimestampTz now);

/* the notification of a NOTIFY run, sent at commit (notify_dispatch.c) */
extern void schedlock_notify_run(ClaimedJob *job, ClaimPlan *plan,
								 int64 run_id);

/* runs of NOTIFY jobs claimed and finished by applications (notify_api.c) */
extern Oid	schedlock_run_owner(int64 run_id);
extern bool schedlock_claim_pending_run(int64 run_id, const char *claimed_by,
										TimestampTz now, Datum *payload,
										bool *payload_null);
extern bool schedlock_finish_running_run(int64 run_id, bool succeeded,
										 const char *message,
										 TimestampTz now);

/* dispatch errors and quarantine (quarantine.c) */
extern void schedlock_fail_dispatch_runs(TimestampTz now, const char *state,
										 const char *message);
typedef struct DispatchErrors
{
	bool		run_since;		/* a run recorded since the last error */
	int32		errors;			/* dispatch errors in a row before this one */
	char	   *job_name;
	char	   *role_name;		/* the role it runs as */
	bool		enabled;
	bool		has_next_run_at;
	TimestampTz next_run_at;
} DispatchErrors;
extern bool schedlock_read_dispatch_errors(int64 job_id, DispatchErrors *de);
extern void schedlock_save_dispatch_error(int64 job_id, int breaks,
										  TimestampTz now, bool has_next,
										  TimestampTz next_run_at,
										  const char *reason);

/* the job API (job_api.c), as the extension owner */
extern int64 schedlock_upsert_job(const char *job_name, Oid owner,
								  const JobDef *def, bool reboot,
								  bool has_slot, TimestampTz slot,
								  const char *search_path, Oid approver,
								  int32 *manual_pending);
extern void schedlock_job_written(int64 job_id, const char *search_path,
								  Oid approver);
extern bool schedlock_approval_holds(int64 job_id, Oid *approver);
extern void schedlock_pause_job(int64 job_id, const char *reason);
extern void schedlock_set_record_runs(int64 job_id, const char *record_runs);
extern void schedlock_update_job(int64 job_id, const char *job_name,
								 const JobDef *def, bool reboot, bool reslot,
								 bool has_slot, TimestampTz slot);
extern int64 schedlock_lock_job(const char *job_name, Oid caller,
								StoredJob *job);
extern int64 schedlock_queue_run(int64 job_id, const char *job_name,
								 TimestampTz now);
extern bool schedlock_delete_job(const char *job_name, Oid owner);
extern bool schedlock_delete_job_by_id(int64 job_id, Oid owner,
									   bool any_owner);
extern void schedlock_delete_job_id(int64 job_id, const char *job_name);
extern uint64 schedlock_delete_ended_runs(Oid owner, const char *job_name,
										  Interval *older_than, TimestampTz now);

/* copies of a database and their adoption (copies.c) */
extern bool schedlock_home_table_exists(void);
extern bool schedlock_home_read(Datum *home_id, Oid *datoid, bool *restored);
extern bool schedlock_home_id(Datum *home_id);
extern bool schedlock_jobs_exist(void);
extern void schedlock_home_move_in(void);
extern uint64 schedlock_pause_foreign_jobs(Datum home_id);
extern bool schedlock_foreign_jobs_exist(Datum home_id);
extern void schedlock_home_lock(void);
extern void schedlock_home_clear_restored(void);
extern void schedlock_home_mark_restored(void);
extern bool schedlock_home_lock_read(Datum *home_id, Oid *datoid);
extern Datum schedlock_home_renew(void);

/* a job to adopt, as the scan of the jobs to adopt reads it */
typedef struct JobToAdopt
{
	int64		job_id;
	char	   *schedule;
	char	   *timezone;		/* NULL: schedlock.timezone */
	bool		has_next_slot;
	TimestampTz next_slot;
	bool		enabled;
} JobToAdopt;
typedef struct SchedlockAdoptScan SchedlockAdoptScan;
extern SchedlockAdoptScan *schedlock_adopt_scan_begin(Datum home_id, bool all);
extern bool schedlock_adopt_scan_next(SchedlockAdoptScan *scan,
									  JobToAdopt *job);
extern void schedlock_adopt_scan_end(SchedlockAdoptScan *scan);
extern void schedlock_prepare_adoption(SPIPlanPtr *plans);
extern void schedlock_adopt_job(SPIPlanPtr *plans, const JobToAdopt *job,
								Datum home_id, bool has_slot,
								TimestampTz slot, TimestampTz now);

/*
 * the roles of jobs (job_roles.c), as the extension owner: each function
 * returns the changes its statement makes to the database's job rows in
 * pg_shdepend, one JobRoleDelta per kind and role (*n of them, palloc'd)
 */
typedef struct JobRoleDelta
{
	int			kind;			/* 1: owner rows, 2: run_as rows */
	Oid			role;
	int64		n;				/* rows to add (> 0) or delete (< 0) */
} JobRoleDelta;

struct TriggerData;
extern JobRoleDelta *schedlock_removed_jobs_deltas(struct TriggerData *trigdata,
												   int *n);
extern JobRoleDelta *schedlock_job_roles_diff(Oid extoid, Oid jobsoid, int *n);
extern JobRoleDelta *schedlock_reassign_jobs(Datum roles, Oid newrole, int *n);
extern JobRoleDelta *schedlock_drop_jobs(Datum roles, int *n);

/* the pg_cron import (import_pg_cron.c) */
extern int64 schedlock_find_job_like(Oid owner, const char *job_name,
									 const char *schedule, const char *command,
									 const char *timezone, bool *same);
extern bool schedlock_job_created_here(int64 job_id);

#endif							/* SCHEDLOCK_JOBSTORE_H */
