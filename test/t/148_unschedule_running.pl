# 148_unschedule_running.pl: unschedule_job and alter_job of a running job
# return at once; neither waits for the run.
#
# With the default budget, three jobs of one role overrun their period
# ('3 seconds' sleeping 4 s, '2 seconds' sleeping 3 s, and a non-atomic
# one of the same), so that some run of theirs is always in progress and
# a new one is claimed as soon as one ends.  Five times, at a random
# moment: one statement unschedules all three.  It must return while a run
# of theirs is still in progress (the caller's lock_timeout is 5 s, so a
# wait on a run's lock fails the statement instead of hanging the test);
# each run in progress then finishes and is recorded, and none starts
# after the statement returned (a run claimed ahead of its instant whose
# job goes before it does not start: it is closed as skipped, which the
# next part pins down).  Then alter_job of a running job returns
# while the run goes on, and the job's next run runs the new command.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use SchedlockJobNode;

my $node = job_node_conf('unschedule_running', q{max_worker_processes = 8});
admin(q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.hits (name text, at timestamptz DEFAULT now());
	CREATE ROLE ov LOGIN;
	GRANT INSERT, SELECT ON public.hits TO ov;
	GRANT INSERT ON schedlock.jobs TO ov;
});

my @jobs = (
	[ 'ovz', '3 seconds', 4, 'true' ],
	[ 'ovx', '2 seconds', 3, 'true' ],
	[ 'ovy', '2 seconds', 3, 'false' ]);

