# 111_worker_pool.pl: long runs do not starve other jobs.  With two
# 25-second runs in progress and an every-second job of the same role, the
# role's job backends grow (up to schedlock.max_runs_per_role, 3 by
# default) and the every-second job keeps starting without waiting for them
# to end; once the long runs are over the extra backends leave when idle.  A
# role with more long jobs than schedlock.max_runs_per_role runs at most
# that many at once, and another role's every-second job does not wait for
# them either.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);

my $node = schedlock_node('worker_pool',
	conf => [
		"max_worker_processes = 32",
		"schedlock.max_workers = 4",
		# the extra backends leave after 5 s without a job
		"schedlock.job_backend_idle_timeout = '5s'" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE ticks (at timestamptz)');

my $workers_q = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND datname = 'app'};

# wait_for(QUERY, EXPECTED, SECONDS): wait until the one value QUERY returns
# in app is EXPECTED (wait_true); then EXPECTED, or the value it has when
# the time is up
sub wait_for
{
	my ($query, $expected, $seconds) = @_;
	die "EXPECTED must not hold a quote" if $expected =~ /'/;
	return $expected
	  if wait_true($node, 'app', "SELECT ($query)::text = '$expected'", $seconds);
	return $node->safe_psql('app', $query);
}

# the tick runs of job $name scheduled in [$from + 1 s, $to): how many, how
# many distinct slots, the slots expected, and the largest start lag in ms
sub ticks_between
{
	my ($name, $from, $to) = @_;
	return $node->safe_psql('app', qq{
		SELECT count(*), count(DISTINCT r.scheduled_for),
			   floor(extract(epoch FROM '$to'::timestamptz))::int
			   - floor(extract(epoch FROM '$from'::timestamptz))::int - 1,
			   coalesce(round(max(extract(epoch FROM r.started_at - r.scheduled_for)) * 1000), -1)
		  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$name' AND r.status = 'succeeded'
		   AND r.scheduled_for >= date_trunc('second', '$from'::timestamptz) + interval '1 second'
		   AND r.scheduled_for < '$to'});
}

# how many runs of job $name scheduled after the second of $from succeeded
sub ticks_run
{
	my ($name, $from) = @_;
	return $node->safe_psql('app', qq{
		SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$name' AND r.status = 'succeeded'
		   AND r.scheduled_for >= date_trunc('second', '$from'::timestamptz) + interval '1 second'});
}

# the tick runs of job $name scheduled in [$from + 1 s, $to), due before
# the first of the runs of the jobs named LIKE $long (in progress over the
# whole window) finished, that started after it: ticks that waited for a
# backend; 'unfinished' while none of those runs has finished
sub starved_ticks
{
	my ($name, $long, $from, $to) = @_;
	return $node->safe_psql('app', qq{
		WITH f AS (SELECT min(l.finished_at) AS at
					 FROM schedlock.job_runs l JOIN schedlock.jobs lj USING (job_id)
					WHERE lj.job_name LIKE '$long')
		SELECT CASE WHEN f.at IS NULL THEN 'unfinished' ELSE (
			SELECT count(*)::text
			  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			 WHERE j.job_name = '$name' AND r.status = 'succeeded'
			   AND r.scheduled_for >= date_trunc('second', '$from'::timestamptz) + interval '1 second'
			   AND r.scheduled_for < '$to' AND r.scheduled_for < f.at
			   AND r.started_at >= f.at) END
		  FROM f});
}

is(wait_for($workers_q, '0', 30), '0', 'no job backend before there is a job');

$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('tick', '1 second',
						'INSERT INTO ticks VALUES (clock_timestamp())');
	SELECT schedlock.schedule_job('long1', '0 0 1 1 *', 'SELECT pg_sleep(25)');
	SELECT schedlock.schedule_job('long2', '0 0 1 1 *', 'SELECT pg_sleep(25)')});
