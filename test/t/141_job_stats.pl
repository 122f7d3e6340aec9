# 141_job_stats.pl: the run statistics of a job (schedlock.jobs, shown by
# schedlock.job_status) count every way a run ends exactly once: a worker's
# outcome of an atomic and a non-atomic SQL run (succeeded, failed and
# retried), a NOTIFY run finished by an application, a NOTIFY run nobody
# claimed (timed_out) and a run whose worker is gone (lost).  job_status's
# stopped_reason says when the workers run nothing (schedlock.enabled off)
# and when a one-off job has ended.  On the tables of 1.0 (before ALTER
# EXTENSION UPDATE) runs are recorded as before, without statistics; the
# update starts the counts at 0 and clears next_run_at of disabled jobs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockNode;
use Time::HiRes qw(usleep time);

my $node = schedlock_node('job_stats',
	conf => [
		"max_worker_processes = 32",
		"schedlock.timezone = 'UTC'" ],
	app => 'extension');

# the statistics of a job as total/succeeded/failed
sub counts
{
	my ($db, $job) = @_;
	return $node->safe_psql($db, qq{
		SELECT format('%s/%s/%s', total_runs, succeeded_runs, failed_runs)
		  FROM schedlock.job_status WHERE job_name = '$job'});
}

# --- worker outcomes: atomic and non-atomic successes, a failure retried
$node->safe_psql('app', q{
	SELECT schedlock.schedule_once('ok', now(), 'SELECT pg_sleep(0.3)');
	SELECT schedlock.schedule_once('ok_na', now(), 'SELECT pg_sleep(0.3)', atomic => false);
	SELECT schedlock.schedule_once('bad', now(), 'SELECT 1/0', max_attempts => 2,
						 retry_delay => '1 second');
});
wait_true($node, 'app', q{
	SELECT count(*) = 4 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name IN ('ok', 'ok_na', 'bad')
	   AND r.status IN ('succeeded', 'failed')}, 60)
  or die 'the SQL jobs did not run';
is(counts('app', 'ok'), '1/1/0', 'an atomic success counts once');
is(counts('app', 'ok_na'), '1/1/0', 'a non-atomic success counts once');
is(counts('app', 'bad'), '2/0/2', 'a failure and its retry count as two failed runs');
is($node->safe_psql('app', q{
	SELECT string_agg(format('%s %s %s %s', m.job_name, m.last_status,
							 m.last_run = date_trunc('second', s.last_finished_at + interval '0.5 s'),
							 m.command), ',' ORDER BY m.job_name)
	  FROM schedlock.job_summary m JOIN schedlock.job_status s USING (job_name)
	 WHERE m.job_name IN ('ok', 'bad')}),
	'bad failed t SELECT 1/0,ok succeeded t SELECT pg_sleep(0.3)',
	'job_summary shows the last status, when the last run ended (to the second) and the command');
is($node->safe_psql('app', q{
	SELECT s.last_duration = r.finished_at - r.started_at, s.last_duration >= interval '0.3 s',
		   s.last_start_lag = r.started_at - r.scheduled_for, s.last_start_lag >= interval '0',
		   s.last_success_at = r.finished_at, s.average_duration = s.last_duration
	  FROM schedlock.job_status s JOIN schedlock.job_runs r USING (job_id)
	 WHERE s.job_name = 'ok'}),
	't|t|t|t|t|t', 'duration, start lag, last success and average are those of the run');
is($node->safe_psql('app', q{
	SELECT last_success_at IS NULL, consecutive_failures, stopped_reason
	  FROM schedlock.job_status WHERE job_name = 'bad'}),
	't|2|ended: the one-off job has run; schedlock.alter_job(..., next_run_at => ...) runs it again',
	'a job that never succeeded has no last success; the ended one-off job says so');

# --- NOTIFY runs: one finished by an application, one nobody claims
$node->safe_psql('app', q{
	SELECT schedlock.schedule_once('told', now(), notify_channel => 'told_channel', timeout => '1 minute');
	SELECT schedlock.schedule_once('unheard', now(), notify_channel => 'unheard_channel', timeout => '1 second');
});
wait_true($node, 'app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'told' AND r.status = 'pending'}, 30)
  or die 'the NOTIFY job was not notified';
is($node->safe_psql('app', q{
	SELECT schedlock_claim_run(r.run_id, 'app') AND schedlock_finish_run(r.run_id, true)
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'told'}),
	't', 'an application claims and finishes the NOTIFY run');
is(counts('app', 'told'), '1/1/0', 'a NOTIFY run finished by an application counts once');
wait_true($node, 'app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'unheard' AND r.status = 'timed_out'}, 30)
  or die 'the unclaimed NOTIFY run did not time out';
is(counts('app', 'unheard'), '1/0/1', 'an expired NOTIFY run counts as a failed run');

# --- a lost run: running, in a process that is no job backend.  Of a
# non-atomic job: a lost atomic run has its slot run again at once
# (123_job_lost_atomic_slot.pl), and that run would be the job's last.
$node->safe_psql('app', q{
	SELECT schedlock.schedule_once('lost', '2030-01-01 00:00+00', 'SELECT 1', atomic => false);
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, status,
									started_at, worker_pid, timeline)
	SELECT job_id, owner, now() - interval '1 minute 3 seconds', 'running',
		   now() - interval '1 minute', pg_backend_pid(), 1
	  FROM schedlock.jobs WHERE job_name = 'lost';
});
# a row written by hand: a reload has the scheduler look again (its
# housekeeping closes runs whose job backend is gone)
$node->safe_psql('app', 'SELECT pg_reload_conf()');
wait_true($node, 'app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'lost' AND r.status = 'lost'}, 30)
  or die 'the run was not closed as lost';
is(counts('app', 'lost'), '1/0/1', 'a lost run counts as a failed run');
is($node->safe_psql('app', q{
	SELECT last_start_lag FROM schedlock.job_status WHERE job_name = 'lost'}),
	'00:00:03', 'its start lag is started_at - scheduled_for');

# --- every run counted exactly once, for every job, once none is open
ok(wait_true($node, 'app', q{
	SELECT count(*) = 0 FROM schedlock.job_runs WHERE finished_at IS NULL}, 30),
	'no run is open');
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.jobs j,
		   LATERAL (SELECT count(*) AS n, count(*) FILTER (WHERE r.status = 'succeeded') AS ok,
						   count(*) FILTER (WHERE r.status <> 'succeeded') AS bad,
						   coalesce(sum(r.finished_at - r.started_at), '0') AS d
					  FROM schedlock.job_runs r
					 WHERE r.job_id = j.job_id
					   AND r.status IN ('succeeded', 'failed', 'timed_out', 'lost')) a
	 WHERE (j.total_runs, j.succeeded_runs, j.failed_runs, j.total_duration)
		   IS DISTINCT FROM (a.n, a.ok, a.bad, a.d)}),
	'0', 'the counts and durations of every job are those of its ended runs');

