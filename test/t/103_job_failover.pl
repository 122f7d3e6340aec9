# 103_job_failover.pl: a primary with a streaming standby.  The standby runs
# nothing (no schedlock process at all); the primary is stopped, the standby
# promoted, and dispatch resumes on the new timeline about as fast as it
# does after a restart of the primary, measured in the same test; the misfire
# policies hold for the slots missed in between (run_once: one catch-up run;
# skip: none, one skipped record), and @reboot jobs fire on promotion.  The
# promoted standby is not taken for a copy of the database (108_ops_copies).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $primary = schedlock_node('primary',
	init => { allows_streaming => 1 },
	conf => [ "max_worker_processes = 32" ],
	app => 'extension');
$primary->safe_psql('app', 'CREATE TABLE boots (at timestamptz)');
$primary->safe_psql('app', q{
	SELECT schedlock.schedule_job('once', '1 second', 'SELECT 1');
	SELECT schedlock.schedule_job('skipper', '1 second', 'SELECT 1', misfire => 'skip');
});

# the bound for resuming after promotion, measured here on this machine:
# how long after a restart of the primary its first run starts.  Promotion
# starts the same processes (the launcher once recovery ends, then a job
# backend), so it should take about as long.
$primary->poll_query_until('app', q{
	SELECT count(*) > 0 FROM schedlock.job_runs WHERE status = 'succeeded'})
  or die 'the primary did not run jobs';
$primary->restart;
my $restarted = time();
$primary->poll_query_until('app', q{
	SELECT count(*) > 0 FROM schedlock.job_runs
	 WHERE status = 'succeeded' AND started_at > pg_postmaster_start_time()})
  or die 'the primary did not run jobs after its restart';
my $restart_took = time() - $restarted;
$primary->safe_psql('app', q{
	SELECT schedlock.schedule_job('boot', '@reboot', 'INSERT INTO boots VALUES (now())')});

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# let the primary work for a while
$primary->poll_query_until('app', q{
	SELECT count(*) >= 4 FROM schedlock.job_runs WHERE status = 'succeeded'})
  or die 'the primary did not run jobs';
$primary->wait_for_catchup($standby);

is($standby->safe_psql('app', q{
	SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'schedlock%'}),
	'0', 'the standby runs no schedlock launcher or worker');
is($standby->safe_psql('app', 'SELECT count(*) FROM boots'), '0',
	'@reboot jobs scheduled after the primary started have not fired');
my ($ret, $stdout, $stderr) = $standby->psql('app', q{SELECT schedlock.schedule_job('x', '@daily', 'SELECT 1')});
like($stderr, qr/cannot execute schedlock\.schedule_job\(\) during recovery/,
	'schedule_job on the standby is refused');

# every function that changes locks, jobs or runs refuses the standby with
# one error: 25006, its own name, and the hint to connect to the primary
for my $call (
	[ 'schedlock.schedule_job', q{schedlock.schedule_job('x', '@daily', 'SELECT 1')} ],
	[ 'schedlock.schedule_once', q{schedlock.schedule_once('x', now() + interval '1 day', 'SELECT 1')} ],
	[ 'schedlock.alter_job', q{schedlock.alter_job('once', enabled => false)} ],
	[ 'schedlock.unschedule_job', q{schedlock.unschedule_job('once')} ],
	[ 'schedlock.unschedule_job', q{schedlock.unschedule_job(1::bigint)} ],
	[ 'schedlock.run_job', q{schedlock.run_job('once')} ],
	[ 'schedlock.delete_runs', q{schedlock.delete_runs('once')} ],
	[ 'schedlock.sync_job_roles', q{schedlock.sync_job_roles()} ],
	[ 'schedlock_claim_run', q{schedlock_claim_run(1)} ],
	[ 'schedlock_claim_run_payload', q{schedlock_claim_run_payload(1)} ],
	[ 'schedlock_finish_run', q{schedlock_finish_run(1, true)} ],
	[ 'schedlock_adopt_jobs', q{schedlock_adopt_jobs()} ],
	[ 'schedlock_import_pg_cron', q{schedlock_import_pg_cron()} ],
	[ 'schedlock_acquire', q{schedlock_acquire('l', '10 seconds')} ],
	[ 'schedlock_release', q{schedlock_release('l', 1)} ],
	[ 'schedlock_extend', q{schedlock_extend('l', 1, '10 seconds')} ],
	[ 'schedlock_assert', q{schedlock_assert('l', 1)} ])
{
	my ($name, $sql) = @$call;
	my (undef, undef, $err) = $standby->psql('app', "SELECT $sql",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err,
		qr/ERROR:  25006: cannot execute \Q$name\E\(\) during recovery\n.*HINT:  schedlock's locks, jobs and runs change on the primary server only/s,
		"$sql on the standby: 25006, its name and the hint");
}
# what only reads works there
is($standby->safe_psql('app', q{
	SELECT (SELECT count(*) FROM schedlock.job_status) > 0,
	       cron_next('@daily') IS NOT NULL,
	       (SELECT count(*) FROM schedlock_pending_runs('nobody')) = 0}),
	't|t|t', 'job_status, cron_next and schedlock_pending_runs work on the standby');

