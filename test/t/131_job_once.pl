# 131_job_once.pl: one-off jobs (schedule_once) run once at their instant,
# and never again, also not after a restart; an instant missed while the
# server was down runs once after the start; a failing one-off job is
# retried per max_attempts and then ends; a copy of the database does not
# run it, and adopting the copy after the instant does not either.
# schedlock.alter_job(..., next_run_at) moves a real run, after which the schedule
# goes on.  ALTER EXTENSION UPDATE from 1.0 keeps the grants of alter_job.
# A check that something did not happen waits for a canary job to have run
# since (no fixed sleeps), so that a slow machine cannot pass it early.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $node = schedlock_node('job_once',
	conf => [
		"max_worker_processes = 32",
		"schedlock.timezone = 'UTC'" ],
	app => 'extension');
$node->safe_psql('app', 'CREATE TABLE ticks (job text, at timestamptz)');

# A check that a job did not run waits until the scheduler has certainly
# had its chance: until an every-second canary job of the same role has run
# twice after the instant given (an SQL expression), in the database given.
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('canary', '1 second',
								  $$INSERT INTO ticks VALUES ('canary', clock_timestamp())$$)});

sub canary_after
{
	my ($db, $since) = @_;
	$node->poll_query_until($db, qq{
		SELECT count(*) >= 2 FROM ticks WHERE job = 'canary' AND at > ($since)})
	  or die "the canary job of $db did not run after $since";
}

# An instant (a timestamptz the server gave) as seconds since the epoch, and
# a wait until the clock has passed such seconds.
sub epoch_of
{
	my ($instant) = @_;
	return $node->safe_psql('postgres',
		qq{SELECT extract(epoch FROM timestamptz '$instant')});
}

sub wait_past
{
	my ($epoch) = @_;
	sleep 0.1 while time() < $epoch + 0.5;
}

# --- a one-off SQL job runs once, at its instant
my $at = $node->safe_psql('app', q{
	SELECT date_trunc('second', now()) + interval '4 seconds'});
$node->safe_psql('app', qq{
	SELECT schedlock.schedule_once('once', '$at',
						 \$\$INSERT INTO ticks VALUES ('once', clock_timestamp())\$\$)});
is($node->safe_psql('app', q{
	SELECT schedule, next_run_at = next_slot FROM schedlock.jobs WHERE job_name = 'once'}),
	'@once|t', 'stored with the schedule @once, its instant as the next run');
$node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'once' AND r.status = 'succeeded'})
  or die 'the one-off job did not run';
is($node->safe_psql('app', qq{
	SELECT min(at) >= '$at' AND min(at) < timestamptz '$at' + interval '1 second'
	  FROM ticks WHERE job = 'once'}),
	't', 'it ran at its instant (within a second after it)');
is($node->safe_psql('app', qq{
	SELECT r.scheduled_for = '$at', r.attempt
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'once'}),
	't|1', 'the run is recorded for the instant');
is($node->safe_psql('app', q{
	SELECT enabled, next_slot IS NULL, next_run_at IS NULL FROM schedlock.jobs WHERE job_name = 'once'}),
	't|t|t', 'then the job has ended: no next run');
is($node->safe_psql('app', q{
	SELECT schedule, next_run_at IS NULL, last_status FROM schedlock.job_status WHERE job_name = 'once'}),
	'@once|t|succeeded', 'job_status: @once, no next run, the last status');

# --- not again after a restart
$node->restart;
canary_after('app', 'pg_postmaster_start_time()');
is($node->safe_psql('app', q{SELECT count(*) FROM ticks WHERE job = 'once'}),
	'1', 'not run again after a restart');
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'once'}),
	'1', 'no other run recorded');

# --- the instant passes while the server is down: it runs once after the start
$at = $node->safe_psql('app', q{
	SELECT date_trunc('second', now()) + interval '3 seconds'});
$node->safe_psql('app', qq{
	SELECT schedlock.schedule_once('missed', '$at',
						 \$\$INSERT INTO ticks VALUES ('missed', clock_timestamp())\$\$)});
my $missed_epoch = epoch_of($at);
$node->stop;
wait_past($missed_epoch);
$node->start;
$node->poll_query_until('app', q{SELECT count(*) = 1 FROM ticks WHERE job = 'missed'})
  or die 'the missed one-off job did not run after the start';
