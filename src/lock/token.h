/*-------------------------------------------------------------------------
 *
 * token.h
 *	  Fencing tokens from the WAL insert position (token.c).
 *
 * IDENTIFICATION
 *	  src/lock/token.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_TOKEN_H
#define SCHEDLOCK_TOKEN_H

#include "access/xlogdefs.h"

/*
 * Token layout: timeline << SCHEDLOCK_TOKEN_TIMELINE_SHIFT plus the WAL
 * insert position in units of SCHEDLOCK_TOKEN_WAL_UNIT bytes.
 */
#define SCHEDLOCK_TOKEN_TIMELINE_SHIFT	52
#define SCHEDLOCK_TOKEN_WAL_UNIT_SHIFT	5
#define SCHEDLOCK_TOKEN_WAL_UNIT		(1 << SCHEDLOCK_TOKEN_WAL_UNIT_SHIFT)

extern int64 schedlock_token_base(XLogRecPtr lsn);
extern int64 schedlock_next_token(bool has_prev, int64 prev, XLogRecPtr lsn);
extern void schedlock_token_advance_wal(XLogRecPtr lsn, int64 token);

#endif							/* SCHEDLOCK_TOKEN_H */
