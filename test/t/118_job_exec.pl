# 118_job_exec.pl: what a job's command sees and costs while it runs.
#  - now() of a run is never before its scheduled_for (atomic and
#    non-atomic), and each statement of a non-atomic job has a now() of its
#    own; the start lag (clock_timestamp() at start minus scheduled_for) is
#    printed;
#  - what jobs write reaches the statistics (pg_stat_user_tables of the
#    job's table and of schedlock.job_runs) within seconds;
#  - an atomic job's result rows are not kept in the worker: a
#    3,000,000-row SELECT leaves the worker's peak memory (VmHWM) about
#    where it was, and 10,000 runs do not make its private memory grow.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockNode;
use Time::HiRes qw(usleep);

my $node = schedlock_node('job_exec',
	conf => [
		"max_worker_processes = 32",
		# one job backend for the role: the memory part below watches the backend
		# that runs every job, kept by an every-second job
		"schedlock.max_runs_per_role = 1" ],
	app => 'extension');

# --- now() of a run --------------------------------------------------------
# Each run records now(), statement_timestamp() and clock_timestamp() and
# its run id (schedlock.run_id) and slot (schedlock.scheduled_for); the
# view joins its run row, once that has been written, to compare.
$node->safe_psql('app', q{
	CREATE TABLE seen_at (job text, stmt int, tx_now timestamptz,
						  stmt_ts timestamptz, clock timestamptz, run_id bigint,
						  slot timestamptz);
	CREATE FUNCTION record_run(job text, stmt int) RETURNS void
	LANGUAGE sql AS $$
		INSERT INTO seen_at
		VALUES (job, stmt, now(), statement_timestamp(), clock_timestamp(),
				current_setting('schedlock.run_id')::bigint,
				current_setting('schedlock.scheduled_for')::timestamptz)
	$$;
	CREATE VIEW seen AS
	SELECT s.*, r.scheduled_for
	  FROM seen_at s JOIN schedlock.job_runs r USING (run_id);
	SELECT schedlock.schedule_job('at', '1 seconds', $$SELECT record_run('at', 1)$$);
	SELECT schedlock.schedule_job('na', '1 seconds',
		$$SELECT record_run('na', 1); SELECT pg_sleep(0.02); SELECT record_run('na', 2)$$,
		atomic => false);
	-- schedlock.scheduled_for reads back whatever DateStyle and TimeZone
	SELECT schedlock.schedule_job('dmy', '1 seconds',
		$$SET datestyle = 'SQL, DMY'; SET timezone = 'Pacific/Chatham'; SELECT record_run('dmy', 1)$$);
});
ok(wait_true($node, 'app', q{SELECT count(DISTINCT scheduled_for) >= 8 FROM seen WHERE job = 'at' AND stmt = 1}, 60)
	  && wait_true($node, 'app', q{SELECT count(DISTINCT scheduled_for) >= 8 FROM seen WHERE job = 'na' AND stmt = 2}, 60),
	'both jobs ran at least 8 times');
$node->safe_psql('app', q{
	SELECT schedlock.alter_job('at', enabled => false);
	SELECT schedlock.alter_job('na', enabled => false);
	SELECT schedlock.alter_job('dmy', enabled => false)});
ok(wait_true($node, 'app', q{
	SELECT count(*) = 0 FROM schedlock.job_runs WHERE finished_at IS NULL}, 30),
	'disabled, the jobs have no run open');

diag('start lag in ms (job, runs, median, max): ',
	$node->safe_psql('app', q{
		SELECT string_agg(format('%s %s %s %s', job, n, med, mx), '; ' ORDER BY job)
		  FROM (SELECT job, count(*) AS n,
					   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY lag)::numeric, 2) AS med,
					   round(max(lag)::numeric, 2) AS mx
				  FROM (SELECT job, extract(epoch FROM clock - scheduled_for) * 1000 AS lag
						  FROM seen WHERE stmt = 1) l GROUP BY job) s}));
is($node->safe_psql('app', q{
	SELECT count(*) FROM seen WHERE job = 'at' AND tx_now < scheduled_for}),
	'0', 'an atomic run never sees a now() before its scheduled_for');
is($node->safe_psql('app', q{
	SELECT count(*) FROM seen WHERE job = 'at' AND stmt_ts < scheduled_for}),
	'0', 'nor a statement_timestamp() before it');
is($node->safe_psql('app', q{
	SELECT count(*) FROM seen WHERE job = 'na' AND tx_now < scheduled_for}),
	'0', 'a non-atomic run never sees a now() before its scheduled_for');
is($node->safe_psql('app', q{
	SELECT count(*) FROM seen s1 JOIN seen s2 USING (job, scheduled_for)
	 WHERE job = 'na' AND s1.stmt = 1 AND s2.stmt = 2
	   AND s2.tx_now < s1.clock + interval '20 milliseconds'}),
	'0', 'each statement of a non-atomic run has a now() of its own, taken when it starts');
is($node->safe_psql('app', q{
	SELECT count(*) FROM seen WHERE slot IS DISTINCT FROM scheduled_for}),
	'0', 'a command reads its run\'s scheduled_for in schedlock.scheduled_for (atomic and non-atomic)');
cmp_ok($node->safe_psql('app', q{SELECT count(*) FROM seen WHERE job = 'dmy'}), '>=', 3,
	'a job whose session reads dates as SQL, DMY in Pacific/Chatham ran');
cmp_ok($node->safe_psql('app', q{
	SELECT max(extract(epoch FROM clock - scheduled_for) * 1000) FROM seen WHERE stmt = 1}),
	'<', 1000, 'every run started within a second of its slot');

