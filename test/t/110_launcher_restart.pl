# 110_launcher_restart.pl: the launcher's state lives in shared memory.
# After pg_terminate_backend of the launcher the new launcher adopts the
# running job backend (same pid, still one for the database's one role,
# none doubled) and does not fire @reboot again; the database's housekeeper
# terminated during its start-up, before it fired @reboot, is started again
# and fires @reboot exactly once, and no job backend runs before it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('launcher_restart',
	conf => [
		"max_worker_processes = 32",
		"max_prepared_transactions = 2",
		# one job backend for the role: the counts below are exact
		"schedlock.max_runs_per_role = 1" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE boots (at timestamptz)');
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('boot', '@reboot', 'INSERT INTO boots VALUES (now())');
	SELECT schedlock.schedule_job('tick', '1 second', 'SELECT 1')});

# wait_for(DB, QUERY, EXPECTED, SECONDS): wait until the one value QUERY
# returns is EXPECTED (wait_true); then EXPECTED, or the value it has when
# the time is up
sub wait_for
{
	my ($db, $query, $expected, $seconds) = @_;
	die "EXPECTED must not hold a quote" if $expected =~ /'/;
	return $expected
	  if wait_true($node, $db, "SELECT ($query)::text = '$expected'", $seconds);
	return $node->safe_psql($db, $query);
}

my $workers_q = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND datname = 'app'};
my $pids_q = q{SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND datname = 'app'};
my $launcher_q = q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'schedlock launcher'};
# the every-second job's runs that started after an instant (an SQL
# expression): a check that something did not happen waits for a few of
# them, so that the scheduler has certainly had its chance
sub ticks_after
{
	my ($since, $n) = @_;
	$node->poll_query_until('app', qq{
		SELECT count(*) >= $n FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = 'tick' AND r.started_at > ($since)})
	  or die "the every-second job did not run $n times after $since";
}
my $boot_runs_q = q{SELECT count(*) FROM schedlock.job_runs r
	JOIN schedlock.jobs j USING (job_id)
	WHERE j.job_name = 'boot' AND r.started_at >= pg_postmaster_start_time()};

# a restart: the @reboot job runs once
$node->restart;
is(wait_for('app', $boot_runs_q, '1', 30), '1', '@reboot ran once after the server started');
is(wait_for('app', $workers_q, '1', 30), '1', 'one job backend serves database app');
my $pids = $node->safe_psql('app', $pids_q);

# terminate the launcher; the postmaster starts it again after 5 s
my $launcher = $node->safe_psql('postgres', $launcher_q);
ok($launcher =~ /^\d+$/, "the launcher runs (pid $launcher)");
$node->safe_psql('postgres', "SELECT pg_terminate_backend($launcher)");
my $new_launcher = '';
for (1 .. 300)
{
	$new_launcher = $node->safe_psql('postgres', $launcher_q);
	last if $new_launcher =~ /^\d+$/ && $new_launcher ne $launcher;
	select(undef, undef, undef, 0.1);
}
isnt($new_launcher, $launcher, "a new launcher runs (pid $new_launcher)");
# give the new launcher time to (wrongly) start backends and fire @reboot:
# until it has adopted the backend and several slots have run since
$node->wait_for_log(qr/schedlock launcher adopted 1 running job backends/, 0);
ticks_after(qq{SELECT backend_start FROM pg_stat_activity WHERE pid = $new_launcher}, 5);
is($node->safe_psql('app', $workers_q), '1',
	'still exactly one job backend for database app after the launcher restart');
is($node->safe_psql('app', $pids_q), $pids,
	'the new launcher adopted the same job backend');
is($node->safe_psql('app', $boot_runs_q), '1',
	'@reboot did not run again when the launcher restarted');
is($node->safe_psql('app', 'SELECT count(*) FROM boots'), '1',
	'the @reboot job committed its effect once');

# the housekeeper terminated during its start-up, before it fired @reboot:
# a prepared transaction holds schedlock.jobs across the restart, so the
# housekeeper waits for it; terminate it there, then let its successor go on
$node->safe_psql('app', q{
	BEGIN;
	LOCK TABLE schedlock.jobs IN ACCESS EXCLUSIVE MODE;
	PREPARE TRANSACTION 'hold_jobs'});
$node->restart;
my $blocked_q = q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'schedlock housekeeper' AND datname = 'app'
	  AND wait_event_type = 'Lock'};
my $w0 = '';
for (1 .. 300)
{
	$w0 = $node->safe_psql('postgres', $blocked_q);
	last if $w0 =~ /^\d+$/;
	select(undef, undef, undef, 0.1);
}
ok($w0 =~ /^\d+$/, "the housekeeper waits in its start-up (pid $w0)");
is($node->safe_psql('postgres', $workers_q), '0',
	'no job backend runs before the housekeeper is through');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($w0)");
# the launcher starts the housekeeper again after a delay; it waits too
my $w0b = '';
for (1 .. 300)
{
	$w0b = $node->safe_psql('postgres', $blocked_q);
	last if $w0b =~ /^\d+$/ && $w0b ne $w0;
	select(undef, undef, undef, 0.1);
}
ok($w0b =~ /^\d+$/ && $w0b ne $w0, "the housekeeper was started again (pid $w0b)");
$node->safe_psql('app', q{ROLLBACK PREPARED 'hold_jobs'});
is(wait_for('app', $boot_runs_q, '1', 30), '1',
	'@reboot ran once although the housekeeper failed during its start-up');
is(wait_for('app', $workers_q, '1', 30), '1', 'a job backend serves database app again');
ticks_after(q{SELECT max(r.started_at) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'boot'}, 3);
is($node->safe_psql('app', $boot_runs_q), '1', '@reboot ran exactly once');
is($node->safe_psql('app', 'SELECT count(*) FROM boots'), '2',
	'two @reboot effects in all: one per server start');

$node->stop;
done_testing();
