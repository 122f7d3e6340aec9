# 108_ops_copies.pl: a database's jobs run only in the database they were
# scheduled in.  In a copy -- CREATE DATABASE ... TEMPLATE, pg_restore of a
# dump into another database (serial and parallel), a restore into a fresh
# cluster where the database happens to get the same OID -- they stay
# paused: no run over several slots, schedlock.job_status says why, the
# server log has one WARNING for the copy, and schedlock_adopt_jobs() by the
# database owner (not by another role) makes them run there; a copy without
# any job simply runs what is scheduled in it.  pg_upgrade
# (which keeps database OIDs) is not a copy: the jobs go on running; while
# it runs (binary-upgrade mode) no scheduler starts and no job runs.
use strict;
use warnings;
use File::Path qw(rmtree);
use Time::HiRes ();
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('copies', conf => [ "max_worker_processes = 32" ]);
$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN CREATEDB;
	CREATE ROLE other LOGIN;
	CREATE DATABASE app OWNER dbowner;
});
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dbowner, other;
	GRANT INSERT ON schedlock.jobs TO dbowner, other;
	CREATE TABLE ticks (at timestamptz);
	ALTER TABLE ticks OWNER TO dbowner;
	SET ROLE dbowner;
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (now())');
	SELECT schedlock.schedule_job('nightly', '0 3 * * *', 'SELECT 1');
});

# wait until the job has run twice more in database $db
sub ticks_go_on
{
	my ($n, $db) = @_;
	my $c = $n->safe_psql($db, 'SELECT count(*) FROM ticks');
	return $n->poll_query_until($db, "SELECT count(*) >= $c + 2 FROM ticks");
}

# the jobs of $db stay paused over several slots, and job_status says why:
# the window lasts until the every-second job of database $control, in the
# same cluster and not paused, has run four more times (so that the window
# is one the scheduler was awake in, however slow the machine)
sub stays_paused
{
	my ($n, $db, $why, $control) = @_;
	my $since = $n->safe_psql($db, 'SELECT now()');
	my $c = $n->safe_psql($control, 'SELECT count(*) FROM ticks');
	$n->poll_query_until($control, "SELECT count(*) >= $c + 4 FROM ticks")
	  or die "the job of $control did not go on";
	is($n->safe_psql($db, q{
		SELECT count(*) FROM pg_stat_activity
		 WHERE backend_type = 'schedlock job' AND datname = current_database()}),
		'0', "$db: a paused copy holds no job backend");
	is($n->safe_psql($db, "SELECT count(*) FROM ticks WHERE at >= '$since'"), '0',
		"$db: the copied every-second job did not run while ${control}'s ran 4 times");
	is($n->safe_psql($db, "SELECT count(*) FROM schedlock.job_runs WHERE scheduled_for >= '$since'"),
		'0', "$db: job_runs has no run since the copy");
	like($n->safe_psql($db, q{
		SELECT string_agg(DISTINCT paused_reason, ',') FROM schedlock.job_status}),
		$why, "$db: job_status shows why the jobs are paused");
}

# how many WARNINGs about database $db's paused jobs the server logged
sub warnings_for
{
	my ($n, $db) = @_;
	my @w = grep { /WARNING:  jobs of database "$db" are paused/ }
	  split /\n/, slurp_file($n->logfile);
	return scalar @w;
}

ok(ticks_go_on($node, 'app'), 'the job runs in app');

# 1. CREATE DATABASE ... TEMPLATE
$node->command_ok(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-U', 'dbowner',
	  '-c', 'CREATE DATABASE tcopy TEMPLATE app' ],
	'the owner copies app with CREATE DATABASE ... TEMPLATE');
stays_paused($node, 'tcopy', qr/copy of the database with OID \d+/, 'app');
ok(ticks_go_on($node, 'app'), 'app goes on running its jobs');
is(warnings_for($node, 'tcopy'), 1, 'one WARNING in the server log for tcopy');

# a run the copy holds as running (as if copied mid-run) is closed as lost by
# the adoption, with its duration
$node->safe_psql('tcopy', q{
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, attempt, status,
									started_at, worker_pid)
	SELECT job_id, owner, now() - interval '1 hour', 99, 'running',
		   now() - interval '10 minutes', 1
	  FROM schedlock.jobs WHERE job_name = 'nightly'});