for my $try (1 .. 5)
{
	for my $j (@jobs)
	{
		my ($name, $every, $sleep, $atomic) = @$j;
		as_role('ov', qq{SELECT schedlock.schedule_job('$name', '$every',
			'INSERT INTO public.hits (name) VALUES (''$name''); SELECT pg_sleep($sleep)',
			atomic => $atomic)});
	}
	ok( wait_for(q{SELECT count(*) >= 2 FROM schedlock.job_runs
					WHERE job_name LIKE 'ov_' AND status = 'running'}, 60),
		"try $try: the jobs are running");
	sleep(rand(2));
	my ($rc, $out, $err) = $node->psql('app', q{
		SET lock_timeout = '5s';
		SET ROLE ov;
		SELECT string_agg(schedlock.unschedule_job(j)::text, ',')
		  FROM unnest(ARRAY['ovz', 'ovx', 'ovy']) j;
		RESET ROLE;
		SELECT count(*) FROM schedlock.job_runs
		 WHERE job_name LIKE 'ov_' AND status = 'running';
		SELECT clock_timestamp();});
	my ($deleted, $running, $returned) = split /\n/, $out;
	is($rc, 0, "try $try: the statement succeeded") or diag $err;
	is($deleted, 'true,true,true', "try $try: the three were unscheduled");
	cmp_ok($running // 0, '>', 0, "try $try: it returned while a run of theirs was still in progress");
	ok( wait_for(q{SELECT count(*) = 0 FROM schedlock.job_runs
					WHERE job_name LIKE 'ov_' AND finished_at IS NULL}, 60),
		"try $try: the runs in progress finished");
	is( admin(qq{SELECT count(*) FROM schedlock.job_runs
				  WHERE job_name LIKE 'ov_' AND status NOT IN ('succeeded', 'skipped')
					AND scheduled_for >= '$returned'::timestamptz - interval '5 seconds'}),
		'0', "try $try: each was recorded succeeded (or its slot skipped as an overlap)");
	is( admin(qq{SELECT count(*) FROM public.hits WHERE at > '$returned'}),
		'0', "try $try: none started after the statement returned")
	  or diag "returned $returned\n",
	  admin(q{SELECT string_agg(format('%s %s', name, at), E'\n' ORDER BY at) FROM public.hits}), "\n",
	  admin(q{SELECT string_agg(format('%s %s %s %s %s %s', id, job_name, scheduled_for, status, started_at, finished_at), E'\n' ORDER BY id)
				FROM schedlock.job_runs WHERE job_name LIKE 'ov_'});
	is(admin(q{SELECT count(*) FROM schedlock.jobs WHERE job_name LIKE 'ov_'}),
		'0', "try $try: the jobs are gone");
	admin(q{TRUNCATE public.hits});
}

# A run claimed ahead of its instant (its claim commits up to 50 ms before
# it) whose job is unscheduled, or disabled, before the instant does not
# start: it is closed as skipped.  The statement is issued the moment such
# a claim is seen; a try counts only if it committed before the instant (a
# slower one is tried again).
for my $case ([ 'unschedule', q{schedlock.unschedule_job('ahead')},
				'the job was unscheduled before the run started' ],
			  [ 'disable', q{schedlock.alter_job('ahead', enabled => false)},
				'the job was disabled before the run started' ])
{
	my ($what, $call, $message) = @$case;
	my $done = 0;
	for my $try (1 .. 20)
	{
		as_role('ov', q{SELECT schedlock.schedule_job('ahead', '1 seconds',
			'INSERT INTO public.hits (name) VALUES (''ahead'')')});
		my $out = as_role('ov', qq{
			DO \$\$
			DECLARE deadline timestamptz := clock_timestamp() + interval '30 s';
			BEGIN
				LOOP
					EXIT WHEN EXISTS (SELECT 1 FROM schedlock.job_runs
									   WHERE job_name = 'ahead' AND status = 'running'
										 AND started_at > clock_timestamp());
					IF clock_timestamp() > deadline THEN
						RAISE EXCEPTION 'no run was claimed ahead';
					END IF;
				END LOOP;
				PERFORM $call;
			END \$\$;
			SELECT clock_timestamp();});
		my $returned = (split /\n/, $out)[-1];
		my $ahead = admin(qq{SELECT run_id FROM schedlock.job_runs
							  WHERE job_name = 'ahead' AND started_at > '$returned'
							  ORDER BY run_id DESC LIMIT 1});
		# (the job runs no more: it is gone or disabled)
		ok( wait_for(q{SELECT count(*) = 0 FROM schedlock.job_runs
						WHERE job_name = 'ahead' AND finished_at IS NULL}, 60),
			"$what, try $try: no run of the job is left unfinished");
		as_role('ov', q{SELECT schedlock.unschedule_job('ahead', if_exists => true)});
		if ($ahead eq '')
		{
			note "$what, try $try: the statement committed after the instant, again";
			next;
		}
		is( admin(qq{SELECT status || ': ' || message FROM schedlock.job_runs WHERE run_id = $ahead}),
			"skipped: $message",
			"$what: the run claimed ahead was closed as skipped");
		is( admin(qq{SELECT count(*) FROM public.hits WHERE name = 'ahead' AND at > '$returned'}),
			'0', "$what: its command did not run");
		$done = 1;
		last;
	}
	ok($done, "$what: a statement committed between a claim and its instant");
}

# alter_job of a running job: returns at once, applies from the next run
as_role('ov', q{SELECT schedlock.schedule_job('ova', '2 seconds',
	'INSERT INTO public.hits (name) VALUES (''old''); SELECT pg_sleep(3)')});
ok( wait_for(q{SELECT count(*) = 1 FROM schedlock.job_runs
				WHERE job_name = 'ova' AND status = 'running'}, 60),
	'ova is running');
my ($rc, $out, $err) = $node->psql('app', q{
	SET lock_timeout = '5s';
	SET ROLE ov;
	SELECT schedlock.alter_job('ova',
		command => 'INSERT INTO public.hits (name) VALUES (''new'')');
	RESET ROLE;
	SELECT count(*) FROM schedlock.job_runs WHERE job_name = 'ova' AND status = 'running';});
is($rc, 0, 'alter_job succeeded') or diag $err;
like($out, qr/\n1$/, 'it returned while the run was in progress');
ok(wait_for(q{SELECT count(*) > 0 FROM public.hits WHERE name = 'new'}, 60),
	'the next run ran the new command');
is( admin(q{SELECT count(*) FROM schedlock.job_runs
			 WHERE job_name = 'ova' AND status NOT IN ('succeeded', 'running', 'skipped')}),
	'0', 'no run of ova failed');
as_role('ov', q{SELECT schedlock.unschedule_job('ova')});

$node->stop;
done_testing();
