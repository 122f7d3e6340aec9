# 121_job_cancel.pl: pg_cancel_backend on a job backend cancels the job it
# runs, nothing else.
#  (a) An idle job backend that is cancelled (again and again, whatever it
#      is doing between jobs) stays, with the same pid, and jobs run on.
#  (b) A job backend running a long job, atomic or not, that is cancelled:
#      the run fails with SQLSTATE 57014, the backend stays (same pid) and
#      runs the role's next jobs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockNode;
use Time::HiRes qw(usleep time);

my $node = schedlock_node('cancel',
	conf => [
		"max_worker_processes = 32",
		# one job backend for the role: the one cancelled is the one that runs every
		# job, and the every-second job keeps it from leaving
		"schedlock.max_runs_per_role = 1" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE ticks (at timestamptz)');

sub worker_pid
{
	return $node->safe_psql('app', q{
		SELECT pid FROM pg_stat_activity
		 WHERE backend_type = 'schedlock job' AND datname = 'app'});
}

# ticks_after TIME : whether the tick job ran twice after TIME
sub ticks_after
{
	my ($after) = @_;
	return wait_true($node, 'app', "SELECT count(*) >= 2 FROM ticks WHERE at > '$after'", 20);
}

# --- (a) an idle job backend -------------------------------------------------

$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (clock_timestamp())');
});
wait_true($node, 'app', 'SELECT count(*) >= 1 FROM ticks', 20) or die 'the tick job did not run';
wait_true($node, 'app', q{SELECT count(*) = 1 FROM pg_stat_activity
			 WHERE backend_type = 'schedlock job' AND datname = 'app'}, 30)
  or die 'no job backend for database app';
my $pid = worker_pid();

# twenty cancels over two seconds: most find the worker asleep, some in
# its own statements between runs
foreach my $i (1 .. 20)
{
	$node->safe_psql('app', "SELECT pg_cancel_backend($pid)");
	usleep(100_000);
}
my $cancelled_at = $node->safe_psql('app', 'SELECT clock_timestamp()');
# once the job has run twice since, a backend the cancels had ended would
# have been replaced
my $ticked = ticks_after($cancelled_at);
is(worker_pid(), $pid, "the job backend cancelled while idle is still there, pid $pid");
ok($ticked, 'and runs the every-second job on');

# --- (b) a job backend running a long job -----------------------------------

# (the backend of part (a), or its successor if part (a) failed)
wait_true($node, 'app', q{SELECT count(*) = 1 FROM pg_stat_activity
			 WHERE backend_type = 'schedlock job' AND datname = 'app'}, 30)
  or die 'no job backend for database app';
$pid = worker_pid();

foreach my $atomic ('true', 'false')
{
	my $name = $atomic eq 'true' ? 'long_atomic' : 'long_toplevel';
	$node->safe_psql('app', qq{
		SELECT schedlock.schedule_job('$name', '\@reboot', 'SELECT pg_sleep(60)', atomic => $atomic);
		SELECT schedlock.run_job('$name');
	});
	wait_true($node, 'app', qq{SELECT count(*) = 1 FROM pg_stat_activity
				  WHERE pid = $pid AND query LIKE '/* schedlock job: % */ SELECT pg_sleep(60)'}, 20)
	  or die "the $name job did not start";
	$node->safe_psql('app', "SELECT pg_cancel_backend($pid)");
	ok(wait_true($node, 'app', qq{
		SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$name' AND r.status = 'failed' AND r.sqlstate = '57014'}, 10),
		"$name: the cancelled run failed with 57014");
	is(worker_pid(), $pid, "$name: the job backend is still there, pid $pid");
	my $after = $node->safe_psql('app', 'SELECT clock_timestamp()');
	ok(ticks_after($after), "$name: and runs the next jobs");
	$node->safe_psql('app', "SELECT schedlock.unschedule_job('$name')");
}

$node->stop;
done_testing();
