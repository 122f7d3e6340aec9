# 113_ops_retention.pl: schedlock.history_retention bounds
# schedlock.job_runs whatever the backlog.  200,000 finished runs are
# loaded while a job runs every second; a DBA then lowers the retention
# below their age (ALTER SYSTEM, reload).  Within 60 s they are gone: the
# housekeeping starts at the reload, and while it is behind it deletes in
# short batches and comes back soon, instead of 10,000 rows a pass once a
# minute.  The every-second job keeps running meanwhile, runs newer than
# the retention and runs still open are kept, and
# schedlock.history_backlog() tells how far behind the pruning is.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = schedlock_node('retention',
	conf => [
		qq{
max_worker_processes = 16
schedlock.history_retention = '7d'
} ],
	app => 'extension');
$node->safe_psql('app', q{
	CREATE TABLE ticks (at timestamptz);
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (clock_timestamp())');
	SELECT schedlock.schedule_job('hist', '0 0 1 1 *', 'SELECT 1', timezone => 'UTC', enabled => false);
});
$node->poll_query_until('app', 'SELECT count(*) >= 2 FROM ticks')
  or die 'the every-second job does not run';

# the backlog: 200,000 runs that finished 2 to 3 days ago; 100 runs of an
# hour ago and an open (queued) run of three days ago, which stay
$node->safe_psql('app', q{
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
									started_at, finished_at)
	SELECT j.job_id, j.owner, now() - interval '2 days' - i * interval '400 ms', 1,
		   CASE WHEN i % 2 = 0 THEN 'succeeded' ELSE 'failed' END,
		   now() - interval '2 days' - i * interval '400 ms',
		   now() - interval '2 days' - i * interval '400 ms' + interval '10 ms'
	  FROM schedlock.jobs j, generate_series(1, 200000) i WHERE j.job_name = 'hist';
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
									started_at, finished_at)
	SELECT j.job_id, j.owner, now() - interval '1 hour' - i * interval '1 s', 1,
		   'succeeded', now() - interval '1 hour' - i * interval '1 s',
		   now() - interval '1 hour' - i * interval '1 s' + interval '10 ms'
	  FROM schedlock.jobs j, generate_series(1, 100) i WHERE j.job_name = 'hist';
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, manual, status)
	SELECT j.job_id, j.owner, now() - interval '3 days', 1, true, 'queued'
	  FROM schedlock.jobs j WHERE j.job_name = 'hist';
	ANALYZE schedlock.job_runs;
});

# query SQL in app; its output, or its error (a missing function fails an
# assertion instead of ending the test)
sub query
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('app', $sql);
	return $rc == 0 ? $out : "error: $err";
}

my $census = q{
	SELECT count(*) FILTER (WHERE finished_at < now() - interval '1 day'),
		   count(*) FILTER (WHERE finished_at >= now() - interval '1 day'
							  AND job_id = (SELECT job_id FROM schedlock.jobs WHERE job_name = 'hist')),
		   count(*) FILTER (WHERE finished_at IS NULL AND status = 'queued')
	  FROM schedlock.job_runs};
is($node->safe_psql('app', $census), '200000|100|1', 'the backlog is in place');
is(query(q{SELECT behind, expired_runs FROM schedlock.history_backlog()}),
	'00:00:00|0', 'under a retention of 7 days nothing is behind');

# the DBA lowers the retention to one day
my $ticks0 = $node->safe_psql('app', 'SELECT count(*) FROM ticks');
$node->safe_psql('app', q{ALTER SYSTEM SET schedlock.history_retention = '1d'});
$node->safe_psql('app', 'SELECT pg_reload_conf()');
my $t0 = time;
$node->poll_query_until('app', q{
	SELECT current_setting('schedlock.history_retention') = '1d'});
is(query(q{
	SELECT behind > interval '1 day', expired_runs > 0 FROM schedlock.history_backlog()}),
	't|t', 'history_backlog() shows the pruning behind by more than a day');

my $gone = 0;
while (time - $t0 < 60)
{
	if ($node->safe_psql('app', q{
		SELECT NOT EXISTS (SELECT 1 FROM schedlock.job_runs
							WHERE finished_at < now() - interval '1 day')}) eq 't')
	{
		$gone = 1;
		last;
	}
	usleep(250_000);
}
my $took = time - $t0;
ok($gone, sprintf('the 200,000 expired runs are gone within 60 s (%.1f s)', $took));
is($node->safe_psql('app', $census), '0|100|1',
	'the runs newer than the retention and the open run are kept');
is(query(q{SELECT behind, expired_runs FROM schedlock.history_backlog()}),
	'00:00:00|0', 'history_backlog() shows nothing behind');

# the every-second job went on meanwhile, and goes on
$node->poll_query_until('app', qq{SELECT count(*) >= $ticks0 + 4 FROM ticks})
  or die 'the every-second job stopped';
my $ticks = $node->safe_psql('app', 'SELECT count(*) FROM ticks') - $ticks0;
my $span = time - $t0;
cmp_ok($ticks, '>=', int($span) - 2,
	sprintf('the every-second job kept running while the history was pruned (%d runs in %.1f s)',
		$ticks, $span));
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'tick' AND r.status <> 'succeeded'}),
	'0', 'none of its runs failed or was skipped');

$node->stop;
done_testing();