# the every-second job runs before the long runs are asked for
ok(wait_true($node, 'app', 'SELECT count(*) >= 2 FROM ticks'), 'the every-second job runs');
$node->safe_psql('app', q{SELECT schedlock.run_job('long1'); SELECT schedlock.run_job('long2')});
# an atomic run's row commits with it: see the runs in pg_stat_activity
my $long_q = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND query LIKE '/* schedlock job: % */ SELECT pg_sleep(25)'};
is(wait_for($long_q, '2', 10), '2', 'both long runs are in progress');
my $from = $node->safe_psql('app', 'SELECT clock_timestamp()');
# the window: until 10 of the tick's slots after $from have run (at most
# 20 s: the long runs last 25)
my $max_workers = 0;
my $t0 = time;
while (time - $t0 < 20 && ticks_run('tick', $from) < 10)
{
	my $n = $node->safe_psql('app', $workers_q);
	$max_workers = $n if $n > $max_workers;
	sleep 0.5;
}
my $to = $node->safe_psql('app', 'SELECT clock_timestamp()');
my ($runs, $distinct, $slots, $lag) = split /\|/, ticks_between('tick', $from, $to);
note "tick during the long runs: $runs runs, $distinct slots of $slots, max lag $lag ms";
cmp_ok($runs, '>=', $slots - 1,
	"the every-second job ran during the long runs ($runs of $slots slots)");
is($distinct, $runs, 'no slot ran twice');
cmp_ok($lag, '>=', 0, 'lag measured');
is($max_workers, 3,
	"the role's job backends grew to schedlock.max_runs_per_role (3)");
is($node->safe_psql('app', $long_q), '2', 'the long runs are still in progress');

# after the long runs, the extra backends leave
is(wait_for(q{SELECT count(*) FROM schedlock.job_runs WHERE status = 'succeeded'
	AND job_id IN (SELECT job_id FROM schedlock.jobs WHERE job_name LIKE 'long%')}, '2', 30),
	'2', 'both long runs finished');
# a starved job would wait for a long run to end; the bound is that end,
# measured here: every tick of the window started before either long run
# finished
is(starved_ticks('tick', 'long%', $from, $to), '0',
	"no tick of the window waited for a long run to end (max lag $lag ms)");
is(wait_for($workers_q, '1', 60), '1', 'the extra job backends left; one serves the every-second job');
$node->safe_psql('app', q{SELECT schedlock.alter_job('tick', enabled => false)});

# per-role cap: alice's five long jobs run at most two at a time
$node->append_conf('postgresql.conf', "schedlock.max_runs_per_role = 2");
$node->reload;
$node->safe_psql('app', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE TABLE bob_ticks (at timestamptz);
	GRANT INSERT ON bob_ticks TO bob;
	GRANT INSERT ON schedlock.jobs TO alice, bob});
$node->safe_psql('app', q{
	SET ROLE bob;
	SELECT schedlock.schedule_job('bob_tick', '1 second',
						'INSERT INTO bob_ticks VALUES (clock_timestamp())')});
$node->safe_psql('app', q{
	SET ROLE alice;
	SELECT schedlock.schedule_job('a' || i, '0 0 1 1 *', 'SELECT pg_sleep(15)')
	  FROM generate_series(1, 5) i});
ok(wait_true($node, 'app', 'SELECT count(*) >= 2 FROM bob_ticks'), "bob's every-second job runs");
$node->safe_psql('app', q{
	SET ROLE alice;
	SELECT schedlock.run_job('a' || i) FROM generate_series(1, 5) i});
my $alice_q = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND query LIKE '/* schedlock job: % */ SELECT pg_sleep(15)'};
is(wait_for($alice_q, '2', 10), '2', "two of alice's runs are in progress");
$from = $node->safe_psql('app', 'SELECT clock_timestamp()');
# the window: until 8 of bob's slots after $from have run (at most 12 s:
# alice's runs last 15)
my $max_alice = 0;
$t0 = time;
while (time - $t0 < 12 && ticks_run('bob_tick', $from) < 8)
{
	my $n = $node->safe_psql('app', $alice_q);
	$max_alice = $n if $n > $max_alice;
	sleep 0.25;
}
$to = $node->safe_psql('app', 'SELECT clock_timestamp()');
is($max_alice, 2, 'alice never had more than schedlock.max_runs_per_role (2) runs at once');
($runs, $distinct, $slots, $lag) = split /\|/, ticks_between('bob_tick', $from, $to);
note "bob_tick while alice's jobs run: $runs runs, $distinct slots of $slots, max lag $lag ms";
cmp_ok($runs, '>=', $slots - 1,
	"bob's every-second job ran meanwhile ($runs of $slots slots)");
cmp_ok($lag, '>=', 0, 'lag measured');
# alice's deferred runs start as earlier ones end
is(wait_for(q{SELECT count(*) FROM schedlock.job_runs
	WHERE status = 'succeeded' AND owner = 'alice'::regrole}, '5', 60),
	'5', "all five of alice's runs ran in the end");
is(starved_ticks('bob_tick', 'a_', $from, $to), '0',
	"no tick of bob's waited for one of alice's runs to end (max lag $lag ms)");

$node->stop;
done_testing();
