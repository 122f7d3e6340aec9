/*-------------------------------------------------------------------------
 *
 * lease_role.c
 *	  Who may use a lease: the role that acquired it, its members, and
 *	  superusers; the same rule for the lock table and shared memory.
 *
 * IDENTIFICATION
 *	  src/lock/lease_role.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"

#include "base/compat.h"
#include "lease_role.h"

/*
 * schedlock_may_use_lease
 *		Whether the current user may see and use the token of a lease
 *		acquired by holder_role (has_role false: a lease from before 1.1,
 *		whose role is unknown): superusers, and members of the role in the
 *		sense of pg_has_role(..., 'MEMBER').
 */
bool
schedlock_may_use_lease(bool has_role, Oid holder_role)
{
	Oid			user = GetUserId();

	if (superuser_arg(user))
		return true;
	if (!has_role)
		return false;
	return schedlock_member_of_role(user, holder_role);
}
