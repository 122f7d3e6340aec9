# 105_job_policies.pl: three job policies on a real server.
#  (a) misfire => 'run_all' is bounded: a daily job that missed 251 slots
#      records the first missed slot as skipped with a message that says
#      how many were missed, then runs exactly the latest 100 slots, each
#      once and in order, and nothing else.
#  (b) schedlock.history_retention: 0 keeps every run; otherwise the
#      database's housekeeper deletes the finished runs older than the
#      retention (a reload that changes it has every database housekept at
#      once), and never touches newer runs or runs not finished.
#  (c) NOTIFY deadlines: an unclaimed run is closed as timed_out after the
#      job's timeout and retried after retry_delay up to max_attempts, then
#      no more, counting consecutive failures; a claimed run not finished
#      within the timeout counted from the claim is closed as timed_out and
#      a late schedlock_finish_run returns false and changes nothing.
#      (c3) When more NOTIFY runs are overdue at once than one transaction
#      closes (100), all are still closed promptly once dispatch is back
#      on, not at the next housekeeping up to 60 s later.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('policies',
	conf => [
		"max_worker_processes = 32",
		# part (b) starts with pruning off; it turns it on itself
		"schedlock.history_retention = 0" ],
	app => 'extension');

# --- (a) misfire run_all catches up at most the latest 100 slots ---
#
# A daily job (UTC, so no DST) whose next slot is moved back 250 days in
# the transaction that creates it: 251 slots are due when the worker,
# woken by schedule_job at commit, claims it.  Daily slots keep "now" from
# adding a slot during the catch-up (except across midnight UTC, which the
# expected count below allows for), and the next regular slot is tomorrow,
# so nothing else runs.  The command records the run it belongs to
# (schedlock.run_id), so each run's effect can be matched to its slot.
$node->safe_psql('app', q{
	CREATE TABLE hits (n bigserial PRIMARY KEY, run_id bigint);
	BEGIN;
	SELECT schedlock.schedule_job('catchup', '0 0 * * *',
		$$INSERT INTO hits (run_id) VALUES (current_setting('schedlock.run_id')::bigint)$$,
		timezone => 'UTC', misfire => 'run_all');
	UPDATE schedlock.jobs
	   SET next_slot = (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '250 days') AT TIME ZONE 'UTC',
		   next_run_at = (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '250 days') AT TIME ZONE 'UTC'
	 WHERE job_name = 'catchup';
	COMMIT;
});
# every atomic run commits with the job's advanced row: once next_run_at is
# in the future, the catch-up is over
$node->poll_query_until('app', q{
	SELECT next_run_at > now() FROM schedlock.jobs WHERE job_name = 'catchup'})
  or die 'the run_all job did not catch up';
my $cjob = $node->safe_psql('app', q{SELECT job_id FROM schedlock.jobs WHERE job_name = 'catchup'});

# first missed slot s, and the number of slots due at the claim: s, s + 1
# day, ... up to the claim's day (251 unless midnight UTC passed meanwhile)
my ($s, $missed) = split /\|/, $node->safe_psql('app', qq{
	SELECT min(scheduled_for),
		   1 + ((SELECT finished_at FROM schedlock.job_runs
				  WHERE job_id = $cjob AND status = 'skipped') AT TIME ZONE 'UTC')::date
			 - (min(scheduled_for) AT TIME ZONE 'UTC')::date
	  FROM schedlock.job_runs WHERE job_id = $cjob});
cmp_ok($missed, '>', 100, "more than 100 slots were missed ($missed)");
is($node->safe_psql('app', qq{
	SELECT count(*) || ' ' || (scheduled_for = '$s') || ' ' || message
	  FROM schedlock.job_runs WHERE job_id = $cjob AND status = 'skipped'
	 GROUP BY scheduled_for, message}),
	"1 true misfire run_all: $missed missed slots, only the latest 100 are run",
	'the first missed slot is recorded as skipped, saying how many were missed');
is($node->safe_psql('app', qq{
	SELECT string_agg(DISTINCT status, ',') || ' ' || count(*)
	  FROM schedlock.job_runs WHERE job_id = $cjob AND status <> 'skipped'}),
	'succeeded 100', 'exactly 100 slots ran, all successfully');
