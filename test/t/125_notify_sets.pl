# 125_notify_sets.pl: NOTIFY jobs due together are claimed and published a
# set at a time (one claim statement and one publishing statement for many
# jobs), and each comes out as it would alone.
#   (a) 300 one-off NOTIFY jobs of one role due at one instant, among them
#       one whose earlier run is still pending (its slot is skipped as an
#       overlap) and one whose owner may not log in (its run fails, 28000):
#       every other job is notified exactly once, with the run id of its
#       one pending run, and has ended; no set fell back to one at a time.
#   (b) one job of a set whose channel pg_notify refuses (a name too long,
#       written into its row by a superuser): the set's transaction is
#       rolled back and its jobs are published one at a time next, the bad
#       job is charged with the error, and every other job of the set is
#       notified exactly once.
#   (c) up to three job backends of the role catch up 5 missed slots of
#       2000 every-second NOTIFY jobs (misfire run_all) at once: while a
#       job's run is pending its later slots are skipped as overlaps, so no
#       job has two runs pending, whichever backend claimed which slot.
#   (d) 100 NOTIFY jobs with a 2-second claim timeout published as a set,
#       and nobody claims them: the housekeeping closes each as timed out
#       soon after its deadline.
#   (e) 4000 NOTIFY jobs of one role due at one instant, scheduled 8 s
#       ahead while idle backends leave after 2 s: the backend that counted
#       them left, and told the launcher how early to start the next, which
#       makes them ready before the instant: the backend that publishes them
#       started more than 150 ms before it (260 ms with the lead, 100
#       without), none is committed before it, and (without assertions,
#       whose build is slower) at least 2000 in one transaction (what the 50
#       ms before the instant allow is about 1500 on 2 cores; with the lead,
#       2851 to 4000 under the suite's load; a machine busy with other work
#       may miss it, and then a second burst must make it).  How soon after
#       the instant the last one goes out is a figure of the benchmark
#       (test/bench/run.sh, notify), not checked here.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use SchedlockJobNode;

my $node = job_node_conf('notify_sets', qq{
max_worker_processes = 32
schedlock.max_runs_per_role = 1
track_commit_timestamp = on
});
admin(q{
	CREATE EXTENSION schedlock;
	CREATE ROLE app_r LOGIN;
	CREATE ROLE carol NOLOGIN;
});

# a listener: LISTEN, and later the notifications psql shows after a query
my $listener = $node->background_psql('app', on_error_stop => 1);
$listener->query_safe('LISTEN sets');

