# 008_lock_table_guard.pl: the lock functions write schedlock.lock_state
# with catalog routines, not SQL (issue 11, defect 16).  What a superuser
# adds to the table must neither crash the server nor be silently wrong:
#   - plain column indexes are kept up to date (amcheck proves it);
#   - an expression index, a partial index, a trigger, a rule, an extra
#     CHECK constraint or SET UNLOGGED makes every write refused with
#     SQLSTATE 55000 and a message naming it, and nothing is written;
#     undoing it makes the functions work again;
#   - the primary key is found by OID, so renaming it changes nothing;
#   - the table of version 1.0 (library newer than the installed
#     extension) is accepted: it lacks only holder_role
#     (015_lock_api_before_update.pl tests the lock functions on it).
# The server log must show no crash and no XX000 (test/run-all.sh checks).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('lock_table_guard', app => 'extension');
$node->safe_psql('app', 'CREATE EXTENSION amcheck');

# run SQL; return (SQLSTATE or '', stdout, stderr)
sub try_sql
{
	my ($sql, $db) = @_;
	my ($ret, $out, $err) = $node->psql($db // 'app', "\\set VERBOSITY verbose\n$sql");
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($state // '', $out, $err);
}

my $seq = 0;

# every writing function refuses with 55000 while $what is in place, and
# writes nothing; $pattern must appear in the message
sub refused_while
{
	my ($what, $pattern) = @_;
	my $rows = $node->safe_psql('app', 'SELECT count(*) FROM schedlock.lock_state');
	my $snap = $node->safe_psql('app',
		'SELECT string_agg(to_jsonb(s)::text, \',\' ORDER BY lock_name) FROM schedlock.lock_state s');
	$seq++;
	my ($state, $out, $err) =
	  try_sql("SELECT schedlock_acquire('guard-new-$seq', '1 hour')");
	is($state, '55000', "$what: acquire of a new name is refused with 55000");
	like($err, $pattern, "$what: the message says why");
	($state) = try_sql("SELECT schedlock_acquire('guard-old', '1 hour')");
	is($state, '55000', "$what: acquire of a known name is refused");
	($state) = try_sql("SELECT schedlock_release('guard-held', $main::held_token)");
	is($state, '55000', "$what: release is refused");
	($state) = try_sql(
		"SELECT schedlock_extend('guard-held', $main::held_token, '2 hours')");
	is($state, '55000', "$what: extend is refused");
	is($node->safe_psql('app',
			'SELECT string_agg(to_jsonb(s)::text, \',\' ORDER BY lock_name) FROM schedlock.lock_state s'),
		$snap, "$what: nothing was written");
	is($node->safe_psql('app', 'SELECT 1'), '1', "$what: the server is up");
}

our $held_token = $node->safe_psql('app',
	"SELECT schedlock_acquire('guard-held', '1 hour')");
$node->safe_psql('app', "SELECT schedlock_acquire('guard-old', '1 millisecond')");

# --- an expression index: this used to crash the server
$node->safe_psql('app',
	'CREATE INDEX lock_state_lower_holder ON schedlock.lock_state (lower(holder))');
refused_while('expression index', qr/lock_state_lower_holder/);
$node->safe_psql('app', 'DROP INDEX schedlock.lock_state_lower_holder');

# --- a partial index: would be silently wrong
$node->safe_psql('app',
	'CREATE INDEX lock_state_bound ON schedlock.lock_state (holder) WHERE session_bound');
refused_while('partial index', qr/lock_state_bound/);
$node->safe_psql('app', 'DROP INDEX schedlock.lock_state_bound');

# --- a trigger would not fire
$node->safe_psql(
	'app', q{
CREATE TABLE lock_audit (lock_name text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION lock_audit_fn() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO lock_audit (lock_name) VALUES (NEW.lock_name); RETURN NEW; END$$;
CREATE TRIGGER lock_audit_trg AFTER INSERT OR UPDATE ON schedlock.lock_state
	FOR EACH ROW EXECUTE FUNCTION lock_audit_fn();
});
refused_while('trigger', qr/trigger/);
$node->safe_psql('app', 'DROP TRIGGER lock_audit_trg ON schedlock.lock_state');

# --- a CHECK constraint would not be enforced
$node->safe_psql('app',
	"ALTER TABLE schedlock.lock_state ADD CONSTRAINT holder_named CHECK (holder IS NOT NULL) NOT VALID"
);
refused_while('check constraint', qr/holder_named/);
$node->safe_psql('app',
	'ALTER TABLE schedlock.lock_state DROP CONSTRAINT holder_named');

# --- a rule would not be applied
$node->safe_psql('app',
	'CREATE RULE lock_state_log AS ON UPDATE TO schedlock.lock_state DO ALSO NOTIFY lock_state');
refused_while('rule', qr/rule/);
$node->safe_psql('app', 'DROP RULE lock_state_log ON schedlock.lock_state');

# --- an unlogged table would lose its tokens in a crash
$node->safe_psql('app', 'ALTER TABLE schedlock.lock_state SET UNLOGGED');
refused_while('unlogged table', qr/unlogged/);
$node->safe_psql('app', 'ALTER TABLE schedlock.lock_state SET LOGGED');

# --- back to normal
my ($state) = try_sql("SELECT schedlock_extend('guard-held', $held_token, '2 hours')");
is($state, '', 'with the additions dropped, extend works again');
like($node->safe_psql('app', "SELECT schedlock_acquire('guard-old', '1 hour')"),
	qr/^\d+$/, 'and acquire');

# --- plain indexes, unique or not, are maintained
$node->safe_psql('app',
	'CREATE INDEX lock_state_holder ON schedlock.lock_state (holder, lock_until)');
$node->safe_psql('app',
	'CREATE UNIQUE INDEX lock_state_token ON schedlock.lock_state (token, lock_name)');
for my $i (1 .. 20)
{
	my $t = $node->safe_psql('app',
		"SELECT schedlock_acquire('plain-$i', '1 hour', '0', 'host-' || ($i % 3))");
	$node->safe_psql('app', "SELECT schedlock_release('plain-$i', $t)")
	  if $i % 2;
	$node->safe_psql('app', "SELECT schedlock_acquire('plain-$i', '1 hour', '0', 'again')")
	  if $i % 2;
}
is( $node->safe_psql('app',
		"SELECT bt_index_check('schedlock.lock_state_holder', true), bt_index_check('schedlock.lock_state_token', true)"
	),
	'|',
	'amcheck: every row of the table is in both extra indexes');
is( $node->safe_psql('app',
		"SET enable_seqscan = off; SELECT count(*) FROM schedlock.lock_state WHERE holder = 'again'"
	),
	'10',
	'an index scan finds the rows written by the lock functions');
$node->safe_psql('app',
	'DROP INDEX schedlock.lock_state_holder, schedlock.lock_state_token');

# --- the primary key is found by OID, not by name
$node->safe_psql('app',
	'ALTER INDEX schedlock.lock_state_pkey RENAME TO lock_state_renamed_pkey');
like($node->safe_psql('app', "SELECT schedlock_acquire('renamed-pk', '1 hour')"),
	qr/^\d+$/, 'acquire works with the primary key renamed');
$node->safe_psql('app',
	'ALTER INDEX schedlock.lock_state_renamed_pkey RENAME TO lock_state_pkey');

# --- library newer than the installed SQL (1.0)
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', "CREATE EXTENSION schedlock VERSION '1.0'");
like($node->safe_psql('old', "SELECT schedlock_acquire('x')"),
	qr/^\d+$/, 'the table of 1.0 is accepted');
is($node->safe_psql('old', 'SELECT count(*) FROM schedlock.lock_state'),
	'1', 'and written');
$node->safe_psql('old', 'ALTER TABLE schedlock.lock_state ADD COLUMN note text');
my ($s, $out, $err) = try_sql("SELECT schedlock_acquire('y')", 'old');
is($s, '55000', 'a table with a column neither version has is refused with 55000');
$node->safe_psql('old', 'ALTER TABLE schedlock.lock_state DROP COLUMN note');

ok($node->safe_psql('app', 'SELECT 1') eq '1', 'the server never crashed');
unlike(slurp_file($node->logfile), qr/terminated by signal| XX000 |PANIC/,
	'the server log shows no crash and no internal error');

$node->stop;
done_testing();
