# 206_job_session_leases.pl: a session-bound lease a job takes ends with
# the run.
#
# A session-bound lease belongs to the session that took it, and a job's
# session is its role's job backend, which lives on and runs the role's
# next jobs (here alice's every-second job keeps it).  So a job of alice
# that calls schedlock_acquire(..., session_bound => true) and does not
# release the lease must not leave it held by the backend until
# lock_until: after the run, with the same backend still running,
# schedlock.locks shows the lease not held and another session (bob's)
# acquires the name.  Checked for an atomic and a non-atomic job; a
# lock_at_least_for window is kept as schedlock_release keeps it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('job_session_leases');

admin(q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE EXTENSION schedlock SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO alice, bob;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
});
# alice's backend lives on between the runs below
as_role('alice', q{SELECT schedlock.schedule_job('keepalive', '1 seconds', 'SELECT 1')});

my %worker;
foreach my $atomic ('true', 'false')
{
	my $lease = "job_lease_$atomic";
	my $job = "lease_$atomic";
	as_role('alice', qq{
		SELECT schedlock.schedule_job('$job', '0 0 1 1 *',
			\$cmd\$SELECT schedlock_acquire('$lease', '1 hour', session_bound => true)\$cmd\$,
			atomic => $atomic)});
	my ($status, undef, $pid) = split /\|/, run_and_wait('alice', $job);
	is($status, 'succeeded', "atomic $atomic: the job that takes a session-bound lease succeeds");
	$worker{$pid} = 1;

	# the job ran in alice's backend, which the lease no longer binds
	is( admin(qq{
			SELECT session_bound::text || ' ' || (holder_pid = $pid)::text
			  FROM schedlock.locks WHERE lock_name = '$lease'}),
		'false true',
		"atomic $atomic: the job took the lease in its role's backend, which no longer binds it");
	is(admin(qq{SELECT held FROM schedlock.locks WHERE lock_name = '$lease'}),
		'f', "atomic $atomic: after the run the lease is not held");
	is( admin(qq{
			SELECT count(*) FROM pg_catalog.pg_stat_activity
			 WHERE pid = $pid AND backend_type LIKE 'schedlock%'}),
		'1', "atomic $atomic: the job backend that ran the job is still running");
	isnt(as_role('bob', qq{SELECT schedlock_acquire('$lease', '1 minute')}),
		'', "atomic $atomic: another session acquires the name");
}
is(scalar(keys %worker), 1, 'both jobs ran in alice\'s one job backend');

# lock_at_least_for is honoured as schedlock_release honours it
as_role('alice', q{
	SELECT schedlock.schedule_job('lease_least', '0 0 1 1 *',
		$cmd$SELECT schedlock_acquire('job_lease_least', '1 hour', '1 hour',
									  session_bound => true)$cmd$)});
is((split /\|/, run_and_wait('alice', 'lease_least'))[0],
	'succeeded', 'a job takes a session-bound lease with lock_at_least_for');
is( admin(q{
		SELECT (NOT session_bound AND held
				AND lock_until = locked_at + interval '1 hour')::text
		  FROM schedlock.locks WHERE lock_name = 'job_lease_least'}),
	'true', 'the lease ended as a release ends it: lock_until = min_until');
is(as_role('bob', q{SELECT schedlock_acquire('job_lease_least', '1 minute')}),
	'', 'the lock_at_least_for window still keeps others out');

as_role('alice', q{SELECT schedlock.alter_job('keepalive', enabled => false)});
$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|PANIC|TRAP:|XX000/, 'server log clean');

done_testing();
