# SchedlockJobNode.pm: the server the job tests share the shape of -- one
# node with schedlock preloaded and a database "app", where one job backend
# per role runs that role's jobs (schedlock.max_runs_per_role = 1: no second
# backend while a run is in progress, so a test can say which backend ran
# what) -- and the few calls they make on it.  test/run-all.sh puts test/t
# on PERL5LIB.
#
#   job_node(NAME)        init and start the node, create database app;
#                         the calls below then act on it
#   admin(SQL)            run SQL in app as the bootstrap superuser, with a
#                         pinned search_path whatever the test created
#   as_role(ROLE, SQL)    run SQL in app logged in as ROLE
#   run_and_wait(ROLE, JOB)
#                         schedlock.run_job(JOB) as ROLE, then wait_run of that run
#   wait_run(RUN)         wait (at most 60 s) until run RUN finished; its
#                         "status|sqlstate|worker_pid", or "timeout"
#
# and for the tests that need PostgreSQL's and schedlock's own defaults:
#
#   job_node_conf(NAME, CONF)
#                         like job_node, but postgresql.conf gets only
#                         shared_preload_libraries and the lines CONF
#                         (no max_worker_processes, no schedlock.* setting)
#   wait_job_run(JOB)     wait (at most 60 s) until a run of the job named
#                         JOB (of any role) finished; the last finished
#                         run's "status|sqlstate|worker_pid", or "timeout"
#   wait_for(SQL, SECONDS)
#                         poll admin(SQL) every 100 ms until it returns "t",
#                         at most SECONDS (default 60); true when it did
#
# and, handed on from SchedlockNode.pm, the one way the tests wait for a
# condition: wait_true(NODE, DB, SQL, SECONDS), and for a server to be back
# after a crash: wait_crash_restart(NODE, LOGSTART).
package SchedlockJobNode;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(job_node job_node_conf admin as_role run_and_wait wait_run
	wait_job_run wait_for wait_true wait_crash_restart housekeep_all);

my $node;

sub job_node
{
	my ($name) = @_;
	$node = schedlock_node($name,
		conf => [ "max_worker_processes = 32\nschedlock.max_runs_per_role = 1" ],
		app => 'database');
	return $node;
}

sub job_node_conf
{
	my ($name, $conf) = @_;
	$node = schedlock_node($name, conf => [ $conf // '' ], app => 'database');
	return $node;
}

sub admin
{
	my ($sql) = @_;
	return $node->safe_psql('app', "SET search_path = pg_catalog, public;\n$sql");
}

sub as_role
{
	my ($role, $sql) = @_;
	return $node->safe_psql('app', $sql, extra_params => [ '-U', $role ]);
}

sub wait_run
{
	my ($run) = @_;
	for (1 .. 600)
	{
		my $r = admin(qq{
			SELECT status || '|' || coalesce(sqlstate, '') || '|' || worker_pid
			  FROM schedlock.job_runs
			 WHERE run_id = $run AND finished_at IS NOT NULL});
		return $r if $r ne '';
		usleep(100_000);
	}
	return 'timeout';
}

sub wait_job_run
{
	my ($job) = @_;
	for (1 .. 600)
	{
		my $r = admin(qq{
			SELECT r.status || '|' || coalesce(r.sqlstate, '') || '|' || coalesce(r.worker_pid::text, '')
			  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			 WHERE j.job_name = '$job' AND r.finished_at IS NOT NULL
			 ORDER BY r.run_id DESC LIMIT 1});
		return $r if $r ne '';
		usleep(100_000);
	}
	return 'timeout';
}

sub wait_for
{
	my ($sql, $seconds) = @_;
	return wait_true($node, 'app', "SET search_path = pg_catalog, public;\n$sql",
		$seconds);
}

sub run_and_wait
{
	my ($role, $job) = @_;
	return wait_run(as_role($role, "SELECT schedlock.run_job('$job')"));
}

1;
