# 009_tokens_recreate.pl: fencing tokens are never handed out again after
# DROP EXTENSION schedlock and a new CREATE EXTENSION schedlock, which drop
# and recreate the table holding the per-name counters (issue 11, defect
# 14).  The first token after the re-creation is greater than every token
# handed out before it -- in the same session, across a restart between
# DROP and CREATE, with DROP, CREATE and acquire in one transaction, in
# another database of the cluster, and under wal_level = minimal, where the
# lock table of a transaction that created it writes no WAL.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('recreate',
	init => { allows_streaming => 1 },
	app => 'database');
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('app', 'CREATE EXTENSION schedlock');

# every token handed out so far, by any database and name
my @seen;

# acquire and release NAME in DB N times; returns the tokens
sub cycle
{
	my ($db, $name, $n) = @_;
	my @tokens;
	for (1 .. $n)
	{
		my $t = $node->safe_psql($db,
			"SELECT schedlock_acquire('$name', '1 hour')");
		die "acquire of $name returned NULL" if $t eq '';
		$node->safe_psql($db, "SELECT schedlock_release('$name', $t)");
		push @tokens, $t;
	}
	return @tokens;
}

# cycle, and remember the tokens as handed out
sub history
{
	push @seen, cycle(@_);
}

# whether TOKEN is greater than every token in @seen (compared as bigint)
sub above_all_seen
{
	my ($token) = @_;
	my $list = "'{" . join(',', @seen) . "}'::bigint[]";
	my $above = $node->safe_psql('postgres', "SELECT ${token}::bigint > ALL ($list)");
	diag("token $token, the largest earlier one "
		  . $node->safe_psql('postgres', "SELECT max(t) FROM unnest($list) t"))
	  if $above ne 't';
	return $above;
}

sub recreate
{
	$node->safe_psql('app',
		'DROP EXTENSION schedlock; CREATE EXTENSION schedlock');
}

# --- DROP EXTENSION + CREATE EXTENSION --------------------------------------

history('app', 'timer-service', 5);
history('app', 'nightly', 2);
recreate();
is($node->safe_psql('app', 'SELECT count(*) FROM schedlock.lock_state'),
	'0', 'the re-created extension starts with an empty lock table');
my ($t) = cycle('app', 'timer-service', 1);
is(above_all_seen($t), 't',
	"after DROP + CREATE EXTENSION the name's next token $t is above every earlier token");
push @seen, $t;
my ($n) = cycle('app', 'nightly', 1);
is(above_all_seen($n), 't', 'so is the next token of another name');
push @seen, $n;

# --- with a restart between DROP and CREATE ---------------------------------

history('app', 'timer-service', 3);
$node->safe_psql('app', 'DROP EXTENSION schedlock');
$node->restart;
$node->safe_psql('app', 'CREATE EXTENSION schedlock');
($t) = cycle('app', 'timer-service', 1);
is(above_all_seen($t), 't',
	'with a restart between DROP and CREATE EXTENSION: still above every earlier token');
push @seen, $t;

# --- after a crash ----------------------------------------------------------

history('app', 'timer-service', 2);
$node->safe_psql('app', 'DROP EXTENSION schedlock');
$node->stop('immediate');
$node->start;
$node->safe_psql('app', 'CREATE EXTENSION schedlock');
($t) = cycle('app', 'timer-service', 1);
is(above_all_seen($t), 't',
	'with a crash between DROP and CREATE EXTENSION: still above every earlier token');
push @seen, $t;

# --- DROP, CREATE and acquire in one transaction ----------------------------

history('app', 'timer-service', 2);
$t = $node->safe_psql('app', q{
	BEGIN;
	DROP EXTENSION schedlock;
	CREATE EXTENSION schedlock;
	SELECT schedlock_acquire('timer-service', '1 hour');
	COMMIT;});
is(above_all_seen($t), 't',
	'DROP, CREATE EXTENSION and acquire in one transaction: above every earlier token');
push @seen, $t;
$node->safe_psql('app', "SELECT schedlock_release('timer-service', $t)");

# --- the same name in another database --------------------------------------

$node->safe_psql('other', 'CREATE EXTENSION schedlock');
($t) = cycle('other', 'timer-service', 1);
is(above_all_seen($t), 't',
	'the same name in another database of the cluster starts above every earlier token');
push @seen, $t;

# --- wal_level = minimal ----------------------------------------------------

# Under wal_level = minimal the lock table of the transaction that created
# it writes no WAL (and with wal_skip_threshold = 0 its commit does not log
# the table's pages either, it syncs them).  Tokens handed out in that
# transaction must still leave the cluster's WAL position far enough ahead
# that a new name, and a re-created extension, start above them.
$node->append_conf('postgresql.conf', "wal_level = minimal\nmax_wal_senders = 0\nwal_skip_threshold = 0");
$node->restart;
is($node->safe_psql('app', 'SHOW wal_level'), 'minimal', 'wal_level is minimal');
my $last = $node->safe_psql('app', q{
	BEGIN;
	DROP EXTENSION schedlock;
	CREATE EXTENSION schedlock;
	DO $$
	DECLARE
		t bigint;
		prev bigint := 0;
	BEGIN
		FOR i IN 1 .. 200 LOOP
			t := schedlock_acquire('timer-service', '1 hour');
			IF t IS NULL OR t <= prev THEN
				RAISE EXCEPTION 'token % after %', t, prev;
			END IF;
			PERFORM schedlock_release('timer-service', t);
			prev := t;
		END LOOP;
	END $$;
	SELECT token FROM schedlock.lock_state WHERE lock_name = 'timer-service';
	COMMIT;});
like($last, qr/^\d+$/,
	'200 increasing tokens in the transaction that created the extension');
push @seen, $last;
($t) = cycle('app', 'fresh', 1);
is(above_all_seen($t), 't',
	'under wal_level = minimal a new name then starts above them');
push @seen, $t;
recreate();
($t) = cycle('app', 'timer-service', 1);
is(above_all_seen($t), 't', 'and so does the name in a re-created extension');

$node->stop;
done_testing();
