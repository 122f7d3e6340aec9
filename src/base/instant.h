/*-------------------------------------------------------------------------
 *
 * instant.h
 *	  The instant of the plain C rules (src/sched/rules.h, src/lock/lease.h),
 *	  which depend on nothing but the C library.
 *
 * An instant is a count of microseconds on the scale of PostgreSQL's
 * TimestampTz, to which it converts without loss either way.  The rules
 * only compare instants and add durations, so the epoch does not matter.
 *
 * IDENTIFICATION
 *	  src/base/instant.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_INSTANT_H
#define SCHEDLOCK_INSTANT_H

#include <stdint.h>

/* An instant, in microseconds (the scale of TimestampTz). */
typedef int64_t SchedlockTime;

#endif							/* SCHEDLOCK_INSTANT_H */
