/*-------------------------------------------------------------------------
 *
 * claim_sql.h
 *	  The job backends' claim statements, as SQL text.
 *
 * store_claim.c prepares and runs these statements for the job backends
 * (dispatch.c).  They live in a header of their own, which includes nothing
 * and needs nothing of PostgreSQL, so that the isolation spec
 * test/isolation/specs/job_claim.spec races exactly the statements the
 * job backends run: test/isolation/fill-specs.sh compiles a program that prints
 * them and puts them into the spec before it runs.  A change here is
 * therefore a change of what that spec tests.
 *
 * The claim statement: the earliest due job of a role ($4) nobody else
 * holds, after the position ($2, $3) in the order of jobs_role_due_idx, as
 * of $1.
 *
 * The claim locks the row FOR NO KEY UPDATE, the lock its UPDATE of the job
 * (which changes no key column) takes anyway: it excludes other claims and
 * writers of the row, but not FOR KEY SHARE, which every insert of a row
 * referencing the job takes for its foreign-key check (a run_job() call, a
 * run recorded by another transaction, an application's table that
 * references schedlock.jobs).  FOR UPDATE would skip the job for as long as
 * any such transaction is open.
 *
 * Claiming a job moves its next_run_at, so its old entry in jobs_role_due_idx
 * stays in the due range, dead, until vacuum or a later scan removes it.
 * When thousands of jobs fall due at once, a scan from the start of the
 * range steps over the entries of every job claimed so far, and the burst
 * costs time quadratic in its size.  So within a pass a backend resumes
 * after the job it claimed last; everything before that position is dead,
 * claimed, or locked by someone else.  The pass ends with one scan from
 * the start ($2 = -infinity), which also finds the jobs it stepped over
 * because another transaction held them then.
 *
 * IDENTIFICATION
 *	  src/sched/claim_sql.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_CLAIM_SQL_H
#define SCHEDLOCK_CLAIM_SQL_H

/*
 * The claimed job's columns; the last two are its search_path and
 * record_runs, which the tables of release 1.1 lack (NULL there: see
 * store_claim.c).
 */
#define SCHEDLOCK_CLAIM_COLUMNS(v12_columns) \
	"SELECT job_id, job_name, owner::pg_catalog.oid, schedule, command, " \
	"  notify_channel, payload, timezone, " \
	"  EXTRACT(epoch FROM timeout)::pg_catalog.float8 " \
	"    OPERATOR(pg_catalog.*) 1000, misfire, atomic, " \
	"  run_as::pg_catalog.oid, reboot, next_slot, retry_slot, retry_attempt, " \
	"  retry_at, manual_pending, next_run_at, ctid, consecutive_failures, " \
	"  " v12_columns " "

/*
 * The jobs of one role ($4 oid: the role they run as, run_as or else the
 * owner), due as of $1, after ($2, $3).  Release 1.2's jobs_role_due_idx
 * indexes exactly this order per role.
 */
#define SCHEDLOCK_CLAIM_WHERE \
	"FROM schedlock.jobs " \
	"WHERE enabled " \
	"  AND (COALESCE(run_as, owner)::pg_catalog.oid) OPERATOR(pg_catalog.=) $4 " \
	"  AND next_run_at OPERATOR(pg_catalog.<=) $1 " \
	"  AND (next_run_at, job_id) OPERATOR(pg_catalog.>) ($2, $3) "
#define SCHEDLOCK_CLAIM_ORDER \
	"ORDER BY next_run_at, job_id LIMIT 1 " \
	"FOR NO KEY UPDATE SKIP LOCKED"

/*
 * Claim any due job of the role ($1 timestamptz, $2 timestamptz, $3
 * bigint, $4 oid).  Three more columns answer, as of the statement's
 * snapshot, what schedlock_run_may_defer would otherwise ask in a
 * statement of its own: the claimed row version's xmin (store_claim.c
 * trusts the answers only when that version is older than the snapshot),
 * whether a run of the job is pending or running, and whether its next
 * slot has a row (of any attempt).  They are asked of the claimed job
 * only, above the lock, not of every row the claim skips.
 */
