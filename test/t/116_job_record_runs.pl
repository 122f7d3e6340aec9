# 116_job_record_runs.pl: which ended runs schedlock.job_runs keeps.
#   record_runs => 'failures' (alter_job): the job's succeeded runs are
#     counted in its statistics but leave no row, its failed runs are kept;
#     a skipped slot leaves no row either.
#   schedlock.record_runs = failures (reload): the same for every job that
#     does not say otherwise; record_runs => 'all' keeps a job's runs
#     anyway, and 'default' follows the setting again.
#   runs written once they have ended (jobs due when their backend claims
#     them): a succeeded one writes no row at all (none inserted and
#     deleted again); a failed one does, and so does one whose command
#     changed its own job (its row marks the slot as run); each command
#     ran once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node_conf('record_runs', "max_worker_processes = 16\n");
admin(q{
	CREATE EXTENSION schedlock SCHEMA public;
	CREATE TABLE public.flip (fail boolean);
	INSERT INTO public.flip VALUES (false);
	SELECT schedlock.schedule_job('quiet', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('loud', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('flaky', '0 0 1 1 *',
		$$SELECT 1 / CASE WHEN fail THEN 0 ELSE 1 END FROM public.flip$$);
	SELECT schedlock.alter_job('quiet', record_runs => 'failures');
	SELECT schedlock.alter_job('flaky', record_runs => 'failures');
});

# runs of JOB: "rows|total_runs|succeeded_runs|failed_runs"
sub rows_and_counts
{
	my ($job) = @_;
	return admin(qq{
		SELECT (SELECT count(*) FROM schedlock.job_runs r WHERE r.job_id = j.job_id)
			   || '|' || j.total_runs || '|' || j.succeeded_runs || '|' || j.failed_runs
		  FROM schedlock.jobs j WHERE j.job_name = '$job'});
}

# run JOB once by schedlock.run_job() and wait until it is counted
sub run_once
{
	my ($job) = @_;
	my $before = admin(qq{SELECT total_runs FROM schedlock.jobs WHERE job_name = '$job'});
	admin(qq{SELECT schedlock.run_job('$job')});
	wait_for(qq{SELECT total_runs > $before FROM schedlock.jobs WHERE job_name = '$job'})
	  or die "job $job did not run";
}

run_once('quiet') for 1 .. 3;
is(rows_and_counts('quiet'), '0|3|3|0',
	"record_runs => 'failures': three succeeded runs counted, no row kept");
run_once('loud') for 1 .. 2;
is(rows_and_counts('loud'), '2|2|2|0', 'a job of the default setting keeps its rows');
is(admin(q{SELECT last_success_at IS NOT NULL, consecutive_failures
			 FROM schedlock.job_status WHERE job_name = 'quiet'}),
	't|0', 'job_status still shows the last success of the job whose runs are not kept');

run_once('flaky');
admin('UPDATE public.flip SET fail = true');
run_once('flaky');
admin('UPDATE public.flip SET fail = false');
run_once('flaky');
is(rows_and_counts('flaky'), '1|3|2|1', 'of a flaky job, only the failed run is kept');
is(admin(q{SELECT r.status || '|' || r.sqlstate FROM schedlock.job_runs r
			 JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'flaky'}),
	'failed|22012', 'the kept run is the failure, with its error');

# the setting, reloaded
$node->append_conf('postgresql.conf', "schedlock.record_runs = failures");
$node->reload;
wait_for(q{SELECT current_setting('schedlock.record_runs') = 'failures'});
# job backends take the new value at their next pass: make them end
$node->safe_psql('postgres', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'schedlock job'});
wait_for(q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'schedlock job'});
run_once('loud');
is(rows_and_counts('loud'), '2|3|3|0',
	'schedlock.record_runs = failures: a job without its own record_runs keeps no new row');
