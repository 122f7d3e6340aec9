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
#   self_gone   due when claimed (next_run_at moved to now), unschedules
#               itself: its run is recorded once, succeeded, and the job is
#               gone (its run's record found no job row and failed the
#               run's transaction, again and again)
# Nothing is logged as an error of the scheduler's own.
# The same once more with schedlock.runs_per_commit = 16 and twenty quick
# jobs due with them, so that these jobs run in batches that share a commit
# and are claimed, asked about and recorded a set at a time.
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

# scenario(MODE, PREFIX): the four jobs, named PREFIX + self_*, and the checks
sub scenario
{
	my ($mode, $p) = @_;

	admin(qq{
		SELECT schedlock.schedule_job('${p}self_off', '1 seconds', \$\$
			INSERT INTO hits (job, run_id) VALUES ('${p}self_off', current_setting('schedlock.run_id')::bigint);
			SELECT schedlock.alter_job('${p}self_off', enabled => false)\$\$);
		SELECT schedlock.schedule_job('${p}self_tune', '1 seconds', \$\$
			INSERT INTO hits (job, run_id) VALUES ('${p}self_tune', current_setting('schedlock.run_id')::bigint);
			SELECT schedlock.alter_job('${p}self_tune', timeout => '9 seconds')\$\$);
		SELECT schedlock.schedule_job('${p}self_fail', '1 seconds', \$\$
			SELECT schedlock.alter_job('${p}self_fail', timeout => '7 seconds');
			SELECT 1/0\$\$);
		SELECT schedlock.schedule_job('${p}self_slow', '1 seconds', \$\$
			INSERT INTO hits (job, run_id) VALUES ('${p}self_slow', current_setting('schedlock.run_id')::bigint);
			SELECT schedlock.alter_job('${p}self_slow', schedule => '3 seconds')\$\$);
	});
	admin(qq{
		SELECT schedlock.schedule_job('${p}self_gone', '0 * * * *', \$\$
			INSERT INTO hits (job, run_id) VALUES ('${p}self_gone', current_setting('schedlock.run_id')::bigint);
			SELECT schedlock.unschedule_job('${p}self_gone')\$\$);
		SELECT schedlock.alter_job('${p}self_gone', next_run_at => now());
	});
	ok(wait_for(qq{SELECT count(*) >= 4 FROM schedlock.job_runs WHERE job_name = '${p}self_tune' AND status = 'succeeded'}, 30)
		  && wait_for(qq{SELECT count(*) >= 3 FROM schedlock.job_runs WHERE job_name = '${p}self_fail'}, 30)
		  && wait_for(qq{SELECT count(*) >= 3 FROM schedlock.job_runs WHERE job_name = '${p}self_slow'}, 30),
		"$mode: the jobs ran");
	admin(qq{SELECT schedlock.alter_job(j, enabled => false)
			  FROM unnest('{${p}self_tune,${p}self_fail,${p}self_slow}'::text[]) j});

	is(admin(qq{SELECT string_agg(status, ',') FROM schedlock.job_runs WHERE job_name = '${p}self_off'}),
		'succeeded', "$mode: self_off ran once, and succeeded");
	is(admin(qq{SELECT enabled FROM schedlock.jobs WHERE job_name = '${p}self_off'}), 'f',
		"$mode: self_off is disabled, as its command said");
	is(admin(qq{SELECT count(*) FROM hits WHERE job = '${p}self_off'}), '1', "$mode: self_off: its effect is there once");

	is(admin(qq{SELECT count(*) FROM schedlock.job_runs WHERE job_name = '${p}self_tune' AND status <> 'succeeded'}),
		'0', "$mode: self_tune: every run succeeded");
	is(admin(qq{SELECT count(*) FROM (SELECT scheduled_for FROM schedlock.job_runs WHERE job_name = '${p}self_tune'
									 GROUP BY 1 HAVING count(*) > 1) d}),
		'0', "$mode: self_tune: no slot ran twice");
	is(admin(qq{SELECT count(*) = count(DISTINCT run_id) AND count(*) = (SELECT count(*) FROM schedlock.job_runs
																		  WHERE job_name = '${p}self_tune')
				 FROM hits WHERE job = '${p}self_tune'}),
		't', "$mode: self_tune: each run left its row once");
	is(admin(qq{SELECT timeout FROM schedlock.jobs WHERE job_name = '${p}self_tune'}), '00:00:09',
		"$mode: self_tune: the timeout its command set is kept");
	is(admin(qq{SELECT total_runs = (SELECT count(*) FROM schedlock.job_runs WHERE job_name = '${p}self_tune')
				 FROM schedlock.jobs WHERE job_name = '${p}self_tune'}),
		't', "$mode: self_tune: its statistics count every run");

	is(admin(qq{SELECT string_agg(DISTINCT status || ' ' || sqlstate, ',') FROM schedlock.job_runs WHERE job_name = '${p}self_fail'}),
		'failed 22012', "$mode: self_fail: its runs failed with their own error");
	is(admin(qq{SELECT coalesce(timeout::text, 'none') FROM schedlock.jobs WHERE job_name = '${p}self_fail'}), 'none',
		"$mode: self_fail: the change its failed command made is rolled back");

	is(admin(qq{SELECT schedule FROM schedlock.jobs WHERE job_name = '${p}self_slow'}), '3 seconds',
		"$mode: self_slow: its schedule is the one its command set");
	# '3 seconds': the multiples of 3 s since 1970-01-01 00:00 UTC
	is(admin(qq{SELECT count(*) FROM schedlock.job_runs
				WHERE job_name = '${p}self_slow'
				  AND scheduled_for > (SELECT min(scheduled_for) FROM schedlock.job_runs WHERE job_name = '${p}self_slow')
				  AND extract(epoch FROM scheduled_for)::bigint % 3 <> 0}),
		'0', "$mode: self_slow: the runs after its first follow the new schedule");
	is(admin(qq{SELECT count(*) FROM (SELECT scheduled_for FROM schedlock.job_runs WHERE job_name = '${p}self_slow'
									 GROUP BY 1 HAVING count(*) > 1) d}),
		'0', "$mode: self_slow: no slot ran twice");

	ok(wait_for(qq{SELECT NOT EXISTS (SELECT FROM schedlock.jobs WHERE job_name = '${p}self_gone')}, 10),
		"$mode: self_gone: the job is gone, as its command said");
	is(admin(qq{SELECT string_agg(status, ',') FROM schedlock.job_runs WHERE job_name = '${p}self_gone'}),
		'succeeded', "$mode: self_gone: its run is recorded once, succeeded");
	is(admin(qq{SELECT count(*) FROM hits WHERE job = '${p}self_gone'}), '1',
		"$mode: self_gone: its effect is there once");

}

scenario('each run committed alone', '');

admin(q{ALTER SYSTEM SET schedlock.runs_per_commit = 16; SELECT pg_reload_conf()});
admin(q{SELECT count(schedlock.schedule_job('quick' || i, '1 seconds', 'SELECT 1'))
		  FROM generate_series(1, 20) i});
scenario('runs that share a commit', 'b_');
ok(admin(q{SELECT count(*) FROM schedlock.job_runs WHERE job_name LIKE 'quick%'}) > 40,
	'runs that share a commit: the quick jobs ran with them');

my $log = substr(slurp_file($node->logfile), $logstart);
unlike($log, qr/was recorded by another process|could not advance job|could not record/,
	'no error of the scheduler\'s own bookkeeping');

done_testing();