is($node->safe_psql('app', qq{
	SELECT count(DISTINCT scheduled_for),
		   min(scheduled_for) = '$s'::timestamptz AT TIME ZONE 'UTC' + ($missed - 100) * interval '1 day',
		   max(scheduled_for) = '$s'::timestamptz AT TIME ZONE 'UTC' + ($missed - 1) * interval '1 day',
		   bool_and(attempt = 1 AND scheduled_for = date_trunc('day', scheduled_for))
	  FROM (SELECT scheduled_for AT TIME ZONE 'UTC' AS scheduled_for, attempt
			  FROM schedlock.job_runs WHERE job_id = $cjob AND status = 'succeeded') r}),
	'100|t|t|t', 'the runs are the latest 100 slots, each day once, first attempts');
is($node->safe_psql('app', qq{
	SELECT count(*) FILTER (WHERE NOT (scheduled_for > prev_slot AND started_at >= prev_start))
	  FROM (SELECT scheduled_for, started_at,
				   lag(scheduled_for) OVER w AS prev_slot, lag(started_at) OVER w AS prev_start
			  FROM schedlock.job_runs WHERE job_id = $cjob AND status = 'succeeded'
			WINDOW w AS (ORDER BY run_id)) r}),
	'0', 'the slots ran in order, oldest first');
is($node->safe_psql('app', qq{
	SELECT (SELECT min(run_id) FROM schedlock.job_runs WHERE job_id = $cjob)
		 = (SELECT run_id FROM schedlock.job_runs WHERE job_id = $cjob AND status = 'skipped')}),
	't', 'the skipped row was written before any catch-up run');
is($node->safe_psql('app', qq{
	SELECT count(*), count(DISTINCT h.run_id),
		   count(*) FILTER (WHERE h.status = 'succeeded'),
		   count(*) FILTER (WHERE h.slot <= h.lag_slot)
	  FROM (SELECT hits.run_id, r.status, r.scheduled_for AS slot,
				   lag(r.scheduled_for) OVER (ORDER BY hits.n) AS lag_slot
			  FROM hits LEFT JOIN schedlock.job_runs r USING (run_id)) h}),
	'100|100|100|0', 'each run\'s command committed exactly once, for its own slot, in slot order');
is($node->safe_psql('app', qq{
	SELECT next_run_at = (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC',
		   retry_at IS NULL, consecutive_failures
	  FROM schedlock.jobs WHERE job_id = $cjob}),
	't|t|0', 'the job then waits for its next regular slot');

# --- (c1) an unclaimed NOTIFY run times out, is retried once, then not ---
#
# A yearly NOTIFY job whose next slot is moved to now in the transaction
# that creates it: one slot due now, the next months away.
my $listener = $node->background_psql('app');
$listener->query_safe('LISTEN c1_due');
$node->safe_psql('app', q{
	BEGIN;
	SELECT schedlock.schedule_job('c1', '0 0 1 1 *', notify_channel => 'c1_due',
						timezone => 'UTC', timeout => '2 seconds',
						max_attempts => 2, retry_delay => '1 second');
	UPDATE schedlock.jobs SET next_slot = date_trunc('second', now()),
							  next_run_at = date_trunc('second', now())
	 WHERE job_name = 'c1';
	COMMIT;
});
my $c1 = $node->safe_psql('app', q{SELECT job_id FROM schedlock.jobs WHERE job_name = 'c1'});
$node->poll_query_until('app', qq{
	SELECT count(*) = 2 FROM schedlock.job_runs WHERE job_id = $c1 AND status = 'timed_out'})
  or die 'the NOTIFY job did not time out twice';
is($node->safe_psql('app', qq{
	SELECT string_agg(attempt || ':' || status || ':' || message, ',' ORDER BY run_id),
		   count(DISTINCT scheduled_for)
	  FROM schedlock.job_runs WHERE job_id = $c1}),
	'1:timed_out:not claimed within the timeout,2:timed_out:not claimed within the timeout|1',
	'both attempts of the slot were closed as not claimed in time');
is($node->safe_psql('app', qq{
	SELECT bool_and(finished_at >= started_at + interval '2 seconds'),
		   bool_and(finished_at < started_at + interval '10 seconds')
	  FROM schedlock.job_runs WHERE job_id = $c1}),
	't|t', 'each attempt was closed once its 2 s timeout had passed');
is($node->safe_psql('app', qq{
	SELECT b.started_at >= a.finished_at + interval '1 second'
	  FROM schedlock.job_runs a JOIN schedlock.job_runs b USING (job_id, scheduled_for)
	 WHERE a.job_id = $c1 AND a.attempt = 1 AND b.attempt = 2}),
	't', 'the second attempt came after the retry delay');
is($node->safe_psql('app', qq{
	SELECT retry_at IS NULL, retry_attempt IS NULL,
		   next_run_at = make_timestamptz(extract(year FROM now() AT TIME ZONE 'UTC')::int + 1, 1, 1, 0, 0, 0, 'UTC')
	  FROM schedlock.jobs WHERE job_id = $c1}),
	't|t|t', 'no third attempt is planned: the job waits for its next slot');
is($node->safe_psql('app', qq{
	SELECT consecutive_failures, last_status, last_message
	  FROM schedlock.job_status WHERE job_id = $c1}),
	'2|timed_out|not claimed within the timeout', 'job_status counts two consecutive failures');

# --- (c2) a claimed NOTIFY run not finished in time is closed ---
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('c2', '0 0 1 1 *', notify_channel => 'c2_due',
						timezone => 'UTC', timeout => '8 seconds')});
