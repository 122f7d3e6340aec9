# 010_session_leases_shmem.pl: session-bound leases kept in shared memory
# (issue 14).  Their tokens come from batches reserved by a flushed WAL
# record: they interleave with the tokens of leases kept in the table, never
# repeat after a backend crash or an immediate shutdown (the rest of a batch
# is skipped), and a promoted standby hands out larger ones.  A crashed
# backend's leases end with the crash.  When schedlock.max_session_locks
# entries are in use, a session-bound acquire falls back to the table.  A
# standby and a read-only transaction refuse acquire with 25006.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('shmem_leases',
	init => { allows_streaming => 1 },
	conf => [ "shared_preload_libraries = 'schedlock'\nschedlock.max_session_locks = 3\nrestart_after_crash = on" ],
	app => 'extension');

my $max = 0;

# every token must exceed all tokens handed out before it
sub check_token
{
	my ($t, $what) = @_;
	like($t, qr/^\d+$/, "$what: a token");
	cmp_ok($t, '>', $max, "$what: larger than every earlier token");
	$max = $t if $t > $max;
}

# --- the two kinds of lease interleave
for my $i (1 .. 3)
{
	check_token($node->safe_psql('app',
			"SELECT schedlock_acquire('plain$i', '1 hour')"),
		"lease $i in the table");
	check_token($node->safe_psql('app',
			"SELECT schedlock_acquire('bound$i', '1 hour', session_bound => true)"),
		"session-bound lease $i");
}
is($node->safe_psql('app',
		"SELECT count(*) FROM schedlock.lock_state WHERE lock_name LIKE 'bound%'"),
	'0', 'session-bound leases are not written to the table');

# --- a full table: the fourth lease of a session goes to the table
my $h = $node->background_psql('app', on_error_stop => 0);
my $pid = $h->query_safe('SELECT pg_backend_pid()');
for my $i (1 .. 4)
{
	check_token($h->query_safe(
			"SELECT schedlock_acquire('full$i', '1 hour', session_bound => true)"),
		"session-bound lease full$i of one session");
}
is($node->safe_psql('app',
		"SELECT string_agg(lock_name, ',' ORDER BY lock_name) FROM schedlock.lock_state WHERE lock_name LIKE 'full%'"),
	'full4', 'with schedlock.max_session_locks = 3 the fourth went to the table');
is($node->safe_psql('app',
		"SELECT count(*) FROM schedlock.locks WHERE lock_name LIKE 'full%' AND held AND session_bound AND holder_pid = $pid"),
	'4', 'the view shows all four held by the session');
is($node->safe_psql('app',
		"SELECT count(*) FROM generate_series(1, 4) i WHERE schedlock_acquire('full' || i, '1 hour', session_bound => true) IS NULL"),
	'4', 'another session is refused all four');

# --- a read-only transaction refuses acquire (25006) even in shared memory
my ($rc, $out, $err) = $node->psql('app',
	"BEGIN READ ONLY; SELECT schedlock_acquire('ro', '1 hour', session_bound => true); COMMIT;",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/25006/, 'a read-only transaction refuses a session-bound acquire with 25006');

# --- the holder crashes: the server restarts and every lease is free
my $logstart = -s $node->logfile;
kill 'KILL', $pid;
wait_crash_restart($node, $logstart);
$node->poll_query_until('app', 'SELECT 1', '1')
  or die 'the server did not come back after the backend crash';
eval { $h->quit };
is($node->safe_psql('app',
		"SELECT count(*) FROM generate_series(1, 4) i WHERE schedlock_acquire('full' || i, '1 hour', session_bound => true) IS NOT NULL"),
	'4', 'after the crash all four are free');
check_token($node->safe_psql('app',
		"SELECT schedlock_acquire('after_crash', '1 hour', session_bound => true)"),
	'session-bound lease after a backend crash');
$max = $node->safe_psql('app', 'SELECT max(token) FROM schedlock.lock_state')
  if $node->safe_psql('app', 'SELECT max(token) FROM schedlock.lock_state') > $max;
check_token($node->safe_psql('app',
		"SELECT schedlock_acquire('plain_after_crash', '1 hour')"),
	'lease in the table after a backend crash');

# --- an immediate shutdown (crash recovery at the next start)
for my $i (1 .. 5)
{
	check_token($node->safe_psql('app',
			"SELECT schedlock_acquire('imm$i', '1 hour', session_bound => true)"),
		"session-bound lease imm$i before an immediate shutdown");
}
$node->stop('immediate');
$node->start;
check_token($node->safe_psql('app',
		"SELECT schedlock_acquire('imm1', '1 hour', session_bound => true)"),
	'session-bound lease after crash recovery');
check_token($node->safe_psql('app',
		"SELECT schedlock_acquire('imm_plain', '1 hour')"),
	'lease in the table after crash recovery');

# --- a standby refuses; after promotion its tokens are larger
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('shmem_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
check_token($node->safe_psql('app',
		"SELECT schedlock_acquire('before_promotion', '1 hour', session_bound => true)"),
	'session-bound lease on the primary');
$node->wait_for_catchup($standby);
($rc, $out, $err) = $standby->psql('app',
	"SELECT schedlock_acquire('sb', '1 hour', session_bound => true)");
like($err, qr/cannot execute schedlock_acquire\(\) during recovery/,
	'a standby refuses a session-bound acquire');
# tokens the standby never hears of: a batch written after its last WAL
for my $i (1 .. 3)
{
	check_token($node->safe_psql('app',
			"SELECT schedlock_acquire('lost$i', '1 hour', session_bound => true)"),
		"session-bound lease lost$i on the old primary");
}
$node->stop('immediate');
$standby->promote;
check_token($standby->safe_psql('app',
		"SELECT schedlock_acquire('lost1', '1 hour', session_bound => true)"),
	'session-bound lease on the promoted standby');
check_token($standby->safe_psql('app',
		"SELECT schedlock_acquire('promoted_plain', '1 hour')"),
	'lease in the table on the promoted standby');

$standby->stop;
foreach my $n ($node, $standby)
{
	unlike(slurp_file($n->logfile), qr/TRAP:|PANIC|XX000/,
		$n->name . ': server log clean');
}
done_testing();
