/*-------------------------------------------------------------------------
 *
 * lock_table.h
 *	  The table store of leases: schedlock.lock_state (lock_table.c).
 *
 * IDENTIFICATION
 *	  src/lock/lock_table.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOCK_TABLE_H
#define SCHEDLOCK_LOCK_TABLE_H

#include "access/htup.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

#include "lease.h"

extern Relation schedlock_lock_table_open(Oid *indexid);
extern bool schedlock_lock_table_is_1_0(Relation rel);
extern HeapTuple schedlock_lock_table_fetch(Relation rel, Oid indexid,
											const char *name,
											SchedlockLease *lease);
extern void schedlock_lock_table_write_lease(Relation rel, HeapTuple oldtup,
											 const char *name,
											 const SchedlockLease *lease,
											 text *holder);
extern void schedlock_lock_table_write_until(Relation rel, HeapTuple oldtup,
											 const SchedlockLease *lease);
extern void schedlock_lock_table_write_release(Relation rel, HeapTuple oldtup,
											   const SchedlockLease *lease);
extern List *schedlock_lock_table_session_names(Relation rel);
extern void schedlock_lock_table_load_marks(TimestampTz now);

#endif							/* SCHEDLOCK_LOCK_TABLE_H */
