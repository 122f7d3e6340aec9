# 014_lease_marks_database_oid.pl: what lock_marks.c and lease_shmem.c keep
# for a database (its marks, its session-bound leases) goes with DROP
# DATABASE, so a new database created with the same OID (CREATE DATABASE ...
# OID = n) starts from its own table.  The new database is a copy of a template whose table
# holds a lease and a row with a large token: a session-bound acquire of the
# held name gets NULL, the large token's name gets a larger token, and the
# dropped database's leases do not show in schedlock.locks.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockLockNode;

my $node = lock_node('marks_database_oid', 1024);
my $oid = 50000;

# the template: a lease held for an hour and a released row with a token
# far above what the token batches hand out
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', 'CREATE EXTENSION schedlock');
$node->safe_psql(
	'tmpl', q{
INSERT INTO schedlock.lock_state VALUES
	('held', 1, 'template', NULL, NULL, false, clock_timestamp(),
	 clock_timestamp() + interval '1 hour', clock_timestamp(), NULL, NULL),
	('big', 9000000000000000000, NULL, NULL, NULL, false, clock_timestamp(),
	 clock_timestamp(), clock_timestamp(), clock_timestamp(), NULL);
});

# the first database with that OID: its marks are loaded, and it leaves a
# session-bound lease released with an hour's lock_at_least_for window
$node->safe_psql('postgres', "CREATE DATABASE first OID = $oid");
$node->safe_psql('first', 'CREATE EXTENSION schedlock');
my $t = $node->safe_psql('first',
	"SELECT schedlock_acquire('window', '1 hour', '1 hour', session_bound => true)");
like($t, qr/^\d+$/, 'the first database: a session-bound lease');
$node->safe_psql('first', "SELECT schedlock_release('window', $t)");
is($node->safe_psql('first',
		"SELECT schedlock_acquire('held', '1 hour', session_bound => true) IS NOT NULL"),
	't', 'the first database has no row for held (its marks are loaded)');
is($node->safe_psql('first',
		"SELECT count(*) FROM schedlock.locks WHERE lock_name IN ('window', 'held')"),
	'2', 'the first database shows its two leases');

$node->safe_psql('postgres', 'DROP DATABASE first');
$node->safe_psql('postgres', "CREATE DATABASE second OID = $oid TEMPLATE tmpl");
is($node->safe_psql('second',
		"SELECT oid FROM pg_database WHERE datname = current_database()"),
	$oid, 'the second database has the first one\'s OID');

is($node->safe_psql('second',
		"SELECT string_agg(lock_name, ',' ORDER BY lock_name) FROM schedlock.locks"),
	'big,held', 'the second database shows only the rows of its own table');
is($node->safe_psql('second',
		"SELECT schedlock_acquire('held', '1 hour', session_bound => true) IS NULL"),
	't', 'the template\'s lease refuses a session-bound acquire');
my $big = $node->safe_psql('second',
	"SELECT schedlock_acquire('big', '1 hour', session_bound => true)");
like($big, qr/^\d+$/, 'the released name with a large token can be acquired');
cmp_ok($big, '>', 9000000000000000000, 'with a larger token');
is($node->safe_psql('second',
		"SELECT schedlock_acquire('window', '1 hour', session_bound => true) IS NOT NULL"),
	't', 'the first database\'s lock_at_least_for window is gone');

$node->stop;
done_testing();