# --- statistics ------------------------------------------------------------
$node->safe_psql('app', q{
	CREATE TABLE filled (x int);
	CREATE TABLE filled_na (x int);
	SELECT pg_stat_reset();
	SELECT schedlock.schedule_job('fill', '1 seconds', 'INSERT INTO filled SELECT generate_series(1, 10)');
	SELECT schedlock.schedule_job('fill_na', '1 seconds', 'INSERT INTO filled_na VALUES (1); INSERT INTO filled_na VALUES (2)',
						atomic => false)});
ok(wait_true($node, 'app', q{SELECT n_tup_ins >= 10 FROM pg_stat_user_tables WHERE relname = 'filled'}, 20),
	'an atomic job\'s inserts show in pg_stat_user_tables within seconds');
ok(wait_true($node, 'app', q{SELECT n_tup_ins >= 2 FROM pg_stat_user_tables WHERE relname = 'filled_na'}, 20),
	'a non-atomic job\'s inserts show in pg_stat_user_tables within seconds');
ok(wait_true($node, 'app', q{SELECT n_tup_ins > 0 AND n_tup_upd > 0 FROM pg_stat_user_tables
			   WHERE relid = 'schedlock.job_runs'::regclass}, 20),
	'the workers\' own writes to schedlock.job_runs show too');
ok(wait_true($node, 'app', q{SELECT n_tup_upd > 0 FROM pg_stat_user_tables
			   WHERE relid = 'schedlock.jobs'::regclass}, 20),
	'and to schedlock.jobs');
$node->safe_psql('app', q{
	SELECT schedlock.alter_job('fill', enabled => false);
	SELECT schedlock.alter_job('fill_na', enabled => false)});

# --- memory ----------------------------------------------------------------
# the workers' pids, and a field of /proc/PID/status in kB
$node->safe_psql('app', q{SELECT schedlock.schedule_job('keepalive', '1 seconds', 'SELECT 1')});
wait_true($node, 'app', q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'schedlock job'}, 30);
my @pids = split /\n/, $node->safe_psql('app', q{
	SELECT pid FROM pg_stat_activity WHERE backend_type = 'schedlock job' ORDER BY pid});
cmp_ok(scalar(@pids), '>=', 1, 'the job backend is found');

sub status_kb
{
	my ($pid, $field) = @_;
	open(my $fh, '<', "/proc/$pid/status") or die "/proc/$pid/status: $!";
	while (my $line = <$fh>)
	{
		return $1 if $line =~ /^\Q$field\E:\s+(\d+) kB/;
	}
	die "no $field in /proc/$pid/status";
}

sub max_kb
{
	my ($field) = @_;
	my $m = 0;
	for my $pid (@pids)
	{
		my $v = status_kb($pid, $field);
		$m = $v if $v > $m;
	}
	return $m;
}

sub runs_done
{
	my ($job) = @_;
	return $node->safe_psql('app', qq{
		SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.status NOT IN ('queued', 'pending', 'running')});
}

my %hwm_before = map { $_ => status_kb($_, 'VmHWM') } @pids;
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('big', '0 0 1 1 *', 'SELECT g FROM generate_series(1, 3000000) g');
	SELECT schedlock.run_job('big')});
ok(wait_true($node, 'app', q{SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			   WHERE j.job_name = 'big' AND r.status = 'succeeded'}, 120),
	'the 3,000,000-row SELECT job succeeded');
my $growth = 0;
for my $pid (@pids)
{
	my $g = status_kb($pid, 'VmHWM') - $hwm_before{$pid};
	$growth = $g if $g > $growth;
}
diag("VmHWM growth of the worker that ran the 3,000,000-row SELECT: $growth kB");
cmp_ok($growth, '<', 40 * 1024,
	'its result rows were not kept: the worker\'s peak memory grew by less than 40 MB');

# 10,000 quick runs of atomic and non-atomic jobs, succeeding and failing,
# returning rows: the workers' private memory (RssAnon) after the first
# 2,000 and after all of them
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('q_at', '0 0 1 1 *', 'SELECT g, repeat(''x'', 100) FROM generate_series(1, 200) g');
	SELECT schedlock.schedule_job('q_na', '0 0 1 1 *', 'SELECT g FROM generate_series(1, 200) g; SELECT 1', atomic => false);
	SELECT schedlock.schedule_job('q_fail', '0 0 1 1 *', 'SELECT 1/0')});

# queue $n runs of each quick job and wait until they are done
my $queued = 0;
sub quick_runs
{
	my ($n) = @_;
	$queued += $n;
	for my $job ('q_at', 'q_na', 'q_fail')
	{
		$node->safe_psql('app', qq{SELECT count(schedlock.run_job('$job')) FROM generate_series(1, $n)});
	}
	for my $job ('q_at', 'q_na', 'q_fail')
	{
		my $until = time() + 600;
		usleep(100_000) while time() < $until && runs_done($job) < $queued;
	}
	return runs_done('q_at') + runs_done('q_na') + runs_done('q_fail');
}

is(quick_runs(700), 2100, '2,100 quick runs done');
my $rss_warm = max_kb('RssAnon');
is(quick_runs(2700), 10200, '10,200 quick runs done');
my $rss_end = max_kb('RssAnon');
diag("workers' largest RssAnon: $rss_warm kB after 2,100 runs, $rss_end kB after 10,200");
cmp_ok($rss_end - $rss_warm, '<', 2048,
	'the workers\' private memory did not grow over the last 8,100 runs (less than 2 MB)');

$node->stop;
done_testing();
