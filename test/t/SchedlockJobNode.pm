# SchedlockJobNode.pm: the server the job tests share the shape of -- one
# node with schedlock preloaded and a database "app", where one worker runs
# every job (schedlock.max_workers = 1: no pool growth while a run is in
# progress, so a test can say which worker ran what) -- and the few calls
# they make on it.  test/run-all.sh puts test/t on PERL5LIB.
#
#   job_node(NAME)        init and start the node, create database app;
#                         the calls below then act on it
#   admin(SQL)            run SQL in app as the bootstrap superuser, with a
#                         pinned search_path whatever the test created
#   as_role(ROLE, SQL)    run SQL in app logged in as ROLE
#   run_and_wait(ROLE, JOB)
#                         run_job(JOB) as ROLE, then wait_run of that run
#   wait_run(RUN)         wait (at most 60 s) until run RUN finished; its
#                         "status|sqlstate|worker_pid", or "timeout"
package SchedlockJobNode;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Time::HiRes qw(usleep);

our @EXPORT = qw(job_node admin as_role run_and_wait wait_run);

my $node;

sub job_node
{
	my ($name) = @_;
	$node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'schedlock'
max_worker_processes = 32
schedlock.workers = 1
schedlock.max_workers = 1
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE DATABASE app');
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

sub run_and_wait
{
	my ($role, $job) = @_;
	return wait_run(as_role($role, "SELECT run_job('$job')"));
}

1;