my ($ret, $stdout, $stderr) = $node->psql('tcopy', 'SELECT schedlock_adopt_jobs()',
	extra_params => [ '-U', 'other' ]);
like($stderr, qr/permission denied|must be owner/, 'another role may not adopt the jobs');
is($node->safe_psql('tcopy', q{
	SET ROLE dbowner; SELECT schedlock_adopt_jobs()}), '2',
	'the database owner adopts the 2 jobs of tcopy');
is($node->safe_psql('tcopy', q{
	SELECT status, duration = finished_at - started_at, duration >= interval '10 minutes'
	  FROM schedlock.job_runs WHERE attempt = 99}),
	'lost|t|t', 'the run the copy held open is closed as lost, with its duration');
ok(ticks_go_on($node, 'tcopy'), 'after adoption the jobs run in tcopy');
is($node->safe_psql('tcopy', 'SELECT count(*) FROM schedlock.job_status WHERE paused_reason IS NOT NULL'),
	'0', 'tcopy: job_status shows nothing paused');
is($node->safe_psql('tcopy', q{
	SELECT next_run_at > now() AND next_run_at < now() + interval '1 day'
	  FROM schedlock.jobs WHERE job_name = 'nightly'}), 't',
	'adoption computed the next slot from now');
ok(ticks_go_on($node, 'app'), 'app still runs its jobs');
is($node->safe_psql('app', 'SELECT count(*) FROM schedlock.job_status WHERE paused_reason IS NOT NULL'),
	'0', 'app: nothing paused');

# a copy of a database that has no job takes a home of its own
$node->safe_psql('postgres', 'CREATE DATABASE nojobs');
$node->safe_psql('nojobs', 'CREATE EXTENSION schedlock');
$node->safe_psql('postgres', 'CREATE DATABASE nojobs_copy TEMPLATE nojobs');
$node->poll_query_until('nojobs_copy', q{
	SELECT h.datoid = d.oid FROM schedlock.home h, pg_database d
	 WHERE d.datname = current_database()})
  or die 'the copy without jobs did not take a home of its own';
$node->safe_psql('nojobs_copy', q{
	CREATE TABLE ticks (at timestamptz);
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (now())');
});
ok(ticks_go_on($node, 'nojobs_copy'),
	'a copy of a database without jobs runs the jobs scheduled in it');
is(warnings_for($node, 'nojobs_copy'), 0, 'and logs no WARNING for it');

# 2. pg_dump | pg_restore into another database
my $dumpfile = $node->basedir . '/app.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dumpfile, '-d', $node->connstr('app') ],
	'pg_dump -Fc app');
$node->safe_psql('postgres', 'CREATE DATABASE rcopy OWNER dbowner');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('rcopy'), $dumpfile ],
	'pg_restore into rcopy');
stays_paused($node, 'rcopy', qr/restored from another database/, 'app');
is(warnings_for($node, 'rcopy'), 1, 'one WARNING in the server log for rcopy');
is($node->safe_psql('rcopy', q{
	SET ROLE dbowner; SELECT schedlock_adopt_jobs()}), '2',
	'the database owner adopts the 2 jobs of rcopy');
ok(ticks_go_on($node, 'rcopy'), 'after adoption the jobs run in rcopy');
my $jobs = $node->safe_psql('rcopy', q{
	SELECT schedlock.schedule_job('local', '@daily', 'SELECT 1')});
ok($jobs > 0, 'a job scheduled in the adopted copy is accepted');
is($node->safe_psql('rcopy', 'SELECT count(*) FROM schedlock.job_status WHERE paused_reason IS NOT NULL'),
	'0', 'rcopy: nothing paused');
ok(ticks_go_on($node, 'app'), 'app still runs its jobs');

