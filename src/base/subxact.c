/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  A subtransaction that an error rolls back alone, leaving the
 *	  enclosing transaction to go on: a job's command (alone, or in a batch
 *	  of runs that share a commit), a job imported from pg_cron.  The
 *	  caller's memory context and resource owner are put back whichever way
 *	  it ends.  And whether a subtransaction of the current transaction has
 *	  been rolled back (kept_query.c runs the bookkeeping's writes apart
 *	  then).
 *
 * IDENTIFICATION
 *	  src/base/subxact.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"

#include "subxact.h"

/* A subtransaction of the current top-level transaction was rolled back. */
static bool rolled_back = false;

static void
watch_subxact(SubXactEvent event, SubTransactionId mySubid,
			  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		rolled_back = true;
}

static void
watch_xact(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			rolled_back = false;
			break;
		default:
			break;
	}
}

/*
 * schedlock_subxact_init
 *		Called from _PG_init: watch for subtransactions rolled back.
 */
void
schedlock_subxact_init(void)
{
	RegisterSubXactCallback(watch_subxact, NULL);
	RegisterXactCallback(watch_xact, NULL);
}

/*
 * schedlock_subxact_rolled_back
 *		Whether a subtransaction of the current transaction has been rolled
 *		back (by an error or on purpose, whoever began it).
 */
bool
schedlock_subxact_rolled_back(void)
{
	return rolled_back;
}

/*
 * schedlock_subxact_begin
 *		Remember the caller's memory context and resource owner, and begin
 *		a subtransaction; the caller stays in its memory context.
 */
void
schedlock_subxact_begin(SchedlockSubxact *sx)
{
	sx->cxt = CurrentMemoryContext;
	sx->owner = CurrentResourceOwner;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(sx->cxt);
}

/*
 * schedlock_subxact_end
 *		End the subtransaction without an error: keep what it did, or roll
 *		it back (a dry run).
 */
void
schedlock_subxact_end(SchedlockSubxact *sx, bool keep)
{
	if (keep)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(sx->cxt);
	CurrentResourceOwner = sx->owner;
}

/*
 * schedlock_subxact_abort
 *		In PG_CATCH: take the error (copied into the caller's memory
 *		context), roll the subtransaction back, and return the error.  The
 *		caller decides whether it goes on or throws it again (ReThrowError).
 */
ErrorData *
schedlock_subxact_abort(SchedlockSubxact *sx)
{
	ErrorData  *error;

	MemoryContextSwitchTo(sx->cxt);
	error = CopyErrorData();
	FlushErrorState();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(sx->cxt);
	CurrentResourceOwner = sx->owner;
	return error;
}
