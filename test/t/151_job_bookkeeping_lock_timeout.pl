# 151_job_bookkeeping_lock_timeout.pl: the scheduler's own statements wait
# for a lock at most schedlock.bookkeeping_lock_timeout, so that a lock held
# on schedlock's tables (now only a superuser or the extension owner can
# take one) stops the jobs of that database only while it is held, and never
# those of another database.
#
# One job backend for the cluster (schedlock.max_job_backends = 1) and an
# every-second job in each of two databases.  A superuser holds job_runs of
# the first database in ACCESS EXCLUSIVE mode for a while: the first
# database's backend, whose run cannot be recorded, gives up the statement
# after the timeout instead of waiting, leaves, so that the slot goes to
# the other database, whose job goes on running; the first database's
# waiting_reason says why its jobs wait.  unschedule_job, called meanwhile,
# fails on the timeout (55P03) and changes nothing.
# Without the timeout the backend waited in the lock for as long as it was
# held, with the cluster's only job backend, and no job of either database
# ran.  Once the lock is gone the first database's job runs again, neither
# job was quarantined, and no job backend waited on a lock for much longer
# than the timeout.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = schedlock_node('bookkeeping_lock_timeout',
	conf => [ "max_worker_processes = 16\nschedlock.max_job_backends = 1\nschedlock.bookkeeping_lock_timeout = 500" ]);
for my $db ('one', 'two')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
		CREATE EXTENSION schedlock;
		CREATE TABLE public.ticks (at timestamptz DEFAULT clock_timestamp());
		SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO public.ticks DEFAULT VALUES');
	});
}
for my $db ('one', 'two')
{
	$node->poll_query_until($db, 'SELECT count(*) >= 2 FROM public.ticks')
	  or die "the job of $db does not run";
}

my $held = $node->background_psql('one', on_error_stop => 1);
$held->query_safe('BEGIN; LOCK TABLE schedlock.job_runs IN ACCESS EXCLUSIVE MODE');
my $t0 = time();
my $two0 = $node->safe_psql('two', 'SELECT count(*) FROM public.ticks');
# the other database's job goes on while the lock is held
my $ran = $node->poll_query_until('two', "SELECT count(*) >= $two0 + 4 FROM public.ticks");
ok($ran, 'the other database\'s every-second job runs while the lock is held');
# and the first database's backend never waits for long
my $longest = 0;
for (1 .. 20)
{
	my $w = $node->safe_psql('one', q{
		SELECT COALESCE(max(EXTRACT(epoch FROM clock_timestamp() - state_change)), 0)
		  FROM pg_stat_activity
		 WHERE application_name = 'schedlock job' AND wait_event_type = 'Lock'});
	$longest = $w if $w > $longest;
	usleep(100_000);
}
# the first database's queue says why it waits (the function job_status
# calls: the view itself reads job_runs, which the lock keeps it from)
ok( $node->poll_query_until('one', q{
		SELECT schedlock.job_wait_reason(current_user::regrole)
		  LIKE '%could not get a lock on schedlock''s tables%'}),
	'its waiting_reason says its backend could not get a lock');
cmp_ok($longest, '<', 5,
	"no job backend waited on the lock for longer than a few timeouts (longest seen ${longest} s)");
# the SQL API gives up too: unschedule_job behind the lock fails with 55P03
# after the timeout, instead of waiting, and changes nothing
my ($rc, $out, $err) = $node->psql('one', q{SELECT schedlock.unschedule_job('tick')});
isnt($rc, 0, 'unschedule_job behind the lock failed');
like($err, qr/lock timeout/, '... on the lock timeout');
$held->query_safe('COMMIT');
is($node->safe_psql('one', q{SELECT count(*) FROM schedlock.jobs WHERE job_name = 'tick'}),
	'1', '... and the job is still there');
$held->quit;

my $one0 = $node->safe_psql('one', 'SELECT count(*) FROM public.ticks');
ok($node->poll_query_until('one', "SELECT count(*) > $one0 FROM public.ticks"),
	'once the lock is gone, the first database\'s job runs again');
for my $db ('one', 'two')
{
	is($node->safe_psql($db, q{SELECT enabled::text || '|' || COALESCE(quarantine_reason, '')
		FROM schedlock.jobs WHERE job_name = 'tick'}), 'true|', "the job of $db was not quarantined");
}

$node->stop;
done_testing();
