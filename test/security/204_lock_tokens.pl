# 204_lock_tokens.pl: a lease and its fencing token belong to the role that
# acquired it (issue 10, defects 6 and 10).
#
# Two tenant roles, alice and bob (ordinary LOGIN roles), and alice_ops, a
# member of alice:
#   - bob sees alice's lock names and whether they are held, but not the
#     token or holder_pid; alice and alice_ops see both;
#   - bob's release / extend / assert of alice's lease fail with 42501 and
#     change nothing, whether his token guess is right or wrong (the answer
#     does not tell him which); alice_ops may use alice's token;
#   - an expired lease of alice can be taken by bob, and then belongs to bob;
#   - acquire, release and extend are refused with 25006 in a read-only
#     transaction and write nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('lock_tokens', app => 'extension');
$node->safe_psql(
	'app', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE alice_ops LOGIN IN ROLE alice;
});

# run SQL as a role (its own connection); dies on error
sub sql_as
{
	my ($role, $sql) = @_;
	return $node->safe_psql('app', $sql, extra_params => [ '-U', $role ]);
}

# run SQL as the superuser; the output, or '' on error (does not die)
sub sql_try
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('app', $sql);
	return $out;
}

# run SQL as a role and return (SQLSTATE or '', stderr)
sub err_as
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('app', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($state // '', $err);
}

# the full row of a lock, as the superuser sees the table
sub row_of
{
	my ($name) = @_;
	return $node->safe_psql('app',
		"SELECT to_jsonb(s) FROM schedlock.lock_state s WHERE lock_name = '$name'");
}

# --- alice acquires; who sees what
my $alice = $node->background_psql('app', extra_params => [ '-U', 'alice' ]);
my $alice_pid = $alice->query_safe('SELECT pg_backend_pid()');
my $ta = $alice->query_safe(
	"SELECT schedlock_acquire('payroll', '1 hour', '0', 'alice-host')");
like($ta, qr/^\d+$/, 'alice acquires payroll');

is( sql_as('bob',
		"SELECT lock_name, held, holder, lock_until IS NOT NULL, token IS NULL, holder_pid IS NULL FROM schedlock.locks WHERE lock_name = 'payroll'"
	),
	'payroll|t|alice-host|t|t|t',
	'bob sees the name, held, holder and lock_until, but not the token or holder_pid');
is( sql_as('alice',
		"SELECT token, holder_pid FROM schedlock.locks WHERE lock_name = 'payroll'"),
	"$ta|$alice_pid",
	'alice sees her token and holder_pid');
is( sql_as('alice_ops',
		"SELECT token, holder_pid FROM schedlock.locks WHERE lock_name = 'payroll'"),
	"$ta|$alice_pid",
	'alice_ops, a member of alice, sees them too');
is( sql_try(
		"SELECT token, holder_role FROM schedlock.locks WHERE lock_name = 'payroll'"),
	"$ta|alice",
	'the superuser sees the token, and the view names the holding role');

# --- bob cannot use alice's token, right or wrong
my $before = row_of('payroll');
my %msg;
for my $guess ($ta, $ta + 1)
{
	my $which = $guess == $ta ? 'right' : 'wrong';
	for my $call ("schedlock_release('payroll', $guess)",
		"schedlock_extend('payroll', $guess, '999 years')",
		"schedlock_extend('payroll', $guess, '1 hour')",
		"schedlock_assert('payroll', $guess)")
	{
		my ($state, $err) = err_as('bob', "SELECT $call");
		is($state, '42501', "bob: $call ($which token) is refused with 42501");
		(my $fn = $call) =~ s/\(.*//;
		(my $m = $err) =~ s/\d{6,}/<n>/g;
		push @{ $msg{$fn} }, $m;
	}
}
is((err_as('bob', "SELECT schedlock_extend('payroll', $ta, '100000 years')"))[0],
	'22023', 'bob: extend by 100000 years is bad input (22023) for anybody');
is(row_of('payroll'), $before, 'bob\'s calls changed nothing');
is($msg{schedlock_release}[0], $msg{schedlock_release}[-1],
	'release: a right and a wrong token guess get the same answer');
is($msg{schedlock_assert}[0], $msg{schedlock_assert}[-1],
	'assert: a right and a wrong token guess get the same answer');

# bob's refused assert does not hold the name: alice can extend at once
my $bob = $node->background_psql('app', on_error_stop => 0,
	extra_params => [ '-U', 'bob' ]);
$bob->query_safe('BEGIN');
$bob->query("SELECT schedlock_assert('payroll', $ta)");
like($bob->{stderr}, qr/permission denied/, 'bob\'s assert inside a transaction fails');
is($alice->query_safe("SELECT schedlock_extend('payroll', $ta, '1 hour')"),
	't', 'alice extends while bob\'s transaction is still open');
$bob->query('ROLLBACK');

is(sql_as('bob', "SELECT schedlock_acquire('payroll') IS NULL"),
	't', 'bob cannot acquire alice\'s running lease');

# --- a member of alice may use alice's token
is(sql_as('alice_ops', "SELECT schedlock_extend('payroll', $ta, '2 hours')"),
	't', 'alice_ops extends alice\'s lease');
is(sql_as('alice_ops',
		"BEGIN; SELECT schedlock_assert('payroll', $ta); SELECT 'ok'; COMMIT"),
	"\nok", 'alice_ops asserts it');
is(sql_as('alice_ops', "SELECT schedlock_release('payroll', $ta)"),
	't', 'alice_ops releases it');

# --- unknown names: nothing to protect, the answers of 1.0
is(sql_as('bob', "SELECT schedlock_release('no-such-lock', 1)"),
	'f', 'bob: release of an unknown name returns false');
is((err_as('bob', "SELECT schedlock_assert('no-such-lock', 1)"))[0],
	'SL001', 'bob: assert of an unknown name raises SL001');

# --- an expired lease of alice can be taken by bob, and is then bob's
my $ts = $alice->query_safe("SELECT schedlock_acquire('shared', '200 ms')");
like($ts, qr/^\d+$/, 'alice takes a 200 ms lease on shared');
$node->poll_query_until('app',
	"SELECT NOT held FROM schedlock.locks WHERE lock_name = 'shared'")
  or die 'lease did not expire';
my $tb = sql_as('bob', "SELECT schedlock_acquire('shared', '1 hour')");
cmp_ok($tb, '>', $ts, 'bob takes the expired lease over with a higher token');
is(sql_try("SELECT holder_role FROM schedlock.locks WHERE lock_name = 'shared'"),
	'bob', 'the new holder\'s role is recorded');
is( sql_as('alice',
		"SELECT token IS NULL, holder_pid IS NULL FROM schedlock.locks WHERE lock_name = 'shared'"
	),
	't|t',
	'now alice no longer sees the token');
is((err_as('alice', "SELECT schedlock_extend('shared', $ts, '1 hour')"))[0],
	'42501', 'alice\'s extend of the name bob now holds is refused');
is(sql_as('bob', "SELECT schedlock_extend('shared', $tb, '1 hour')"),
	't', 'bob extends his lease');
is($node->safe_psql('app', "SELECT schedlock_release('shared', $tb)"),
	't', 'a superuser may release any lease');

# --- read-only transactions: refused with 25006, nothing written
my $rows = $node->safe_psql('app', 'SELECT count(*) FROM schedlock.lock_state');
is( (err_as('alice',
			"BEGIN READ ONLY; SELECT schedlock_acquire('ro-lock'); COMMIT;"))[0],
	'25006',
	'acquire in a READ ONLY transaction is refused with 25006');
is( (err_as('alice',
			"SET default_transaction_read_only = on; SELECT schedlock_acquire('ro-lock', session_bound => true);"
		))[0],
	'25006',
	'acquire under default_transaction_read_only is refused with 25006');
is($node->safe_psql('app', 'SELECT count(*) FROM schedlock.lock_state'),
	$rows, 'no row was written');

my $tr = sql_as('alice', "SELECT schedlock_acquire('ro-held', '1 hour')");
$before = row_of('ro-held');
is( (err_as('alice',
			"BEGIN READ ONLY; SELECT schedlock_release('ro-held', $tr); COMMIT;"))[0],
	'25006',
	'release in a READ ONLY transaction is refused with 25006');
is( (err_as('alice',
			"BEGIN READ ONLY; SELECT schedlock_extend('ro-held', $tr, '5 hours'); COMMIT;"
		))[0],
	'25006',
	'extend in a READ ONLY transaction is refused with 25006');
is(row_of('ro-held'), $before, 'the lease is unchanged');
is( sql_as('alice',
		"BEGIN READ ONLY; SELECT schedlock_assert('ro-held', $tr); SELECT 'asserted'; COMMIT;"
	),
	"\nasserted",
	'assert, which writes nothing, works in a READ ONLY transaction');

# --- none of it made bob anything but an ordinary role
is($node->safe_psql('app', "SELECT rolsuper FROM pg_roles WHERE rolname = 'bob'"),
	'f', 'bob is still an ordinary role');

$alice->quit;
$bob->quit;
$node->stop;
done_testing();
