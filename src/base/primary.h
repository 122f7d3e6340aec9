/*-------------------------------------------------------------------------
 *
 * primary.h
 *	  The one check that a function changing schedlock's state runs on a
 *	  primary (primary.c).
 *
 * IDENTIFICATION
 *	  src/base/primary.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_PRIMARY_H
#define SCHEDLOCK_PRIMARY_H

extern void schedlock_require_primary(const char *funcname);
extern void schedlock_require_writable(const char *funcname);

#endif							/* SCHEDLOCK_PRIMARY_H */
