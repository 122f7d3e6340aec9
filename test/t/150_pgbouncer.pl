# 150_pgbouncer.pl: schedlock behind PgBouncer, once in pool_mode =
# transaction and once in pool_mode = session, each pool smaller than the
# number of its clients.  What it measures is what the "Connection poolers"
# sections of docs/locks.md and docs/notify-jobs.md say:
#
#   - lease locks (acquire, extend, assert, release, fencing) are correct in
#     both modes: 8 clients through 2 server connections take one name in
#     turn, and no two critical sections overlap, tokens grow in lease order;
#   - a session-bound lease belongs to the server connection, not to the
#     client: a client that disconnects without releasing leaves it held, and
#     the next client of that server connection runs in its holder's session;
#     in transaction mode the pooler can also close that server connection
#     under a client that is still connected, which ends the lease (fencing
#     then refuses its token).  A plain lease with extend behaves the same
#     through a pooler as directly;
#   - LISTEN through transaction mode hears nothing (PgBouncer drops a
#     notification that arrives while the server connection is not lent to a
#     client, and a notification that arrives while it is goes to whichever
#     client has it); through session mode and directly it hears;
#   - schedule_job, alter_job, run_job, unschedule_job,
#     schedlock_claim_run_payload and schedlock_finish_run work through both.
#
# The pooler listens only on a Unix socket in the test's own socket
# directory, on a port of its own; it and the node are stopped at the end,
# also when the test dies.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

my ($pgbouncer) = grep { -x $_ }
  map { "$_/pgbouncer" } (split(/:/, $ENV{PATH} // ''), '/usr/sbin');
plan skip_all =>
  'pgbouncer is not installed (Debian package pgbouncer; test/run-all.sh installs it for the tap layer)'
  unless $pgbouncer;

# the pooler running now, and the psql clients of the stress; ended at exit
# whatever happened (the nodes are stopped by PostgreSQL::Test::Cluster)
my $bouncer_run;
my $bouncer_log;
my @clients;

END
{
	my $rc = $?;
	$_->kill_kill for grep { defined } @clients;
	$bouncer_run->kill_kill if $bouncer_run;
	$? = $rc;
}

my $node = schedlock_node('pooled',
	conf => [
		qq{
max_worker_processes = 32
} ],
	app => 'database');
# mailer: the application's role, granted the job functions; it owns the
# tables the test writes through the pooler
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	CREATE ROLE mailer LOGIN;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO mailer;
	GRANT INSERT ON schedlock.jobs TO mailer;
	GRANT CREATE ON SCHEMA public TO mailer;
});
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
my $psql_bin = $node->installed_command('psql');

# direct(SQL): run SQL in app as the superuser, without the pooler
sub direct
{
	return $node->safe_psql('app', $_[0]);
}

# poll(SQL, SECONDS): run SQL directly every 100 ms until it returns "t"
sub poll
{
	my ($sql, $seconds) = @_;
	my $deadline = time() + ($seconds // 60);
	while (time() < $deadline)
	{
		return 1 if direct($sql) eq 't';
		usleep(100_000);
	}
	return 0;
}

# start_bouncer(MODE): PgBouncer in pool mode MODE in front of the node, and
# a PostgreSQL::Test::Cluster object whose host and port are the pooler's,
# so that its psql, safe_psql and background_psql connect through it.
#   app   the database app, at most 2 server connections
#   app1  the same database, 1 server connection: a client that connects to
#         it gets the server connection the client before it had
sub start_bouncer
{
	my ($mode) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $dir = $node->basedir;
	my ($host, $nport) = ($node->host, $node->port);
	my $log = $bouncer_log =
	  "$PostgreSQL::Test::Utils::log_path/150_pgbouncer_$mode.pgbouncer.log";

	PostgreSQL::Test::Utils::append_to_file("$dir/userlist_$mode.txt",
		qq{"$superuser" ""\n"mailer" ""\n});
	PostgreSQL::Test::Utils::append_to_file("$dir/pgbouncer_$mode.ini", qq{
[databases]
app = host=$host port=$nport dbname=app
app1 = host=$host port=$nport dbname=app pool_size=1

[pgbouncer]
unix_socket_dir = $host
listen_port = $port
auth_type = trust
auth_file = $dir/userlist_$mode.txt
admin_users = $superuser
pool_mode = $mode
default_pool_size = 2
max_client_conn = 50
logfile = $log
});
	my ($out, $err) = ('', '');
	$bouncer_run = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer_$mode.ini" ],
		'>', \$out, '2>', \$err);
	# poll_query_until writes the query to psql's standard input: older
	# Test::Cluster modules die of EPIPE when psql exits at once because
	# nothing listens yet, so wait for pgbouncer's socket first
	my $deadline = time() + 60;
	usleep(50_000) while !-S "$host/.s.PGSQL.$port" && time() < $deadline;
	my $pooler = PostgreSQL::Test::Cluster->new("bouncer_$mode", port => $port);
	$pooler->poll_query_until('app', 'SELECT true')
	  or die "pgbouncer ($mode) did not answer: $out $err";
	return $pooler;
}

