# 013_lease_marks_partition.pl: rows written into schedlock.lock_state through
# a table it is a partition of (INSERT, COPY, an UPDATE that moves a row into
# it) are seen by the marks of lock_marks.c like rows written into it
# directly: a session-bound acquire of a name whose row now holds a lease
# gets NULL, and a row's token stays smaller than the next one handed out.
# This holds while the table is attached and after it is detached again.
# An UPDATE through an inheritance parent names lock_state itself and is
# seen too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockLockNode;

my $node = lock_node('marks_partition', 1024);

# whether a session-bound acquire of NAME is refused (t) or gets a token (f)
sub refused
{
	my ($name) = @_;
	return $node->safe_psql('app',
		"SELECT schedlock_acquire('$name', '1 hour', session_bound => true) IS NULL");
}

# a row that holds a lease for an hour, as lock_state's columns
sub held_row
{
	my ($name, $token) = @_;
	return "('$name', $token, 'sql', NULL, NULL, false, clock_timestamp(), "
	  . "clock_timestamp() + interval '1 hour', clock_timestamp(), NULL, NULL)";
}

# the marks of the database are loaded by a first session-bound acquire
like($node->safe_psql('app',
		"SELECT schedlock_acquire('load', '1 hour', session_bound => true)"),
	qr/^\d+$/, 'a session-bound acquire loads the marks');

# --- lock_state as the default partition of a superuser's table
$node->safe_psql(
	'app', q{
CREATE TABLE lock_parent (LIKE schedlock.lock_state) PARTITION BY LIST (lock_name);
CREATE TABLE lock_parent_other PARTITION OF lock_parent FOR VALUES IN ('elsewhere');
ALTER TABLE lock_parent ATTACH PARTITION schedlock.lock_state DEFAULT;
});

$node->safe_psql('app', 'INSERT INTO lock_parent VALUES ' . held_row('via_insert', 1));
is($node->safe_psql('app',
		"SELECT count(*) FROM ONLY schedlock.lock_state WHERE lock_name = 'via_insert'"),
	'1', 'INSERT through the parent lands in lock_state');
is(refused('via_insert'), 't',
	'a lease inserted through the parent refuses session-bound acquires');

my $now = $node->safe_psql('app', 'SELECT clock_timestamp()');
$node->safe_psql(
	'app', qq{COPY lock_parent FROM STDIN;
via_copy\t2\tsql\t\\N\t\\N\tf\t$now\tinfinity\t$now\t\\N\t\\N
\\.
});
is(refused('via_copy'), 't',
	'a lease copied in through the parent refuses session-bound acquires');

$node->safe_psql('app', 'INSERT INTO lock_parent VALUES ' . held_row('elsewhere', 3));
$node->safe_psql('app',
	"UPDATE lock_parent SET lock_name = 'moved' WHERE lock_name = 'elsewhere'");
is($node->safe_psql('app',
		"SELECT count(*) FROM ONLY schedlock.lock_state WHERE lock_name = 'moved'"),
	'1', 'an UPDATE through the parent moves a row into lock_state');
is(refused('moved'), 't',
	'the moved lease refuses session-bound acquires');

# a released row with a large token: the next token is larger
$node->safe_psql('app',
	"INSERT INTO lock_parent VALUES ('big', 9000000000000000000, NULL, NULL, NULL, false, "
	  . "clock_timestamp(), clock_timestamp(), clock_timestamp(), clock_timestamp(), NULL)");
my $t = $node->safe_psql('app',
	"SELECT schedlock_acquire('big', '1 hour', session_bound => true)");
like($t, qr/^\d+$/, 'a released name inserted through the parent can be acquired');
cmp_ok($t, '>', 9000000000000000000, 'with a token above the row\'s');

# --- detached again: what was written while attached still counts
$node->safe_psql('app',
	"INSERT INTO lock_parent VALUES " . held_row('before_detach', 4));
$node->safe_psql('app',
	'ALTER TABLE lock_parent DETACH PARTITION schedlock.lock_state');
is(refused('before_detach'), 't',
	'after DETACH PARTITION a lease inserted through the parent still refuses');
is(refused('via_insert'), 't', 'and so does the first one');

# --- lock_state as an inheritance child: an UPDATE through the parent
$node->safe_psql('app',
	"INSERT INTO schedlock.lock_state VALUES ('inherited', 5, NULL, NULL, NULL, false, "
	  . "clock_timestamp(), clock_timestamp(), clock_timestamp(), clock_timestamp(), NULL)");
$node->safe_psql(
	'app', q{
CREATE TABLE lock_iparent (LIKE schedlock.lock_state);
ALTER TABLE schedlock.lock_state INHERIT lock_iparent;
});
is(refused('unrelated'), 'f', 'marks loaded again with lock_state an inheritance child');
$node->safe_psql('app',
	"UPDATE lock_iparent SET lock_until = clock_timestamp() + interval '1 hour', "
	  . "released_at = NULL WHERE lock_name = 'inherited'");
is(refused('inherited'), 't',
	'a lease renewed by an UPDATE through the inheritance parent refuses');
$node->safe_psql('app', 'ALTER TABLE schedlock.lock_state NO INHERIT lock_iparent');

$node->stop;
done_testing();