is($node->safe_psql('app', qq{
	SELECT r.scheduled_for = '$at', r.scheduled_for < pg_postmaster_start_time(),
		   r.started_at >= pg_postmaster_start_time()
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'missed'}),
	't|t|t', 'an instant missed while the server was down runs once after the start');
canary_after('app', q{(SELECT max(at) FROM ticks WHERE job = 'missed')});
is($node->safe_psql('app', q{SELECT count(*) FROM ticks WHERE job = 'missed'}),
	'1', 'and only once');

# --- a failing one-off job: retried per max_attempts, then it ends
$node->safe_psql('app', q{
	SELECT schedlock.schedule_once('failing', now(), 'SELECT 1/0', max_attempts => 2,
						 retry_delay => '1 second')});
$node->poll_query_until('app', q{
	SELECT count(*) = 2 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'failing' AND r.status = 'failed'})
  or die 'the failing one-off job was not retried';
# a third attempt would be due a second after the second ended
canary_after('app', q{(SELECT max(r.finished_at) + interval '1 second'
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'failing')});
is($node->safe_psql('app', q{
	SELECT string_agg(r.attempt || ':' || r.status || ':' || r.sqlstate, ',' ORDER BY r.attempt)
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'failing'}),
	'1:failed:22012,2:failed:22012', 'two attempts of the one slot, then no more');
is($node->safe_psql('app', q{
	SELECT next_run_at IS NULL, retry_at IS NULL, consecutive_failures
	  FROM schedlock.jobs WHERE job_name = 'failing'}),
	't|t|2', 'the failed one-off job has ended');

# --- a one-off NOTIFY job notifies once
$node->safe_psql('app', q{
	SELECT schedlock.schedule_once('remind', now(), notify_channel => 'reminders', timeout => '1 hour')});
$node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'remind' AND r.status = 'pending'})
  or die 'the one-off NOTIFY job was not notified';
canary_after('app', q{(SELECT max(r.started_at)
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'remind')});
is($node->safe_psql('app', q{
	SELECT count(*), bool_and(j.next_run_at IS NULL)
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'remind'}),
	'1|t', 'a one-off NOTIFY job is notified once and ends');

# --- re-scheduling an ended one-off job under the same name arms it again
$at = $node->safe_psql('app', q{
	SELECT date_trunc('second', now()) + interval '3 seconds'});
$node->safe_psql('app', qq{
	SELECT schedlock.schedule_once('once', '$at',
						 \$\$INSERT INTO ticks VALUES ('once', clock_timestamp())\$\$)});
$node->poll_query_until('app', q{SELECT count(*) = 2 FROM ticks WHERE job = 'once'})
  or die 'the re-scheduled one-off job did not run';
is($node->safe_psql('app', qq{
	SELECT count(*) FILTER (WHERE r.scheduled_for = '$at'), count(*)
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'once'}),
	'1|2', 'schedule_once again under the same name runs it once more, keeping its history');

# --- schedlock.alter_job(next_run_at) moves a real run; then the schedule goes on
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('yearly', '0 0 1 1 *',
						$$INSERT INTO ticks VALUES ('yearly', clock_timestamp())$$)});
$at = $node->safe_psql('app', q{
	SELECT date_trunc('second', now()) + interval '3 seconds'});
$node->safe_psql('app', qq{SELECT schedlock.alter_job('yearly', next_run_at => '$at')});
is($node->safe_psql('app', qq{
	SELECT next_run_at = '$at' FROM schedlock.job_status WHERE job_name = 'yearly'}),
	't', 'job_status shows the moved next run');
$node->poll_query_until('app', q{SELECT count(*) = 1 FROM ticks WHERE job = 'yearly'})
  or die 'the moved run did not happen';
is($node->safe_psql('app', qq{
	SELECT r.scheduled_for = '$at', r.status,
		   j.next_slot = date_trunc('year', timestamptz '$at' AT TIME ZONE 'UTC' + interval '1 year') AT TIME ZONE 'UTC'
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'yearly'}),
	't|succeeded|t', 'the moved run ran at its instant; the schedule goes on with the next 1 January');

