# 120_job_lost_runs.pl: a run whose job backend is gone is closed as lost
# within seconds, while the server runs on, and the job goes on with its
# next slot.
#  (a) pg_terminate_backend of the job backend in the middle of a
#      non-atomic pg_sleep run: the run becomes lost within a few seconds
#      (the database's housekeeping, which the backend's exit asks for) and
#      a later slot of the job runs.  Before that, the run of the live
#      backend is left alone however long it takes.
#  (b) pid reuse: a run row naming the pid of a live backend that is not the
#      job backend running it -- an unrelated session, or the job's backend
#      between two runs -- is closed as lost too, and the job's slots run
#      again instead of being skipped as overlap.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockNode;
use Time::HiRes qw(usleep time);

my $node = schedlock_node('lost',
	conf => [
		"max_worker_processes = 32",
		"schedlock.max_workers = 1" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE ticks (at timestamptz)');

# --- (a) the job backend terminated under a running non-atomic job --------

$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('sleepy', '1 second', 'SELECT pg_sleep(60)', atomic => false);
});
wait_true($node, 'app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'sleepy' AND r.status = 'running'
	   AND r.started_at < clock_timestamp() - interval '1 second'}, 30)
  or die 'no run of the sleepy job stayed running';
my ($run_id, $pid) = split /\|/, $node->safe_psql('app', q{
	SELECT r.run_id, r.worker_pid FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'sleepy' AND r.status = 'running'});
ok($pid, "run $run_id is in progress in job backend $pid");

# the run of a live backend is not lost, however long it takes: not after
# a housekeeping of the database either (CREATE DATABASE has every database
# housekept; it counts the jobs when it is through)
housekeep_all($node, 'app', 'housekeep_me')
  or die 'the database was not housekept';
is($node->safe_psql('app', "SELECT status FROM schedlock.job_runs WHERE run_id = $run_id"),
	'running', 'the run of a live job backend stays running');

$node->safe_psql('app', qq{
	SELECT schedlock.alter_job('sleepy', command => 'SELECT 1');
	SELECT pg_terminate_backend($pid)});
wait_true($node, 'app', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)", 30)
  or die "job backend $pid did not stop";
pass('the job backend stopped in the middle of the run');

my $took = wait_true($node, 'app', 
	"SELECT status = 'lost' FROM schedlock.job_runs WHERE run_id = $run_id", 20);
ok(defined $took && $took < 5,
	'the run is closed as lost within 5 s of its job backend stopping ('
	  . (defined $took ? sprintf('%.1f s', $took) : 'not within 20 s') . ')');
like($node->safe_psql('app', "SELECT message FROM schedlock.job_runs WHERE run_id = $run_id"),
	qr/ended before the run finished/, 'the lost run says why');
ok(wait_true($node, 'app', qq{
	SELECT count(*) >= 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'sleepy' AND r.status = 'succeeded' AND r.run_id > $run_id}, 20),
	'a later slot of the job runs (in a new job backend)');
$node->safe_psql('app', q{SELECT schedlock.unschedule_job('sleepy')});

# --- (b) a run row naming a pid that now belongs to another backend -------

$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('victim', '1 second',
						'INSERT INTO ticks VALUES (clock_timestamp())', atomic => false);
});
wait_true($node, 'app', q{
	SELECT count(*) >= 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'victim' AND r.status = 'succeeded'}, 30)
  or die 'the victim job did not run';

# fake_run PID STARTED_AT SLOT : a running row of the victim job, written as
# its worker writes it (the timeline of its real runs), naming pid PID
sub fake_run
{
	my ($fpid, $started, $slot) = @_;
	return $node->safe_psql('app', qq{
		INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt,
										status, started_at, worker_pid, timeline)
		SELECT j.job_id, j.owner, '$slot', 1, 'running', '$started', $fpid,
			   (SELECT max(timeline) FROM schedlock.job_runs WHERE job_id = j.job_id)
		  FROM schedlock.jobs j WHERE j.job_name = 'victim'
		RETURNING run_id});
}

# victim_runs_after RUN : whether the victim job ran a slot after row RUN
sub victim_runs_after
{
	my ($after) = @_;
	return wait_true($node, 'app', qq{
		SELECT count(*) >= 2 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = 'victim' AND r.status = 'succeeded' AND r.run_id > $after}, 20);
}

# (b1) the pid of an unrelated live session
my $session = $node->background_psql('app');
my ($spid, $sstart) = split /\|/,
  $session->query_safe('SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()');
my $fake1 = fake_run($spid, "$sstart", '2000-01-01 00:00:00+00');
$took = wait_true($node, 'app', "SELECT status = 'lost' FROM schedlock.job_runs WHERE run_id = $fake1", 20);
ok(defined $took && $took < 5,
	"a run naming the pid of a live client session ($spid) is closed as lost ("
	  . (defined $took ? sprintf('%.1f s', $took) : 'not within 20 s') . ')');
ok(victim_runs_after($fake1), 'and the job runs on');

# (b2) the pid of the job's own backend, between two of its runs
my ($wpid, $wstart) = split /\|/, $node->safe_psql('app', q{
	SELECT pid, backend_start - interval '1 hour' FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'app'});
my $fake2 = fake_run($wpid, $wstart, '2000-01-02 00:00:00+00');
$took = wait_true($node, 'app', "SELECT status = 'lost' FROM schedlock.job_runs WHERE run_id = $fake2", 20);
ok(defined $took && $took < 5,
	"a run naming the pid of the job backend ($wpid) not running it is closed as lost ("
	  . (defined $took ? sprintf('%.1f s', $took) : 'not within 20 s') . ')');
ok(victim_runs_after($fake2), 'and the job runs on');
is($node->safe_psql('app', qq{
	SELECT count(*) FROM schedlock.job_runs WHERE run_id > $fake1 AND status = 'running'
	   AND started_at < clock_timestamp() - interval '10 seconds'}),
	'0', 'no run is left running');

$session->quit;
$node->stop;
done_testing();
