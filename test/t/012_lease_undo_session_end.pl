# 012_lease_undo_session_end.pl: a session-bound lease kept in shared memory
# ends with its session even when another session of the same role had
# changed it in a transaction that rolls back after the holder has gone.
# The rollback puts the lease back as it was before that transaction, but
# never as the lease of a live session: acquires of the name succeed at
# once, and the view shows it free.  Covered: release and extend rolled back
# (ROLLBACK, ROLLBACK TO SAVEPOINT, the changing session exiting with its
# transaction open), and a release followed by an acquire in the table, which
# drops the entry before the rollback puts it back.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockLockNode;

my $node = lock_node('lease_undo', 1024);

# wait until a backend has gone away (its leases are ended by then)
sub wait_gone
{
	my ($pid) = @_;
	$node->poll_query_until('app',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
	  or die "backend $pid did not exit";
}

# the holder's session takes NAME session-bound for an hour; another session
# runs BEGIN and CHANGE (with $token replaced); the holder disconnects; then
# FINISH ends the other session's transaction (undef: the other session
# exits with it open)
sub holder_gone_during
{
	my ($name, $change, $finish) = @_;
	my $holder = $node->background_psql('app');
	my $hpid = $holder->query_safe('SELECT pg_backend_pid()');
	my $token = $holder->query_safe(
		"SELECT schedlock_acquire('$name', '1 hour', session_bound => true)");
	like($token, qr/^\d+$/, "$name: the holder acquires it session-bound for an hour");

	my $other = $node->background_psql('app');
	my $opid = $other->query_safe('SELECT pg_backend_pid()');
	$change =~ s/\$token/$token/g;
	$other->query_safe('BEGIN');
	$other->query_safe($change);

	$holder->quit;
	wait_gone($hpid);
	if (defined $finish)
	{
		$other->query_safe($finish);
		$other->quit;
	}
	else
	{
		$other->quit;
		wait_gone($opid);
	}

	is($node->safe_psql('app',
			"SELECT held FROM schedlock.locks WHERE lock_name = '$name'"),
		'f', "$name: after the rollback the view shows it free");
	my $next = $node->safe_psql('app',
		"SELECT schedlock_acquire('$name', '1 hour', session_bound => true)");
	like($next, qr/^\d+$/, "$name: a session-bound acquire succeeds at once");
	cmp_ok($next, '>', $token, "$name: with a larger token") if $next =~ /^\d+$/;
}

holder_gone_during('release_rollback',
	"SELECT schedlock_release('release_rollback', \$token)", 'ROLLBACK');
holder_gone_during('extend_rollback',
	"SELECT schedlock_extend('extend_rollback', \$token, '2 hours')", 'ROLLBACK');
holder_gone_during('release_savepoint',
	"SAVEPOINT s; SELECT schedlock_release('release_savepoint', \$token)",
	'ROLLBACK TO SAVEPOINT s; COMMIT');
holder_gone_during('extend_exit',
	"SELECT schedlock_extend('extend_exit', \$token, '2 hours')", undef);
holder_gone_during('release_then_table',
	"SELECT schedlock_release('release_then_table', \$token); SELECT schedlock_acquire('release_then_table', '1 hour')",
	'ROLLBACK');

# the lease of a live holder is still put back whole
my $holder = $node->background_psql('app');
my $token = $holder->query_safe(
	"SELECT schedlock_acquire('live_holder', '1 hour', session_bound => true)");
$node->safe_psql('app',
	"BEGIN; SELECT schedlock_release('live_holder', $token); ROLLBACK;");
is($node->safe_psql('app',
		"SELECT schedlock_acquire('live_holder', '1 hour', session_bound => true) IS NULL"),
	't', 'a rolled-back release of a live holder\'s lease leaves it held');
$holder->quit;

$node->stop;
done_testing();
