# SchedlockLockNode.pm: what the session-bound lock tests (004, 007) share.
# They run everything twice: with schedlock.max_session_locks = 0,
# session-bound leases are kept in schedlock.lock_state and bound through
# the session's identity lock; with the default (1024) they are kept in
# shared memory and need no identity lock.
#
#   lock_node(NAME, MAX_SESSION_LOCKS)
#                         init and start a node with schedlock preloaded and
#                         that setting, database app with the extension
#   identity_locks(NODE, PID)
#                         how many identity locks backend PID holds: the
#                         advisory locks with objsubid SCHEDLOCK_LOCKTAG_SESSION
#                         (0x5353 = 21331)
package SchedlockLockNode;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use SchedlockNode;

our @EXPORT = qw(lock_node identity_locks);

sub lock_node
{
	my ($name, $max_session_locks) = @_;
	return schedlock_node("${name}_$max_session_locks",
		conf => [ "schedlock.max_session_locks = $max_session_locks" ],
		app => 'extension');
}

sub identity_locks
{
	my ($node, $pid) = @_;
	return $node->safe_psql('app',
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21331 AND pid = $pid AND granted"
	);
}

1;