my $run = $node->safe_psql('app', q{SELECT schedlock.run_job('c2')});
$node->poll_query_until('app', qq{
	SELECT status = 'pending' FROM schedlock.job_runs WHERE run_id = $run})
  or die 'run_job did not notify';
is($node->safe_psql('app', qq{
	SELECT deadline = started_at + interval '8 seconds' FROM schedlock.job_runs WHERE run_id = $run}),
	't', 'the notified run must be claimed within the timeout');
my $pending_deadline = $node->safe_psql('app', qq{SELECT deadline FROM schedlock.job_runs WHERE run_id = $run});
# claim 1.5 s into the claim window (8 s, so that a slow psql start on a
# busy machine still claims in time), by the server's clock: the finish
# deadline then lies well after the claim deadline
ok(wait_true($node, 'app', qq{
	SELECT clock_timestamp() >= started_at + interval '1.5 seconds'
	  FROM schedlock.job_runs WHERE run_id = $run}),
	'1.5 s of the claim window have passed');
is($node->safe_psql('app', qq{SELECT schedlock_claim_run($run, 'app-1')}), 't', 'the run is claimed in time');
is($node->safe_psql('app', qq{
	SELECT status, claimed_by, deadline = claimed_at + interval '8 seconds',
		   deadline > '$pending_deadline'::timestamptz + interval '1 second'
	  FROM schedlock.job_runs WHERE run_id = $run}),
	'running|app-1|t|t', 'the claim sets a new deadline, the timeout from the claim');
$node->poll_query_until('app', qq{
	SELECT status <> 'running' FROM schedlock.job_runs WHERE run_id = $run})
  or die 'the claimed run was never closed';
my $closed = $node->safe_psql('app', qq{
	SELECT status, message, finished_at, deadline IS NULL FROM schedlock.job_runs WHERE run_id = $run});
like($closed, qr/^timed_out\|not finished within the timeout\|[^|]+\|t$/,
	'the claimed but unfinished run is closed as timed_out');
is($node->safe_psql('app', qq{
	SELECT finished_at >= claimed_at + interval '8 seconds',
		   finished_at >= '$pending_deadline'::timestamptz + interval '1 second'
	  FROM schedlock.job_runs WHERE run_id = $run}),
	't|t', 'it was closed only after the timeout counted from the claim');
is($node->safe_psql('app', qq{SELECT schedlock_finish_run($run, true, 'done, too late')}),
	'f', 'a late schedlock_finish_run returns false');
is($node->safe_psql('app', qq{
	SELECT status, message, finished_at, deadline IS NULL FROM schedlock.job_runs WHERE run_id = $run}),
	$closed, 'and changes nothing');
