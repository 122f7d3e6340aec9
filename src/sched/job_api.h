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

extern bool schedlock_job_api_allowed(Oid role);
extern void schedlock_check_job_api(const char *fname);

#endif							/* SCHEDLOCK_JOB_API_H */
