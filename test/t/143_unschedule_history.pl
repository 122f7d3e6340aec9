# 143_unschedule_history.pl: unschedule_job keeps the job's history, and the
# runs in progress end as they would have.
#   (a) an SQL run in progress when its job is unscheduled, non-atomic and
#       atomic, finishes and is recorded as succeeded, with the job's name;
#   (b) a NOTIFY run an application claimed before the job was unscheduled
#       can still be finished (schedlock_finish_run), and is recorded;
#   (c) the finished runs of the job stay in schedlock.job_runs, readable
#       by name without a join, and go with the history's retention like
#       any run;
#   (d) DROP OWNED BY removes the runs a role owns, of unscheduled jobs
#       too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node_conf('unschedule_history',
	"max_worker_processes = 32\nschedlock.timezone = 'UTC'");
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	CREATE ROLE mailer LOGIN;
	GRANT INSERT ON schedlock.jobs TO mailer;
	GRANT CREATE ON SCHEMA public TO mailer;
});

# --- (a) SQL runs in progress: a non-atomic one (its run is recorded as
# running first) and an atomic one (its run is recorded when it commits)
$node->safe_psql('app', q{
	SET ROLE mailer;
	CREATE TABLE done (job text);
	SELECT schedlock.schedule_once('slow', now(), 'SELECT pg_sleep(2); INSERT INTO done VALUES (''slow'')',
						 atomic => false);
});
ok(wait_for(q{SELECT count(*) = 1 FROM schedlock.job_runs WHERE job_name = 'slow' AND status = 'running'}, 30),
	'the non-atomic run is running');
is($node->safe_psql('app', q{SET ROLE mailer; SELECT schedlock.unschedule_job('slow')}), 't',
	'the job is unscheduled meanwhile');
ok(wait_for(q{SELECT count(*) = 1 FROM schedlock.job_runs WHERE job_name = 'slow' AND status <> 'running'}, 30),
	'the run ends');
is($node->safe_psql('app', q{
	SELECT status, sqlstate IS NULL, duration >= interval '2 s'
	  FROM schedlock.job_runs WHERE job_name = 'slow'}),
	'succeeded|t|t', 'it is recorded as succeeded, under the job\'s name');

$node->safe_psql('app', q{
	SET ROLE mailer;
	SELECT schedlock.schedule_once('slow_atomic', now(), 'SELECT pg_sleep(2.5); INSERT INTO done VALUES (''slow_atomic'')');
});
ok(wait_for(q{SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%pg_sleep(2.5)%' AND pid <> pg_backend_pid()}, 30),
	'the atomic run is running');
is($node->safe_psql('app', q{SET ROLE mailer; SELECT schedlock.unschedule_job('slow_atomic')}), 't',
	'the job is unscheduled meanwhile');
ok(wait_for(q{SELECT count(*) = 1 FROM schedlock.job_runs WHERE job_name = 'slow_atomic' AND status <> 'running'}, 30),
	'the run ends');
is($node->safe_psql('app', q{
	SELECT status, sqlstate IS NULL FROM schedlock.job_runs WHERE job_name = 'slow_atomic'}),
	'succeeded|t', 'it is recorded as succeeded, under the job\'s name');
is($node->safe_psql('app', q{SELECT string_agg(job, ',' ORDER BY job) FROM done}), 'slow,slow_atomic',
	'the work of both committed');

# --- (b) a claimed NOTIFY run
$node->safe_psql('app', q{
	SET ROLE mailer;
	SELECT schedlock.schedule_once('told', now(), notify_channel => 'mail', timeout => '5 minutes');
});
ok(wait_for(q{SELECT count(*) = 1 FROM schedlock.job_runs WHERE job_name = 'told' AND status = 'pending'}, 30),
	'the NOTIFY run is notified');
my $run = $node->safe_psql('app', q{SELECT run_id FROM schedlock.job_runs WHERE job_name = 'told'});
is($node->safe_psql('app', qq{SET ROLE mailer; SELECT claimed FROM schedlock_claim_run_payload($run, 'app-1')}),
	't', 'an application claims it');
is($node->safe_psql('app', q{SET ROLE mailer; SELECT schedlock.unschedule_job('told')}), 't',
	'the job is unscheduled meanwhile');
my ($rc, $out, $err) = $node->psql('app',
	qq{SET ROLE mailer; SELECT schedlock_finish_run($run, true, 'sent')});
is($out, 't', 'the application finishes the run of the unscheduled job')
  or diag($err);
is($node->safe_psql('app', qq{
	SELECT job_name, status, claimed_by, message FROM schedlock.job_runs WHERE run_id = $run}),
	'told|succeeded|app-1|sent', 'and it is recorded');

# --- (c) the history stays, readable by name, and is pruned like any run
is($node->safe_psql('app', q{
	SET ROLE mailer;
	SELECT string_agg(job_name || ':' || status, ',' ORDER BY run_id) FROM schedlock.job_runs}),
	'slow:succeeded,slow_atomic:succeeded,told:succeeded',
	'the job\'s owner reads the history of its unscheduled jobs');
is($node->safe_psql('app', q{SELECT count(*) FROM schedlock.jobs}), '0', 'no job is left');
$node->safe_psql('app', q{
	UPDATE schedlock.job_runs SET finished_at = finished_at - interval '30 days'
	 WHERE job_name = 'slow'});
$node->append_conf('postgresql.conf', "schedlock.history_retention = '7d'");
$node->reload;
ok(wait_for(q{SELECT count(*) = 0 FROM schedlock.job_runs WHERE job_name = 'slow'}, 90),
	'retention prunes the old run of the unscheduled job');
is($node->safe_psql('app', q{SELECT string_agg(job_name, ',' ORDER BY run_id) FROM schedlock.job_runs}),
	'slow_atomic,told', 'and keeps the recent ones');

# --- (d) DROP OWNED BY removes a role's runs
$node->safe_psql('app', q{DROP OWNED BY mailer; DROP ROLE mailer});
is($node->safe_psql('app', q{SELECT count(*) FROM schedlock.job_runs}), '0',
	'DROP OWNED BY took the runs of the role\'s unscheduled jobs');

$node->stop;
done_testing();
