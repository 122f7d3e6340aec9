# 106_ops_drop_extension.pl: DROP EXTENSION schedlock stops the database's
# job backends only when the drop may go ahead.
#  - The database owner, who does not own the extension, is refused, and no
#    worker was stopped: the worker pids are the same before and after, and
#    another role's long run in progress finishes as succeeded.
#  - A DROP EXTENSION that is terminated (pg_terminate_backend) while it
#    waits for a lock leaves the database with running workers again within
#    seconds, and jobs run again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = schedlock_node('drop_extension', conf => [ "max_worker_processes = 32" ]);
$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE DATABASE app OWNER dbowner;
});
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dbowner, bob;
	GRANT INSERT ON schedlock.jobs TO dbowner, bob;
	CREATE TABLE ticks (at timestamptz);
	GRANT INSERT ON ticks TO bob;
});

# pids of the database's workers, sorted
sub worker_pids
{
	return $node->safe_psql('app', q{
		SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity
		 WHERE backend_type = 'schedlock job' AND datname = 'app'});
}

# no job yet: no process (the housekeeper that found the extension leaves)
ok($node->poll_query_until('app', q{
	SELECT count(*) = 0 FROM pg_stat_activity
	 WHERE backend_type LIKE 'schedlock%' AND datname = 'app'}),
	'a database without jobs holds no schedlock process');

# bob's long non-atomic run: its run row says running while it sleeps
$node->safe_psql('app', q{
	SET ROLE bob;
	SELECT schedlock.schedule_job('long', '@daily', 'SELECT pg_sleep(8)', atomic => false);
	SELECT schedlock.run_job('long');
});
$node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'long' AND r.status = 'running'})
  or die 'the long run did not start';
my $run_id = $node->safe_psql('app', q{
	SELECT r.run_id FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'long' AND r.status = 'running'});
my $before = worker_pids();

my ($ret, $stdout, $stderr) = $node->psql('app', 'DROP EXTENSION schedlock',
	extra_params => [ '-U', 'dbowner' ]);
isnt($ret, 0, 'the database owner may not drop an extension it does not own');
like($stderr, qr/must be owner of extension schedlock/, 'PostgreSQL says why');
is($node->safe_psql('app', q{SELECT count(*) FROM pg_extension WHERE extname = 'schedlock'}),
	'1', 'the extension is still there');
# (the launcher may have started one more backend for bob meanwhile: the
# queue's due time is published once the long run's pass ends)
my %after = map { $_ => 1 } split /,/, worker_pids();
is(join(',', grep { !$after{$_} } split /,/, $before), '',
	"no job backend was stopped: every pid from before still runs ($before)");
$node->poll_query_until('app', qq{
	SELECT status <> 'running' FROM schedlock.job_runs WHERE run_id = $run_id})
  or die 'the long run did not finish';
is($node->safe_psql('app', qq{SELECT status FROM schedlock.job_runs WHERE run_id = $run_id}),
	'succeeded', "bob's run in progress was not killed: it finished as succeeded");

# A DROP EXTENSION that waits for a lock and is terminated meanwhile
$node->safe_psql('app', q{
	SET ROLE bob;
	SELECT schedlock.unschedule_job('long');
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO public.ticks VALUES (now())');
});
$node->poll_query_until('app', 'SELECT count(*) > 0 FROM ticks')
  or die 'the every-second job does not run';

my $holder = $node->background_psql('app');
$holder->query_safe('BEGIN; SELECT count(*) FROM schedlock.jobs;');
my $dropper = $node->background_psql('app', on_error_stop => 0);
$dropper->query_until(qr/start/, "\\echo start\nDROP EXTENSION schedlock;\n");
$node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE query LIKE 'DROP EXTENSION%' AND wait_event_type = 'Lock'})
  or die 'DROP EXTENSION did not wait for the lock';
is($node->safe_psql('app', q{
	SELECT count(*) FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'app'}),
	'0', 'while DROP EXTENSION waits, the workers have stepped aside');
$node->safe_psql('app', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	 WHERE query LIKE 'DROP EXTENSION%' AND pid <> pg_backend_pid()});
$holder->query_safe('COMMIT');
$holder->quit;
# the terminated backend's psql may have gone already: writing its \q can
# then fail with a broken pipe, which is no failure of the test
eval { $dropper->quit; };

my $t0 = time();
my $back;
while (time() - $t0 < 20)
{
	if ($node->safe_psql('app', q{
		SELECT count(*) FROM pg_stat_activity
		 WHERE backend_type = 'schedlock job' AND datname = 'app'}) ne '0')
	{
		$back = time() - $t0;
		last;
	}
	usleep(100_000);
}
ok(defined $back, 'after the terminated DROP EXTENSION the workers run again');
cmp_ok($back // 99, '<=', 10, sprintf('within 10 s (%.1f s)', $back // 99));
my $ticks = $node->safe_psql('app', 'SELECT count(*) FROM ticks');
$node->poll_query_until('app', "SELECT count(*) > $ticks + 1 FROM ticks")
  or die 'jobs do not run again';
pass('jobs run again');

# A drop that is allowed still works, and the workers leave for good
$node->safe_psql('app', 'DROP EXTENSION schedlock');
$node->poll_query_until('app', q{
	SELECT count(*) = 0 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'app'})
  or die 'workers stay after DROP EXTENSION';
pass('the superuser drops the extension and the workers are gone');

$node->stop;
done_testing();
