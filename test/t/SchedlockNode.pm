# SchedlockNode.pm: the one way the TAP tests make a server with schedlock,
# and the one way they wait for a condition.  test/run-all.sh and the
# Makefile put test/t on the Perl path.
#
#   schedlock_node(NAME, OPTIONS)
#                         a PostgreSQL::Test::Cluster named NAME, initialised
#                         (init => { ... }: its options, e.g. allows_streaming),
#                         with shared_preload_libraries = 'schedlock' (or
#                         preload => [ 'schedlock', 'pg_cron' ]: a library
#                         other than schedlock that is not installed skips
#                         the whole test file) and the lines of conf =>
#                         [ ... ] appended to
#                         postgresql.conf in that order (a later line wins),
#                         and started; app => 'extension' then creates
#                         database app with the extension in it, app =>
#                         'database' the database alone
#   wait_true(NODE, DB, SQL, SECONDS)
#                         poll SQL in DB of NODE every 100 ms until it
#                         returns "t", at most SECONDS (default 60): the
#                         seconds it took (a true value), or undef
#   housekeep_all(NODE, DB, NEWDB)
#                         CREATE DATABASE NEWDB, which has every database
#                         housekept, and wait until the housekeeping of DB
#                         has counted its jobs anew (jobs_counted_at of
#                         schedlock.cluster_status()), at most 60 s: true
#                         when it did
#   wait_crash_restart(NODE, LOGSTART)
#                         after a backend of NODE was killed: wait until its
#                         log, from byte LOGSTART on, says the server is
#                         ready again after the crash
package SchedlockNode;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More ();
use Time::HiRes qw(time usleep);

our @EXPORT = qw(schedlock_node wait_true wait_crash_restart housekeep_all);

sub schedlock_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my @preload = @{ $opt{preload} // ['schedlock'] };
	$node->init(%{ $opt{init} // {} });
	my $libdir = $node->config_data('--pkglibdir');
	for my $lib (grep { $_ ne 'schedlock' } @preload)
	{
		# the test command installs them (test/run-all.sh)
		Test::More::plan(skip_all => "$lib is not installed in $libdir")
		  unless -f "$libdir/$lib.so";
	}
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = '" . join(',', @preload) . "'");
	$node->append_conf('postgresql.conf', $_) for @{ $opt{conf} // [] };
	$node->start;
	if (defined $opt{app})
	{
		die "app must be 'extension' or 'database'"
		  unless $opt{app} eq 'extension' || $opt{app} eq 'database';
		$node->safe_psql('postgres', 'CREATE DATABASE app');
		$node->safe_psql('app', 'CREATE EXTENSION schedlock')
		  if $opt{app} eq 'extension';
	}
	return $node;
}

sub wait_true
{
	my ($on, $db, $sql, $seconds) = @_;
	my $t0 = time();
	while (1)
	{
		my $took = time() - $t0;
		return ($took > 0 ? $took : 1e-6) if $on->safe_psql($db, $sql) eq 't';
		return undef if $took > ($seconds // 60);
		usleep(100_000);
	}
}

sub housekeep_all
{
	my ($node, $db, $newdb) = @_;
	my $counted = $node->safe_psql($db, qq{
		SELECT coalesce(jobs_counted_at, '-infinity')
		  FROM schedlock.cluster_status() WHERE datname = '$db'});
	$node->safe_psql('postgres', "CREATE DATABASE $newdb");
	return wait_true($node, $db, qq{
		SELECT jobs_counted_at > '$counted'
		  FROM schedlock.cluster_status() WHERE datname = '$db'}, 60);
}

sub wait_crash_restart
{
	my ($node, $logstart) = @_;
	# the log, not psql: a psql that finds the server in recovery can exit
	# before the harness has written its query to it, and the EPIPE of that
	# write kills the test
	$node->wait_for_log(qr/database system is ready to accept connections/,
		$logstart);
}

1;
