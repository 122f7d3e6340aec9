# 152_housekeeper_budget.pl: housekeepers have a budget of their own and
# never make a job backend leave.
#
# The cluster's budget is two job backends (schedlock.max_job_backends =
# 2), both in use: database "a" has an every-second SQL job, database "n"
# an every-second NOTIFY job nobody listens to, whose runs time out after
# a second, so that n's housekeeping falls due about every two seconds
# (it closes the expired runs).  Before, each housekeeper took the budget
# first and a job backend was asked to leave for it: a's job ran in a new
# backend every few seconds and its slots ran seconds late.  Now every
# run of a's job in 20 s ran in the same backend, the housekeepers ran
# (n's runs were closed as timed out), and every slot of a's job ran.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);

my $node = schedlock_node('housekeeper_budget',
	conf => [ "max_worker_processes = 12\nschedlock.max_job_backends = 2" ]);
for my $db ('a', 'n')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION schedlock');
}
$node->safe_psql('a', q{
	CREATE TABLE public.hits (slot timestamptz, pid int);
	SELECT schedlock.schedule_job('tick', '1 second',
		$$INSERT INTO public.hits
		  VALUES (current_setting('schedlock.scheduled_for')::timestamptz, pg_backend_pid())$$);
});
$node->safe_psql('n', q{
	SELECT schedlock.schedule_job('unheard', '1 second', notify_channel => 'nobody',
		timeout => '1 second');
});
ok(wait_true($node, 'a', 'SELECT count(*) >= 3 FROM public.hits', 60), "a's job runs");
ok(wait_true($node, 'n', q{SELECT count(*) >= 1 FROM schedlock.job_runs WHERE status = 'timed_out'}, 60),
	"n's housekeeping closes expired runs");

my $from = $node->safe_psql('a', 'SELECT max(slot) FROM public.hits');
my $t0 = time;
sleep 0.5 while time - $t0 < 20;
my $to = $node->safe_psql('a', 'SELECT max(slot) FROM public.hits');
my $closed = $node->safe_psql('n', qq{SELECT count(*) FROM schedlock.job_runs
	WHERE status = 'timed_out' AND finished_at > '$from'});
cmp_ok($closed, '>=', 4, "n's housekeepers ran meanwhile ($closed runs closed as timed out)");
my ($runs, $pids, $expected) = split /\|/, $node->safe_psql('a', qq{
	SELECT count(*), count(DISTINCT pid),
		   extract(epoch FROM '$to'::timestamptz - '$from'::timestamptz)::int + 1
	  FROM public.hits WHERE slot BETWEEN '$from' AND '$to'});
is($pids, '1', "every run of a's job in 20 s ran in the same job backend ($runs runs)");
is($runs, $expected, "every slot of a's job ran");

$node->stop;
done_testing();
