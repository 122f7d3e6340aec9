/*-------------------------------------------------------------------------
 *
 * lease_role.h
 *	  Who may use a lease (lease_role.c).
 *
 * IDENTIFICATION
 *	  src/lock/lease_role.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LEASE_ROLE_H
#define SCHEDLOCK_LEASE_ROLE_H

extern bool schedlock_may_use_lease(bool has_role, Oid holder_role);

#endif							/* SCHEDLOCK_LEASE_ROLE_H */