admin(q{SELECT schedlock.alter_job('loud', record_runs => 'all')});
run_once('loud');
is(rows_and_counts('loud'), '3|4|4|0', "record_runs => 'all' keeps the job's rows whatever the setting");
admin(q{SELECT schedlock.alter_job('loud', record_runs => 'default')});
is(admin(q{SELECT record_runs IS NULL FROM schedlock.jobs WHERE job_name = 'loud'}),
	't', "record_runs => 'default' follows the setting again");
run_once('loud');
is(rows_and_counts('loud'), '3|5|5|0', '... and keeps no new row');

# --- runs written once they have ended --------------------------------------
# Jobs already due when a job backend claims them have their runs written
# once they have ended, with their jobs' state.  With the setting at
# failures, 20 one-off jobs that succeed write no row to job_runs (not one
# inserted and deleted again), one that fails and one whose command changes
# its own job write theirs (the latter's marks its slot as run: its job's
# row is the command's, not advanced), and each job's command ran once.
admin(q{CREATE TABLE public.hits (job text)});
my $tup_q = q{SELECT n_tup_ins || '|' || n_tup_del FROM pg_stat_user_tables
	WHERE relid = 'schedlock.job_runs'::regclass};

# ended_runs(MODE, PREFIX, RUNS_PER_COMMIT): the 22 jobs, named PREFIX...
sub ended_runs
{
	my ($mode, $p, $rpc) = @_;

	$node->append_conf('postgresql.conf',
		"schedlock.enabled = off\nschedlock.job_backend_idle_timeout = '1s'\n"
		  . "schedlock.runs_per_commit = $rpc");
	$node->reload;
	wait_for(q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'schedlock job'});
	admin(qq{
		SELECT count(schedlock.schedule_once('$p' || i, now(),
				format('INSERT INTO public.hits VALUES (%L)', '$p' || i)))
		  FROM generate_series(1, 20) i;
		SELECT schedlock.schedule_once('${p}fail', now(), 'SELECT 1/0');
		SELECT schedlock.schedule_once('${p}self', now(), \$\$
			INSERT INTO public.hits VALUES ('${p}self');
			SELECT schedlock.alter_job('${p}self', timeout => '9 seconds')\$\$);
	});
	# job_runs' rows inserted and deleted so far (every backend has left,
	# and reported them as it did)
	my ($ins0, $del0) = split /\|/, admin($tup_q);
	$node->append_conf('postgresql.conf', "schedlock.enabled = on");
	$node->reload;
	ok( wait_for(qq{SELECT count(*) = 22 FROM schedlock.jobs
					WHERE job_name ~ '^$p' AND total_runs > 0}, 30),
		"$mode: the 22 jobs due at once ran");
	# a backend leaves after a second with nothing due: had the
	# self-changing job's slot stayed due, its backend would have run it
	# again instead; once they are gone, their statistics are reported
	ok(wait_for(q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'schedlock job'}, 30),
		"$mode: their job backends left");
	my ($ins1, $del1) = split /\|/, admin($tup_q);
	is(($ins1 - $ins0) . '|' . ($del1 - $del0), '2|0',
		"$mode: two rows were written to job_runs, and none deleted");
	is(admin(qq{SELECT string_agg(j.job_name || ' ' || r.status, ',' ORDER BY j.job_name)
				 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
				WHERE j.job_name ~ '^$p'}),
		"${p}fail failed,${p}self succeeded",
		"$mode: they are the failed run and the self-changing job's");
	is(admin(qq{SELECT count(*) || '|' || count(DISTINCT job) FROM public.hits WHERE job ~ '^$p'}),
		'21|21', "$mode: each command that succeeded ran once");
	is(admin(qq{SELECT sum(total_runs) || '|' || sum(succeeded_runs) || '|' || sum(failed_runs)
				 FROM schedlock.jobs WHERE job_name ~ '^$p'}),
		'22|21|1', "$mode: every run is counted in its job's statistics");
}

ended_runs('each run committed alone', 'd', 1);
ended_runs('runs that share a commit', 'e', 16);

$node->stop;
done_testing();
