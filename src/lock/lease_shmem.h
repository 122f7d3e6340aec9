/*-------------------------------------------------------------------------
 *
 * lease_shmem.h
 *	  Session-bound leases kept in shared memory, and the token batches
 *	  reserved for them (lease_shmem.c).
 *
 * IDENTIFICATION
 *	  src/lock/lease_shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LEASE_SHMEM_H
#define SCHEDLOCK_LEASE_SHMEM_H

#include "access/xlogdefs.h"
#include "mb/pg_wchar.h"
#include "nodes/nodes.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "lease.h"

/* Bytes of a name: the longest name in the widest encoding, and a NUL. */
#define SCHEDLOCK_SHMEM_NAME_BYTES \
	(SCHEDLOCK_MAX_NAME_LENGTH * MAX_MULTIBYTE_CHAR_LEN + 1)

/* Bytes of a holder kept in shared memory; longer ones go to the table. */
#define SCHEDLOCK_SHMEM_HOLDER_BYTES	256

/*
 * The LWLocks of the leases kept in shared memory, one named tranche.  No
 * code holds one of them while it takes another, or any other lock.
 */
#define SCHEDLOCK_LEASE_TRANCHE			"schedlock_leases"
#define SCHEDLOCK_LEASE_LOCK			0	/* the lease table, its sessions */
#define SCHEDLOCK_TOKEN_LOCK			1	/* the token batch */
#define SCHEDLOCK_MARK_LOCK				2	/* the marks (lock_marks.c) */
#define SCHEDLOCK_LEASE_TRANCHE_LOCKS	3

/* The key of the shared tables: a database and a name (NUL-terminated). */
typedef struct SchedlockLeaseKey
{
	Oid			dbid;
	char		name[SCHEDLOCK_SHMEM_NAME_BYTES];
} SchedlockLeaseKey;

/* A session-bound lease kept in shared memory (a copy of its entry). */
typedef struct SchedlockShmemLease
{
	SchedlockLease lease;		/* the lease (lease.h) */
	bool		has_holder;
	char		holder[SCHEDLOCK_SHMEM_HOLDER_BYTES];
} SchedlockShmemLease;

extern void schedlock_ensure_room(void **array, int *maxitems, int nitems,
								  Size itemsize);
extern void schedlock_lease_key_set(SchedlockLeaseKey *key, const char *name);
extern int	schedlock_lease_key_hashctl(HASHCTL *ctl, Size entrysize);
extern void schedlock_lease_key_remove(HTAB *table, LWLock *lock,
									   const char *name);
extern void schedlock_lease_shmem_request(void);
extern void schedlock_lease_shmem_startup(void);
extern void schedlock_lease_shmem_drop_database(Oid dbid);
extern bool schedlock_lease_shmem_enabled(void);
extern bool schedlock_lease_shmem_get(const char *name,
									  SchedlockShmemLease *lease);
extern bool schedlock_lease_shmem_put(const char *name,
									  const SchedlockShmemLease *lease,
									  TimestampTz now);
extern void schedlock_lease_shmem_forget(const char *name);
extern bool schedlock_lease_shmem_pending(void);
extern void schedlock_lease_shmem_end_xact(bool commit, int level);
extern List *schedlock_lease_shmem_mine(void);
extern bool schedlock_lease_shmem_token(bool has_prev, int64 prev,
										int64 *token);
extern void schedlock_lease_shmem_note_token(int64 token);
extern int64 schedlock_lease_shmem_token_floor(void);

#endif							/* SCHEDLOCK_LEASE_SHMEM_H */
