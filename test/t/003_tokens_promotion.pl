# 003_tokens_promotion.pl: after a streaming standby is promoted, the tokens
# it hands out are greater than every token the old primary handed out --
# including tokens whose WAL never reached the standby (asynchronous
# replication).  On the standby, locks can be read but not changed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = schedlock_node('primary',
	init => { allows_streaming => 1 },
	app => 'extension');

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

sub acquire_release
{
	my ($node) = @_;
	my $t = $node->safe_psql('app', "SELECT schedlock_acquire('job', '1 hour')");
	die 'acquire returned NULL' if $t eq '';
	$node->safe_psql('app', "SELECT schedlock_release('job', $t)");
	return $t;
}

my $seen = 0;
$seen = acquire_release($primary) for 1 .. 3;
$primary->wait_for_catchup($standby);

is($standby->safe_psql('app', "SELECT token FROM schedlock.locks WHERE lock_name = 'job'"),
	$seen, 'the standby has replayed the primary\'s last token');
is($standby->safe_psql('app',
		"SELECT held, session_bound FROM schedlock.locks WHERE lock_name = 'job'"),
	'f|f', 'the view is readable on the standby');

my ($ret, $stdout, $stderr) = $standby->psql('app',
	"\\set VERBOSITY verbose\nSELECT schedlock_acquire('job')");
isnt($ret, 0, 'acquire on the standby fails');
like($stderr, qr/ERROR:  25006: cannot execute schedlock_acquire\(\) during recovery/,
	'with SQLSTATE 25006 and a message saying it is in recovery');
like($stderr, qr/HINT:.*primary/, 'and a hint to connect to the primary');
($ret, $stdout, $stderr) = $standby->psql('app',
	"\\set VERBOSITY verbose\nSELECT schedlock_release('job', $seen)");
like($stderr, qr/25006/, 'a release on the standby fails with SQLSTATE 25006');
($ret, $stdout, $stderr) = $standby->psql('app',
	"\\set VERBOSITY verbose\nSELECT schedlock_assert('job', $seen)");
like($stderr, qr/ERROR:  25006: cannot execute schedlock_assert\(\) during recovery/,
	'assert on the standby fails too: it could not fence anything there');

# cut replication: the standby stops receiving WAL
$standby->append_conf('postgresql.conf', "primary_conninfo = ''");
$standby->reload;
$standby->poll_query_until('postgres',
	'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
  or die 'WAL receiver did not stop';

# the old primary goes on handing out tokens the standby never sees
my $unseen = 0;
$unseen = acquire_release($primary) for 1 .. 5;
cmp_ok($unseen, '>', $seen, 'the primary handed out more tokens');
is($standby->safe_psql('app', "SELECT token FROM schedlock.locks WHERE lock_name = 'job'"),
	$seen, 'the standby never saw them');

$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('app', 'SELECT NOT pg_is_in_recovery()')
  or die 'standby was not promoted';

my $new = acquire_release($standby);
cmp_ok($new, '>', $unseen,
	'the promoted standby\'s first token is above every token of the old primary');
my $next = acquire_release($standby);
cmp_ok($next, '>', $new, 'and tokens keep increasing on the new primary');

# a name the old primary created after the cut does not exist here; a fresh
# name still starts above anything of the old timeline
my $fresh = $standby->safe_psql('app', "SELECT schedlock_acquire('fresh', '1 hour')");
cmp_ok($fresh, '>', $unseen, 'a new name on the new timeline also starts higher');

$standby->stop;
done_testing();
