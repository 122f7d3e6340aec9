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
# after the statement returned.  Then alter_job of a running job returns
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
	CREATE TABLE public.hits (name text, at timestamptz DEFAULT clock_timestamp());
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
		'0', "try $try: none started after the statement returned");
	is(admin(q{SELECT count(*) FROM schedlock.jobs WHERE job_name LIKE 'ov_'}),
		'0', "try $try: the jobs are gone");
	admin(q{TRUNCATE public.hits});
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
