/*-------------------------------------------------------------------------
 *
 * database_ddl.c
 *	  Which utility statements need a database's workers out of the way,
 *	  decided only after the rights PostgreSQL will check.
 *
 * DROP DATABASE, CREATE DATABASE ... TEMPLATE and ALTER DATABASE ... RENAME
 * fail while anybody is connected to the database, and DROP EXTENSION
 * schedlock would wait for a worker that holds its tables.  For these the
 * ProcessUtility hook (schedlock.c) has the database's workers step aside
 * (sched_shmem.c) and lets them come back when the statement is over, the way
 * autovacuum makes room.  Stopping workers ends the runs in progress of
 * every role of the database, so it happens only for a statement that
 * PostgreSQL will let the current user run: the functions here repeat the
 * checks of dropdb(), createdb(), RenameDatabase() and RemoveObjects() that
 * depend on who runs the statement and on what exists, and answer "none"
 * whenever one of them would fail; the statement then runs without any
 * worker stopped and PostgreSQL reports the error itself.
 *
 * IDENTIFICATION
 *	  src/sched/database_ddl.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "base/owner.h"
#include "database_ddl.h"

/*
 * may_create_databases
 *		Whether the current user has the CREATEDB right (superusers have
 *		it), which CREATE DATABASE and ALTER DATABASE ... RENAME require.
 */
static bool
may_create_databases(void)
{
	HeapTuple	tup;
	bool		result;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
	ReleaseSysCache(tup);
	return result;
}

/*
 * is_template_database
 *		Whether the database is marked datistemplate (the launcher runs no
 *		worker there).  False for a database that does not exist.
 */
static bool
is_template_database(Oid dboid)
{
	HeapTuple	tup;
	bool		result;

	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
	ReleaseSysCache(tup);
	return result;
}

/*
 * may_drop_extension
 *		Whether the current user may drop the extension: a superuser, or a
 *		role with the privileges of its owner (PostgreSQL's ownership rule
 *		for DROP EXTENSION).  The owner of the database has no such right.
 */
static bool
may_drop_extension(Oid extoid)
{
	Oid			owner;

	if (superuser())
		return true;
	owner = schedlock_extension_owner_of(extoid);
	return OidIsValid(owner) && has_privs_of_role(GetUserId(), owner);
}

/*
 * for_drop_database
 *		DROP DATABASE: the database, when the user owns it and may drop it
 *		from here.
 */
static Oid
for_drop_database(DropdbStmt *stmt, bool isTopLevel)
{
	Oid			dboid;

	if (IsInTransactionBlock(isTopLevel))
		return InvalidOid;
	dboid = get_database_oid(stmt->dbname, true);
	if (!OidIsValid(dboid) || dboid == MyDatabaseId ||
		is_template_database(dboid) ||
		!schedlock_database_ownercheck(dboid, GetUserId()))
		return InvalidOid;
	return dboid;
}

/*
 * for_create_database
 *		CREATE DATABASE ... TEMPLATE t: t, when the user may create
 *		databases, may give the new one the owner it names, and owns t (a
 *		database not marked as template can be copied only by its owner);
 *		and when the new name is free.  Without TEMPLATE the copy is made
 *		from template1, where no worker runs.
 */
static Oid
for_create_database(CreatedbStmt *stmt, bool isTopLevel)
{
	const char *template = NULL;
	const char *owner = NULL;
	ListCell   *lc;
	Oid			srcoid;

	foreach(lc, stmt->options)
	{
		DefElem    *opt = (DefElem *) lfirst(lc);

		if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
			template = defGetString(opt);
		else if (strcmp(opt->defname, "owner") == 0 && opt->arg != NULL)
			owner = defGetString(opt);
	}
	if (template == NULL || IsInTransactionBlock(isTopLevel) ||
		!may_create_databases())
		return InvalidOid;
	if (owner != NULL)
	{
		Oid			roleid = get_role_oid(owner, true);

		if (!OidIsValid(roleid) || !is_member_of_role(GetUserId(), roleid))
			return InvalidOid;
	}
	srcoid = get_database_oid(template, true);
	if (!OidIsValid(srcoid) || srcoid == MyDatabaseId ||
		OidIsValid(get_database_oid(stmt->dbname, true)) ||
		is_template_database(srcoid) ||
		!schedlock_database_ownercheck(srcoid, GetUserId()))
		return InvalidOid;
	return srcoid;
}

/*
 * for_rename_database
 *		ALTER DATABASE d RENAME TO n: d, when the user owns it and may create
 *		databases, d is not the current database and n is free.
 */
static Oid
for_rename_database(RenameStmt *stmt)
{
	Oid			dboid;

	dboid = get_database_oid(stmt->subname, true);
	if (!OidIsValid(dboid) || dboid == MyDatabaseId ||
		!schedlock_database_ownercheck(dboid, GetUserId()) ||
		!may_create_databases() ||
		OidIsValid(get_database_oid(stmt->newname, true)))
		return InvalidOid;
	return dboid;
}

/*
 * for_drop_extension
 *		DROP EXTENSION naming schedlock: the current database, when every
 *		extension the statement names exists (or IF EXISTS) and the user may
 *		drop each of them.
 */
static Oid
for_drop_extension(DropStmt *stmt)
{
	bool		schedlock = false;
	ListCell   *lc;

	foreach(lc, stmt->objects)
	{
		Node	   *obj = (Node *) lfirst(lc);
		Oid			extoid;

		if (!IsA(obj, String))
			return InvalidOid;
		extoid = get_extension_oid(strVal(obj), true);
		if (!OidIsValid(extoid))
		{
			if (!stmt->missing_ok)
				return InvalidOid;
			continue;
		}
		if (!may_drop_extension(extoid))
			return InvalidOid;
		if (strcmp(strVal(obj), "schedlock") == 0)
			schedlock = true;
	}
	return schedlock ? MyDatabaseId : InvalidOid;
}

/*
 * schedlock_step_aside_for
 *		The database whose workers must step aside for this utility
 *		statement, or InvalidOid: the statement needs none, or PostgreSQL
 *		will refuse it to the current user anyway.  Raises no error.
 */
Oid
schedlock_step_aside_for(Node *parsetree, bool isTopLevel)
{
	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			return for_drop_database((DropdbStmt *) parsetree, isTopLevel);
		case T_CreatedbStmt:
			return for_create_database((CreatedbStmt *) parsetree, isTopLevel);
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				return for_rename_database((RenameStmt *) parsetree);
			return InvalidOid;
		case T_DropStmt:
			if (((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION)
				return for_drop_extension((DropStmt *) parsetree);
			return InvalidOid;
		default:
			return InvalidOid;
	}
}
