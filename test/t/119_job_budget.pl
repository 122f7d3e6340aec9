# 119_job_budget.pl: due jobs that wait for a job backend say why, and
# nothing is skipped silently.
#  (a) schedlock.max_job_backends = 1 and role alice's long job holds the
#      one backend: role bob's due job waits; schedlock.job_status's
#      waiting_reason names the setting, a WARNING after 10 s names the
#      setting to raise while alice's job still runs (the launcher wakes for
#      it), and bob's job runs once alice's job is over (the backend makes
#      room after its current job).
#  (b) max_worker_processes leaves no slot for a job backend: the due job's
#      waiting_reason and a WARNING name max_worker_processes, and it runs
#      once a slot is free.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockNode;
use Time::HiRes qw(usleep time);

my $node = schedlock_node('budget',
	conf => [
		qq{
max_worker_processes = 32
schedlock.max_job_backends = 1
} ],
	app => 'database');
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE TABLE done (who text, at timestamptz DEFAULT clock_timestamp());
	GRANT INSERT ON done TO alice, bob;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
});

# --- (a) the budget -----------------------------------------------------------

my $logstart = -s $node->logfile;
$node->safe_psql('app', q{
	SET ROLE alice;
	SELECT schedlock.schedule_job('alice_long', '@reboot',
		$$SELECT pg_sleep(14); INSERT INTO public.done (who) VALUES ('alice')$$);
	SELECT schedlock.run_job('alice_long');
});
wait_true($node, 'app', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND usename = 'alice' AND state = 'active'
	  AND query LIKE '%pg_sleep(14)%'}, 20)
  or die "alice's job did not start";
$node->safe_psql('app', q{
	SET ROLE bob;
	SELECT schedlock.schedule_job('bob_job', '0 0 1 1 *', $$INSERT INTO public.done (who) VALUES ('bob')$$);
	SELECT schedlock.run_job('bob_job');
});
ok(wait_true($node, 'app', q{SELECT waiting_reason LIKE 'waiting since % for a job backend: all schedlock.max_job_backends (1) are in use'
	FROM schedlock.job_status WHERE job_name = 'bob_job'}, 10),
	"bob's due job says it waits for the budget")
  or diag($node->safe_psql('app', q{SELECT waiting_reason FROM schedlock.job_status WHERE job_name = 'bob_job'}));
is($node->safe_psql('app', q{SELECT count(*) FROM done WHERE who = 'bob'}), '0',
	'and has not run while alice holds the one backend');
ok($node->wait_for_log(qr/WARNING:  schedlock jobs in database "app" wait for a job backend.*\n.*DETAIL:  All schedlock.max_job_backends \(1\) job backends of the cluster are in use.*\n.*HINT:  Raise schedlock.max_job_backends/, $logstart),
	'a WARNING names the setting to raise');
ok(wait_true($node, 'app', q{SELECT count(*) = 2 FROM done}, 30),
	"bob's job runs once alice's job is over");
# the launcher wakes by itself to warn after 10 s of waiting: the WARNING
# comes while alice's job still runs, not with the next pass something
# else causes (her backend leaving, 14 s in)
my ($warned) = slurp_file($node->logfile, $logstart) =~
  /^(\S+ \S+ \S+) \[\d+\] 53400 WARNING:  schedlock jobs in database "app" wait for a job backend/m;
$warned //= 'infinity';
is($node->safe_psql('app', qq{SELECT '$warned'::timestamptz < (SELECT at FROM done WHERE who = 'alice')}),
	't', "the WARNING came before alice's job ended");
ok($node->safe_psql('app', q{
	SELECT (SELECT at FROM done WHERE who = 'bob') >= (SELECT at FROM done WHERE who = 'alice')}) eq 't',
	"bob's job ran after alice's");
is($node->safe_psql('app', q{SELECT waiting_reason IS NULL FROM schedlock.job_status WHERE job_name = 'bob_job'}),
	't', 'then it waits for nothing');

# --- (b) no max_worker_processes slot -----------------------------------------
#
# max_worker_processes = 2: the launcher takes one, and the other is held
# by a background worker that is not schedlock's (a parallel query, here
# one that sleeps).
$node->safe_psql('app', q{SELECT schedlock.unschedule_job('alice_long')});
$node->append_conf('postgresql.conf', qq{
max_worker_processes = 2
max_parallel_workers = 2
max_logical_replication_workers = 0
schedlock.max_job_backends = 4
});
$node->restart;
$node->safe_psql('app', q{
	CREATE TABLE big AS SELECT i FROM generate_series(1, 3000) i;
	ANALYZE big;
});
# the housekeepers of the restart have left: only the launcher holds a slot
wait_true($node, 'app', q{SELECT count(*) = 0 FROM pg_stat_activity
	WHERE backend_type IN ('schedlock job', 'schedlock housekeeper')}, 60)
  or diag('schedlock processes still run');
# a parallel query takes the other slot (a parallel plan gets no worker
# when the slot is busy at its start: try again)
my $holder;
my $holding = 0;
for my $try (1 .. 3)
{
	$holder = $node->background_psql('app');
	$holder->query_until(qr/start/, q{
		SET max_parallel_workers_per_gather = 1;
		SET parallel_setup_cost = 0;
		SET parallel_tuple_cost = 0;
		SET min_parallel_table_scan_size = 0;
		\echo start
		SELECT count(*) FROM big WHERE pg_sleep(0.01) IS NOT NULL;
	});
	$holding = wait_true($node, 'app', q{SELECT count(*) >= 1 FROM pg_stat_activity WHERE backend_type = 'parallel worker'}, 5);
	last if $holding;
	$node->safe_psql('app', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE query LIKE '%pg_sleep(0.01)%' AND pid <> pg_backend_pid()});
	$holder->quit;
}
ok($holding, 'a parallel worker holds the last slot (about 15 s)');
$logstart = -s $node->logfile;
$node->safe_psql('app', q{SET ROLE bob; SELECT schedlock.run_job('bob_job')});
ok(wait_true($node, 'app', q{SELECT waiting_reason LIKE 'waiting since % for a job backend: no max_worker_processes slot is free'
	FROM schedlock.job_status WHERE job_name = 'bob_job'}, 10),
	'a due job without a worker slot says it waits for one')
  or diag($node->safe_psql('app', q{SELECT waiting_reason FROM schedlock.job_status WHERE job_name = 'bob_job'}));
ok($node->wait_for_log(qr/DETAIL:  All max_worker_processes \(2\) background worker slots are in use.*\n.*HINT:  Raise max_worker_processes/, $logstart),
	'a WARNING names max_worker_processes');
$holder->quit;
ok(wait_true($node, 'app', q{SELECT count(*) = 3 FROM done}, 30),
	'the job runs once a slot is free');

$node->stop;
done_testing();
