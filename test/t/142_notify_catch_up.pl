# 142_notify_catch_up.pl: a NOTIFY listener that starts after a run was
# notified catches up with schedlock_pending_runs(), and a NOTIFY job nobody
# listens to says so.
#   (a) a run notified while nobody listened stays pending; a listener that
#       starts then gets it from schedlock_pending_runs(channel), claims and
#       finishes it; a role sees only the runs of its own jobs there;
#   (b) runs that expire unclaimed 3 times in a row: one WARNING in the
#       server log, the further unclaimed runs are not logged one by one
#       (the first ones are), job_status.stopped_reason says "unheard";
#   (c) a claimed run ends the streak: stopped_reason is NULL again, and a
#       new streak warns again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node_conf('notify_catch_up',
	"max_worker_processes = 32\nschedlock.timezone = 'UTC'");
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	CREATE ROLE mailer LOGIN;
	CREATE ROLE other LOGIN;
	GRANT INSERT ON schedlock.jobs TO mailer, other;
});

# --- (a) catching up
$node->safe_psql('app', q{
	SET ROLE mailer;
	SELECT schedlock.schedule_once('report', now(), notify_channel => 'mail',
						 payload => '{"to": "ops@example.com"}', timeout => '5 minutes');
});
ok(wait_for(q{SELECT count(*) = 1 FROM schedlock.job_runs WHERE status = 'pending'}, 30),
	'the run is notified while nobody listens, and stays pending');
my $run = $node->safe_psql('app', q{SELECT run_id FROM schedlock.job_runs WHERE status = 'pending'});

is($node->safe_psql('app', q{SET ROLE other; SELECT count(*) FROM schedlock_pending_runs('mail')}),
	'0', 'another role does not see the pending run');
is($node->safe_psql('app', q{SET ROLE mailer; SELECT count(*) FROM schedlock_pending_runs('other_channel')}),
	'0', 'nor does another channel');

# the listener as the README writes it: LISTEN, then catch up, then claim
my $listener = $node->background_psql('app', on_error_stop => 1);
$listener->query_safe('SET ROLE mailer');
$listener->query_safe('LISTEN mail');
is($listener->query_safe(q{
	SELECT string_agg(format('%s|%s|%s', run_id, job_name, attempt), ',')
	  FROM schedlock_pending_runs('mail')}),
	"$run|report|1", 'schedlock_pending_runs returns the run notified before LISTEN');
is($listener->query_safe(qq{
	SELECT claimed, payload->>'to' FROM schedlock_claim_run_payload($run, 'app-1')}),
	't|ops@example.com', 'the listener claims it');
is($listener->query_safe("SELECT schedlock_finish_run($run, true)"), 't',
	'and finishes it');
is($listener->query_safe(q{SELECT count(*) FROM schedlock_pending_runs('mail')}),
	'0', 'nothing is pending any more');
$listener->quit;
is($node->safe_psql('app', "SELECT status, claimed_by FROM schedlock.job_runs WHERE run_id = $run"),
	'succeeded|app-1', 'the run is recorded as the listener finished it');

# --- (b) nobody listens: a streak of unclaimed runs
my $log_offset = -s $node->logfile;
$node->safe_psql('app', q{
	SET ROLE mailer;
	SELECT schedlock.schedule_job('unheard', '1 seconds', notify_channel => 'nobody_listens',
						timeout => '300 milliseconds');
});
ok(wait_for(q{
	SELECT count(*) >= 6 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'unheard' AND r.status = 'timed_out'}, 60),
	'six runs expire unclaimed');
like($node->safe_psql('app', q{
	SELECT stopped_reason FROM schedlock.job_status WHERE job_name = 'unheard'}),
	qr/^unheard: no application claimed the last \d+ runs on channel "nobody_listens"/,
	'stopped_reason says the job is unheard');
my $log = slurp_file($node->logfile, $log_offset);
my @warnings = $log =~ /WARNING:  schedlock NOTIFY job "unheard" of role "mailer" in database "app": no application claimed its last 3 runs/g;
is(scalar @warnings, 1, 'one WARNING in the server log');
my @logged = $log =~ /schedlock job "unheard" of role "mailer" in database "app" run \d+ timed_out/g;
is(scalar @logged, 3, 'the first 3 unclaimed runs are logged, the later ones are not');

# --- (c) a claimed run ends the streak
$node->safe_psql('app', q{SET ROLE mailer; SELECT schedlock.alter_job('unheard', timeout => '1 minute')});
# (a run notified before the change keeps its 300 ms deadline)
ok(wait_for(q{
	SELECT count(*) >= 1 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'unheard' AND r.status = 'pending'
	   AND r.deadline > now() + interval '10 seconds'}, 30),
	'a run waits to be claimed');
is($node->safe_psql('app', q{
	SET ROLE mailer;
	SELECT count(*) = 1 AND bool_and(c.claimed AND schedlock_finish_run(p.run_id, true))
	  FROM schedlock_pending_runs('nobody_listens') p,
		   LATERAL schedlock_claim_run_payload(p.run_id, 'late') c
	 WHERE p.deadline > now() + interval '10 seconds'}),
	't', 'a listener that comes late catches up and claims it');
is($node->safe_psql('app', q{
	SELECT stopped_reason IS NULL, consecutive_failures FROM schedlock.job_status WHERE job_name = 'unheard'}),
	't|0', 'the streak is over: no stopped_reason');

# the short timeout again; the run pending with the long one is claimed,
# so that the next slots are not skipped behind it
$log_offset = -s $node->logfile;
$node->safe_psql('app', q{
	SET ROLE mailer;
	SELECT schedlock.alter_job('unheard', timeout => '300 milliseconds');
	SELECT c.claimed AND schedlock_finish_run(p.run_id, true)
	  FROM schedlock_pending_runs('nobody_listens') p,
		   LATERAL schedlock_claim_run_payload(p.run_id, 'late') c;
});
ok(wait_for(q{
	SELECT consecutive_failures >= 4 FROM schedlock.job_status WHERE job_name = 'unheard'}, 60),
	'a new streak');
$log = slurp_file($node->logfile, $log_offset);
@warnings = $log =~ /WARNING:  schedlock NOTIFY job "unheard" of role "mailer" in database "app": no application claimed its last 3 runs/g;
is(scalar @warnings, 1, 'warns once again');

$node->safe_psql('app', q{SET ROLE mailer; SELECT schedlock.unschedule_job('unheard')});
$node->stop;
done_testing();
