/*-------------------------------------------------------------------------
 *
 * args.h
 *	  Checks of SQL function arguments shared by the lock functions and the
 *	  job API (args.c).
 *
 * IDENTIFICATION
 *	  src/base/args.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_ARGS_H
#define SCHEDLOCK_ARGS_H

#include "fmgr.h"
#include "utils/timestamp.h"

extern int	schedlock_interval_sign(Interval *iv);
extern char *schedlock_name_arg(FunctionCallInfo fcinfo, int argno,
								const char *what);

#endif							/* SCHEDLOCK_ARGS_H */
