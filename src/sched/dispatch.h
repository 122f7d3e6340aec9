/*-------------------------------------------------------------------------
 *
 * dispatch.h
 *	  A pass over a role's due jobs in a job backend or a housekeeper
 *	  (dispatch.c); the state of the process it works in is
 *	  dispatch_run.h's.
 *
 * IDENTIFICATION
 *	  src/sched/dispatch.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_DISPATCH_H
#define SCHEDLOCK_DISPATCH_H

#include "dispatch_run.h"

extern int	schedlock_dispatch_due(Oid role, const char *start_error,
								   bool *more);

#endif							/* SCHEDLOCK_DISPATCH_H */
