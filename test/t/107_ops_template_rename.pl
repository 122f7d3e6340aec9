# 107_ops_template_rename.pl: CREATE DATABASE ... TEMPLATE and ALTER
# DATABASE ... RENAME work while the scheduler runs: the job backends of the
# database step aside for the statement and come back after it (under the
# new name after a rename), and jobs run again.  A role that may not run the
# statement is refused by PostgreSQL without any backend having been stopped.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('template_rename', conf => [ "max_worker_processes = 32" ]);
$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN CREATEDB;
	CREATE ROLE other LOGIN CREATEDB;
	CREATE DATABASE app OWNER dbowner;
});
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dbowner;
	GRANT INSERT ON schedlock.jobs TO dbowner;
	CREATE TABLE ticks (at timestamptz);
	GRANT INSERT ON ticks TO dbowner;
	SET ROLE dbowner;
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (now())');
});

# pids of a database's job backends, sorted
sub worker_pids
{
	my ($db) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity
		 WHERE backend_type = 'schedlock job' AND datname = '$db'});
}

# wait until the job has run twice more in database $db
sub ticks_go_on
{
	my ($db) = @_;
	my $n = $node->safe_psql($db, 'SELECT count(*) FROM ticks');
	return $node->poll_query_until($db, "SELECT count(*) >= $n + 2 FROM ticks");
}

ok(ticks_go_on('app'), 'the job runs in app');
$node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'app'})
  or die 'the job backend of dbowner did not start';
my $pids = worker_pids('app');

# refused statements stop nothing
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	'CREATE DATABASE stolen TEMPLATE app', extra_params => [ '-U', 'other' ]);
like($stderr, qr/permission denied to copy database "app"/,
	'a role that does not own app may not copy it');
($ret, $stdout, $stderr) = $node->psql('postgres',
	'ALTER DATABASE app RENAME TO stolen', extra_params => [ '-U', 'other' ]);
like($stderr, qr/must be owner of database app/,
	'a role that does not own app may not rename it');
is(worker_pids('app'), $pids, 'the refused statements stopped no job backend');

# CREATE DATABASE ... TEMPLATE app, by the owner
($ret, $stdout, $stderr) = $node->psql('postgres',
	'CREATE DATABASE app_copy TEMPLATE app', extra_params => [ '-U', 'dbowner' ]);
is($ret, 0, 'CREATE DATABASE app_copy TEMPLATE app succeeds while the scheduler runs')
  or diag($stderr);
is($node->safe_psql('app_copy', 'SELECT count(*) > 0 FROM ticks'), 't',
	'the copy has the data of app');
ok(ticks_go_on('app'), 'the job runs again in app afterwards');
$node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'app'})
  or die 'the job backend of app did not come back';
pass('app has its job backend again');

# ALTER DATABASE app RENAME TO renamed, by the owner
($ret, $stdout, $stderr) = $node->psql('postgres',
	'ALTER DATABASE app RENAME TO renamed', extra_params => [ '-U', 'dbowner' ]);
is($ret, 0, 'ALTER DATABASE app RENAME TO renamed succeeds while the scheduler runs')
  or diag($stderr);
ok(ticks_go_on('renamed'), 'the job runs again in the renamed database');
$node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'renamed'})
  or die 'the job backend of the renamed database did not come back';
my @titles;
foreach my $pid (split /,/, worker_pids('renamed'))
{
	open(my $fh, '<', "/proc/$pid/cmdline") or next;
	local $/;
	my $t = <$fh>;
	close $fh;
	$t =~ s/\0/ /g;
	push @titles, $t;
}
is(scalar(grep { /schedlock job backend for database renamed\b/ } @titles), 1,
	'the job backend\'s process title names the new database')
  or diag(join("\n", @titles));

$node->stop;
done_testing();
