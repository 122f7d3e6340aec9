/*-------------------------------------------------------------------------
 *
 * app_server.c
 *	  A stand-in "application server" for the demo: it LISTENs for
 *	  schedlock NOTIFY jobs, races the other servers to claim each run
 *	  with schedlock_claim_run_payload(), which also hands the winner the
 *	  job's payload (the notification does not carry it: any role may
 *	  LISTEN), and reports the one it won with schedlock_finish_run().
 *
 *	  app_server CONNINFO NAME CHANNEL SECONDS
 *
 * After LISTEN it first catches up: it tries to claim the runs notified
 * before it listened, which schedlock_pending_runs() returns.  Prints one
 * line per run it tried: whether it claimed the run (and "sent the mail"
 * to the payload's "to") or another server had it.  Stops after SECONDS.
 *
 * IDENTIFICATION
 *	  test/demo/app_server.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "libpq-fe.h"

static double
now_epoch(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* "HH:MM:SS.mmm" of this machine's clock (UTC) */
static const char *
clock_text(void)
{
	static char buf[32];
	struct timeval tv;
	struct tm	tm;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03d",
			 tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (tv.tv_usec / 1000));
	return buf;
}

/*
 * json_value
 *		Copy the value of "key" in the flat JSON text into out (strings
 *		without their quotes).  Good enough for the notifications schedlock
 *		sends; an application would use its JSON library.
 */
static int
json_value(const char *json, const char *key, char *out, size_t outlen)
{
	char		pattern[64];
	const char *p;
	size_t		n = 0;

	snprintf(pattern, sizeof(pattern), "\"%s\"", key);
	p = strstr(json, pattern);
	if (p == NULL)
		return 0;
	p = strchr(p + strlen(pattern), ':');
	if (p == NULL)
		return 0;
	p++;
	while (*p == ' ')
		p++;
	if (*p == '"')
	{
		p++;
		while (p[n] != '\0' && p[n] != '"' && n + 1 < outlen)
			n++;
	}
	else
	{
		while (p[n] != '\0' && p[n] != ',' && p[n] != '}' && n + 1 < outlen)
			n++;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	return 1;
}

/*
 * claim
 *		schedlock_claim_run_payload(run_id, name): 1 when this server claimed
 *		the run (its payload copied into payload), 0 when another server
 *		has it, -1 on error.
 */
static int
claim(PGconn *conn, const char *const *params, char *payload, size_t len)
{
	PGresult   *res = PQexecParams(conn,
								   "SELECT claimed, payload "
								   "FROM schedlock_claim_run_payload($1::bigint, $2)",
								   2, NULL, params, NULL, NULL, 0);
	int			result;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "claim failed: %s", PQerrorMessage(conn));
		PQclear(res);
		return -1;
	}
	result = (strcmp(PQgetvalue(res, 0, 0), "t") == 0);
	snprintf(payload, len, "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return result;
}

/* run a one-row, one-column query with text parameters; "t" or "f" */
static int
call_bool(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	int			result;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "%s failed: %s", sql, PQerrorMessage(conn));
		PQclear(res);
		return -1;
	}
	result = (strcmp(PQgetvalue(res, 0, 0), "t") == 0);
	PQclear(res);
	return result;
}

/*
 * work_on
 *		Try to claim run run_id (of slot slot); when this server wins it,
 *		send the mail and report the run finished.
 */
static void
work_on(PGconn *conn, const char *name, const char *run_id, const char *slot)
{
	char		payload[1024];
	char		to[256];
	const char *params[2];
	int			won;

	params[0] = run_id;
	params[1] = name;
	/* servers hear a notification at slightly different times */
	{
		struct timespec ts = {0, (rand() % 3000) * 1000L};

		nanosleep(&ts, NULL);
	}
	won = claim(conn, params, payload, sizeof(payload));
	if (won == 1)
	{
		if (!json_value(payload, "to", to, sizeof(to)))
			snprintf(to, sizeof(to), "nobody (no \"to\" in the payload)");
		printf("%s  %-12s claimed run %s (slot %s) -> sends the statistics mail to %s\n",
			   clock_text(), name, run_id, slot, to);
		fflush(stdout);
		/* the work itself */
		{
			struct timespec ts = {0, 50 * 1000 * 1000};

			nanosleep(&ts, NULL);
		}
		if (call_bool(conn, "SELECT schedlock_finish_run($1::bigint, true)", 1, params) != 1)
			printf("%s  %-12s run %s: could not report it finished\n",
				   clock_text(), name, run_id);
	}
	else if (won == 0)
		printf("%s  %-12s run %s (slot %s): another server has it -> skip\n",
			   clock_text(), name, run_id, slot);
	fflush(stdout);
}

/*
 * catch_up
 *		Claim what was notified while this server was not listening: the
 *		runs schedlock_pending_runs() returns for the channel.
 */
static void
catch_up(PGconn *conn, const char *name, const char *channel)
{
	const char *params[1] = {channel};
	PGresult   *res = PQexecParams(conn,
								   "SELECT run_id, scheduled_for "
								   "FROM schedlock_pending_runs($1)",
								   1, NULL, params, NULL, NULL, 0);
	int			i;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "%s: catching up failed: %s", name, PQerrorMessage(conn));
		PQclear(res);
		return;
	}
	for (i = 0; i < PQntuples(res); i++)
	{
		printf("%s  %-12s run %s (slot %s) was notified before it listened -> catches up\n",
			   clock_text(), name, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
		work_on(conn, name, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
	}
	PQclear(res);
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	PGresult   *res;
	const char *name;
	char		sql[300];
	char	   *channel;
	double		seconds;
	double		start;

	if (argc != 5)
	{
		fprintf(stderr, "usage: %s CONNINFO NAME CHANNEL SECONDS\n", argv[0]);
		return 2;
	}
	name = argv[2];
	seconds = atof(argv[4]);
	srand((unsigned) getpid());

	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "%s: connection failed: %s", name, PQerrorMessage(conn));
		return 2;
	}
	channel = PQescapeIdentifier(conn, argv[3], strlen(argv[3]));
	snprintf(sql, sizeof(sql), "LISTEN %s", channel ? channel : "\"\"");
	PQfreemem(channel);
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "%s: LISTEN failed: %s", name, PQerrorMessage(conn));
		return 2;
	}
	PQclear(res);
	catch_up(conn, name, argv[3]);

	start = now_epoch();
	for (;;)
	{
		PGnotify   *n;
		fd_set		fds;
		struct timeval tv;
		double		left = seconds - (now_epoch() - start);
		int			sock = PQsocket(conn);

		if (left <= 0)
			break;
		FD_ZERO(&fds);
		FD_SET(sock, &fds);
		tv.tv_sec = (long) left;
		tv.tv_usec = (long) ((left - (long) left) * 1e6);
		if (select(sock + 1, &fds, NULL, NULL, &tv) < 0 || !PQconsumeInput(conn))
		{
			fprintf(stderr, "%s: connection lost: %s", name, PQerrorMessage(conn));
			return 2;
		}
		while ((n = PQnotifies(conn)) != NULL)
		{
			char		run_id[32];
			char		slot[64];

			if (!json_value(n->extra, "run_id", run_id, sizeof(run_id)) ||
				!json_value(n->extra, "scheduled_for", slot, sizeof(slot)))
			{
				fprintf(stderr, "%s: unexpected notification: %s\n", name, n->extra);
				PQfreemem(n);
				continue;
			}
			work_on(conn, name, run_id, slot);
			fflush(stdout);
			PQfreemem(n);
		}
	}
	PQfinish(conn);
	return 0;
}
