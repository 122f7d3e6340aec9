# 015_lock_api_before_update.pl: the lock functions go on working in a
# database whose extension is older than the library.  A server is
# restarted onto a new library first, and ALTER EXTENSION schedlock UPDATE
# reaches its databases one after the other; until then applications keep
# taking, extending and releasing leases on the tables of their version.
# Covered, for each way of keeping session-bound leases (shared memory and
# the table): 1.0 -> 1.1 -> the current version, with a lease held across
# each update, tokens that only grow, and the rule for a lease taken before
# holder_role existed (only a superuser may use its token afterwards).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockLockNode;

foreach my $max_session_locks (1024, 0)
{
	my $node = lock_node("before_update_$max_session_locks", $max_session_locks);
	my $how = $max_session_locks ? 'shared memory' : 'the table';

	$node->safe_psql('postgres', q{
		CREATE ROLE app_a LOGIN;
		CREATE ROLE app_b LOGIN;
		CREATE DATABASE old;
	});
	$node->safe_psql('old', "CREATE EXTENSION schedlock VERSION '1.0'");

	# run SQL as ROLE in database old; return (SQLSTATE or '', stdout)
	my $as = sub {
		my ($role, $sql) = @_;
		my ($stdout, $stderr) = ('', '');
		$node->psql('old', $sql,
			stdout => \$stdout, stderr => \$stderr,
			extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
		my ($state) = $stderr =~ /ERROR:  ([0-9A-Z]{5}):/;
		return ($state // '', $stdout);
	};

	# the calls of one lease's life, by app_a, while app_b is refused
	my $life = sub {
		my ($version, $name, $after) = @_;
		my ($s, $token) = $as->('app_a',
			"SELECT schedlock_acquire('$name', '1 hour', holder => 'app-1')");
		is($s, '', "$how, $version: acquire works");
		like($token, qr/^\d+$/, "$how, $version: a token");
		cmp_ok($token, '>', $after, "$how, $version: greater than the last one")
		  if defined $after;
		is(($as->('app_b', "SELECT schedlock_acquire('$name') IS NULL"))[1],
			't', "$how, $version: another caller gets no");
		is(($as->('app_a', "SELECT schedlock_extend('$name', $token, '2 hours')"))[1],
			't', "$how, $version: extend works");
		is(($as->('app_a', "SELECT schedlock_assert('$name', $token)"))[0],
			'', "$how, $version: assert works");
		is(($as->('app_a', "SELECT schedlock_release('$name', $token)"))[1],
			't', "$how, $version: release works");
		is(($as->('app_b',
					"SELECT schedlock_release('$name', schedlock_acquire('$name'))"))[1],
			't', "$how, $version: after the release another caller gets it (and releases it)");

		# session-bound: ends with its session
		my $holder = $node->background_psql('old',
			extra_params => [ '-U', 'app_a' ]);
		my $hpid = $holder->query_safe('SELECT pg_backend_pid()');
		my $bound = $holder->query_safe(
			"SELECT schedlock_acquire('$name.bound', '1 hour', session_bound => true)");
		like($bound, qr/^\d+$/, "$how, $version: a session-bound lease");
		is(($as->('app_b', "SELECT schedlock_acquire('$name.bound') IS NULL"))[1],
			't', "$how, $version: held while its session lives");
		$holder->quit;
		$node->poll_query_until('old',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $hpid")
		  or die "backend $hpid did not exit";
		is(($as->('app_b',
					"SELECT schedlock_release('$name.bound', schedlock_acquire('$name.bound'))"))[1],
			't', "$how, $version: free once its session has ended");
		return $token;
	};

	# --- the tables of 1.0, the current library
	my $t10 = $life->('1.0', 'report');
	is($node->safe_psql('old', q{
		SELECT count(*) FROM schedlock.locks WHERE lock_name = 'report'}),
		'1', "$how, 1.0: schedlock.locks shows the lease");

	# a lease held across the update to 1.1
	my ($s, $held) = $as->('app_a', "SELECT schedlock_acquire('held', '1 hour')");
	like($held, qr/^\d+$/, "$how, 1.0: a lease held across the update");

	$node->safe_psql('old', "ALTER EXTENSION schedlock UPDATE TO '1.1'");

	# --- the tables of 1.1
	is(($as->('app_b', "SELECT schedlock_acquire('held') IS NULL"))[1],
		't', "$how, 1.1: the lease taken under 1.0 still holds");
	is(($as->('app_a', "SELECT schedlock_release('held', $held)"))[0],
		'42501', "$how, 1.1: its role was not recorded: its holder is refused (42501)");
	is($node->safe_psql('old', "SELECT schedlock_release('held', $held)"),
		't', "$how, 1.1: a superuser releases it");
	my $t11 = $life->('1.1', 'report', $t10);

	($s, $held) = $as->('app_a', "SELECT schedlock_acquire('held', '1 hour')");
	like($held, qr/^\d+$/, "$how, 1.1: a lease held across the update");

	$node->safe_psql('old', 'ALTER EXTENSION schedlock UPDATE');

	# --- the current version
	isnt($node->safe_psql('old',
			q{SELECT extversion FROM pg_extension WHERE extname = 'schedlock'}),
		'1.1', "$how: updated past 1.1");
	is(($as->('app_a', "SELECT schedlock_extend('held', $held, '1 hour')"))[1],
		't', "$how, current: the lease taken under 1.1 is extended by its holder");
	is(($as->('app_a', "SELECT schedlock_release('held', $held)"))[1],
		't', "$how, current: and released");
	$life->('current', 'report', $t11);

	unlike(slurp_file($node->logfile), qr/terminated by signal| XX000 |PANIC/,
		"$how: the server log shows no crash and no internal error");
	$node->stop;
}

done_testing();
