# 126_job_alters_itself.pl: a job whose own command changes its job with
# schedlock.alter_job (disables itself, changes its timeout or its
# schedule) is recorded once per slot, and what its command changed stays.
# An atomic run that was due when its claim's transaction began writes its
# run and its job's advanced state when it has ended; the job's row may
# have been changed by the command by then.
#   self_off    runs once and disables itself: one succeeded run, disabled
#   self_tune   sets its own timeout every run: a succeeded run every slot,
#               no slot twice, the timeout kept
#   self_fail   sets its own timeout, then fails: failed runs, the change
#               rolled back with the command
#   self_slow   moves itself from every second to every 3 seconds: the
#               runs after it follow the new schedule
# Nothing is logged as an error of the scheduler's own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('alters_itself');
admin(q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.hits (job text, run_id bigint, at timestamptz DEFAULT clock_timestamp());
});
my $logstart = -s $node->logfile;

admin(q{
	SELECT schedlock.schedule_job('self_off', '1 seconds', $$
		INSERT INTO hits (job, run_id) VALUES ('self_off', current_setting('schedlock.run_id')::bigint);
		SELECT schedlock.alter_job('self_off', enabled => false)$$);
	SELECT schedlock.schedule_job('self_tune', '1 seconds', $$
		INSERT INTO hits (job, run_id) VALUES ('self_tune', current_setting('schedlock.run_id')::bigint);
		SELECT schedlock.alter_job('self_tune', timeout => '9 seconds')$$);
	SELECT schedlock.schedule_job('self_fail', '1 seconds', $$
		SELECT schedlock.alter_job('self_fail', timeout => '7 seconds');
		SELECT 1/0$$);
	SELECT schedlock.schedule_job('self_slow', '1 seconds', $$
		INSERT INTO hits (job, run_id) VALUES ('self_slow', current_setting('schedlock.run_id')::bigint);
		SELECT schedlock.alter_job('self_slow', schedule => '3 seconds')$$);
});
ok(wait_for(q{SELECT count(*) >= 4 FROM schedlock.job_runs WHERE job_name = 'self_tune' AND status = 'succeeded'}, 30)
	  && wait_for(q{SELECT count(*) >= 3 FROM schedlock.job_runs WHERE job_name = 'self_fail'}, 30)
	  && wait_for(q{SELECT count(*) >= 3 FROM schedlock.job_runs WHERE job_name = 'self_slow'}, 30),
	'the jobs ran');
admin(q{SELECT schedlock.alter_job(j, enabled => false)
		  FROM unnest('{self_tune,self_fail,self_slow}'::text[]) j});

is(admin(q{SELECT string_agg(status, ',') FROM schedlock.job_runs WHERE job_name = 'self_off'}),
	'succeeded', 'self_off ran once, and succeeded');
is(admin(q{SELECT enabled FROM schedlock.jobs WHERE job_name = 'self_off'}), 'f',
	'self_off is disabled, as its command said');
is(admin(q{SELECT count(*) FROM hits WHERE job = 'self_off'}), '1', 'its effect is there once');

is(admin(q{SELECT count(*) FROM schedlock.job_runs WHERE job_name = 'self_tune' AND status <> 'succeeded'}),
	'0', 'self_tune: every run succeeded');
is(admin(q{SELECT count(*) FROM (SELECT scheduled_for FROM schedlock.job_runs WHERE job_name = 'self_tune'
								 GROUP BY 1 HAVING count(*) > 1) d}),
	'0', 'self_tune: no slot ran twice');
is(admin(q{SELECT count(*) = count(DISTINCT run_id) AND count(*) = (SELECT count(*) FROM schedlock.job_runs
																	  WHERE job_name = 'self_tune')
			 FROM hits WHERE job = 'self_tune'}),
	't', 'self_tune: each run left its row once');
is(admin(q{SELECT timeout FROM schedlock.jobs WHERE job_name = 'self_tune'}), '00:00:09',
	'self_tune: the timeout its command set is kept');
is(admin(q{SELECT total_runs = (SELECT count(*) FROM schedlock.job_runs WHERE job_name = 'self_tune')
			 FROM schedlock.jobs WHERE job_name = 'self_tune'}),
	't', 'self_tune: its statistics count every run');

is(admin(q{SELECT string_agg(DISTINCT status || ' ' || sqlstate, ',') FROM schedlock.job_runs WHERE job_name = 'self_fail'}),
	'failed 22012', 'self_fail: its runs failed with their own error');
is(admin(q{SELECT coalesce(timeout::text, 'none') FROM schedlock.jobs WHERE job_name = 'self_fail'}), 'none',
	'self_fail: the change its failed command made is rolled back');

is(admin(q{SELECT schedule FROM schedlock.jobs WHERE job_name = 'self_slow'}), '3 seconds',
	'self_slow: its schedule is the one its command set');
# '3 seconds': the multiples of 3 s since 1970-01-01 00:00 UTC
is(admin(q{SELECT count(*) FROM schedlock.job_runs
			WHERE job_name = 'self_slow'
			  AND scheduled_for > (SELECT min(scheduled_for) FROM schedlock.job_runs WHERE job_name = 'self_slow')
			  AND extract(epoch FROM scheduled_for)::bigint % 3 <> 0}),
	'0', 'self_slow: the runs after its first follow the new schedule');
is(admin(q{SELECT count(*) FROM (SELECT scheduled_for FROM schedlock.job_runs WHERE job_name = 'self_slow'
								 GROUP BY 1 HAVING count(*) > 1) d}),
	'0', 'self_slow: no slot ran twice');

my $log = substr(slurp_file($node->logfile), $logstart);
unlike($log, qr/was recorded by another process|could not advance job|could not record/,
	'no error of the scheduler\'s own bookkeeping');

done_testing();
