/*-------------------------------------------------------------------------
 *
 * logident.h
 *	  Who a schedlock background worker is, for log_line_prefix.
 *
 * IDENTIFICATION
 *	  src/base/logident.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_LOGIDENT_H
#define SCHEDLOCK_LOGIDENT_H

extern void schedlock_set_log_identity(const char *dbname,
									   const char *rolename,
									   const char *appname);

#endif							/* SCHEDLOCK_LOGIDENT_H */
