# 002_tokens_restart_crash.pl: fencing tokens keep increasing after a clean
# restart and after a crash (kill -9 of a backend, crash recovery), and an
# acquire that was in flight when the server crashed is not held afterwards.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('tokens',
	conf => [ "restart_after_crash = on" ],
	app => 'extension');

# acquire and release 'job' n times; return the tokens
sub cycle
{
	my ($n) = @_;
	my @tokens;
	for (1 .. $n)
	{
		my $t = $node->safe_psql('app',
			"SELECT schedlock_acquire('job', '1 hour')");
		die "acquire returned NULL" if $t eq '';
		$node->safe_psql('app', "SELECT schedlock_release('job', $t)");
		push @tokens, $t;
	}
	return @tokens;
}

my @before = cycle(5);
my $increasing = 1;
for my $i (1 .. $#before)
{
	$increasing = 0 unless $before[$i] > $before[ $i - 1 ];
}
ok($increasing, 'tokens increase within one server life');

$node->restart;
my @after_restart = cycle(3);
cmp_ok($after_restart[0], '>', $before[-1],
	'after a clean restart the next token is higher');

# a lease that is held when the server crashes
my $held = $node->safe_psql('app',
	"SELECT schedlock_acquire('held-at-crash', '1 hour')");

# an acquire in flight (uncommitted) when the server crashes
my $inflight = $node->background_psql('app');
$inflight->query_safe('BEGIN');
my $inflight_token = $inflight->query_safe(
	"SELECT schedlock_acquire('in-flight', '1 hour')");
ok($inflight_token ne '', 'an uncommitted acquire got a token');

my $victim = $node->safe_psql('app',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE '%in-flight%' AND pid <> pg_backend_pid()"
);
my $logstart = -s $node->logfile;
kill 'KILL', $victim;
wait_crash_restart($node, $logstart);
$node->poll_query_until('app', 'SELECT 1', '1')
  or die 'server did not come back after the crash';
ok( $node->log_contains(
		'terminating any other active server processes|all server processes terminated',
		$logstart),
	'the server killed every backend after the crash');
ok($node->log_contains('automatic recovery in progress', $logstart),
	'the server went through crash recovery');
$inflight->quit;

my @after_crash = cycle(3);
cmp_ok($after_crash[0], '>', $after_restart[-1],
	'after crash recovery the next token is higher');

is($node->safe_psql('app',
		"SELECT count(*) FROM schedlock.locks WHERE lock_name = 'in-flight'"),
	'0', 'the acquire that was in flight at the crash did not survive');
my $t = $node->safe_psql('app',
	"SELECT schedlock_acquire('in-flight', '1 hour')");
ok($t ne '', 'the in-flight name can be acquired after the crash');

is($node->safe_psql('app',
		"SELECT held FROM schedlock.locks WHERE lock_name = 'held-at-crash'"),
	't', 'a committed lease survives the crash');
is($node->safe_psql('app',
		"SELECT schedlock_acquire('held-at-crash') IS NULL"),
	't', '... and still keeps others out');

$node->stop;
done_testing();