#define SCHEDLOCK_CLAIM_SQL \
	"SELECT c.*, " \
	"  (SELECT true FROM schedlock.job_runs x " \
	"    WHERE x.job_id OPERATOR(pg_catalog.=) c.job_id " \
	"      AND x.status OPERATOR(pg_catalog.=) " \
	"        ANY (ARRAY['pending', 'running']::pg_catalog.text[]) " \
	"    LIMIT 1) IS NOT NULL AS run_open, " \
	"  (SELECT true FROM schedlock.job_runs x " \
	"    WHERE x.job_id OPERATOR(pg_catalog.=) c.job_id " \
	"      AND x.scheduled_for OPERATOR(pg_catalog.=) c.next_slot " \
	"    LIMIT 1) IS NOT NULL AS slot_rows " \
	"FROM (" \
	SCHEDLOCK_CLAIM_COLUMNS("search_path, record_runs, xmin") \
	SCHEDLOCK_CLAIM_WHERE SCHEDLOCK_CLAIM_ORDER ") c"

/* The same, for NOTIFY jobs only: see dispatch_one in dispatch.c. */
#define SCHEDLOCK_CLAIM_NOTIFY_SQL \
	SCHEDLOCK_CLAIM_COLUMNS("search_path, record_runs") SCHEDLOCK_CLAIM_WHERE \
	"AND notify_channel IS NOT NULL " SCHEDLOCK_CLAIM_ORDER

/*
 * The same, for atomic SQL jobs only: the further runs of a batch that
 * shares one commit (schedlock.runs_per_commit; see dispatch_batch in
 * dispatch.c).  Release 1.2 only.
 */
#define SCHEDLOCK_CLAIM_ATOMIC_SQL \
	SCHEDLOCK_CLAIM_COLUMNS("search_path, record_runs") SCHEDLOCK_CLAIM_WHERE \
	"AND command IS NOT NULL AND atomic " SCHEDLOCK_CLAIM_ORDER

/*
 * Up to $5 atomic SQL jobs at once: the further runs of a batch, a set at
 * a time (see dispatch_batch in dispatch.c).  Release 1.2 only.
 */
#define SCHEDLOCK_CLAIM_ATOMIC_MANY_SQL \
	SCHEDLOCK_CLAIM_COLUMNS("search_path, record_runs") SCHEDLOCK_CLAIM_WHERE \
	"AND command IS NOT NULL AND atomic " \
	"ORDER BY next_run_at, job_id LIMIT $5 " \
	"FOR NO KEY UPDATE SKIP LOCKED"

/*
 * Up to $5 NOTIFY jobs at once: see dispatch_notify_batch in
 * notify_dispatch.c.  Release 1.2 only.
 */
#define SCHEDLOCK_CLAIM_NOTIFY_MANY_SQL \
	SCHEDLOCK_CLAIM_COLUMNS("search_path, record_runs") SCHEDLOCK_CLAIM_WHERE \
	"AND notify_channel IS NOT NULL " \
	"ORDER BY next_run_at, job_id LIMIT $5 " \
	"FOR NO KEY UPDATE SKIP LOCKED"

/*
 * The message of a NOTIFY run ($1 channel, $2 job name, $3 job id, $4 run
 * id, $5 scheduled_for, $6 attempt, as SQL expressions): no payload, as any
 * role may LISTEN on any channel; the claimer gets it from
 * schedlock_claim_run_payload.
 */
#define SCHEDLOCK_NOTIFY_RUN_SQL(channel, job, job_id, run_id, slot, attempt) \
	"pg_catalog.pg_notify(" channel ", " \
	"  pg_catalog.json_build_object('job', " job ", 'job_id', " job_id ", " \
	"    'run_id', " run_id ", 'scheduled_for', " slot ", " \
	"    'attempt', " attempt ")::pg_catalog.text)"

/* Both, on the tables of release 1.1 (no jobs.search_path, record_runs). */
#define SCHEDLOCK_CLAIM_SQL_1_1 \
	SCHEDLOCK_CLAIM_COLUMNS("NULL::pg_catalog.text, NULL::pg_catalog.text") SCHEDLOCK_CLAIM_WHERE \
	SCHEDLOCK_CLAIM_ORDER
#define SCHEDLOCK_CLAIM_NOTIFY_SQL_1_1 \
	SCHEDLOCK_CLAIM_COLUMNS("NULL::pg_catalog.text, NULL::pg_catalog.text") SCHEDLOCK_CLAIM_WHERE \
	"AND notify_channel IS NOT NULL " SCHEDLOCK_CLAIM_ORDER

#endif							/* SCHEDLOCK_CLAIM_SQL_H */
