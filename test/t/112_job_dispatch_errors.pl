# 112_job_dispatch_errors.pl: an error in a worker's own bookkeeping of a job
# (not in the job's command) does not end the worker.  The worker aborts the
# transaction, logs the error with its SQLSTATE and goes on with the other
# jobs; a job that breaks dispatch 3 times in a row is quarantined: disabled,
# with the reason in schedlock.job_status.paused_reason, until schedlock.alter_job(...,
# enabled => true).  Meanwhile an every-second job runs every slot, no later
# than a slot past its lag before the bad jobs came, and the workers keep
# their pids.
#
# The bad jobs:
#   bad_trigger  a superuser's trigger on schedlock.job_runs refuses its runs
#   bad_row      a superuser wrote a schedule the cron parser refuses
#   huge_retry   a failing job whose row got retry_delay '1000000 years' (as
#                release 1.0 accepted): the retry is scheduled at most a day
#                later instead of breaking with "timestamp out of range"
#   storm        a failing job with retry_delay '0' and max_attempts
#                1000000: retries are at least 1 s apart and back off
#   bad_outcome  a non-atomic job whose outcome a trigger refuses to record:
#                its runs are closed as failed, none stays "running" (which
#                would skip every later slot as an overlap)
#   wide name    a NOTIFY job with a 255-character chr(1) name and a
#                7200-byte payload is notified (the payload is not part of
#                the notification)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('dispatch_errors',
	conf => [
		"max_worker_processes = 32",
		"log_line_prefix = '%m [%p] %e '",
		# the job backends stay for the whole test (their pids are compared)
		"schedlock.job_backend_idle_timeout = '10min'" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE ticks (at timestamptz)');

my $workers_sql = q{
	SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'app'};

# whether every pid of the list (from $workers_sql) still runs
sub still_alive
{
	my ($list) = @_;
	return $node->safe_psql('app', qq{
		SELECT bool_and(EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = p::int))
		  FROM unnest(string_to_array('$list', ',')) p});
}

$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (clock_timestamp())')});
$node->poll_query_until('app', q{SELECT count(*) >= 5 FROM ticks})
  or die 'the good job does not run';
my $pids = $node->safe_psql('app', $workers_sql);
my $t0 = $node->safe_psql('app', 'SELECT now()');
# the good job's largest start lag before the bad jobs came: the bound its
# lag among them is held to, measured on this machine now
my $lag0 = $node->safe_psql('app', qq{
	SELECT extract(epoch FROM max(r.started_at - r.scheduled_for))
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'tick' AND r.scheduled_for < '$t0'});
my $logstart = -s $node->logfile;

# the bad jobs, all at once
$node->safe_psql('app', q{
	CREATE FUNCTION refuse_run() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.job_id = (SELECT job_id FROM schedlock.jobs WHERE job_name = 'bad_trigger') THEN
			RAISE EXCEPTION 'job_runs refuses this run' USING ERRCODE = 'SLT01';
		END IF;
		IF TG_OP = 'UPDATE' AND NEW.status = 'succeeded' AND NEW.job_id =
		   (SELECT job_id FROM schedlock.jobs WHERE job_name = 'bad_outcome') THEN
			RAISE EXCEPTION 'job_runs refuses this outcome' USING ERRCODE = 'SLT02';
		END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER refuse_run BEFORE INSERT OR UPDATE ON schedlock.job_runs
		FOR EACH ROW EXECUTE FUNCTION refuse_run();
	BEGIN;
	SELECT schedlock.schedule_job('bad_trigger', '1 second', 'SELECT 1');
	SELECT schedlock.schedule_job('bad_row', '1 second', 'SELECT 1');
	UPDATE schedlock.jobs SET schedule = 'not a schedule' WHERE job_name = 'bad_row';
	SELECT schedlock.schedule_job('bad_outcome', '1 second', 'SELECT 1', atomic => false);
	SELECT schedlock.schedule_job('huge_retry', '0 0 1 1 *', 'SELECT 1/0', max_attempts => 3);
	UPDATE schedlock.jobs SET retry_delay = '1000000 years', next_slot = now(), next_run_at = now()
	 WHERE job_name = 'huge_retry';
	SELECT schedlock.schedule_job('storm', '0 0 1 1 *', 'SELECT 1/0', max_attempts => 1000000,
						retry_delay => '0');
	UPDATE schedlock.jobs SET next_slot = now(), next_run_at = now() WHERE job_name = 'storm';
	SELECT schedlock.schedule_job(repeat(chr(1), 255), '1 second', notify_channel => 'wide',
						payload => jsonb_build_object('x', repeat('x', 7200)));
	COMMIT;
});

$node->poll_query_until('app', q{
	SELECT count(*) = 2 FROM schedlock.job_status
	 WHERE job_name IN ('bad_trigger', 'bad_row') AND NOT enabled
	   AND paused_reason LIKE 'quarantined%'}, 't')
  or diag 'the bad jobs were not quarantined';
# the good job next to them: wait until it has run 6 slots since t0 (the
# quarantine alone may take less than a second, so a fixed sleep left as few
# as 4 slots before t1); t1, a second before now, then covers at least 5
$node->poll_query_until('app', qq{
	SELECT count(*) >= 6 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'tick' AND r.scheduled_for >= '$t0' AND r.finished_at IS NOT NULL}, 't')
  or diag 'the good job did not run 6 times';
my $t1 = $node->safe_psql('app', q{SELECT now() - interval '1 second'});

is(still_alive($pids), 't',
	'the job backends kept their pids: no error ended them');