is($node->safe_psql('app', q{
	SELECT r.retry_at IS NULL, s.consecutive_failures, s.last_status
	  FROM schedlock.jobs r JOIN schedlock.job_status s USING (job_id) WHERE r.job_name = 'c2'}),
	't|1|timed_out', 'the run_job run is counted as a failure and not retried');

# c1: still no third attempt, more than its would-be backoff (2 s) after the
# second timed out; the listener heard exactly the two attempts
is($node->safe_psql('app', qq{
	SELECT count(*), max(attempt), bool_and(status = 'timed_out')
	  FROM schedlock.job_runs WHERE job_id = $c1}),
	'2|2|t', 'no third attempt was made');
my $heard = $listener->query_safe('SELECT 1');
my @attempts = ($heard =~ /Asynchronous notification "c1_due" with payload "\{[^\n]*"attempt" : (\d+)/g);
is("@attempts", '1 2', 'the listener was notified of attempt 1 and attempt 2, and nothing else');
$listener->quit;

# --- (c3) many overdue NOTIFY runs are all closed promptly ---
#
# 250 NOTIFY jobs are notified together; their deadlines pass while
# schedlock.enabled is off, as they would during a restart or an outage of
# the workers.  Once dispatch is back on, every overdue run must be closed at
# once, not only as many as the first passes happen to take.  The runs get a
# long timeout and their deadlines are moved into the past once dispatch is
# off: a short timeout could pass before the workers see the setting (on a
# loaded machine), and they would close the runs too early.
$node->safe_psql('app', q{
	BEGIN;
	SELECT count(schedlock.schedule_job('burst' || i, '0 0 1 1 *', notify_channel => 'burst_due',
							  timezone => 'UTC', timeout => '1 hour'))
	  FROM generate_series(1, 250) i;
	UPDATE schedlock.jobs SET next_slot = date_trunc('second', now()),
							  next_run_at = date_trunc('second', now())
	 WHERE job_name LIKE 'burst%';
	COMMIT;
});
my $burst = q{
	SELECT count(*) FILTER (WHERE r.status = 'pending'), count(*) FILTER (WHERE r.status = 'timed_out')
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name LIKE 'burst%'};
$node->poll_query_until('app', $burst, '250|0') or die 'the burst was not notified';
$node->safe_psql('app', 'ALTER SYSTEM SET schedlock.enabled = off');
$node->safe_psql('app', 'SELECT pg_reload_conf()');
# the job backends leave when dispatch is off
$node->poll_query_until('app', q{
	SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'schedlock job'})
  or die 'the job backends did not leave';
$node->safe_psql('app', q{
	UPDATE schedlock.job_runs r SET deadline = now() - interval '1 second'
	  FROM schedlock.jobs j
	 WHERE j.job_id = r.job_id AND j.job_name LIKE 'burst%' AND r.status = 'pending'});
# a housekeeping pass with dispatch off (CREATE DATABASE asks for one, and
# it counts the jobs anew): it leaves the deadlines alone
ok(housekeep_all($node, 'app', 'housekept_off'),
	'the housekeeper of app made a pass with dispatch off');
is($node->safe_psql('app', $burst), '250|0', 'with dispatch off, the overdue runs stay pending');
$node->safe_psql('app', 'ALTER SYSTEM RESET schedlock.enabled');
$node->safe_psql('app', 'SELECT pg_reload_conf()');
ok(wait_true($node, 'app', "SELECT (0::bigint, 250::bigint) = ($burst)", 120),
	'once dispatch is back, all 250 overdue runs are closed');
# in one pass: three transactions of at most 100 runs, one right after the
# other (passes are a second or more apart)
my ($batches, $span) = split /\|/, $node->safe_psql('app', q{
	SELECT count(DISTINCT r.finished_at), max(r.finished_at) - min(r.finished_at) < interval '1 second'
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name LIKE 'burst%'});
is("$batches|$span", '3|t', 'they were closed in one housekeeping pass, in three batches');

# --- (b) history retention ---
#
# A housekeeper runs when the server starts (and whenever a change of
# schedlock.history_retention is reloaded), and exits at the end of its
# pass; it says it started at DEBUG1 only, so this part logs at debug1.
# The log line may carry a SQLSTATE before DEBUG (test/run-all.sh logs %e).
sub wait_housekeeping
{
	my ($offset) = @_;
	my $re = qr/\[(\d+)\] (?:[0-9A-Z]{5} )?(?:schedlock housekeeper )?DEBUG:  schedlock housekeeper for database app started/;
	$node->wait_for_log($re, $offset);
	my ($pid) = (slurp_file($node->logfile, $offset) =~ $re);
	$node->poll_query_until('app', qq{
		SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $pid)})
	  or die "the housekeeper (pid $pid) did not end its pass";
}

