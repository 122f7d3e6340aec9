/*-------------------------------------------------------------------------
 *
 * command_plans.c
 *	  The plans of job commands that a job backend keeps.
 *
 * A job backend runs the same commands again and again: a job due every
 * second, or many jobs of one role with one command.  Parsing, analysing
 * and planning a short command costs about as much as running it, so the
 * backend keeps the plan of an atomic job's command that is one
 * SELECT, INSERT, UPDATE, DELETE or MERGE, and runs the kept plan at its
 * next runs, as a prepared statement would be run.  Commands of several
 * statements and utility statements are run from their text each time,
 * as before (a later statement may depend on what an earlier one created;
 * a utility statement has no plan to keep); only their command tag is
 * kept.
 *
 * The plan cache of PostgreSQL keeps the plans valid: a plan is made again
 * when a table, function or type it uses changes, when the search_path
 * differs from the one it was made under (jobs of one command with
 * different search_paths share an entry and each gets its own objects),
 * and when row security would apply differently.  Privileges are checked
 * at every execution.  A backend runs the commands of one role only, so a
 * plan is never used by another role.
 *
 * The entries are found by the command's text; at most
 * SCHEDLOCK_COMMAND_PLANS are kept, and the one used least recently makes
 * room for a new one.
 *
 * IDENTIFICATION
 *	  src/sched/command_plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "tcop/cmdtag.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "command_plans.h"

/*
 * Most plans kept by one backend.  A plan of a short statement takes a few
 * kilobytes of memory.
 */
#define SCHEDLOCK_COMMAND_PLANS	64

typedef struct CommandPlan
{
	uint32		hash;			/* hash of the text: the entry's key */
	char	   *command;		/* the text (TopMemoryContext) */
	SPIPlanPtr	plan;			/* kept; NULL: run from the text */
	CommandTag	tag;			/* tag of the last statement */
	uint64		used;			/* when it was last used */
} CommandPlan;

static HTAB *command_plans = NULL;
static uint64 command_plan_uses = 0;

/*
 * plannable
 *		Whether one statement is run through a plan that can be kept: a
 *		query, not a utility statement (SELECT INTO creates a table).
 */
static bool
plannable(Node *stmt)
{
	switch (nodeTag(stmt))
	{
		case T_SelectStmt:
			return ((SelectStmt *) stmt)->intoClause == NULL;
		case T_InsertStmt:
		case T_UpdateStmt:
		case T_DeleteStmt:
		case T_MergeStmt:
			return true;
		default:
			return false;
	}
}

/*
 * forget
 *		Free an entry's plan and text and remove it.
 */
static void
forget(CommandPlan *e)
{
	uint32		hash = e->hash;

	if (e->plan != NULL)
		SPI_freeplan(e->plan);
	pfree(e->command);
	(void) hash_search(command_plans, &hash, HASH_REMOVE, NULL);
}

/*
 * forget_least_used
 *		Remove the entry used least recently.
 */
static void
forget_least_used(void)
{
	HASH_SEQ_STATUS status;
	CommandPlan *e;
	CommandPlan *oldest = NULL;

	hash_seq_init(&status, command_plans);
	while ((e = hash_seq_search(&status)) != NULL)
		if (oldest == NULL || e->used < oldest->used)
			oldest = e;
	if (oldest != NULL)
		forget(oldest);
}

/*
 * schedlock_command_plan
 *		The kept plan of command, made and kept now if this backend has
 *		none; NULL when the command is to be run from its text (more than
 *		one statement, or a utility statement).  *tag gets the command tag
 *		of its last statement, as a simple query takes it from the raw
 *		statement (CMDTAG_UNKNOWN: no statement).  Connected to SPI, as the
 *		job's role, in the run's subtransaction: a syntax or analysis error
 *		is the run's, and leaves nothing kept.
 */
SPIPlanPtr
schedlock_command_plan(const char *command, CommandTag *tag)
{
	uint32		hash = hash_bytes((const unsigned char *) command,
								  strlen(command));
	CommandPlan *e;
	List	   *parsetrees;
	SPIPlanPtr	plan = NULL;
	char	   *text;
	bool		found;

	if (command_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint32);
		ctl.entrysize = sizeof(CommandPlan);
		command_plans = hash_create("schedlock command plans",
									SCHEDLOCK_COMMAND_PLANS, &ctl,
									HASH_ELEM | HASH_BLOBS);
	}

	e = hash_search(command_plans, &hash, HASH_FIND, NULL);
	if (e != NULL && strcmp(e->command, command) == 0)
	{
		e->used = ++command_plan_uses;
		*tag = e->tag;
		return e->plan;
	}

	parsetrees = pg_parse_query(command);
	*tag = parsetrees == NIL ? CMDTAG_UNKNOWN :
		CreateCommandTag(llast_node(RawStmt, parsetrees)->stmt);
	if (list_length(parsetrees) == 1 &&
		plannable(linitial_node(RawStmt, parsetrees)->stmt))
	{
		/* parallel plans allowed, as for a command run from its text */
		plan = SPI_prepare_cursor(command, 0, NULL, CURSOR_OPT_PARALLEL_OK);
		if (plan == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("job command could not be prepared: %s",
							SPI_result_code_string(SPI_result))));
	}

	/* keep it: another text of the same hash, or the least used, leaves */
	if (e != NULL)
		forget(e);
	else if (hash_get_num_entries(command_plans) >= SCHEDLOCK_COMMAND_PLANS)
		forget_least_used();
	if (plan != NULL && SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep the plan of a job command");
	text = MemoryContextStrdup(TopMemoryContext, command);

	e = hash_search(command_plans, &hash, HASH_ENTER, &found);
	Assert(!found);
	e->command = text;

	e->plan = plan;
	e->tag = *tag;
	e->used = ++command_plan_uses;
	return plan;
}
