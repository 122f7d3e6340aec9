# 005_tokens_async_commit_crash.pl: a fencing token handed out under
# synchronous_commit = off is not handed out again after a crash, even when
# the crash loses the WAL of commits that were not flushed yet.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('async',
	conf => [
		qq{
restart_after_crash = on
synchronous_commit = off
wal_writer_delay = 10000ms
wal_writer_flush_after = 0
} ],
	app => 'extension');
# make sure everything so far is on disk
$node->safe_psql('app', 'CHECKPOINT');

my $s = $node->background_psql('app');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my $t1 = $s->query_safe("SELECT schedlock_acquire('job', '1 second')");
like($t1, qr/^\d+$/, 'a token is handed out under synchronous_commit = off');
my $t1_until = $s->query_safe("SELECT clock_timestamp() + interval '1 second'");

my $logstart = -s $node->logfile;
kill 'KILL', $pid;
wait_crash_restart($node, $logstart);
$node->poll_query_until('app', 'SELECT 1', '1')
  or die 'server did not come back after the crash';
ok($node->log_contains('automatic recovery in progress', $logstart),
	'the server went through crash recovery');
$s->quit;

# the lease, if its row survived the crash, has ended
$node->poll_query_until('app', "SELECT clock_timestamp() > '$t1_until'")
  or die 'the clock did not pass the lease';
my $t2 = $node->safe_psql('app', "SELECT schedlock_acquire('job', '1 hour')");
like($t2, qr/^\d+$/, 'the name can be acquired after the crash');
cmp_ok($t2, '>', $t1, 'the token after the crash is higher than the one handed out before it');

$node->stop;
done_testing();
