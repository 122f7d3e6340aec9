/*-------------------------------------------------------------------------
 *
 * job_roles.h
 *	  The roles of a job (job_roles.c).
 *
 * IDENTIFICATION
 *	  src/sched/job_roles.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_JOB_ROLES_H
#define SCHEDLOCK_JOB_ROLES_H

#include "nodes/nodes.h"
#include "utils/elog.h"
#include "utils/palloc.h"

extern void schedlock_roles_init(void);
extern void schedlock_owned_jobs(Node *parsetree);
extern int64 schedlock_sync_job_roles(void);
extern ErrorData *schedlock_check_job_role(Oid owner, Oid run_as,
										   MemoryContext cxt);

#endif							/* SCHEDLOCK_JOB_ROLES_H */