# --- stopped_reason: schedlock.enabled off stops every job
is($node->safe_psql('app', q{
	SELECT stopped_reason IS NULL FROM schedlock.job_status WHERE job_name = 'lost'}),
	't', 'a job with a next run has no stopped_reason');
$node->safe_psql('app', 'ALTER SYSTEM SET schedlock.enabled = off');
$node->reload;
ok(wait_true($node, 'app', q{
	SELECT stopped_reason = 'schedlock.enabled is off: the workers run no job'
	  FROM schedlock.job_status WHERE job_name = 'lost'}, 30),
	'schedlock.enabled = off: stopped_reason says the workers run nothing');
$node->safe_psql('app', 'ALTER SYSTEM RESET schedlock.enabled');
$node->reload;
ok(wait_true($node, 'app', q{
	SELECT stopped_reason IS NULL FROM schedlock.job_status WHERE job_name = 'lost'}, 30),
	'and on again: no stopped_reason');

# --- the tables of 1.0: the library runs nothing there, says so once, and
# shows the database as paused; the update starts the counts at 0 and
# clears next_run_at of disabled jobs.  The jobs are written as the library
# of 1.0 left them (its schedule_job is refused now).
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', q{CREATE EXTENSION schedlock VERSION '1.0'});
$node->safe_psql('old', q{
	INSERT INTO schedlock.jobs (job_name, owner, schedule, command, timezone,
								next_slot, next_run_at)
	VALUES ('tick', current_user::regrole, '0 3 1 1 *', 'SELECT 1', 'UTC',
			cron_next('0 3 1 1 *', now(), 'UTC'), cron_next('0 3 1 1 *', now(), 'UTC'));
	-- as 1.0's library left a disabled job
	INSERT INTO schedlock.jobs (job_name, owner, schedule, command, timezone,
								enabled, next_slot, next_run_at)
	VALUES ('off', current_user::regrole, '0 3 1 1 *', 'SELECT 1', 'UTC', false,
			cron_next('0 3 1 1 *', now(), 'UTC'), cron_next('0 3 1 1 *', now(), 'UTC'));
});
my $old_warning = qr/WARNING:  no job of database "old" runs: its schedlock tables are of release 1\.0/;
$node->wait_for_log($old_warning, 0);
pass('on the tables of 1.0 a WARNING says that no job of the database runs');
ok(wait_true($node, 'app', q{
	SELECT has_extension AND paused AND jobs IS NULL
	  FROM schedlock.cluster_status() WHERE datname = 'old'}, 30),
	'cluster_status: the database has the extension and is paused, its jobs uncounted');
my ($rc_old, $out_old, $err_old) = $node->psql('old', q{SELECT run_job('tick')});
like($err_old, qr/ERROR:  cannot execute schedlock\.run_job\(\) on the tables of schedlock 1\.0/,
	'run_job() on the tables of 1.0 is refused');
is($node->safe_psql('old', q{SELECT count(*) FROM schedlock.job_runs}), '0',
	'and queued no run');
$node->safe_psql('old', 'ALTER EXTENSION schedlock UPDATE');
is($node->safe_psql('old', q{
	SELECT job_name, next_run_at IS NULL, total_runs, stopped_reason IS NULL
	  FROM schedlock.job_status ORDER BY job_name}),
	"off|t|0|f\ntick|f|0|t",
	'after the update: the disabled job has no next run, the counts start at 0');
$node->safe_psql('old', q{SELECT schedlock.run_job('tick')});
ok(wait_true($node, 'old', q{
	SELECT total_runs = 1 AND succeeded_runs = 1 FROM schedlock.jobs WHERE job_name = 'tick'}, 30),
	'a run after the update counts');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/could not (record|close|finish)/,
	'no bookkeeping statement failed');
is(scalar(() = $log =~ /$old_warning/g), 1,
	'the WARNING on the tables of 1.0 was logged once');
done_testing();
