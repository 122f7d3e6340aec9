/*-------------------------------------------------------------------------
 *
 * listen.c
 *	  Benchmark client: LISTEN on a channel and report when the expected
 *	  number of notifications has arrived.
 *
 *	  listen CONNINFO CHANNEL COUNT TIMEOUT_SECONDS
 *
 * Prints "ready" once the LISTEN is in place, then, when COUNT
 * notifications have arrived or the timeout has passed, one line:
 * "<received> <first arrival> <last arrival>", arrival times as seconds
 * since the Unix epoch (this machine's clock, which is the server's).
 * Exits 0 when all COUNT arrived.
 *
 * IDENTIFICATION
 *	  test/bench/listen.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/time.h>

#include "libpq-fe.h"

static double
now_epoch(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	PGresult   *res;
	char	   *listen_sql;
	const char *channel;
	long		want;
	long		got = 0;
	double		timeout;
	double		start;
	double		first = 0;
	double		last = 0;

	if (argc != 5)
	{
		fprintf(stderr, "usage: %s CONNINFO CHANNEL COUNT TIMEOUT_SECONDS\n", argv[0]);
		return 2;
	}
	channel = argv[2];
	want = atol(argv[3]);
	timeout = atof(argv[4]);

	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "connection failed: %s", PQerrorMessage(conn));
		return 2;
	}
	listen_sql = PQescapeIdentifier(conn, channel, 200);
	if (listen_sql == NULL)
	{
		fprintf(stderr, "bad channel: %s", PQerrorMessage(conn));
		return 2;
	}
	{
		char		buf[300];

		snprintf(buf, sizeof(buf), "LISTEN %s", listen_sql);
		res = PQexec(conn, buf);
	}
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "LISTEN failed: %s", PQerrorMessage(conn));
		return 2;
	}
	PQclear(res);
	PQfreemem(listen_sql);
	printf("ready\n");
	fflush(stdout);

	start = now_epoch();
	while (got < want)
	{
		PGnotify   *n;
		fd_set		fds;
		struct timeval tv;
		double		left = timeout - (now_epoch() - start);
		int			sock = PQsocket(conn);

		if (left <= 0)
			break;
		FD_ZERO(&fds);
		FD_SET(sock, &fds);
		tv.tv_sec = (long) left;
		tv.tv_usec = (long) ((left - (long) left) * 1e6);
		if (select(sock + 1, &fds, NULL, NULL, &tv) < 0)
		{
			perror("select");
			return 2;
		}
		if (!PQconsumeInput(conn))
		{
			fprintf(stderr, "connection lost: %s", PQerrorMessage(conn));
			return 2;
		}
		while ((n = PQnotifies(conn)) != NULL)
		{
			double		t = now_epoch();

			if (got == 0)
				first = t;
			last = t;
			got++;
			PQfreemem(n);
		}
	}
	printf("%ld %.6f %.6f\n", got, first, last);
	PQfinish(conn);
	return got == want ? 0 : 1;
}
