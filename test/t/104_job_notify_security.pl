# 104_job_notify_security.pl: a NOTIFY job heard by three listening
# sessions, claimed by exactly one of them, which alone gets the payload (the
# notification does not carry it); a non-atomic job that VACUUMs and calls a
# procedure that commits; and the security model: role A's job runs as A
# and cannot read B's table, and A cannot see, alter or run B's job.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('notify',
	conf => [ "max_worker_processes = 32" ],
	app => 'extension');

# --- NOTIFY job: three application servers listen, one claims ---
my @apps = map { $node->background_psql('app') } 1 .. 3;
$_->query_safe('LISTEN mail_due') for @apps;
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('mail', '2 seconds', notify_channel => 'mail_due',
						payload => '{"to": "ops"}', timeout => '30 seconds')});
$node->poll_query_until('app', q{
	SELECT count(*) > 0 FROM schedlock.job_runs WHERE status = 'pending'})
  or die 'no notification was sent';

my ($first_run, @heard);
for my $i (0 .. 2)
{
	my $out = $apps[$i]->query_safe('SELECT 1');
	my @ids = ($out =~ /"run_id" : (\d+)/g);
	push @heard, scalar(@ids);
	$first_run //= $ids[0];
	like($out, qr/Asynchronous notification "mail_due" with payload "\{"job" : "mail", "job_id" : \d+, "run_id" : \d+, "scheduled_for" : "[^"]+", "attempt" : 1\}"/,
		"application $i heard the notification with its JSON");
	unlike($out, qr/"to": "ops"/, "application $i did not hear the job's payload");
}
ok($heard[0] > 0 && $heard[1] > 0 && $heard[2] > 0, 'all three applications heard it');

my @claims = map {
	$apps[$_]->query_safe("SELECT claimed, payload FROM schedlock_claim_run_payload($first_run, 'app-$_')")
} 0 .. 2;
is(scalar(grep { $_ eq 't|{"to": "ops"}' } @claims), 1,
	"exactly one application claimed run $first_run, and got the payload (@claims)");
is(scalar(grep { $_ eq 'f|' } @claims), 2, 'the others got false and no payload');
my ($winner) = grep { $claims[$_] =~ /^t/ } 0 .. 2;
is($apps[$winner]->query_safe("SELECT schedlock_finish_run($first_run, true, 'mail sent')"),
	't', 'the claimer reports success');
is($node->safe_psql('app', "SELECT status, claimed_by, message FROM schedlock.job_runs WHERE run_id = $first_run"),
	"succeeded|app-$winner|mail sent", 'the run is closed with who did it');
$_->quit for @apps;
$node->safe_psql('app', q{SELECT schedlock.unschedule_job('mail')});

# --- non-atomic job: VACUUM and a procedure that commits ---
$node->safe_psql('app', q{
	CREATE TABLE t (x int);
	CREATE PROCEDURE fill() LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO t VALUES (1); COMMIT;
		INSERT INTO t VALUES (2); COMMIT;
	END $$;
	SELECT schedlock.schedule_job('maintenance', '1 second', 'VACUUM t; CALL fill()', atomic => false);
});
$node->poll_query_until('app', q{
	SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'maintenance' AND r.status IN ('succeeded', 'failed')})
  or die 'the maintenance job did not run';
$node->safe_psql('app', q{SELECT schedlock.alter_job('maintenance', enabled => false)});
is($node->safe_psql('app', q{
	SELECT r.status, coalesce(r.sqlstate, '') FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'maintenance' ORDER BY run_id LIMIT 1}),
	'succeeded|', 'a non-atomic job with VACUUM and CALL of a committing procedure succeeds');
ok($node->safe_psql('app', q{SELECT count(*) >= 2 AND min(x) = 1 AND max(x) = 2 FROM t}) eq 't',
	'the procedure committed its rows');
ok($node->safe_psql('app', q{SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = 't'}) eq 't',
	'VACUUM ran');
# the same command scheduled without atomic => false: the job is made
# non-atomic (a NOTICE says so) and its runs succeed
my ($vrc, $vout, $verr) = $node->psql('app',
	q{SELECT schedlock.schedule_job('maint_atomic', '1 second', 'VACUUM t')});
like($verr, qr/NOTICE:  job "maint_atomic" runs with atomic => false/,
	'VACUUM scheduled as atomic: a NOTICE says the job is non-atomic');
