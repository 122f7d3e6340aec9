# 116_job_record_runs.pl: which ended runs schedlock.job_runs keeps.
#   record_runs => 'failures' (alter_job): the job's succeeded runs are
#     counted in its statistics but leave no row, its failed runs are kept;
#     a skipped slot leaves no row either.
#   schedlock.record_runs = failures (reload): the same for every job that
#     does not say otherwise; record_runs => 'all' keeps a job's runs
#     anyway, and 'default' follows the setting again.
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

$node->stop;
done_testing();
