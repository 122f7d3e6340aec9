/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The scheduler's launcher (launcher.c).
 *
 * IDENTIFICATION
 *	  src/sched/launcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LAUNCHER_H
#define SCHEDLOCK_LAUNCHER_H

#include "fmgr.h"

extern void schedlock_register_launcher(void);
extern PGDLLEXPORT void schedlock_launcher_main(Datum arg);

#endif							/* SCHEDLOCK_LAUNCHER_H */
