# 114_job_statement_timeout.pl: a job without a timeout of its own is
# bounded by the statement_timeout a login of its role in its database gets
# (postgresql.conf, ALTER DATABASE ... SET, ALTER ROLE ... SET); a job's own
# timeout wins over it, longer or shorter.
#   statement_timeout = 1s in postgresql.conf: 2.5 s jobs, atomic and not,
#     fail with 57014, also one that sets statement_timeout = 0 first; the
#     same with timeout => '5 seconds' succeed.
#   ALTER ROLE slow SET statement_timeout = 0: that role's 2.5 s jobs
#     succeed, another role's still fail.
#   ALTER DATABASE app SET statement_timeout = '30s': the jobs of the
#     database succeed; ALTER ROLE fast IN DATABASE app SET ... = '500ms'
#     bounds that role's jobs there again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node_conf('statement_timeout', "max_worker_processes = 16\n");
admin(q{
	CREATE EXTENSION schedlock SCHEMA public;
	CREATE ROLE slow LOGIN;
	CREATE ROLE fast LOGIN;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO slow, fast;
	GRANT INSERT ON schedlock.jobs TO slow, fast;
	-- the test's own sessions are not bounded
	ALTER ROLE postgres SET statement_timeout = 0;
	ALTER ROLE slow SET statement_timeout = 0;
	ALTER ROLE fast SET statement_timeout = 0;
});

# one job of ROLE named NAME: 2.5 s of pg_sleep, never due by itself
sub sleeper
{
	my ($role, $name, $extra) = @_;
	as_role($role, qq{SELECT schedlock.schedule_job('$name', '0 0 1 1 *',
		'SELECT pg_sleep(2.5)' $extra)});
}
sleeper('fast', 'atomic', '');
sleeper('fast', 'toplevel', ', atomic => false');
sleeper('fast', 'own_timeout', q{, timeout => '5 seconds'});
sleeper('fast', 'own_timeout_toplevel', q{, timeout => '5 seconds', atomic => false});
sleeper('slow', 'slow_atomic', '');
sleeper('slow', 'slow_toplevel', ', atomic => false');
as_role('fast', q{SELECT schedlock.schedule_job('self_set', '0 0 1 1 *',
	'SET statement_timeout = 0; SELECT pg_sleep(2.5)', atomic => false)});
admin(q{ALTER ROLE slow RESET statement_timeout; ALTER ROLE fast RESET statement_timeout});

$node->append_conf('postgresql.conf', "statement_timeout = '1s'");
$node->reload;

# "status|sqlstate" of a run of JOB by ROLE
sub outcome
{
	my ($role, $job) = @_;
	my ($status, $state) = split /\|/, run_and_wait($role, $job);
	return ($status // 'timeout') . '|' . ($state // '');
}

is(outcome('fast', 'atomic'), 'failed|57014',
	'postgresql.conf statement_timeout = 1s cancels a 2.5 s atomic job');
is(outcome('fast', 'toplevel'), 'failed|57014',
	'... and a 2.5 s non-atomic job');
is(outcome('fast', 'own_timeout'), 'succeeded|',
	'a job with timeout => 5 seconds runs past statement_timeout (atomic)');
is(outcome('fast', 'own_timeout_toplevel'), 'succeeded|',
	'... and non-atomic');
is(outcome('fast', 'self_set'), 'failed|57014',
	'a SET statement_timeout in the command does not lift the limit');
is(admin(q{
	SELECT message FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'atomic' ORDER BY run_id DESC LIMIT 1}),
	'canceling statement due to statement timeout',
	'the run says why it was canceled');

# the role's setting applies to its jobs only (new job backends take it)
admin(q{ALTER ROLE slow SET statement_timeout = 0});
is(outcome('slow', 'slow_atomic'), 'succeeded|',
	'ALTER ROLE slow SET statement_timeout = 0: its atomic job runs 2.5 s');
is(outcome('slow', 'slow_toplevel'), 'succeeded|', '... and its non-atomic job');
is(outcome('fast', 'atomic'), 'failed|57014',
	'another role\'s job is still bounded by postgresql.conf');

# the database's setting, and the role's setting in the database
admin(q{ALTER DATABASE app SET statement_timeout = '30s'});
# the job backend of "fast" that runs now started under the old settings
$node->safe_psql('postgres', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND usename = 'fast'});
$node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND usename = 'fast'});
is(outcome('fast', 'atomic'), 'succeeded|',
	'ALTER DATABASE app SET statement_timeout = 30s: the database\'s jobs run 2.5 s');
admin(q{ALTER ROLE fast IN DATABASE app SET statement_timeout = '500ms'});
$node->safe_psql('postgres', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND usename = 'fast'});
$node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND usename = 'fast'});
is(outcome('fast', 'toplevel'), 'failed|57014',
	'ALTER ROLE fast IN DATABASE app SET statement_timeout = 500ms bounds its jobs there');
is(outcome('fast', 'own_timeout'), 'succeeded|',
	'a job\'s own timeout still wins');

$node->stop;
done_testing();