# one disabled job owns the history rows:
#   old   12000 finished runs, 7 days 1 hour to 7 days 4.3 hours old
#   new   50 finished runs, 6 days 23 hours old, and 50 one hour old
#   open  queued, pending (no deadline) and claimed runs started 30 days ago
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('hist', '0 0 1 1 *', 'SELECT 1', timezone => 'UTC', enabled => false);
	CREATE TABLE hist_old AS
	SELECT i, now() - interval '7 days 1 hour' - i * interval '1 second' AS finished_at
	  FROM generate_series(1, 12000) i;
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
									started_at, finished_at)
	SELECT j.job_id, j.owner, o.finished_at - interval '1 minute', 1,
		   CASE WHEN o.i % 3 = 0 THEN 'failed' WHEN o.i % 3 = 1 THEN 'succeeded' ELSE 'timed_out' END,
		   o.finished_at - interval '1 minute', o.finished_at
	  FROM schedlock.jobs j, hist_old o WHERE j.job_name = 'hist';
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
									started_at, finished_at)
	SELECT j.job_id, j.owner, now() - a * interval '1 hour' - i * interval '1 second', 1,
		   CASE WHEN i % 2 = 0 THEN 'skipped' ELSE 'succeeded' END,
		   now() - a * interval '1 hour' - i * interval '1 second',
		   now() - a * interval '1 hour' + i * interval '1 millisecond'
	  FROM schedlock.jobs j, generate_series(1, 50) i, unnest(ARRAY[1, 167]) a
	 WHERE j.job_name = 'hist';
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
									started_at, claimed_at, claimed_by)
	SELECT j.job_id, j.owner, now() - interval '30 days' + s.n * interval '1 second', 1,
		   s.status, now() - interval '30 days',
		   CASE WHEN s.status = 'running' THEN now() - interval '30 days' END,
		   CASE WHEN s.status = 'running' THEN 'gone' END
	  FROM schedlock.jobs j,
		   (VALUES (1, 'queued'), (2, 'pending'), (3, 'running')) s (n, status)
	 WHERE j.job_name = 'hist';
});
my $hist = $node->safe_psql('app', q{SELECT job_id FROM schedlock.jobs WHERE job_name = 'hist'});
my $others = $node->safe_psql('app', qq{SELECT count(*) FROM schedlock.job_runs WHERE job_id <> $hist});
my $census = qq{
	SELECT count(*) FILTER (WHERE finished_at < now() - interval '7 days'),
		   count(*) FILTER (WHERE finished_at >= now() - interval '7 days'),
		   count(*) FILTER (WHERE finished_at IS NULL),
		   (SELECT count(*) FROM schedlock.job_runs WHERE job_id <> $hist)
	  FROM schedlock.job_runs WHERE job_id = $hist};
is($node->safe_psql('app', $census), "12000|100|3|$others", 'the history rows are in place');

# (b1) history_retention = 0: the housekeeping at start deletes nothing
$node->append_conf('postgresql.conf', "log_min_messages = debug1");
my $offset = -s $node->logfile;
$node->restart;
wait_housekeeping($offset);
is($node->safe_psql('app', $census), "12000|100|3|$others",
	'history_retention = 0 keeps every run');

# (b2) 7 days, reloaded: the housekeeping it starts deletes every old run
$offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "schedlock.history_retention = '7d'");
$node->reload;
wait_housekeeping($offset);
is($node->safe_psql('app', $census), "0|100|3|$others",
	'a reload of the retention had the old runs deleted, and kept new and open ones');
is($node->safe_psql('app', qq{
	SELECT string_agg(status, ',' ORDER BY status) FROM schedlock.job_runs
	 WHERE job_id = $hist AND finished_at IS NULL}),
	'pending,queued,running', 'the open runs are untouched');

$node->stop;
done_testing();
