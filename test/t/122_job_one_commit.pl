# 122_job_one_commit.pl: an atomic SQL job that is due when a worker claims
# it runs in the claiming transaction -- claim, command and outcome commit
# once together (one commit, one WAL flush per job, as in a burst of jobs
# due at one instant) -- while a job claimed before its instant still runs
# in a transaction of its own whose now() is not before its slot.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('one_commit',
	conf => [ "max_worker_processes = 32" ],
	app => 'extension');
# the transaction each command ran in, and its now()
$node->safe_psql('app', 'CREATE TABLE seen (job text, xid xid8, at timestamptz)');

# 50 jobs due long ago (a slot a minute back, the next one months ahead):
# each is due when a worker claims it
$node->safe_psql('app', q{
	SELECT count(schedlock.schedule_job('due' || i, '0 0 1 1 *',
		format('INSERT INTO seen VALUES (%L, pg_current_xact_id(), now())', 'due' || i)))
	  FROM generate_series(1, 50) i});
$node->safe_psql('app', q{
	UPDATE schedlock.jobs
	   SET next_slot = date_trunc('second', now()) - interval '1 minute',
		   next_run_at = date_trunc('second', now()) - interval '1 minute'});
# the workers wake on the reload and find them due
$node->safe_psql('app', 'SELECT pg_reload_conf()');
ok( $node->poll_query_until('app',
		q{SELECT count(*) = 50 FROM schedlock.job_runs WHERE status = 'succeeded'}),
	'the 50 due jobs ran');

# the claim advanced the job's row; the outcome closed the run's row
is( $node->safe_psql('app', q{
		SELECT count(*) FROM seen s
		  JOIN schedlock.jobs j ON j.job_name = s.job
		  JOIN schedlock.job_runs r ON r.job_id = j.job_id
		 WHERE j.xmin = pg_catalog.xid(s.xid) AND r.xmin = pg_catalog.xid(s.xid)}),
	'50',
	'each due job was claimed, run and recorded in one transaction');
is( $node->safe_psql('app', q{
		SELECT count(*) FROM seen s
		  JOIN schedlock.jobs j ON j.job_name = s.job
		  JOIN schedlock.job_runs r ON r.job_id = j.job_id
		 WHERE s.at < r.scheduled_for}),
	'0', 'no command of a due job saw a now() before its slot');

# an every-second job: the worker claims it before each instant, and the
# command's transaction starts on the instant
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('tick', '1 seconds',
		$$INSERT INTO seen VALUES ('tick', pg_current_xact_id(), now())$$)});
ok( $node->poll_query_until('app',
		q{SELECT count(*) >= 4 FROM seen WHERE job = 'tick'}),
	'the every-second job ran');
$node->safe_psql('app', q{SELECT schedlock.alter_job('tick', enabled => false)});
is( $node->safe_psql('app', q{
		SELECT count(*) FROM seen s
		  JOIN schedlock.jobs j ON j.job_name = s.job
		  JOIN schedlock.job_runs r ON r.job_id = j.job_id
		   AND r.xmin = pg_catalog.xid(s.xid)
		 WHERE s.job = 'tick' AND s.at < r.scheduled_for}),
	'0', 'no run of the every-second job saw a now() before its slot');

$node->stop;
done_testing();
