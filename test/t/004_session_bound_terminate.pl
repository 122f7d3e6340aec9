# 004_session_bound_terminate.pl: a session-bound lock is freed the moment
# its session ends (pg_terminate_backend, or a plain disconnect), long before
# its lease would expire; a plain lease of a terminated session stays held
# until it expires; releasing a session-bound lock drops the session's
# identity lock.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockLockNode;

# Everything runs twice: with schedlock.max_session_locks = 0, session-bound
# leases are kept in schedlock.lock_state and bound through the session's
# identity lock; with the default they are kept in shared memory (issue 14)
# and need no identity lock, so there the count of identity locks is 0.
my $node;
foreach my $max_session_locks (0, 1024)
{
	my $in_table = $max_session_locks == 0;

	$node = lock_node('session_bound', $max_session_locks);

	# wait until a backend has gone away
	sub wait_gone
	{
		my ($pid) = @_;
		$node->poll_query_until('app',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
		  or die "backend $pid did not exit";
	}

	# --- pg_terminate_backend of the holder frees a session-bound lock
	my $s1 = $node->background_psql('app');
	my $pid1 = $s1->query_safe('SELECT pg_backend_pid()');
	my $t1 = $s1->query_safe(
		"SELECT schedlock_acquire('nightly', '1 hour', '0', 'server-1', true)");
	like($t1, qr/^\d+$/, 'session 1 acquires a session-bound lock with a 1 hour lease');
	is(identity_locks($node, $pid1), $in_table ? '1' : '0', 'session 1 holds its identity lock');

	is($node->safe_psql('app',
			"SELECT schedlock_acquire('nightly', '1 hour', '0', 'server-2', true) IS NULL"),
		't', 'another session gets NULL while session 1 is alive');
	is($node->safe_psql('app',
			"SELECT held, session_bound, holder_pid = $pid1 FROM schedlock.locks WHERE lock_name = 'nightly'"),
		't|t|t', 'the view shows the lock held, session-bound, by session 1');

	$node->safe_psql('app', "SELECT pg_terminate_backend($pid1)");
	wait_gone($pid1);
	$s1->quit;

	is($node->safe_psql('app',
			"SELECT held, lock_until > clock_timestamp() + interval '50 minutes' FROM schedlock.locks WHERE lock_name = 'nightly'"),
		'f|t', 'after pg_terminate_backend the view shows it free, lease still far from expiry');
	my $t2 = $node->safe_psql('app',
		"SELECT schedlock_acquire('nightly', '1 hour', '0', 'server-2', true)");
	like($t2, qr/^\d+$/, 'the next acquire succeeds at once');
	cmp_ok($t2, '>', $t1, 'with a higher token');
	is($node->safe_psql('app', "SELECT schedlock_release('nightly', $t1)"),
		'f', 'the terminated holder\'s token is stale: release returns false');
	my ($ret, $stdout, $stderr) = $node->psql('app',
		"\\set VERBOSITY verbose\nSELECT schedlock_assert('nightly', $t1)");
	like($stderr, qr/SL001/, 'and assert with it raises SL001');

	# --- a plain disconnect frees it too
	my $s2 = $node->background_psql('app');
	my $pid2 = $s2->query_safe('SELECT pg_backend_pid()');
	my $t3 = $s2->query_safe(
		"SELECT schedlock_acquire('hourly', '1 hour', '0', 'server-3', true)");
	like($t3, qr/^\d+$/, 'session 2 acquires another session-bound lock');
	is($node->safe_psql('app', "SELECT schedlock_acquire('hourly') IS NULL"),
		't', 'nobody else gets it while session 2 is connected');
	$s2->quit;
	wait_gone($pid2);
	like($node->safe_psql('app', "SELECT schedlock_acquire('hourly', '1 hour')"),
		qr/^\d+$/, 'after session 2 disconnects the lock can be acquired');

	# --- a plain lease is not tied to its session
	my $s3 = $node->background_psql('app');
	my $pid3 = $s3->query_safe('SELECT pg_backend_pid()');
	like($s3->query_safe("SELECT schedlock_acquire('weekly', '1 hour')"),
		qr/^\d+$/, 'session 3 acquires a plain lease');
	is(identity_locks($node, $pid3), '0', 'a plain lease takes no identity lock');
	$node->safe_psql('app', "SELECT pg_terminate_backend($pid3)");
	wait_gone($pid3);
	$s3->quit;
	is($node->safe_psql('app', "SELECT schedlock_acquire('weekly') IS NULL"),
		't', 'a plain lease stays held after its session is terminated');

	# --- release drops the identity lock; the session can go on
	my $s4 = $node->background_psql('app');
	my $pid4 = $s4->query_safe('SELECT pg_backend_pid()');
	my $a = $s4->query_safe(
		"SELECT schedlock_acquire('a', '1 hour', '0', NULL, true)");
	my $b = $s4->query_safe(
		"SELECT schedlock_acquire('b', '1 hour', '0', NULL, true)");
	is($s4->query_safe("SELECT schedlock_release('a', $a)"),
		't', 'session 4 releases one of its two session-bound locks');
	is(identity_locks($node, $pid4), $in_table ? '1' : '0', 'the identity lock stays while one is held');
	is($node->safe_psql('app', "SELECT schedlock_acquire('b') IS NULL"),
		't', 'the other lock is still held');
	is($s4->query_safe("SELECT schedlock_release('b', $b)"),
		't', 'session 4 releases the second');
	is(identity_locks($node, $pid4), '0', 'then the identity lock is gone');
	like($node->safe_psql('app', "SELECT schedlock_acquire('b')"),
		qr/^\d+$/, 'and the released lock can be taken');
	$s4->quit;

	$node->stop;
}
done_testing();
