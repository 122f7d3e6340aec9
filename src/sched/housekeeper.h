/*-------------------------------------------------------------------------
 *
 * housekeeper.h
 *	  A database's housekeeper (housekeeper.c).
 *
 * IDENTIFICATION
 *	  src/sched/housekeeper.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_HOUSEKEEPER_H
#define SCHEDLOCK_HOUSEKEEPER_H

#include "fmgr.h"

extern PGDLLEXPORT void schedlock_housekeeper_main(Datum arg);

#endif							/* SCHEDLOCK_HOUSEKEEPER_H */
