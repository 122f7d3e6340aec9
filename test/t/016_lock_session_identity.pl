# 016_lock_session_identity.pl: a session-bound lease has one holder as long
# as the holding session lives, even after the session dropped every
# advisory lock it had (issue 11, defect 15): pg_advisory_unlock_all(),
# DISCARD ALL, or pg_advisory_unlock_all() inside a transaction that is still
# open when another session tries to take the lease.  The holder keeps
# using its lease, takes new session-bound locks correctly afterwards, and
# its lock is free at once when the session really ends.
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

	$node = lock_node('session_identity', $max_session_locks);

	# another session tries to take the lock; true when it was refused
	sub others_refused
	{
		my ($name) = @_;
		return $node->safe_psql('app',
			"SELECT schedlock_acquire('$name', '1 hour', '0', 'intruder', true) IS NULL"
		);
	}

	my $h = $node->background_psql('app', on_error_stop => 0);
	my $pid = $h->query_safe('SELECT pg_backend_pid()');
	my $t = $h->query_safe(
		"SELECT schedlock_acquire('nightly', '1 hour', '0', 'holder', true)");
	like($t, qr/^\d+$/, 'the holder acquires a session-bound lease');

	# --- pg_advisory_unlock_all()
	$h->query_safe('SELECT pg_advisory_unlock_all()');
	is(others_refused('nightly'), 't',
		'after pg_advisory_unlock_all() in the holder another session is still refused');
	is(identity_locks($node, $pid), $in_table ? '1' : '0', 'the holder holds its identity lock again');
	is($node->safe_psql('app',
			"SELECT held FROM schedlock.locks WHERE lock_name = 'nightly'"),
		't', 'the view shows the lease held');

	# --- DISCARD ALL
	$h->query_safe('DISCARD ALL');
	is(others_refused('nightly'), 't',
		'after DISCARD ALL in the holder another session is still refused');

	# --- the identity lock lost inside a transaction that stays open
	$h->query_safe('BEGIN');
	$h->query_safe('SELECT pg_advisory_unlock_all()');
	is(identity_locks($node, $pid), '0', 'inside the open transaction the identity lock is gone');
	is(others_refused('nightly'), 't',
		'while that transaction is open another session is still refused');
	is($node->safe_psql('app',
			"SELECT held FROM schedlock.locks WHERE lock_name = 'nightly'"),
		't', 'and the view still shows the lease held');
	is($h->query_safe("SELECT schedlock_extend('nightly', $t, '1 hour')"),
		't', 'the holder extends its lease inside that transaction');
	$h->query_safe('COMMIT');
	is(identity_locks($node, $pid), $in_table ? '1' : '0', 'after the commit the identity lock is held');

	# --- the same, ended by a rollback
	$h->query_safe('BEGIN');
	$h->query_safe('SELECT pg_advisory_unlock_all()');
	$h->query_safe('ROLLBACK');
	is(identity_locks($node, $pid), $in_table ? '1' : '0', 'after a rollback the identity lock is held again');
	is(others_refused('nightly'), 't', 'and another session is refused');

	# --- a new session-bound lock after the identity lock was dropped
	$h->query_safe('SELECT pg_advisory_unlock_all()');
	my $t2 = $h->query_safe(
		"SELECT schedlock_acquire('hourly', '1 hour', '0', 'holder', true)");
	like($t2, qr/^\d+$/, 'the holder acquires a second session-bound lease');
	$h->query_safe('BEGIN');
	$h->query_safe('SELECT pg_advisory_unlock_all()');
	is(others_refused('hourly'), 't', 'the second lease is protected as well');
	$h->query_safe('COMMIT');

	# --- releases: the identity lock goes with the last one, without warnings
	$h->query_safe('SELECT pg_advisory_unlock_all()');
	$h->query("SELECT schedlock_release('hourly', $t2)");
	is($h->{stderr}, '', 'releasing after pg_advisory_unlock_all() gives no warning');
	is(identity_locks($node, $pid), $in_table ? '1' : '0', 'one session-bound lease left: identity lock kept');
	$h->query("SELECT schedlock_assert('nightly', $t)");
	is($h->{stderr}, '', 'the holder still passes schedlock_assert');
	$h->query("SELECT schedlock_release('nightly', $t)");
	is($h->{stderr}, '', 'the last release gives no warning');
	is(identity_locks($node, $pid), '0', 'after the last release the identity lock is gone');
	is( $node->safe_psql('app',
			"SELECT schedlock_acquire('hourly', '1 hour') IS NOT NULL"),
		't', 'a released lock can be taken');

	# --- the session really ends: the lease is free at once
	my $t3 = $h->query_safe(
		"SELECT schedlock_acquire('weekly', '1 hour', '0', 'holder', true)");
	$h->query_safe('SELECT pg_advisory_unlock_all()');
	is(others_refused('weekly'), 't', 'held while the holder lives');
	$h->quit;
	$node->poll_query_until('app',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
	  or die "backend $pid did not exit";
	like($node->safe_psql('app',
			"SELECT schedlock_acquire('weekly', '1 hour', '0', 'next', true)"),
		qr/^\d+$/, 'after the holder disconnected the lease is taken at once');

	unlike(slurp_file($node->logfile), qr/you don't own a lock/,
		'the server log has no lock ownership warnings');

	$node->stop;
}
done_testing();
