# 153_reload_rotation.pl: a configuration reload reaches the job backends
# while they take turns between databases.
#
# A job backend no longer reads the configuration files at every start
# (that cost it about 7 % of its start's CPU when backends take turns
# between many databases): it has the postmaster's configuration, and
# reads the files only when the launcher has read a reload since the
# backend's slot was reserved; the launcher passes each reload on to every
# backend that has taken its slot.  Here six databases' every-second jobs
# share a budget of two job backends, so backends start and leave all the
# time, and each run records the work_mem of its backend.  After work_mem
# is changed with ALTER SYSTEM and the server reloaded, every run that
# starts a second later has the new value, in backends that were running,
# starting or not yet started at the reload.  Done twice, so that a value
# is never right by chance.  (The narrow case the launcher's part covers, a
# reload between a backend's fork and its signal handler, is not forced
# here.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);

my @dbs = map { "r$_" } 1 .. 6;
my $node = schedlock_node('reload_rotation',
	conf => [ "max_worker_processes = 12\nschedlock.max_job_backends = 2" ]);
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
		CREATE EXTENSION schedlock;
		CREATE TABLE public.seen (at timestamptz, work_mem text, pid int);
		SELECT schedlock.schedule_job('tick', '1 second',
			$$INSERT INTO public.seen
			  VALUES (clock_timestamp(), current_setting('work_mem'), pg_backend_pid())$$);
	});
}
for my $db (@dbs)
{
	ok(wait_true($node, $db, 'SELECT count(*) >= 2 FROM public.seen', 60),
		"$db: the job runs");
}

for my $value ('3MB', '5MB')
{
	$node->safe_psql('postgres', "ALTER SYSTEM SET work_mem = '$value'");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	my $after = $node->safe_psql('postgres', q{SELECT clock_timestamp() + interval '1 second'});
	# runs after that in every database, in backends started before and after
	for my $db (@dbs)
	{
		ok(wait_true($node, $db, qq{SELECT count(*) >= 3 FROM public.seen WHERE at > '$after'}, 60),
			"$db: runs after the reload to $value");
	}
	my ($runs, $wrong, $pids) = (0, 0, 0);
	for my $db (@dbs)
	{
		my ($n, $w, $p) = split /\|/, $node->safe_psql($db, qq{
			SELECT count(*), count(*) FILTER (WHERE work_mem <> '$value'), count(DISTINCT pid)
			  FROM public.seen WHERE at > '$after'});
		$runs += $n;
		$wrong += $w;
		$pids += $p;
	}
	is($wrong, 0, "every run after the reload has work_mem $value ($runs runs in $pids backends)");
	cmp_ok($pids, '>', 2, 'the backends took turns meanwhile');
}

$node->stop;
done_testing();