$node->poll_query_until('app', q{
	SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'maint_atomic' AND r.status = 'succeeded'})
  or die 'maint_atomic did not succeed';
is($node->safe_psql('app', q{
	SELECT atomic, count(*) FILTER (WHERE r.status = 'failed')
	  FROM schedlock.jobs j LEFT JOIN schedlock.job_runs r USING (job_id)
	 WHERE j.job_name = 'maint_atomic' GROUP BY atomic}),
	'f|0', 'and its runs succeed');
$node->safe_psql('app', q{SELECT schedlock.unschedule_job('maint_atomic')});

# --- security: A's job runs as A ---
# (alice and bob may both create objects in public, so a job of either
# does not look there: the commands qualify their tables)
$node->safe_psql('app', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT CREATE, USAGE ON SCHEMA public TO alice, bob;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
	SET ROLE bob;
	CREATE TABLE bob_secret (s text);
	INSERT INTO bob_secret VALUES ('bob''s');
	SELECT schedlock.schedule_job('bob_job', '0 0 1 1 *', 'SELECT 1');
	RESET ROLE;
	SET ROLE alice;
	CREATE TABLE alice_log (n bigint);
	SELECT schedlock.schedule_job('peek', '1 second', 'INSERT INTO public.alice_log SELECT count(*) FROM public.bob_secret');
	SELECT schedlock.schedule_job('whoami', '1 second', 'INSERT INTO public.alice_log SELECT CASE WHEN current_user = ''alice'' THEN -1 ELSE -2 END');
	RESET ROLE;
});
$node->poll_query_until('app', q{
	SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'peek' AND r.status = 'failed'})
  or die 'peek did not fail';
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM alice_log WHERE n = -1})
  or die 'whoami did not run';
is($node->safe_psql('app', q{
	SELECT DISTINCT r.sqlstate || ' ' || r.message FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'peek'}),
	'42501 permission denied for table bob_secret', 'alice\'s job cannot read bob\'s table');
is($node->safe_psql('app', q{SELECT count(*) FROM alice_log WHERE n >= 0 OR n = -2}), '0',
	'alice\'s jobs never ran as anyone but alice');
ok($node->safe_psql('app', q{
	SET ROLE alice;
	SELECT consecutive_failures > 0 FROM schedlock.job_status WHERE job_name = 'peek'}) eq 't',
	'alice sees the failures of her job in job_status');

is($node->safe_psql('app', q{SET ROLE alice; SELECT count(*) FROM schedlock.jobs WHERE job_name = 'bob_job'}),
	'0', 'alice cannot see bob\'s job');
is($node->safe_psql('app', q{SET ROLE alice; SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id) WHERE j.owner = 'bob'::regrole}),
	'0', 'nor its runs');
my ($rc, $out, $err) = $node->psql('app', q{SET ROLE alice; SELECT schedlock.alter_job('bob_job', command => 'DELETE FROM bob_secret')});
like($err, qr/job "bob_job" does not exist/, 'alice cannot alter bob\'s job');
($rc, $out, $err) = $node->psql('app', q{SET ROLE alice; SELECT schedlock.run_job('bob_job')});
like($err, qr/job "bob_job" does not exist/, 'alice cannot run bob\'s job');
($rc, $out, $err) = $node->psql('app', q{SET ROLE alice; SELECT schedlock.unschedule_job('bob_job')});
like($err, qr/job "bob_job" does not exist/, 'alice cannot unschedule bob\'s job');
is($node->safe_psql('app', q{SET ROLE alice; SELECT schedlock.unschedule_job('bob_job', if_exists => true)}), 'f',
	'nor with if_exists');
my $bob_job_id = $node->safe_psql('app', q{SELECT job_id FROM schedlock.jobs WHERE job_name = 'bob_job'});
($rc, $out, $err) = $node->psql('app', "SET ROLE alice; SELECT schedlock.unschedule_job($bob_job_id)");
like($err, qr/job $bob_job_id does not exist/, 'nor by its id');
($rc, $out, $err) = $node->psql('app', q{SET ROLE alice; UPDATE schedlock.jobs SET command = 'SELECT 2'});
like($err, qr/permission denied for table jobs/, 'alice cannot write the jobs table');
is($node->safe_psql('app', q{SELECT command FROM schedlock.jobs WHERE job_name = 'bob_job'}),
	'SELECT 1', 'bob\'s job is unchanged');

$node->stop;
done_testing();
