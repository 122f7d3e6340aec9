/*-------------------------------------------------------------------------
 *
 * owner.h
 *	  The extension owner and the switch to it (owner.c).
 *
 * IDENTIFICATION
 *	  src/base/owner.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_OWNER_H
#define SCHEDLOCK_OWNER_H

extern Oid	schedlock_extension_owner(void);
extern Oid	schedlock_extension_owner_of(Oid extoid);

/*
 * Switch to the extension owner, with search_path pinned to "pg_catalog,
 * pg_temp", around table writes, and back.
 */
extern void schedlock_begin_as_owner(Oid *save_uid, int *save_sec,
									 int *save_nestlevel);
extern void schedlock_end_as_owner(Oid save_uid, int save_sec,
								   int save_nestlevel);

#endif							/* SCHEDLOCK_OWNER_H */
