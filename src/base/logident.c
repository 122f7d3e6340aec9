/*-------------------------------------------------------------------------
 *
 * logident.c
 *	  Who a schedlock background worker is, for log_line_prefix.
 *
 * PostgreSQL fills %d (database), %u (user) and %a (application name) of
 * log_line_prefix, and the same fields of csvlog and jsonlog, from the
 * client connection's Port, which a background worker does not have: its
 * lines carry only %b and %p.  A job backend is the session of one role in
 * one database, so it gets a Port that names them, and nothing else: no
 * socket (PGINVALID_SOCKET), no remote address (inet_client_addr() stays
 * NULL), no SSL or GSSAPI state.  Nothing reads from or writes to it; the
 * backend still sends nothing to a client (whereToSendOutput is DestNone).
 * pg_stat_activity is unaffected: it was filled when the worker connected.
 *
 * The Port structure is declared in libpq/libpq-be.h, which on a server
 * built with GSSAPI (most packaged ones) includes <gssapi/gssapi.h>; a build
 * without those headers (Debian: libkrb5-dev) leaves the prefix empty, as
 * for any background worker.  The log messages name the job, the role and
 * the database in their text either way.
 *
 * IDENTIFICATION
 *	  src/base/logident.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "logident.h"

/* Whether libpq/libpq-be.h can be included by this build. */
#if !defined(ENABLE_GSS)
#define SCHEDLOCK_HAVE_PORT 1
#elif defined(__has_include)
#if __has_include(<gssapi/gssapi.h>) || __has_include(<gssapi.h>)
#define SCHEDLOCK_HAVE_PORT 1
#endif
#endif

#ifdef SCHEDLOCK_HAVE_PORT
#include "libpq/libpq-be.h"
#endif

/*
 * schedlock_set_log_identity
 *		Give this background worker, connected to a database, a Port naming
 *		dbname, rolename and appname for its log lines (see the file's
 *		comment).  Once per process; does nothing in a process that has a
 *		Port, or when the build cannot declare one.
 */
void
schedlock_set_log_identity(const char *dbname, const char *rolename,
						   const char *appname)
{
#ifdef SCHEDLOCK_HAVE_PORT
	Port	   *port;

	if (MyProcPort != NULL)
		return;
	port = MemoryContextAllocZero(TopMemoryContext, sizeof(Port));
	port->sock = PGINVALID_SOCKET;
	port->database_name = MemoryContextStrdup(TopMemoryContext, dbname);
	port->user_name = MemoryContextStrdup(TopMemoryContext, rolename);
	port->application_name = MemoryContextStrdup(TopMemoryContext, appname);
	MyProcPort = port;
#endif
}
