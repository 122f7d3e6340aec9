# 011_lease_marks.pl: a session-bound acquire kept in shared memory reads the
# lock table only for names the marks (src/lock/lock_marks.c) say may matter.  The
# marks live in shared memory, so after a restart or a crash they are loaded
# again from the table: durable leases and lock_at_least_for windows that
# survived keep refusing session-bound acquires, and tokens stay larger than
# the table's.  When the marks do not fit (schedlock.max_session_locks = 4
# here), every acquire reads the table instead, with the same answers.  A
# restore by pg_restore (COPY into the table) is honoured too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockLockNode;

# restart_after_crash is on by default
my $node = lock_node('lease_marks', 4);

# refused NAMES: how many of the names another session cannot acquire
# session-bound
sub refused
{
	my @names = @_;
	my $list = join(',', map { "'$_'" } @names);
	return $node->safe_psql('app',
		"SELECT count(*) FROM unnest(ARRAY[$list]) n WHERE schedlock_acquire(n, '1 hour', session_bound => true) IS NULL"
	);
}

# durable leases and a released lease's window, taken before the restarts;
# 'free' is released without a window
my $max = 0;
for my $n (qw(kept1 kept2))
{
	my $t = $node->safe_psql('app', "SELECT schedlock_acquire('$n', '1 hour')");
	$max = $t if $t > $max;
}
my $tw = $node->safe_psql('app', "SELECT schedlock_acquire('window', '1 hour', '1 hour')");
$node->safe_psql('app', "SELECT schedlock_release('window', $tw)");
my $tf = $node->safe_psql('app', "SELECT schedlock_acquire('free', '1 hour')");
$node->safe_psql('app', "SELECT schedlock_release('free', $tf)");
$max = $tf if $tf > $max;

is(refused(qw(kept1 kept2 window)), '3', 'before a restart: the durable leases and the window refuse');

# --- a fast restart, then a crash: the marks are loaded again
for my $how ('restart', 'crash')
{
	if ($how eq 'restart')
	{
		$node->restart;
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}
	is(refused(qw(kept1 kept2 window)), '3', "after a $how: the durable leases and the window still refuse");
	my $t = $node->safe_psql('app', "SELECT schedlock_acquire('free', '1 hour', session_bound => true)");
	cmp_ok($t, '>', $max, "after a $how: a session-bound acquire of a released name gets a larger token");
}

# --- more blocking rows than the marks hold: the load fails, acquires read
# the table, and the answers stay the same
for my $i (1 .. 6)
{
	$node->safe_psql('app', "SELECT schedlock_acquire('many$i', '1 hour')");
}
is(refused(map { "many$_" } 1 .. 6), '6', 'six durable leases, marks for four: all six refuse');
$node->restart;
is(refused(map { "many$_" } 1 .. 6), '6', 'after a restart, with a load that cannot fit: all six refuse');
is($node->safe_psql('app',
		"SELECT schedlock_acquire('unused', '1 hour', session_bound => true) IS NOT NULL"),
	't', 'a name without a row is still free');

# --- a restore: pg_dump of the database, pg_restore into a new database
# after the marks of that database were loaded (COPY writes the rows)
my $dump = $node->basedir . '/app.dump';
$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('app') ],
	'pg_dump of the database');
$node->safe_psql('postgres', 'CREATE DATABASE copy');
$node->safe_psql('copy', 'CREATE EXTENSION schedlock');
is($node->safe_psql('copy',
		"SELECT schedlock_acquire('load', '1 hour', session_bound => true) IS NOT NULL"),
	't', 'the new database loads its (empty) marks');
$node->command_ok(
	[ 'pg_restore', '--data-only', '-d', $node->connstr('copy'), $dump ],
	'pg_restore --data-only into it');
is($node->safe_psql('copy',
		"SELECT count(*) FROM unnest(ARRAY['kept1','kept2','window']) n WHERE schedlock_acquire(n, '1 hour', session_bound => true) IS NULL"),
	'3', 'the restored durable leases and window refuse session-bound acquires');

$node->stop;
done_testing();