# 3. a fresh cluster: the restored database may get the same OID
my $fresh = schedlock_node('fresh', conf => [ "max_worker_processes = 32" ]);
$fresh->safe_psql('postgres', 'CREATE ROLE dbowner LOGIN; CREATE ROLE other LOGIN; CREATE DATABASE app OWNER dbowner');
$fresh->command_ok([ 'pg_restore', '-d', $fresh->connstr('app'), $dumpfile ],
	'pg_restore into a fresh cluster');
my $same = $fresh->safe_psql('app', q{SELECT oid FROM pg_database WHERE datname = 'app'})
  eq $node->safe_psql('app', q{SELECT oid FROM pg_database WHERE datname = 'app'});
note('the restored database has ' . ($same ? 'the same' : 'another') . ' OID as the original');
$fresh->safe_psql('postgres', 'CREATE DATABASE control');
$fresh->safe_psql('control', q{
	CREATE EXTENSION schedlock;
	CREATE TABLE ticks (at timestamptz);
	SELECT schedlock.schedule_job('tick', '1 second', 'INSERT INTO ticks VALUES (now())')});
stays_paused($fresh, 'app', qr/restored from another database/, 'control');
$fresh->stop;

# 4. pg_upgrade keeps database OIDs and data files: not a copy
my $oid = $node->safe_psql('app', q{SELECT oid FROM pg_database WHERE datname = 'app'});
$node->stop;

# pg_upgrade starts both clusters in binary-upgrade mode (-b) for its checks,
# its schema dump and restore.  No scheduler may run then: a job run would
# use transaction IDs the new cluster does not get (its rows would be "in the
# future" there, with broken indexes), and jobs must not run mid-upgrade.
# The tick job is overdue, so a worker would run it at once.
command_ok([ 'pg_ctl', '-w', '-D', $node->data_dir, '-l', $node->logfile,
	  '-o', '-b', 'start' ], 'the old cluster starts in binary-upgrade mode');
$node->_update_pid(1);
my $in_upgrade = $node->safe_psql('app', q{
	DO $$
	BEGIN
		-- watch for 10 s: the launcher and its workers start within one
		FOR i IN 1 .. 100 LOOP
			PERFORM pg_catalog.pg_stat_clear_snapshot();
			EXIT WHEN EXISTS (SELECT FROM pg_catalog.pg_stat_activity
							   WHERE backend_type LIKE 'schedlock%');
			PERFORM pg_catalog.pg_sleep(0.1);
		END LOOP;
	END $$;
	SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE backend_type LIKE 'schedlock%'});
is($in_upgrade, '0', 'in binary-upgrade mode no schedlock launcher or worker starts');
$node->stop;
my $new = PostgreSQL::Test::Cluster->new('upgraded');
$new->init;
$new->append_conf('postgresql.conf', "shared_preload_libraries = 'schedlock'");
$new->append_conf('postgresql.conf', "max_worker_processes = 32");
my $bindir = $node->config_data('--bindir');
my $workdir = $new->basedir . '/upgrade';
mkdir $workdir;
chdir $workdir;
my $upgrade_began = Time::HiRes::time();
$new->command_ok(
	[ 'pg_upgrade', '--no-sync', '-b', $bindir, '-B', $bindir,
	  '-d', $node->data_dir, '-D', $new->data_dir,
	  '-p', $node->port, '-P', $new->port, '-s', $new->host ],
	'pg_upgrade of the cluster');
my $upgrade_ended = Time::HiRes::time();
$new->start;
is($new->safe_psql('app', qq{
	SELECT count(*) FROM schedlock.job_runs
	 WHERE started_at BETWEEN pg_catalog.to_timestamp($upgrade_began)
	                      AND pg_catalog.to_timestamp($upgrade_ended)}),
	'0', 'no job ran while pg_upgrade ran');
is($new->safe_psql('app', q{SELECT oid FROM pg_database WHERE datname = 'app'}), $oid,
	'pg_upgrade kept the database OID');
ok(ticks_go_on($new, 'app'), 'after pg_upgrade the jobs run in app');
is($new->safe_psql('app', 'SELECT count(*) FROM schedlock.job_status WHERE paused_reason IS NOT NULL'),
	'0', 'after pg_upgrade nothing is paused');
is(warnings_for($new, 'app'), 0, 'and no WARNING');
$new->stop;

done_testing();