# heard(): the run ids of the notifications received since the last call
sub heard
{
	my $out = $listener->query_safe('SELECT 1');
	return ($out =~ /Asynchronous notification "sets" with payload "\{[^}]*"run_id" : (\d+)/g);
}

# at(SECONDS): a whole second at least SECONDS ahead
sub at
{
	my ($secs) = @_;
	return admin(qq{SELECT date_trunc('second', now()) + interval '$secs seconds'});
}

# --- (a) a set with an overlap and a role that may not log in ---------------

my $instant = at(4);
admin(qq{
	SELECT count(schedlock.schedule_once('n' || i, '$instant', notify_channel => 'sets',
										 run_as => 'app_r'))
	  FROM generate_series(1, 300) i;
	-- n7: a run of an earlier slot is still pending
	INSERT INTO schedlock.job_runs (job_id, job_name, owner, scheduled_for, attempt,
									status, started_at, deadline, worker_pid, timeline)
	SELECT job_id, job_name, owner, '$instant'::timestamptz - interval '1 minute', 1,
		   'pending', now(), now() + interval '1 hour', 0, 1
	  FROM schedlock.jobs WHERE job_name = 'n7';
	-- n9: owned by a role that may not log in
	UPDATE schedlock.jobs SET owner = 'carol'::regrole WHERE job_name = 'n9';
});
ok(wait_for(q{SELECT count(*) = 0 FROM schedlock.jobs WHERE job_name LIKE 'n%' AND next_run_at IS NOT NULL}, 60),
	'every job of the set was claimed');
my @heard;
for (1 .. 50)
{
	push @heard, heard();
	last if @heard >= 298;
	sleep 0.1;
}
my %count;
$count{$_}++ for @heard;
is(scalar(@heard), 298, 'the listener heard 298 notifications (300 jobs but the skipped and the failed one)');
is(scalar(grep { $count{$_} > 1 } keys %count), 0, 'none of them twice');
my $pending = admin(qq{
	SELECT string_agg(run_id::text, ' ' ORDER BY run_id) FROM schedlock.job_runs
	 WHERE status = 'pending' AND scheduled_for = '$instant'});
is(join(' ', sort { $a <=> $b } keys %count), $pending,
	'each names the one pending run of its job for the instant');
is(admin(qq{
	SELECT count(*) FROM schedlock.jobs j
	 WHERE j.job_name LIKE 'n%' AND j.job_name NOT IN ('n7', 'n9')
	   AND (SELECT count(*) FROM schedlock.job_runs r
			 WHERE r.job_id = j.job_id AND r.status = 'pending'
			   AND r.scheduled_for = '$instant' AND r.attempt = 1
			   AND r.deadline > r.started_at) <> 1}),
	'0', 'every other job has exactly one pending run of its slot, with a deadline');
like(admin(q{
	SELECT string_agg(status, ',' ORDER BY scheduled_for) FROM schedlock.job_runs WHERE job_name = 'n7'}),
	qr/^pending,skipped$/, 'n7: its slot was skipped as an overlap, its earlier run still pending');
is(admin(q{
	SELECT status || '|' || sqlstate FROM schedlock.job_runs WHERE job_name = 'n9'}),
	'failed|28000', 'n9: its run failed, as its owner may not log in');
unlike(slurp_file($node->logfile), qr/could not publish \d+ NOTIFY runs in one statement/,
	'no set was published one job at a time');

# --- (b) a job that pg_notify refuses, in a set -----------------------------

my $logstart = -s $node->logfile;
$instant = at(4);
admin(qq{
	SELECT count(schedlock.schedule_once('m' || i, '$instant', notify_channel => 'sets',
										 run_as => 'app_r'))
	  FROM generate_series(1, 100) i;
	UPDATE schedlock.jobs SET notify_channel = repeat('x', 70) WHERE job_name = 'm5';
});
ok(wait_for(q{SELECT count(*) = 0 FROM schedlock.jobs WHERE job_name LIKE 'm%' AND job_name <> 'm5' AND next_run_at IS NOT NULL}, 60),
	'the other jobs of the set were claimed');
@heard = ();
for (1 .. 50)
{
	push @heard, heard();
	last if @heard >= 99;
	sleep 0.1;
}
%count = ();
$count{$_}++ for @heard;
is(scalar(keys %count) . ' ' . scalar(@heard), '99 99',
	'the listener heard each of the other 99 jobs once');
is(admin(qq{
	SELECT count(*) FROM schedlock.job_runs
	 WHERE status = 'pending' AND scheduled_for = '$instant' AND job_name <> 'm5'}),
	'99', 'each of them has its pending run');
is(admin(q{SELECT count(*) FROM schedlock.job_runs WHERE job_name = 'm5'}), '0',
	'the bad job recorded no run');
my $log = substr(slurp_file($node->logfile), $logstart);
like($log, qr/LOG:  schedlock: could not publish \d+ NOTIFY runs in one statement, publishing them one at a time next/,
	'the set fell back to one job at a time, and said so');
like($log, qr/schedlock job "m5" of role "app_r" in database "app" broke dispatch \(SQLSTATE 22023\)/,
	'the error was charged to the bad job');

# --- (c) three backends catch up missed slots at once ----------------------

admin(q{
	ALTER SYSTEM SET schedlock.max_runs_per_role = 3;
	SELECT pg_reload_conf();
	SELECT count(schedlock.schedule_job('c' || i, '1 seconds', notify_channel => 'catch_up',
										misfire => 'run_all', run_as => 'app_r'))
	  FROM generate_series(1, 2000) i;
	-- 5 slots missed: as if the server had been down
	UPDATE schedlock.jobs SET next_slot = date_trunc('second', now()) - interval '5 seconds',
							  next_run_at = date_trunc('second', now()) - interval '5 seconds'
	 WHERE job_name LIKE 'c%';
});
ok(wait_for(q{SELECT count(*) = 2000 FROM (SELECT job_name FROM schedlock.job_runs
				WHERE job_name LIKE 'c%' GROUP BY 1 HAVING count(*) >= 7) x}, 60),
	'every job caught up its missed slots and went on');
admin(q{UPDATE schedlock.jobs SET enabled = false WHERE job_name LIKE 'c%'});
is(admin(q{
	SELECT count(*) FROM (SELECT job_name FROM schedlock.job_runs
						   WHERE job_name LIKE 'c%' AND status = 'pending'
						   GROUP BY 1 HAVING count(*) > 1) x}),
	'0', 'no job has two runs pending');
is(admin(q{
	SELECT count(*) FROM (SELECT job_name FROM schedlock.job_runs
						   WHERE job_name LIKE 'c%' AND status = 'pending'
						   GROUP BY 1 HAVING count(*) = 1) x}),
	'2000', 'each has its first caught-up slot pending, its later slots skipped');
diag('backends that published the caught-up runs: ', admin(q{
	SELECT count(DISTINCT worker_pid) FROM schedlock.job_runs
	 WHERE job_name LIKE 'c%' AND status = 'pending'}));

# --- (d) published runs nobody claims time out -----------------------------

$instant = at(3);
admin(qq{
	SELECT count(schedlock.schedule_once('t' || i, '$instant', notify_channel => 'nobody',
										 timeout => '2 seconds', run_as => 'app_r'))
	  FROM generate_series(1, 100) i});
ok(wait_for(q{SELECT count(*) = 100 FROM schedlock.job_runs WHERE job_name LIKE 't%'}, 30),
	'the 100 runs were published');
# (the deadline is the instant plus the timeout; closing a run clears it)
ok(wait_for(q{SELECT count(*) = 100 FROM schedlock.job_runs
			   WHERE job_name LIKE 't%' AND status = 'timed_out'}, 30),
	'each was closed as timed out');
is(admin(q{SELECT count(*) FROM schedlock.job_runs
			WHERE job_name LIKE 't%' AND finished_at > scheduled_for + interval '4 seconds'}),
	'0', 'within 2 s of its deadline');

# --- (e) a large burst is made ready before its instant ----------------------

# burst(PREFIX): 4000 NOTIFY jobs due 8 s ahead; returns the instant, the
# largest number of their runs committed in one transaction, and when each
# job backend of app_r seen meanwhile started (pid => backend_start)
sub burst
{
	my ($prefix) = @_;
	my $at = at(8);
	my %started;
	admin(qq{
		SELECT count(schedlock.schedule_once('$prefix' || i, '$at', notify_channel => 'burst',
											 run_as => 'app_r'))
		  FROM generate_series(1, 4000) i});
	for (1 .. 1200)
	{
		my ($done, @pids) = split /\|/, admin(qq{
			SELECT (SELECT count(*) = 4000 FROM schedlock.job_runs
					 WHERE job_name LIKE '$prefix%'),
				   string_agg(pid || '=' || backend_start, '|')
			  FROM pg_stat_activity
			 WHERE backend_type = 'schedlock job' AND usename = 'app_r'});
		for (@pids)
		{
			my ($pid, $start) = split /=/, $_, 2;
			$started{$pid} //= $start;
		}
		last if $done eq 't';
		sleep 0.05;
	}
	my $most = admin(qq{SELECT max(n) FROM (SELECT count(*) AS n FROM schedlock.job_runs
											 WHERE job_name LIKE '$prefix%' GROUP BY xmin::text) t});
	return ($at, $most, \%started);
}

admin(q{ALTER SYSTEM SET schedlock.job_backend_idle_timeout = '2s'; SELECT pg_reload_conf()});
my ($most, $started);
($instant, $most, $started) = burst('e');
is(admin(q{SELECT count(*) FROM schedlock.job_runs WHERE job_name LIKE 'e%'}),
	'4000', 'the 4000 runs were published');
is(admin(qq{SELECT count(*) FROM schedlock.job_runs
			 WHERE job_name LIKE 'e%' AND pg_xact_commit_timestamp(xmin) < '$instant'}),
	'0', 'none was committed before the instant');
# the backend that published most of them: started its lead ahead (the
# usual start is 100 ms before the instant; 4000 jobs add 160 ms)
my $publisher = admin(q{SELECT worker_pid FROM schedlock.job_runs WHERE job_name LIKE 'e%'
						 GROUP BY 1 ORDER BY count(*) DESC LIMIT 1});
my $start = $started->{$publisher} // 'infinity';
note "backend $publisher started $start, the instant is $instant";
is( admin(qq{SELECT '$start'::timestamptz < '$instant'::timestamptz - interval '150 ms'}),
	't', 'their backend was started more than 150 ms before the instant');
SKIP:
{
	skip 'timing: a build with assertions is slower', 1
	  if admin('SHOW debug_assertions') eq 'on';
	# a machine busy with other work may miss it once: a second burst then
	if ($most < 2000)
	{
		note "$most in one transaction; a second burst";
		(undef, $most) = burst('f');
	}
	cmp_ok($most, '>=', 2000, 'at least 2000 of them were committed in one transaction');
}
admin(q{ALTER SYSTEM RESET schedlock.job_backend_idle_timeout; SELECT pg_reload_conf()});

$listener->quit;
done_testing();
