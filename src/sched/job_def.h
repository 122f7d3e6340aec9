/*-------------------------------------------------------------------------
 *
 * job_def.h
 *	  A job's definition checked (job_def.c), and its limits.
 *
 * IDENTIFICATION
 *	  src/sched/job_def.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_JOB_DEF_H
#define SCHEDLOCK_JOB_DEF_H

#include "cron/cron_pg.h"
#include "sched/store/jobstore.h"

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
extern const char *schedlock_top_level_reason(const char *command,
											  bool with_commits);
extern bool schedlock_schedule_is_once(const char *schedule);
extern Oid	schedlock_resolve_run_as(const char *rolename, Oid owner);
extern void schedlock_settle_atomic(const char *job_name, JobDef *def,
									bool atomic_given);
extern void schedlock_refuse_schedule_as_name(const char *job_name,
											  const char *schedule);
extern void schedlock_validate_job(const char *job_name, JobDef *def,
								   SchedlockCronSchedule *sched);
extern bool schedlock_first_slot(const SchedlockCronSchedule *sched,
								 const char *timezone, TimestampTz now,
								 TimestampTz *slot);
extern TimestampTz schedlock_check_instant(TimestampTz t, TimestampTz now,
										   const char *argname);
extern void schedlock_refuse_once_schedule(const JobDef *def);

#endif							/* SCHEDLOCK_JOB_DEF_H */
