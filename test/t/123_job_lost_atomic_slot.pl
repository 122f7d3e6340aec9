# 123_job_lost_atomic_slot.pl: a job backend claims a run shortly before
# its instant and commits that claim on its own; the command, its outcome and
# the run's end commit together later.  When the backend ends in between
# (terminated here; a crash or a failover alike), the run is closed as lost.
# For an atomic job nothing of the command was committed, so its slot runs
# again, as its next attempt, even with max_attempts 1: the slot runs once.
# A non-atomic job's command may have committed work, so its lost slot is
# retried only as max_attempts allows (here: not at all).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

my $node = schedlock_node('lost_atomic',
	conf => [ "max_worker_processes = 16" ],
	app => 'database');
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	CREATE TABLE done (job text, at timestamptz);
	CREATE TABLE gate (job text, hold boolean);
	INSERT INTO gate VALUES ('atom', true), ('plain', true);
});

foreach my $case ([ 'atom', 'true' ], [ 'plain', 'false' ])
{
	my ($job, $atomic) = @$case;

	# the command records itself, then waits while the gate holds
	$node->safe_psql('app', qq{
		SELECT schedlock.schedule_job('$job', '5 seconds',
			\$\$INSERT INTO done VALUES ('$job', clock_timestamp());
			   SELECT pg_sleep(0.1) FROM gate, generate_series(1, 600)
			    WHERE job = '$job' AND hold\$\$,
			atomic => $atomic, enabled => false)});
	# enabled at least 2.5 s before its next slot, so that its backend is
	# there to claim the run ahead of its instant (a run claimed once due
	# commits no running row before its command)
	my $phase;
	do
	{
		$phase = $node->safe_psql('app',
			q{SELECT extract(epoch FROM clock_timestamp())::numeric % 5});
		sleep 0.1 if $phase < 0.5 || $phase > 2.5;
	} while ($phase < 0.5 || $phase > 2.5);
	$node->safe_psql('app', "SELECT schedlock.alter_job('$job', enabled => true)");
	$node->poll_query_until('app', qq{
		SELECT count(*) = 1 FROM pg_stat_activity
		 WHERE backend_type = 'schedlock job' AND query LIKE '/* schedlock job: $job */%'})
	  or die "$job did not start";
	my ($run, $slot, $pid) = split /\|/, $node->safe_psql('app', qq{
		SELECT r.run_id, r.scheduled_for, r.worker_pid
		  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.status = 'running'});
	ok($run, "$job: run $run of slot $slot is running in backend $pid");

	# the next runs pass the gate at once
	$node->safe_psql('app', "UPDATE gate SET hold = false WHERE job = '$job'");
	$node->safe_psql('app', "SELECT pg_terminate_backend($pid)");
	$node->poll_query_until("app", "SELECT status = 'lost' FROM schedlock.job_runs WHERE run_id = $run")
	  or die "$job: run $run was not closed as lost";
	pass("$job: the run is closed as lost when its backend has ended");

	if ($atomic eq 'true')
	{
		ok($node->poll_query_until('app', qq{
			SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			 WHERE j.job_name = '$job' AND r.scheduled_for = '$slot'
			   AND r.status = 'succeeded' AND r.attempt = 2}),
			"$job: the slot ran again, as attempt 2, with max_attempts 1")
		  or diag($node->safe_psql('app', qq{
			SELECT string_agg(r.run_id || ' ' || r.scheduled_for || ' ' || r.status || ' ' || r.attempt, E'\n' ORDER BY r.run_id)
			  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = '$job' AND r.run_id < $run + 4}));
	}
	else
	{
		# its next slot runs; the lost one does not come back
		$node->poll_query_until('app', qq{
			SELECT count(*) >= 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			 WHERE j.job_name = '$job' AND r.scheduled_for > '$slot' AND r.status = 'succeeded'})
		  or die "$job: no later slot ran";
		is($node->safe_psql('app', qq{
			SELECT string_agg(r.status, ',' ORDER BY r.run_id)
			  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			 WHERE j.job_name = '$job' AND r.scheduled_for = '$slot'}),
			'lost', "$job: a non-atomic job's lost slot is not run again (max_attempts 1)");
	}
	$node->safe_psql('app', "SELECT schedlock.alter_job('$job', enabled => false)");
	$node->poll_query_until('app', qq{
		SELECT count(*) = 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.status = 'running'})
	  or die "$job: a run stayed running";
	my ($rows, $ok) = split /\|/, $node->safe_psql('app', qq{
		SELECT (SELECT count(*) FROM done WHERE job = '$job'),
		       (SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		         WHERE j.job_name = '$job' AND r.status = 'succeeded')});
	if ($atomic eq 'true')
	{
		is($rows, $ok, "$job: one row per succeeded run ($ok): the lost run committed nothing");
	}
	else
	{
		is($rows, $ok + 1, "$job: one row per succeeded run ($ok), and the lost run's, committed by its command");
	}
}

$node->stop;
done_testing();
