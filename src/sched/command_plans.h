/*-------------------------------------------------------------------------
 *
 * command_plans.h
 *	  The plans of job commands that a job backend keeps
 *	  (command_plans.c).
 *
 * IDENTIFICATION
 *	  src/sched/command_plans.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_COMMAND_PLANS_H
#define SCHEDLOCK_COMMAND_PLANS_H

#include "executor/spi.h"
#include "tcop/cmdtag.h"

extern SPIPlanPtr schedlock_command_plan(const char *command, CommandTag *tag);

#endif							/* SCHEDLOCK_COMMAND_PLANS_H */
