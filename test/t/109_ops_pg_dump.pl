# 109_ops_pg_dump.pl: a database owner who is not a superuser can back up
# the database with pg_dump --enable-row-security, and the dump restores.
# The dump holds what that role may see and nothing of other roles' jobs,
# payloads or locks; ordinary roles still see only their own rows.  A role
# with BYPASSRLS and pg_read_all_data makes a complete dump.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('pg_dump', conf => [ "max_worker_processes = 32" ]);
$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE ROLE backup LOGIN BYPASSRLS;
	GRANT pg_read_all_data TO backup;
	CREATE DATABASE app OWNER dbowner;
});
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dbowner, alice;
	GRANT INSERT ON schedlock.jobs TO dbowner, alice;
});
$node->safe_psql('app', q{
	SET ROLE dbowner;
	CREATE TABLE orders (id int PRIMARY KEY, item text);
	INSERT INTO orders VALUES (1, 'owner-data-row');
	SELECT schedlock.schedule_job('owner_job', '@daily', 'SELECT 1');
	SELECT schedlock_acquire('owner-lock', '1 hour');
});
$node->safe_psql('app', q{
	SET ROLE alice;
	SELECT schedlock.schedule_job('alice_job', '@hourly', notify_channel => 'mail',
						payload => '{"smtp_password": "alice-secret"}');
	SELECT schedlock_acquire('alice-lock', '1 hour');
});
# some run history, so that the run id sequence has moved
$node->safe_psql('app', q{SET ROLE dbowner; SELECT schedlock.run_job('owner_job')});
$node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM schedlock.job_runs WHERE status = 'succeeded'})
  or die 'the run did not happen';

my $dump = $node->basedir . '/owner.dump';
my ($stdout, $stderr);
my $ok = IPC::Run::run(
	[ 'pg_dump', '--enable-row-security', '-Fc', '-f', $dump,
	  '-d', $node->connstr('app'), '-U', 'dbowner' ],
	'>', \$stdout, '2>', \$stderr);
ok($ok, 'the non-superuser database owner dumps the database with --enable-row-security')
  or diag($stderr);

my $text = `pg_restore -f - $dump`;
like($text, qr/owner-data-row/, 'the dump has the owner\'s table data');
like($text, qr/owner_job/, 'the dump has the owner\'s job');
unlike($text, qr/alice_job|alice-secret/, 'the dump has nothing of alice\'s job or payload');
unlike($text, qr/alice-lock/, 'the dump has nothing of alice\'s lock');

$ok = IPC::Run::run(
	[ 'pg_dump', '-f', '/dev/null', '-d', $node->connstr('app'), '-U', 'dbowner' ],
	'>', \$stdout, '2>', \$stderr);
ok(!$ok && $stderr =~ /row-level security/,
	'without --enable-row-security pg_dump says that row-level security hides rows');

# ordinary roles see only their own rows, as before
is($node->safe_psql('app', q{
	SET ROLE alice;
	SELECT string_agg(job_name, ',') FROM schedlock.jobs}), 'alice_job',
	'alice sees only her own job');
my ($rc, $lock_out, $lock_err) = $node->psql('app', q{
	SET ROLE alice; SELECT count(*) FROM schedlock.lock_state});
like($lock_err, qr/permission denied for table lock_state/,
	'alice may not read the lock table (its tokens); only the database owner may, for pg_dump');
is($node->safe_psql('app', q{
	SET ROLE dbowner; SELECT count(*) FROM schedlock.lock_state}), '0',
	'and the database owner reads no row of it, under row-level security');
is($node->safe_psql('app', q{
	SET ROLE dbowner; SELECT count(*) FROM schedlock.job_runs}), '1',
	'the database owner sees only the runs of its own job');

# the owner's dump restores (CREATE EXTENSION needs a superuser)
$node->safe_psql('postgres', 'CREATE DATABASE app_restored OWNER dbowner');
$ok = IPC::Run::run(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('app_restored'), $dump ],
	'>', \$stdout, '2>', \$stderr);
ok($ok, 'the owner\'s dump restores without errors') or diag($stderr);
is($node->safe_psql('app_restored', 'SELECT item FROM orders'), 'owner-data-row',
	'the restored database has the table data');
is($node->safe_psql('app_restored', 'SELECT string_agg(job_name, \',\') FROM schedlock.jobs'),
	'owner_job', 'and the owner\'s job, none of alice\'s');

# a backup role with BYPASSRLS and pg_read_all_data dumps everything
$ok = IPC::Run::run(
	[ 'pg_dump', '-Fp', '-d', $node->connstr('app'), '-U', 'backup' ],
	'>', \$stdout, '2>', \$stderr);
ok($ok, 'a role with BYPASSRLS and pg_read_all_data dumps the database') or diag($stderr);
like($stdout, qr/alice_job/, 'its dump has every role\'s jobs');
like($stdout, qr/alice-lock/, 'and every lock');

$node->stop;
done_testing();
