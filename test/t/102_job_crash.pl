# 102_job_crash.pl: kill -9 of a worker in the middle of a long
# (non-atomic) pg_sleep job: the postmaster restarts the cluster, the run
# left "running" is closed as lost with the reason, and the following slots
# of the jobs run again.  While it runs, pg_stat_activity shows the command.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = schedlock_node('crash',
	conf => [
		"max_worker_processes = 32",
		"restart_after_crash = on" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE ticks (at timestamptz)');
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('sleepy', '2 seconds', 'SELECT pg_sleep(60)', atomic => false);
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (clock_timestamp())');
});

$node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND query LIKE '/* schedlock job: % */ SELECT pg_sleep(60)'})
  or die 'the sleepy job did not start';
pass('pg_stat_activity shows the worker running the job\'s command');

my ($run_id, $pid) = split /\|/, $node->safe_psql('app', q{
	SELECT r.run_id, r.worker_pid FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'sleepy' AND r.status = 'running'});
ok($pid, "run $run_id is running in worker $pid");

my $logstart = -s $node->logfile;
kill 'KILL', $pid;
wait_crash_restart($node, $logstart);
$node->poll_query_until('app', 'SELECT 1', '1')
  or die 'server did not come back after the crash';
ok($node->log_contains('terminating any other active server processes', $logstart),
	'killing the worker made the postmaster restart the cluster');

$node->poll_query_until('app',
	"SELECT status = 'lost' FROM schedlock.job_runs WHERE run_id = $run_id")
  or die 'the run was not closed as lost';
like($node->safe_psql('app', "SELECT message FROM schedlock.job_runs WHERE run_id = $run_id"),
	qr/ended before the run finished/, 'the lost run says why');
ok($node->safe_psql('app', "SELECT finished_at IS NOT NULL FROM schedlock.job_runs WHERE run_id = $run_id") eq 't',
	'and has a finish time');

my $restart = $node->safe_psql('app', 'SELECT pg_postmaster_start_time()');
$node->poll_query_until('app', qq{
	SELECT count(*) >= 2 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'tick' AND r.status = 'succeeded' AND r.started_at > '$restart'})
  or die 'tick did not run after the restart';
pass('later slots of the every-second job run after the restart');
$node->poll_query_until('app', qq{
	SELECT count(*) >= 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'sleepy' AND r.status = 'running' AND r.run_id > $run_id})
  or die 'sleepy did not start again';
pass('the long job starts again at a later slot');
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'sleepy' AND r.status = 'running'}),
	'1', 'and only one run of it is in progress (the others are skipped as overlap)');
$node->safe_psql('app', q{SELECT schedlock.unschedule_job('sleepy')});

$node->stop('immediate');
done_testing();
