# 213_job_many_databases.pl: with PostgreSQL's default max_worker_processes
# (8), jobs run in every one of 8 databases, and a database without jobs
# holds no schedlock process.
#
# What it reproduces: every database with the extension keeps
# schedlock.workers (2) dispatch workers for good, whether it has jobs or
# not, plus the launcher; PostgreSQL's logical replication launcher takes
# one of the 8 slots too.  So 9 databases with the extension need 19 slots;
# the launcher fills the 7 it gets with the workers of the first databases
# (the one without jobs among them) and the other databases run nothing, one
# shared capacity taken by whoever came first.
#
# Intended behaviour: job processes are started on demand, for a database
# and role that has a job due, under one cluster-wide budget shared fairly
# across databases, and end when idle: every database's "1 seconds" job
# runs at least 5 times in 15 s, and a database whose extension has no jobs
# has no schedlock process connected to it.  The node keeps
# max_worker_processes at its default, and no schedlock setting is changed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;
use Time::HiRes qw(time usleep);

# database app: the extension, no jobs
my $node = job_node_conf('many_databases', '');
is($node->safe_psql('postgres', 'SHOW max_worker_processes'), '8',
	'max_worker_processes is PostgreSQL\'s default, 8');
admin(q{CREATE EXTENSION schedlock SCHEMA public});

my @dbs = map { "db$_" } 1 .. 8;
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
		CREATE EXTENSION schedlock SCHEMA public;
		CREATE TABLE public.ticks (ts timestamptz);
		SELECT schedlock.schedule_job('tick', '1 seconds',
							'INSERT INTO public.ticks SELECT clock_timestamp()');
	});
}

# wait (at most 15 s from now) until every database ran its job 5 times
my $deadline = time() + 15;
my %runs;
while (1)
{
	%runs = map { $_ => $node->safe_psql($_, 'SELECT count(*) FROM public.ticks') } @dbs;
	last if !grep { $runs{$_} < 5 } @dbs;
	last if time() > $deadline;
	usleep(250_000);
}
note(join(', ', map { "$_: $runs{$_}" } @dbs));
for my $db (@dbs)
{
	cmp_ok($runs{$db}, '>=', 5, "the job of $db ran at least 5 times in 15 s ($runs{$db})");
}

# the database without jobs: no schedlock process there, sampled a few
# times over a second
my $max = 0;
for (1 .. 4)
{
	my $n = $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_stat_activity
		 WHERE datname = 'app' AND backend_type LIKE 'schedlock%'});
	$max = $n if $n > $max;
	usleep(300_000);
}
note('schedlock processes by database: '
	  . $node->safe_psql('postgres', q{
		SELECT coalesce(string_agg(coalesce(datname, '-') || ' ' || backend_type || ' ' || n, ', '
								   ORDER BY datname), '')
		  FROM (SELECT datname, backend_type, count(*) n FROM pg_stat_activity
				 WHERE backend_type LIKE 'schedlock%' GROUP BY 1, 2) s}));
is($max, 0, 'no schedlock process is connected to the database that has no jobs');

$node->stop;
done_testing();
