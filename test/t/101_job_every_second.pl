# 101_job_every_second.pl: an every-second atomic SQL job, served by its
# role's job backend, runs exactly once per slot over 20 slots -- no slot
# doubled, none missing -- and each run's effect commits exactly once.  The
# backend shows up in pg_stat_activity while the job runs, and leaves once
# the job is disabled.  The test waits for 20 runs, not for 20 s, so that a
# slow machine does not shorten it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('every_second',
	conf => [ "max_worker_processes = 32" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE ticks (at timestamptz)');

$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('tick', '1 second',
						'INSERT INTO ticks VALUES (clock_timestamp())',
						misfire => 'run_all')});

ok(wait_true($node, 'app', q{
	SELECT count(*) >= 20 FROM schedlock.job_runs WHERE status = 'succeeded'}, 120),
	'the job ran 20 times');
# while the job runs: the launcher and the role's job backend
my $processes = $node->safe_psql('app', q{
	SELECT string_agg(backend_type || ':' || coalesce(datname, '-'), ',' ORDER BY backend_type, datname)
	  FROM pg_stat_activity WHERE backend_type LIKE 'schedlock%'});
$node->safe_psql('app', q{SELECT schedlock.alter_job('tick', enabled => false)});
# a run in flight commits with its row: once the backend has left, none is
ok($node->poll_query_until('app', q{
	SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'schedlock job'}),
	'with its one job disabled, the database holds no job backend');

my $slots = $node->safe_psql('app', q{
	SELECT count(*), count(DISTINCT scheduled_for),
		   extract(epoch FROM max(scheduled_for) - min(scheduled_for))::int + 1
	  FROM schedlock.job_runs WHERE status = 'succeeded'});
my ($runs, $distinct, $span) = split /\|/, $slots;
cmp_ok($runs, '>=', 20, "the job ran its slots ($runs runs)");
is($distinct, $runs, 'no slot ran twice');
is($span, $runs, 'no slot between the first and the last is missing');
is($node->safe_psql('app',
		q{SELECT count(*) FROM schedlock.job_runs WHERE status <> 'succeeded'}),
	'0', 'every run succeeded, none skipped or failed');
is($node->safe_psql('app', 'SELECT count(*) FROM ticks'),
	$runs, 'each run committed its effect exactly once');
is($node->safe_psql('app',
		q{SELECT count(*) FROM schedlock.job_runs WHERE attempt <> 1 OR timeline <> 1}),
	'0', 'all first attempts, on timeline 1');
is($node->safe_psql('app',
		q{SELECT count(DISTINCT worker_pid) BETWEEN 1 AND 2 FROM schedlock.job_runs}),
	't', 'the runs were done by the role\'s job backend');

is($processes, 'schedlock job:app,schedlock launcher:-',
	'pg_stat_activity showed the launcher and one job backend of database app (its one role)');
is($node->safe_psql('app', q{
	SELECT consecutive_failures, last_status FROM schedlock.job_status WHERE job_name = 'tick'}),
	'0|succeeded', 'job_status shows the last run');

$node->stop;
done_testing();
