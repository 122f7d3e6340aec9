# 001_preload.pl: schedlock refuses to work unless it is preloaded, says so
# with a hint naming the setting, and once preloaded can be created in any
# database an application uses, not just "postgres".
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nopreload');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE app');

my ($ret, $stdout, $stderr) =
  $node->psql('app', 'CREATE EXTENSION schedlock', on_error_stop => 1);
isnt($ret, 0, 'CREATE EXTENSION fails without shared_preload_libraries');
like($stderr, qr/schedlock must be loaded via shared_preload_libraries/,
	'the error says the library must be preloaded');
like($stderr, qr/HINT:.*shared_preload_libraries/,
	'the hint names the setting');
is($node->safe_psql('app',
		"SELECT count(*) FROM pg_extension WHERE extname = 'schedlock'"),
	'0', 'nothing was created');

($ret, $stdout, $stderr) = $node->psql('app', "LOAD 'schedlock'");
isnt($ret, 0, 'LOAD fails too');
like($stderr, qr/shared_preload_libraries/, 'LOAD names the setting');

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'schedlock'");
$node->restart;
$node->safe_psql('app', 'CREATE EXTENSION schedlock');
ok( $node->safe_psql('app', "SELECT schedlock_acquire('first') IS NOT NULL") eq
	  't',
	'preloaded: the extension works in an application database');

# a second database is independent of the first
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION schedlock SCHEMA public');
ok( $node->safe_psql('other', "SELECT schedlock_acquire('first') IS NOT NULL")
	  eq 't',
	'each database has its own locks');

# the schedlock. prefix is reserved
($ret, $stdout, $stderr) =
  $node->psql('app', "SET schedlock.no_such_setting = 1");
isnt($ret, 0, 'an unknown schedlock.* setting is refused');
like($stderr, qr/invalid configuration parameter name|unrecognized configuration parameter/,
	'with a message about the parameter name');

$node->stop;
done_testing();
