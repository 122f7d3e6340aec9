/*-------------------------------------------------------------------------
 *
 * token.c
 *	  Fencing tokens: the token of an acquisition from the WAL insert
 *	  position, for the lock table (lock.c) and for the batches of
 *	  session-bound leases in shared memory (lease_shmem.c).
 *
 * Fencing tokens are max(previous token + 1, timeline * 2^52 + WAL insert
 * position / 32), the position read under the name's mutex.  The WAL insert
 * position belongs to the cluster, not to the lock table: it only grows, it
 * survives restarts and crash recovery (acquire commits synchronously, so the
 * WAL of every token the caller was told about is on disk), and it survives
 * DROP EXTENSION, which drops the per-name counters.  Every acquisition moves
 * the position on by at least 32 bytes after reading it (the row's WAL record,
 * or a no-op record where the row writes no WAL; see
 * schedlock_token_advance_wal), so by induction every token is below
 * timeline * 2^52 + position / 32 as soon as its WAL is written, and the next
 * acquisition of any name, in any database, gets a larger one: the previous
 * token + 1 never exceeds the WAL part on the same timeline.  A promoted
 * standby (or the end of a point-in-time recovery) writes on a new, higher
 * timeline, whose 2^52 puts its tokens above anything the old primary handed
 * out in WAL the standby never received, as long as that lost WAL is under
 * 2^57 bytes (128 PiB).  Overflow needs a timeline above 1920: the WAL part is
 * below 2^64 / 32 = 2^59 at any position.  docs/lock-internals.md states when
 * tokens can repeat (history rewound without a new timeline: pg_resetwal, a
 * new cluster, pg_upgrade from a timeline above 1).
 *
 * IDENTIFICATION
 *	  src/lock/token.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "catalog/pg_control.h"
#include "common/int.h"

#include "base/compat.h"
#include "token.h"

/*
 * schedlock_token_base
 *		The smallest token an acquisition may hand out when the WAL insert
 *		position, read under the name's mutex, is lsn: the timeline new WAL
 *		is written on (we are not in recovery) times
 *		2^SCHEDLOCK_TOKEN_TIMELINE_SHIFT, plus lsn in units of
 *		SCHEDLOCK_TOKEN_WAL_UNIT bytes.
 */
int64
schedlock_token_base(XLogRecPtr lsn)
{
	int64		tli = (int64) GetWALInsertionTimeLine();
	int64		high;
	int64		base;

	if (pg_mul_s64_overflow(tli, INT64CONST(1) << SCHEDLOCK_TOKEN_TIMELINE_SHIFT, &high) ||
		pg_add_s64_overflow(high, (int64) (lsn >> SCHEDLOCK_TOKEN_WAL_UNIT_SHIFT), &base))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("fencing token counter exhausted"),
				 errdetail("The server writes on timeline %lld; tokens fit a bigint up to timeline 1920.",
						   (long long) tli)));
	return base;
}

/*
 * schedlock_next_token
 *		The token for the next acquisition of a name whose last token was
 *		prev (has_prev false for a new name), the WAL insert position being
 *		lsn.
 */
int64
schedlock_next_token(bool has_prev, int64 prev, XLogRecPtr lsn)
{
	int64		base = schedlock_token_base(lsn);

	if (!has_prev)
		return base;
	if (prev >= PG_INT64_MAX - 1)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("fencing token counter exhausted")));
	return Max(prev + 1, base);
}

/*
 * schedlock_token_advance_wal
 *		Make sure the WAL insert position is at least SCHEDLOCK_TOKEN_WAL_UNIT
 *		bytes past lsn, the position token was computed from, so that every
 *		later acquisition's schedlock_token_base exceeds token.  The lock row's
 *		own WAL record (at least 54 bytes) always does that; the row writes no
 *		WAL only under wal_level = minimal in the transaction that created the
 *		table, and then a no-op record carrying the token (34 bytes)
 *		does.  Call after writing the row.
 */
void
schedlock_token_advance_wal(XLogRecPtr lsn, int64 token)
{
	if (GetXLogInsertRecPtr() >= lsn + SCHEDLOCK_TOKEN_WAL_UNIT)
		return;
	XLogBeginInsert();
	XLogRegisterData((char *) &token, sizeof(token));
	(void) XLogInsert(RM_XLOG_ID, XLOG_NOOP);
}