$primary->stop('fast');
my $replayed = $standby->safe_psql('app', 'SELECT max(run_id) FROM schedlock.job_runs');
# slots missed while nobody is primary: wait until each 1-second job is
# three slots behind, by the standby's clock and the rows it replayed
ok(wait_true($standby, 'app', q{
	SELECT bool_and(clock_timestamp() >= next_run_at + interval '2 seconds')
	  FROM schedlock.jobs WHERE job_name IN ('once', 'skipper')}),
	'the 1-second jobs fell three slots behind while nobody was primary');
is($standby->safe_psql('app', 'SELECT max(run_id) FROM schedlock.job_runs'),
	$replayed, 'nothing ran on the standby while there was no primary');

$standby->promote;
my $promoted = time();
my $resumed;
while (time() - $promoted < 120)
{
	if ($standby->safe_psql('app', q{
		SELECT count(*) > 0 FROM schedlock.job_runs
		 WHERE timeline = 2 AND status = 'succeeded'}) eq 't')
	{
		$resumed = time() - $promoted;
		last;
	}
	usleep(50_000);
}
ok(defined $resumed, 'jobs run again after promotion');
# one slot (1 s) more than twice the restart's figure: a launcher that
# waited for a nap, a poll or a second start would exceed it
cmp_ok($resumed // 999, '<=', 2 * $restart_took + 1,
	sprintf('about as fast as after a restart (%.2f s after promotion, %.2f s after a restart)',
		$resumed // 999, $restart_took));
is($standby->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_status WHERE paused_reason IS NOT NULL}),
	'0', 'a promoted standby is not a copy of the database: no job is paused');
unlike(slurp_file($standby->logfile), qr/are paused: they were scheduled in another database/,
	'and the new primary logs no WARNING about copied jobs');

$standby->poll_query_until('app', q{
	SELECT count(*) >= 4 FROM schedlock.job_runs WHERE timeline = 2 AND status = 'succeeded'})
  or die 'no steady dispatch after promotion';
# the end of the gap: when the new primary started its first run (read from
# the server, so that a slow client does not move it)
my $gap_end = $standby->safe_psql('app',
	'SELECT min(started_at) FROM schedlock.job_runs WHERE timeline = 2');

is($standby->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'once' AND r.timeline = 2
	   AND r.message = 'catch-up run for missed slots (misfire run_once)'}),
	'1', 'run_once: exactly one catch-up run for the missed slots');
# A run the stop of the primary cut short is closed as lost by the new
# primary, and an atomic job's lost slot runs again as its next attempt
# (123_job_lost_atomic_slot): that slot is not a missed one.  Whether the
# stop lands in a run depends on timing, so such slots are left out here.
my $not_lost = q{NOT EXISTS (SELECT FROM schedlock.job_runs l
	WHERE l.job_id = r.job_id AND l.scheduled_for = r.scheduled_for AND l.status = 'lost')};
is($standby->safe_psql('app', qq{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'once' AND r.scheduled_for < '$gap_end'::timestamptz - interval '1 second'
	   AND r.timeline = 2 AND $not_lost}),
	'1', 'run_once: no other missed slot ran');
is($standby->safe_psql('app', qq{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'skipper' AND r.status = 'succeeded'
	   AND r.scheduled_for < '$gap_end'::timestamptz - interval '1 second' AND r.timeline = 2
	   AND $not_lost}),
	'0', 'skip: no missed slot ran');
is($standby->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'skipper' AND r.status = 'skipped' AND r.timeline = 2}),
	'1', 'skip: the missed slots are recorded once as skipped');
$standby->poll_query_until('app', 'SELECT count(*) = 1 FROM boots')
  or die '@reboot job did not fire';
pass('@reboot job fired once on promotion');
is($standby->safe_psql('app', q{
	SELECT r.timeline FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'boot'}), '2', 'its run records timeline 2');
is($standby->safe_psql('app', q{
	SELECT count(*) FROM (SELECT job_id, scheduled_for FROM schedlock.job_runs
						   WHERE status IN ('succeeded', 'running')
						   GROUP BY 1, 2 HAVING count(*) > 1) d}),
	'0', 'no slot ran twice across the failover');

$standby->stop;
done_testing();
