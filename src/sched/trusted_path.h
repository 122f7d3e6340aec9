/*-------------------------------------------------------------------------
 *
 * trusted_path.h
 *	  The schemas of a job's stored search_path it may resolve names in.
 *
 * src/sched/trusted_path.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_TRUSTED_PATH_H
#define SCHEDLOCK_TRUSTED_PATH_H

extern char *schedlock_trusted_search_path(int64 job_id, const char *job_name,
										   const char *search_path, Oid runner,
										   MemoryContext cxt);

#endif							/* SCHEDLOCK_TRUSTED_PATH_H */
