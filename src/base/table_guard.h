/*-------------------------------------------------------------------------
 *
 * table_guard.h
 *	  Only the extension owner writes or locks schedlock's tables
 *	  (table_guard.c).
 *
 * IDENTIFICATION
 *	  src/base/table_guard.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_TABLE_GUARD_H
#define SCHEDLOCK_TABLE_GUARD_H

#include "executor/executor.h"
#include "nodes/nodes.h"

#include "compat.h"

extern ExecutorCheckPerms_hook_type schedlock_prev_ExecutorCheckPerms;

extern bool schedlock_table_guard_check_perms(SCHEDLOCK_PERMS_HOOK_PARAMS);
extern void schedlock_table_guard_utility(Node *parsetree);

#endif							/* SCHEDLOCK_TABLE_GUARD_H */