# hear(SESSION, REGEX): what SESSION (a background_psql) received while it
# ran SELECT 1 every 100 ms, until it received a notification matching
# REGEX, at most 30 s.  A backend sends a notification to its idle client
# when it is signalled, so one psql round trip may come before it arrives.
sub hear
{
	my ($session, $regex) = @_;
	my $heard = '';
	my $deadline = time() + 30;
	while ($heard !~ $regex && time() < $deadline)
	{
		$heard .= $session->query_safe('SELECT 1');
		usleep(100_000) if $heard !~ $regex;
	}
	return $heard;
}

sub stop_bouncer
{
	$bouncer_run->kill_kill;
	$bouncer_run = undef;
}

foreach my $mode ('transaction', 'session')
{
	my $pooler = start_bouncer($mode);

	# through(SQL, DB): run SQL through the pooler as mailer (db app)
	my $through = sub {
		my ($sql, $db) = @_;
		return $pooler->safe_psql($db // 'app', $sql,
			extra_params => [ '-U', 'mailer' ]);
	};
	# a client of the pooler that stays connected, as mailer
	my $client = sub {
		my ($db) = @_;
		return $pooler->background_psql($db // 'app', on_error_stop => 0,
			extra_params => [ '-U', 'mailer' ]);
	};

	# ------------------------------------------------------------------
	# Lease locks, one call at a time
	# ------------------------------------------------------------------
	my $t1 = $through->(
		"SELECT schedlock_acquire('report_$mode', '1 minute', '0', 'client-1')");
	like($t1, qr/^\d+$/, "$mode: acquire through the pooler returns a token");
	is($through->("SELECT schedlock_acquire('report_$mode', '1 minute') IS NULL"),
		't', "$mode: another client gets NULL while the lease runs");
	is($through->("SELECT schedlock_extend('report_$mode', $t1, '2 minutes')"),
		't', "$mode: the holder extends its lease");
	$through->(qq{
		CREATE TABLE IF NOT EXISTS fenced_$mode (token bigint);
		BEGIN;
		SELECT schedlock_assert('report_$mode', $t1);
		INSERT INTO fenced_$mode VALUES ($t1);
		COMMIT;
	});
	is(direct("SELECT token FROM fenced_$mode"), $t1,
		"$mode: assert and the fenced write commit together");
	is($through->("SELECT schedlock_release('report_$mode', $t1)"),
		't', "$mode: the holder releases");
	is($through->("SELECT schedlock_release('report_$mode', $t1)"),
		'f', "$mode: a second release returns false");
	my $t2 = $through->("SELECT schedlock_acquire('report_$mode', '1 minute')");
	cmp_ok($t2, '>', $t1, "$mode: the next lease has a larger token");
	is($through->("SELECT schedlock_extend('report_$mode', $t1, '1 minute')"),
		'f', "$mode: extend with the old token returns false");
	is($through->("SELECT schedlock_release('report_$mode', $t1)"),
		'f', "$mode: release with the old token returns false");
	my ($ret, $stdout, $stderr) = $pooler->psql('app',
		"\\set VERBOSITY verbose\nSELECT schedlock_assert('report_$mode', $t1)",
		extra_params => [ '-U', 'mailer' ]);
	like($stderr, qr/SL001/, "$mode: assert with the old token raises SL001");
	$through->("SELECT schedlock_release('report_$mode', $t2)");

	# ------------------------------------------------------------------
	# Stress: 8 clients, 2 server connections, one name.  Each client
	# takes a short lease, records its critical section (token, client,
	# start, end, the server backends that ran its first and last
	# statement) in several transactions, extends and asserts in the
	# middle, and releases; a client that gets NULL notes a miss.
	# ------------------------------------------------------------------
	$through->(qq{
		CREATE TABLE cs_$mode (token bigint PRIMARY KEY, client int,
			t_start timestamptz, t_end timestamptz, pid_start int, pid_end int,
			extended boolean, released boolean);
		CREATE TABLE misses_$mode (client int);
	});
	my $iterations = 100;
	my $clients = 8;
	my $dir = $node->basedir;
	@clients = ();
	my @results;
	my $t0 = time();
	for my $c (1 .. $clients)
	{
		my $script = "\\set ON_ERROR_STOP 1\n";
		for (1 .. $iterations)
		{
			$script .= qq{
SELECT t AS tok, t IS NOT NULL AS got FROM schedlock_acquire('stress_$mode', '30 seconds', '0', 'client-$c') t \\gset
\\if :got
INSERT INTO cs_$mode (token, client, t_start, pid_start) VALUES (:tok, $c, clock_timestamp(), pg_backend_pid());
SELECT pg_sleep(0.002);
SELECT schedlock_extend('stress_$mode', :tok, '30 seconds') AS ext \\gset
SELECT schedlock_assert('stress_$mode', :tok);
UPDATE cs_$mode SET t_end = clock_timestamp(), pid_end = pg_backend_pid(), extended = :'ext' WHERE token = :tok;
UPDATE cs_$mode SET released = schedlock_release('stress_$mode', :tok) WHERE token = :tok;
\\else
INSERT INTO misses_$mode VALUES ($c);
\\endif
};
		}
		my $file = "$dir/stress_${mode}_$c.sql";
		PostgreSQL::Test::Utils::append_to_file($file, $script);
		$results[$c] = { out => '', err => '' };
		push @clients, IPC::Run::start(
			[ $psql_bin, '-X', '-q', '-A', '-t', '-f', $file, '-d',
				$pooler->connstr('app') . ' user=mailer' ],
			'>', \$results[$c]{out}, '2>', \$results[$c]{err},
			IPC::Run::timeout(120));
	}
	my $failed_clients = 0;
	for my $c (1 .. $clients)
	{
		my $h = $clients[ $c - 1 ];
		eval { $h->finish; 1 } or $h->kill_kill;
		if ($h->result(0) != 0)
		{
			$failed_clients++;
			diag("stress client $c: $results[$c]{err}");
		}
	}
	@clients = ();
	note(sprintf('%s: stress took %.1f s', $mode, time() - $t0));
	is($failed_clients, 0, "$mode: all $clients stress clients ran without an error");

	my ($sections, $misses) = split /\|/, direct(
		"SELECT (SELECT count(*) FROM cs_$mode), (SELECT count(*) FROM misses_$mode)");
	is($sections + $misses, $clients * $iterations,
		"$mode: every acquire was either a lease or NULL ($sections leases, $misses NULL)");
	cmp_ok($sections, '>=', 20, "$mode: clients got leases");
	cmp_ok($misses, '>', 0, "$mode: clients met a held lease");
	is(direct(qq{
		SELECT count(*) FROM cs_$mode a JOIN cs_$mode b ON a.token < b.token
		 WHERE a.t_start <= b.t_end AND b.t_start <= a.t_end}),
		'0', "$mode: no two critical sections overlap");
	is(direct(qq{
		SELECT bool_and(token > prev AND t_start > prev_end) FROM (
			SELECT token, t_start, lag(token) OVER w AS prev, lag(t_end) OVER w AS prev_end
			  FROM cs_$mode WINDOW w AS (ORDER BY t_start)) s
		 WHERE prev IS NOT NULL}),
		't', "$mode: tokens strictly increase in lease order");
	is(direct(qq{
		SELECT count(*) FILTER (WHERE extended AND released), count(*) FROM cs_$mode}),
		"$sections|$sections", "$mode: every holder extended and released its lease");
	cmp_ok(direct("SELECT count(DISTINCT pid_start) FROM cs_$mode"), '<=', 2,
		"$mode: at most 2 server connections did the work");
	if ($mode eq 'transaction')
	{
		cmp_ok(direct("SELECT count(*) FROM cs_$mode WHERE pid_start <> pid_end"),
			'>', 0,
			"$mode: some critical sections ran on two server connections");
	}
	else
	{
		is(direct("SELECT count(*) FROM cs_$mode WHERE pid_start <> pid_end"),
			'0', "$mode: each critical section ran on its client's server connection");
	}

	# ------------------------------------------------------------------
	# Session-bound leases through the pooler (app1: one server
	# connection, so the next client gets the previous one's)
	# ------------------------------------------------------------------
	my $a = $client->('app1');
	my $server_a = $a->query_safe('SELECT pg_backend_pid()');
	my $ta = $a->query_safe(
		"SELECT schedlock_acquire('bound_$mode', '1 hour', '0', 'client-a', true)");
	like($ta, qr/^\d+$/, "$mode: client A acquires a session-bound lease");
	is(direct("SELECT held, holder_pid FROM schedlock.locks WHERE lock_name = 'bound_$mode'"),
		"t|$server_a", "$mode: the lease is bound to A's server connection");
	$a->quit;
	# the pooler keeps the server connection for the next client (in
	# session mode after its server_reset_query, DISCARD ALL)
	is(direct("SELECT count(*) FROM pg_stat_activity WHERE pid = $server_a"),
		'1', "$mode: the pooler keeps A's server connection after A left");
	is(direct("SELECT held, holder_pid FROM schedlock.locks WHERE lock_name = 'bound_$mode'"),
		"t|$server_a",
		"$mode: A disconnected without releasing: the lease is still held, by the pooled connection");
	my $c = $client->('app1');
	is($c->query_safe('SELECT pg_backend_pid()'), $server_a,
		"$mode: the next client C gets that server connection");
	is($c->query_safe(
			"SELECT holder_pid = pg_backend_pid() FROM schedlock.locks WHERE lock_name = 'bound_$mode'"),
		't', "$mode: C runs in the session that holds A's lease");
	is($c->query_safe(
			"SELECT schedlock_acquire('bound_$mode', '1 hour', '0', 'client-c', true) IS NULL"),
		't', "$mode: C cannot acquire the name");
	is($c->query_safe("SELECT schedlock_release('bound_$mode', $ta)"),
		't', "$mode: only a release with A's token ends it");
	$c->quit;

	if ($mode eq 'transaction')
	{
		# the pooler closes the server connection while A is still
		# connected (RECONNECT: as after server_lifetime,
		# server_idle_timeout or a changed [databases] entry)
		$a = $client->('app1');
		$server_a = $a->query_safe('SELECT pg_backend_pid()');
		$ta = $a->query_safe(
			"SELECT schedlock_acquire('bound_$mode', '1 hour', '0', 'client-a', true)");
		$pooler->safe_psql('pgbouncer', 'RECONNECT app1');
		$a->query_safe('SELECT 1');    # a transaction: the connection is released
		ok(poll("SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $server_a", 30),
			"$mode: RECONNECT closed A's server connection while A stays connected");
		is(direct("SELECT held FROM schedlock.locks WHERE lock_name = 'bound_$mode'"),
			'f', "$mode: that ended A's session-bound lease");
		my $tb = $through->(
			"SELECT schedlock_acquire('bound_$mode', '1 hour', '0', 'client-b', true)", 'app');
		cmp_ok($tb, '>', $ta, "$mode: another client takes the name with a larger token");
		is($a->query_safe("SELECT schedlock_extend('bound_$mode', $ta, '1 hour')"),
			'f', "$mode: A's extend returns false: the lease is lost");
		$a->query("SELECT schedlock_assert('bound_$mode', $ta)");
		like($a->{stderr}, qr/is not held by token/,
			"$mode: A's assert raises SL001");
		$a->quit;
		# B's server connection (pool app) lives on: release its lease
		is($through->("SELECT schedlock_release('bound_$mode', $tb)"),
			't', "$mode: released through the pooler from any server connection");
	}
	else
	{
		# in session mode the pooler does not take a connected client's
		# server connection: RECONNECT waits until A leaves
		$a = $client->('app1');
		$server_a = $a->query_safe('SELECT pg_backend_pid()');
		$ta = $a->query_safe(
			"SELECT schedlock_acquire('bound_$mode', '1 hour', '0', 'client-a', true)");
		$pooler->safe_psql('pgbouncer', 'RECONNECT app1');
		usleep(500_000);
		is($a->query_safe("SELECT schedlock_extend('bound_$mode', $ta, '1 hour')"),
			't', "$mode: after RECONNECT A still holds its lease while it is connected");
		$a->quit;
		ok(poll("SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $server_a", 30),
			"$mode: when A leaves, the pooler closes the connection");
		is(direct("SELECT held FROM schedlock.locks WHERE lock_name = 'bound_$mode'"),
			'f', "$mode: and the lease ends with it");
	}

	# The alternative: a plain lease that ends by itself, renewed while
	# the work goes on.  A client that disconnects without releasing frees
	# the name when its lease runs out, whichever server connection it used.
	my $tp = $through->("SELECT schedlock_acquire('renewed_$mode', '3 seconds')");
	like($tp, qr/^\d+$/, "$mode: a plain 3 s lease through the pooler");
	is($through->("SELECT schedlock_extend('renewed_$mode', $tp, '3 seconds')"),
		't', "$mode: renewed from another client connection");
	is($through->("SELECT schedlock_acquire('renewed_$mode', '3 seconds') IS NULL"),
		't', "$mode: held after its client left without releasing");
	ok(poll(qq{SELECT NOT held FROM schedlock.locks WHERE lock_name = 'renewed_$mode'}, 10),
		"$mode: free again once the lease ran out");
	cmp_ok($through->("SELECT schedlock_acquire('renewed_$mode', '3 seconds')"), '>', $tp,
		"$mode: then acquired with a larger token");

	# ------------------------------------------------------------------
	# Jobs through the pooler: the job API, NOTIFY, claim and finish
	# ------------------------------------------------------------------
	$through->(qq{
		CREATE TABLE job_log_$mode (v text);
		SELECT schedlock.schedule_job('log_$mode', '0 0 1 1 *', \$\$INSERT INTO job_log_$mode VALUES ('v1')\$\$);
	});
	my $run = $through->("SELECT schedlock.run_job('log_$mode')");
	ok(poll("SELECT status = 'succeeded' FROM schedlock.job_runs WHERE run_id = $run"),
		"$mode: schedule_job and run_job through the pooler: the run succeeded");
	$through->(qq{SELECT schedlock.alter_job('log_$mode', command => \$\$INSERT INTO job_log_$mode VALUES ('v2')\$\$)});
	$run = $through->("SELECT schedlock.run_job('log_$mode')");
	ok(poll("SELECT status = 'succeeded' FROM schedlock.job_runs WHERE run_id = $run"),
		"$mode: alter_job and run_job through the pooler: the run succeeded");
	is(direct("SELECT string_agg(v, ',' ORDER BY v) FROM job_log_$mode"),
		'v1,v2', "$mode: each run wrote what its command said");
	is($through->("SELECT schedlock.unschedule_job('log_$mode')"),
		't', "$mode: unschedule_job through the pooler");
	is(direct("SELECT count(*) FROM schedlock.jobs WHERE job_name = 'log_$mode'"),
		'0', "$mode: the job is gone");

	# a NOTIFY job; one listener connected directly, one through the
	# pooler (app1), both as mailer
	my $listener = $node->background_psql('app', on_error_stop => 0,
		extra_params => [ '-U', 'mailer' ]);
	$listener->query_safe('LISTEN mail_due');
	my $pooled = $client->('app1');
	my $pooled_server = $pooled->query_safe('LISTEN mail_due; SELECT pg_backend_pid()');
	$through->(qq{
		SELECT schedlock.schedule_job('mail_$mode', '0 0 1 1 *', notify_channel => 'mail_due',
							payload => '{"to": "ops"}', timeout => '1 minute')});
	$run = $through->("SELECT schedlock.run_job('mail_$mode')");
	ok(poll("SELECT status = 'pending' FROM schedlock.job_runs WHERE run_id = $run"),
		"$mode: run_job of a NOTIFY job: the run was notified");
	my $heard = hear($listener, qr/"run_id" : $run\b/);
	like($heard, qr/Asynchronous notification "mail_due" with payload "\{"job" : "mail_$mode", "job_id" : \d+, "run_id" : $run\b/,
		"$mode: the direct listener heard the notification");
	if ($mode eq 'session')
	{
		like(hear($pooled, qr/"run_id" : $run\b/), qr/"run_id" : $run\b/,
			"$mode: the listener connected through the pooler heard it too");
	}
	else
	{
		# wait until PgBouncer has read the notification from the idle
		# server connection: a query sent before that would be given the
		# connection and receive it
		my $dropped = qr/got packet 'A' from server when not linked/;
		my $deadline = time() + 30;
		usleep(100_000)
		  while slurp_file($bouncer_log) !~ $dropped && time() < $deadline;
		like(slurp_file($bouncer_log), $dropped,
			"$mode: PgBouncer logged the notification it dropped");
		unlike($pooled->query_safe('SELECT 1'), qr/Asynchronous notification/,
			"$mode: the listener connected through the pooler heard nothing");
		# the LISTEN stays with the server connection, and whichever client
		# has it when a notification arrives gets it
		my $other = $client->('app1');
		is($other->query_safe('SELECT pg_backend_pid()'), $pooled_server,
			"$mode: another client gets the listener's server connection");
		is($other->query_safe('SELECT pg_listening_channels()'), 'mail_due',
			"$mode: which listens on the channel the other client never named");
		like($other->query_safe("SELECT pg_notify('mail_due', 'sent by the other client')"),
			qr/Asynchronous notification "mail_due" with payload "sent by the other client"/,
			"$mode: and the other client receives its notifications");
		unlike($pooled->query_safe('SELECT 1'), qr/Asynchronous notification/,
			"$mode: the listener never does");
		$other->quit;
	}

	# catching up and claiming through the pooler, as a listener does
	is($through->(qq{
		SELECT run_id FROM schedlock.job_runs JOIN schedlock.jobs USING (job_id)
		 WHERE notify_channel = 'mail_due' AND status = 'pending' ORDER BY run_id}),
		$run, "$mode: the catch-up query through the pooler finds the pending run");
	is($through->("SELECT claimed, payload FROM schedlock_claim_run_payload($run, 'pooled-1')"),
		't|{"to": "ops"}', "$mode: schedlock_claim_run_payload through the pooler claims it");
	is($through->("SELECT claimed, payload FROM schedlock_claim_run_payload($run, 'pooled-2')"),
		'f|', "$mode: a second claim through the pooler gets false");
	is($through->("SELECT schedlock_finish_run($run, true, 'sent')"),
		't', "$mode: schedlock_finish_run through the pooler");
	is(direct("SELECT status, claimed_by, message FROM schedlock.job_runs WHERE run_id = $run"),
		'succeeded|pooled-1|sent', "$mode: the run is closed as succeeded");
	is($through->("SELECT schedlock.unschedule_job('mail_$mode')"), 't',
		"$mode: the NOTIFY job unscheduled through the pooler");
	$listener->quit;
	$pooled->quit;

	stop_bouncer();
}

$node->stop;
done_testing();
