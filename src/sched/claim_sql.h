/*-------------------------------------------------------------------------
 *
 * claim_sql.h
 *	  The claim statements of the tables of release 1.1, as SQL text, and
 *	  the message of a NOTIFY run.
 *
 * On the tables of release 1.2 a job backend claims without SQL
 * (src/sched/store/store_claim_scan.c); a database whose tables are still
 * those of 1.1 is served by these statements until ALTER EXTENSION
 * schedlock UPDATE.  The header includes nothing and needs nothing of
 * PostgreSQL, so that an isolation spec may name one of its macros as
 * @NAME@ and race exactly the text the compiler gives store_claim.c
 * (test/isolation/fill-specs.sh).
 *
 * The claim statement: the earliest due job of a role ($4) nobody else
 * holds, after the position ($2, $3) in the order (next_run_at, job_id), as
 * of $1.  It locks the row FOR NO KEY UPDATE, the lock its UPDATE of the
 * job (which changes no key column) takes anyway: it excludes other claims
 * and writers of the row, but not FOR KEY SHARE, which every insert of a
 * row referencing the job takes for its foreign-key check.  FOR UPDATE
 * would skip the job for as long as any such transaction is open.
 *
 * Claiming a job moves its next_run_at, so its old index entry stays in
 * the due range, dead, until vacuum or a later scan removes it.  So within
 * a pass a backend resumes after the job it claimed last, and the pass ends
 * with one scan from the start ($2 = -infinity), which also finds the jobs
 * it stepped over because another transaction held them then.
 *
 * IDENTIFICATION
 *	  src/sched/claim_sql.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_CLAIM_SQL_H
#define SCHEDLOCK_CLAIM_SQL_H

/*
 * The claimed job's columns; the last two stand for search_path and
 * record_runs, which the tables of release 1.1 lack.
 */
#define SCHEDLOCK_CLAIM_COLUMNS \
	"SELECT job_id, job_name, owner::pg_catalog.oid, schedule, command, " \
	"  notify_channel, payload, timezone, " \
	"  EXTRACT(epoch FROM timeout)::pg_catalog.float8 " \
	"    OPERATOR(pg_catalog.*) 1000, misfire, atomic, " \
	"  run_as::pg_catalog.oid, reboot, next_slot, retry_slot, retry_attempt, " \
	"  retry_at, manual_pending, next_run_at, ctid, consecutive_failures, " \
	"  NULL::pg_catalog.text, NULL::pg_catalog.text "

/*
 * The jobs of one role ($4 oid: the role they run as, run_as or else the
 * owner), due as of $1, after ($2, $3).
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

/* Any due job, and NOTIFY jobs only (see dispatch_one in dispatch.c). */
#define SCHEDLOCK_CLAIM_SQL_1_1 \
	SCHEDLOCK_CLAIM_COLUMNS SCHEDLOCK_CLAIM_WHERE \
	SCHEDLOCK_CLAIM_ORDER
#define SCHEDLOCK_CLAIM_NOTIFY_SQL_1_1 \
	SCHEDLOCK_CLAIM_COLUMNS SCHEDLOCK_CLAIM_WHERE \
	"AND notify_channel IS NOT NULL " SCHEDLOCK_CLAIM_ORDER

#endif							/* SCHEDLOCK_CLAIM_SQL_H */
