/*-------------------------------------------------------------------------
 *
 * copies.h
 *	  Copies of a database do not run its jobs until adopted (copies.c).
 *
 * IDENTIFICATION
 *	  src/sched/copies.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_COPIES_H
#define SCHEDLOCK_COPIES_H

extern bool schedlock_jobs_paused(bool at_start, bool warn);

#endif							/* SCHEDLOCK_COPIES_H */
