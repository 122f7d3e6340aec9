/*-------------------------------------------------------------------------
 *
 * lock_marks.h
 *	  The marks: which names' rows in schedlock.lock_state a session-bound
 *	  acquire kept in shared memory must read (lock_marks.c).
 *
 * IDENTIFICATION
 *	  src/lock/lock_marks.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOCK_MARKS_H
#define SCHEDLOCK_LOCK_MARKS_H

#include "utils/timestamp.h"

/* What a session-bound acquire must do about the table's row of a name. */
typedef enum SchedlockMarks
{
	MARKS_CLEAR,				/* nothing: the row does not matter */
	MARKS_PROBE,				/* read the row */
	MARKS_LOAD					/* load the database's marks, then read it */
} SchedlockMarks;

extern SchedlockMarks schedlock_marks_check(const char *name, TimestampTz now);
extern bool schedlock_marks_begin_load(uint64 *gen, TimestampTz now);
extern bool schedlock_marks_load_add(const char *name, TimestampTz until,
									 TimestampTz now);
extern void schedlock_marks_end_load(uint64 gen, bool ok, TimestampTz now);
extern void schedlock_marks_add(const char *name, TimestampTz until,
								TimestampTz now);
extern void schedlock_marks_forget(const char *name);
extern void schedlock_marks_unmark_at_commit(const char *name);
extern void schedlock_marks_end_xact(bool commit, int level);
extern bool schedlock_marks_writer_start(void);
extern void schedlock_marks_writer_end(bool had_slot);
extern void schedlock_marks_shmem_request(void);
extern void schedlock_marks_shmem_startup(void);
extern void schedlock_marks_drop_database(Oid dbid);

#endif							/* SCHEDLOCK_LOCK_MARKS_H */