like($node->safe_psql('app', q{
	SELECT enabled || ' ' || paused_reason FROM schedlock.job_status WHERE job_name = 'bad_trigger'}),
	qr/^false quarantined: dispatch of the job failed 3 times in a row; last error SLT01: job_runs refuses this run\. schedlock\.alter_job\(\.\.\., enabled => true\) releases it\.$/,
	'the job refused by a trigger is quarantined, with the reason');
like($node->safe_psql('app', q{
	SELECT enabled || ' ' || paused_reason FROM schedlock.job_status WHERE job_name = 'bad_row'}),
	qr/^false quarantined: dispatch of the job failed 3 times in a row; last error 22023: .*not a schedule/,
	'the job with a corrupted schedule is quarantined, with the reason');

# the good job: every slot between t0 and t1 ran once, on time
my ($runs, $distinct, $span, $lag, $bad) = split /\|/, $node->safe_psql('app', qq{
	SELECT count(*), count(DISTINCT scheduled_for),
		   extract(epoch FROM max(scheduled_for) - min(scheduled_for))::int + 1,
		   extract(epoch FROM max(started_at - scheduled_for)),
		   count(*) FILTER (WHERE status <> 'succeeded')
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'tick' AND r.scheduled_for BETWEEN '$t0' AND '$t1'});
cmp_ok($runs, '>=', 5, "the good job ran meanwhile ($runs runs)");
is("$distinct $span $bad", "$runs $runs 0",
	'the good job ran every slot once, and every run succeeded');
# a stalled backend would push runs past their next slot: at most one slot
# (1 s) more than the largest lag before the bad jobs
cmp_ok($lag, '<', $lag0 + 1,
	"the good job's runs started on time (largest lag $lag s, $lag0 s before the bad jobs)");

# the errors are in the log, with their SQLSTATE, and nothing was fatal
my $log = slurp_file($node->logfile, $logstart);
like($log, qr/ SLT01 ERROR:  job_runs refuses this run/, 'the error is logged with its SQLSTATE');
like($log, qr/LOG:  schedlock job "bad_trigger" of role "\w+" in database "app" broke dispatch \(SQLSTATE SLT01\), 1 of 3 times in a row/,
	'the worker says which job broke dispatch');
like($log, qr/WARNING:  schedlock job "bad_trigger" of role "\w+" in database "app" quarantined/, 'the quarantine is logged');
unlike($log, qr/exited with exit code|terminated by signal/, 'no worker exited');

# the non-atomic job's runs whose outcome could not be recorded
my ($oruns, $ofailed, $omsg) = split /\|/, $node->safe_psql('app', q{
	SELECT count(*), count(*) FILTER (WHERE status = 'failed' AND sqlstate = 'SLT02'),
		   min(message)
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'bad_outcome' AND r.started_at < now() - interval '1 second'});
cmp_ok($oruns, '>=', 3, "the non-atomic job kept running ($oruns runs)");
is($ofailed, $oruns, 'each of its runs whose outcome could not be recorded was closed as failed');
is($omsg, 'the worker could not record this run: job_runs refuses this outcome',
	'with the error as the message');

# huge retry_delay of a 1.0 row: the retry is at most a day away
is($node->safe_psql('app', q{
	SELECT retry_at BETWEEN now() + interval '23 hours' AND now() + interval '1 day'
	  FROM schedlock.jobs WHERE job_name = 'huge_retry'}),
	't', 'a retry_delay of a million years retries after a day, the longest backoff');
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'huge_retry' AND r.status = 'failed'}),
	'1', 'its first attempt failed and was recorded');

# retry storm: retries at least 1 s apart, doubling
my ($storm, $gap) = split /\|/, $node->safe_psql('app', q{
	SELECT count(*), extract(epoch FROM min(g))
	  FROM (SELECT started_at - lag(started_at) OVER (ORDER BY attempt) AS g
			  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			 WHERE j.job_name = 'storm') s});
cmp_ok($storm, '<=', 5, "retry_delay 0 made $storm failed runs, not hundreds a second");
cmp_ok($gap, '>=', 0.99, "the retries were at least a second apart ($gap s)");

# the NOTIFY job with a wide name was notified and is not quarantined
is($node->safe_psql('app', q{
	SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = repeat(chr(1), 255) AND r.status = 'pending'}),
	't', 'a job with a 255-character chr(1) name and a 7200-byte payload is notified');

# re-enabling releases the quarantine; the job runs again
$node->safe_psql('app', q{
	DROP TRIGGER refuse_run ON schedlock.job_runs;
	SELECT schedlock.alter_job('bad_trigger', enabled => true);
	SELECT schedlock.alter_job('bad_row', schedule => '1 second', enabled => true)});
is($node->safe_psql('app', q{
	SELECT string_agg(job_name || ' ' || enabled || ' ' || coalesce(paused_reason, '-'), ', ' ORDER BY job_name)
	  FROM schedlock.job_status WHERE job_name IN ('bad_trigger', 'bad_row')}),
	'bad_row true -, bad_trigger true -', 'alter_job(enabled => true) clears the quarantine');
$node->poll_query_until('app', q{
	SELECT count(DISTINCT j.job_name) = 2 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name IN ('bad_trigger', 'bad_row') AND r.status = 'succeeded'})
  or diag 'the released jobs did not run';
is($node->safe_psql('app', q{
	SELECT count(DISTINCT j.job_name) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name IN ('bad_trigger', 'bad_row') AND r.status = 'succeeded'}),
	'2', 'the released jobs run');
is(still_alive($pids), 't', 'still the same job backends');

$node->stop;
done_testing();
