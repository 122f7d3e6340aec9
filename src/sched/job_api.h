/*-------------------------------------------------------------------------
 *
 * job_api.h
 *	  The job API (job_api.c), and the limits of a job's definition.
 *
 * IDENTIFICATION
 *	  src/sched/job_api.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_JOB_API_H
#define SCHEDLOCK_JOB_API_H

/*
 * Longest job payload accepted, in bytes of its JSON text.  The payload is
 * not sent in the notification (any role may LISTEN): the claimer gets it
 * from schedlock_claim_run_payload, so PostgreSQL's 8000-byte NOTIFY limit
 * does not apply; the bound keeps job rows small.
 */
#define SCHEDLOCK_MAX_PAYLOAD_LENGTH	65536

/*
 * One-off jobs (job_api.c): the schedule they are stored with, which the cron
 * engine does not accept, and how far ahead an instant (schedule_once's
 * run_at, alter_job's next_run_at) may lie, in days (100 years).
 */
#define SCHEDLOCK_ONCE_SCHEDULE		"@once"
#define SCHEDLOCK_MAX_AHEAD_DAYS	36525

extern void schedlock_check_command(const char *command);
extern bool schedlock_job_api_allowed(Oid role);
extern void schedlock_check_job_api(const char *fname);
extern const char *schedlock_top_level_reason(const char *command,
											  bool with_commits);
extern bool schedlock_schedule_is_once(const char *schedule);

#endif							/* SCHEDLOCK_JOB_API_H */
