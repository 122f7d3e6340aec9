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

#include "catalog/objectaccess.h"
#include "nodes/nodes.h"
#include "utils/elog.h"
#include "utils/palloc.h"

extern object_access_hook_type schedlock_prev_object_access_hook;
extern void schedlock_roles_object_access(ObjectAccessType access, Oid classId,
										  Oid objectId, int subId, void *arg);
extern void schedlock_owned_jobs(Node *parsetree);
extern int64 schedlock_sync_job_roles(void);
extern ErrorData *schedlock_check_job_role(Oid owner, Oid run_as,
										   MemoryContext cxt);
extern ErrorData *schedlock_check_job_approval(int64 job_id,
											   const char *job_name,
											   Oid owner, Oid run_as,
											   MemoryContext cxt);

#endif							/* SCHEDLOCK_JOB_ROLES_H */
