/*-------------------------------------------------------------------------
 *
 * database_ddl.h
 *	  Job backends stepping aside for DROP, CREATE ... TEMPLATE and RENAME
 *	  of their database, and DROP EXTENSION (database_ddl.c).
 *
 * IDENTIFICATION
 *	  src/sched/database_ddl.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_DATABASE_DDL_H
#define SCHEDLOCK_DATABASE_DDL_H

#include "nodes/nodes.h"

extern Oid	schedlock_step_aside_for(Node *parsetree, bool isTopLevel);

#endif							/* SCHEDLOCK_DATABASE_DDL_H */