# --- a copy of the database does not run a one-off job
$at = $node->safe_psql('app', q{
	SELECT date_trunc('second', now()) + interval '6 seconds'});
$node->safe_psql('app', qq{
	SELECT schedlock.schedule_once('copied', '$at',
						 \$\$INSERT INTO ticks VALUES ('copied', clock_timestamp())\$\$)});
$node->safe_psql('postgres', 'CREATE DATABASE app_copy TEMPLATE app');
$node->poll_query_until('app', q{SELECT count(*) = 1 FROM ticks WHERE job = 'copied'})
  or die 'the one-off job did not run in the original';
# the copy runs nothing, its canary neither, until it is adopted: wait until
# its housekeeper has said so
$node->wait_for_log(qr/database "app_copy".*are paused|are paused.*app_copy/, 0);
wait_past(epoch_of($at));
is($node->safe_psql('app_copy', q{
	SELECT (SELECT count(*) FROM ticks WHERE job = 'copied'),
		   (SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
			 WHERE j.job_name = 'copied')}),
	'0|0', 'the copy did not run the one-off job');
my $adopted_at = $node->safe_psql('app_copy', 'SELECT now()');
$node->safe_psql('app_copy', 'SELECT schedlock_adopt_jobs()');
canary_after('app_copy', "timestamptz '$adopted_at'");
is($node->safe_psql('app_copy', q{
	SELECT (SELECT count(*) FROM ticks WHERE job = 'copied'),
		   (SELECT next_run_at IS NULL FROM schedlock.jobs WHERE job_name = 'copied')}),
	'0|t', 'adopted after its instant, the one-off job has ended without running');

# --- ALTER EXTENSION UPDATE from 1.0: alter_job gains next_run_at and
# keeps the EXECUTE privileges a DBA granted on it.  The library refuses
# 1.0's alter_job until the update (it serves the tables of 1.1 on): the
# job is written as the library of 1.0 left it.
$node->safe_psql('postgres', 'CREATE DATABASE old10');
$node->safe_psql('old10', q{
	CREATE EXTENSION schedlock VERSION '1.0';
	CREATE ROLE app_role;
	GRANT EXECUTE ON FUNCTION alter_job(text, text, text, text, jsonb, text, interval, integer,
										interval, text, boolean, boolean, name)
	  TO app_role WITH GRANT OPTION;
	INSERT INTO schedlock.jobs (job_name, owner, schedule, command, timezone, enabled, next_slot)
	VALUES ('old_job', current_user::regrole, '0 3 * * *', 'SELECT 1', 'UTC', false,
			cron_next('0 3 * * *', now(), 'UTC'));});
my ($rc10, $out10, $err10) = $node->psql('old10', q{SELECT alter_job('old_job', enabled => true)});
like($err10, qr/ERROR:  cannot execute schedlock\.alter_job\(\) on the tables of schedlock 1\.0\n.*HINT:  Run ALTER EXTENSION schedlock UPDATE\./s,
	'alter_job of 1.0 is refused (55000) until the update');
is($node->safe_psql('old10', q{SELECT enabled FROM schedlock.jobs WHERE job_name = 'old_job'}),
	'f', 'and changes nothing');
$node->safe_psql('old10', 'ALTER EXTENSION schedlock UPDATE');
is($node->safe_psql('old10', q{
	SELECT has_table_privilege('app_role', 'schedlock.jobs', 'INSERT WITH GRANT OPTION'),
		   has_table_privilege('app_role', 'schedlock.jobs', 'UPDATE, DELETE'),
		   (SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
			 WHERE p.proname = 'alter_job' AND a.grantee = 'app_role'::regrole),
		   (SELECT count(*) FROM pg_proc WHERE proname = 'alter_job')}),
	't|f|0|1', 'the update turns the grant of alter_job into the job API\'s one grant (with grant option), and revokes the per-function grant');
$node->safe_psql('old10', q{
	SELECT schedlock.alter_job('old_job', enabled => true, next_run_at => '2030-01-01 00:00+00')});
is($node->safe_psql('old10', q{SELECT next_run_at FROM schedlock.jobs WHERE job_name = 'old_job'}),
	'2030-01-01 00:00:00+00', 'after the update alter_job takes next_run_at');

$node->stop;
done_testing();
