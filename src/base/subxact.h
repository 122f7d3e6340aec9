/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  A subtransaction that an error rolls back alone (subxact.c).
 *
 * IDENTIFICATION
 *	  src/base/subxact.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_SUBXACT_H
#define SCHEDLOCK_SUBXACT_H

#include "utils/elog.h"
#include "utils/resowner.h"

/* The caller's memory context and resource owner, put back at the end. */
typedef struct SchedlockSubxact
{
	MemoryContext cxt;
	ResourceOwner owner;
} SchedlockSubxact;

/*
 * Use:
 *		schedlock_subxact_begin(&sx);
 *		PG_TRY();
 *		{
 *			... work ...
 *			schedlock_subxact_end(&sx, true);	(false: undo it all the same)
 *		}
 *		PG_CATCH();
 *		{
 *			ErrorData *error = schedlock_subxact_abort(&sx);
 *			...
 *		}
 *		PG_END_TRY();
 */
extern void schedlock_subxact_begin(SchedlockSubxact *sx);
extern void schedlock_subxact_end(SchedlockSubxact *sx, bool keep);
extern ErrorData *schedlock_subxact_abort(SchedlockSubxact *sx);
extern void schedlock_subxact_init(void);
extern bool schedlock_subxact_rolled_back(void);

#endif							/* SCHEDLOCK_SUBXACT_H */
