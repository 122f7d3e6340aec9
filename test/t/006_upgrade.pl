# 006_upgrade.pl: ALTER EXTENSION schedlock UPDATE from 1.0 to 1.1 and then
# to the current version, while the scheduler runs, keeps every lock, token,
# job and run of history, and the upgraded schema is the same as a fresh
# installation's, which runs the base script of 1.2 (and the update
# scripts after it, when there are).
#
# Database "upgraded": CREATE EXTENSION schedlock VERSION '1.0', a lease
# lock, an every-second SQL job, a claimed NOTIFY run, a disabled job, as
# the library of 1.0 left them (the library serves the tables of 1.1 and
# later: on 1.0's it runs nothing, says so once, and refuses the job
# functions); then ALTER EXTENSION schedlock UPDATE TO '1.1', where the job
# runs, and UPDATE with the workers busy.  Database "from11": VERSION '1.1', then UPDATE.  Database
# "fresh": CREATE EXTENSION schedlock (the default version).  Database
# "crowded": the application already has functions named like the job
# functions in public; CREATE EXTENSION leaves them alone.
#
# The schemas are compared as pg_dump --schema-only --binary-upgrade prints
# them: binary-upgrade mode dumps every member object of an extension
# (table, index, function, view, policy, grant, comment) one by one, where
# an ordinary dump has only CREATE EXTENSION.  Normalised, because they must
# differ between two databases: object OIDs, frozen xids, the random
# \restrict key, and where the sequences stand (that is data).  \dx+
# schedlock is compared as psql prints it.  The test names no object of the
# scripts it compares.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('upgrade', conf => [ "max_worker_processes = 32" ]);

my $default_version = $node->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'schedlock'});
isnt($default_version, '1.0', "the default version ($default_version) is newer than 1.0");

$node->safe_psql('postgres', 'CREATE DATABASE upgraded');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');

# --- release 1.0, in use ----------------------------------------------------

$node->safe_psql('upgraded', q{CREATE EXTENSION schedlock VERSION '1.0'});
is($node->safe_psql('upgraded',
		q{SELECT extversion FROM pg_extension WHERE extname = 'schedlock'}),
	'1.0', 'version 1.0 installed');

# the application's own objects live in their own schema, outside the
# extension's schemas compared below
$node->safe_psql('upgraded', q{
	CREATE SCHEMA app;
	CREATE TABLE app.ticks (at timestamptz NOT NULL);
});

# The lease that applications took through the library of 1.0 before the
# new one was installed is written here the way 1.0's schedlock_acquire
# wrote it: the first token of timeline 1.  (The current library's lock
# functions on the table of 1.0: 015_lock_api_before_update.pl.)
my $token = $node->safe_psql('upgraded', q{
	INSERT INTO schedlock.lock_state (lock_name, token, holder, locked_at,
									  lock_until, min_until)
	VALUES ('nightly_invoices', (1::bigint << 40) | 1, 'app-server-1',
			clock_timestamp(), clock_timestamp() + interval '1 hour',
			clock_timestamp())
	RETURNING token});
like($token, qr/^\d+$/, "1.0: a lease lock with token $token");

# The library serves the tables of the release before its own and later
# ones: on 1.0's it runs nothing.  The jobs, the runs and the claimed NOTIFY
# run are written here the way the library of 1.0 wrote them.
$node->safe_psql('upgraded', q{
	INSERT INTO schedlock.jobs (job_name, owner, schedule, command, misfire,
								next_slot, next_run_at)
	VALUES ('tick', current_user::regrole, '1 second',
			'INSERT INTO app.ticks VALUES (clock_timestamp())', 'run_all',
			date_trunc('second', now()) - interval '1 second',
			date_trunc('second', now()) - interval '1 second');
	INSERT INTO schedlock.jobs (job_name, owner, schedule, notify_channel,
								payload, timeout, timezone, next_slot,
								next_run_at)
	VALUES ('yearly_mail', current_user::regrole, '0 6 1 1 *', 'mail',
			'{"to": "ops@example.com"}', '1 hour', 'Europe/Prague',
			cron_next('0 6 1 1 *', now(), 'Europe/Prague'),
			cron_next('0 6 1 1 *', now(), 'Europe/Prague'));
	INSERT INTO schedlock.jobs (job_name, owner, schedule, command, enabled,
								max_attempts, retry_delay, next_slot)
	VALUES ('disabled', current_user::regrole, '*/5 * * * *', 'SELECT 1',
			false, 3, '10 seconds', cron_next('*/5 * * * *', now()));
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, status,
									started_at, finished_at, worker_pid,
									timeline, message)
	SELECT job_id, owner, now() - interval '1 second' * i, 'succeeded',
		   now() - interval '1 second' * i, now() - interval '1 second' * i,
		   4242, 1, 'INSERT 0 1'
	  FROM schedlock.jobs, generate_series(3, 5) i WHERE job_name = 'tick';
});
my $notify_run = $node->safe_psql('upgraded', q{
	INSERT INTO schedlock.job_runs (job_id, owner, scheduled_for, manual,
									status, started_at, deadline, claimed_by,
									claimed_at)
	SELECT job_id, owner, now(), true, 'running', now(),
		   now() + interval '1 hour', 'app-server-1', now()
	  FROM schedlock.jobs WHERE job_name = 'yearly_mail'
	RETURNING run_id});
like($notify_run, qr/^\d+$/, "1.0: a NOTIFY run $notify_run claimed");

# the database's first look finds 1.0's tables: one WARNING, and no job runs
my $warning = qr/WARNING:  no job of database "upgraded" runs: its schedlock tables are of release 1\.0/;
$node->wait_for_log($warning, 0);
pass('1.0: a WARNING says that no job of the database runs');
like(slurp_file($node->logfile),
	qr/$warning\n.*DETAIL:  This version of the library serves the tables of schedlock 1\.1 and later\.\n.*HINT:  Run ALTER EXTENSION schedlock UPDATE in database "upgraded"\./,
	'1.0: with what the library serves, and the update as its hint');
is($node->safe_psql('upgraded', q{
	SELECT (SELECT count(*) FROM app.ticks),
		   (SELECT count(*) FROM schedlock.job_runs),
		   (SELECT count(*) FROM pg_stat_activity
			 WHERE backend_type = 'schedlock job' AND datname = 'upgraded')}),
	'0|4|0', '1.0: nothing ran, no run was recorded, no job backend started');
foreach my $call (
	q{schedule_job('t2', '1 second', 'SELECT 1')},
	q{alter_job('tick', enabled => false)},
	q{run_job('tick')},
	q{unschedule_job('tick')},
	qq{schedlock_claim_run($notify_run, 'app-server-2')},
	qq{schedlock_finish_run($notify_run, true)})
{
	my ($rc, $out, $err) = $node->psql('upgraded', "SELECT $call");
	(my $fname = $call) =~ s/\(.*//s;
	like($err, qr/ERROR:  cannot execute (schedlock\.)?$fname\(\) on the tables of schedlock 1\.0/,
		"1.0: $fname() is refused");
}
is($node->safe_psql('upgraded', q{
	SELECT string_agg(job_name || ':' || enabled, ',' ORDER BY job_id),
		   (SELECT count(*) FROM schedlock.job_runs),
		   (SELECT status FROM schedlock.job_runs WHERE claimed_by IS NOT NULL)
	  FROM schedlock.jobs}),
	'tick:true,yearly_mail:true,disabled:false|4|running',
	'1.0: the refused calls changed nothing');

# what must survive, in 1.0's own columns
sub columns_of
{
	my ($table) = @_;
	return $node->safe_psql('upgraded', qq{
		SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
		  FROM information_schema.columns
		 WHERE table_schema = 'schedlock' AND table_name = '$table'});
}
my $lock_cols = columns_of('lock_state');
my $job_cols = columns_of('jobs');
my $run_cols = columns_of('job_runs');

my $locks_before = $node->safe_psql('upgraded',
	"SELECT $lock_cols FROM schedlock.lock_state ORDER BY lock_name");
# jobs the scheduler does not touch while it runs: every column
my $quiet_jobs_sql = "SELECT $job_cols FROM schedlock.jobs "
  . "WHERE job_name IN ('yearly_mail', 'disabled') ORDER BY job_id";
my $quiet_jobs_before = $node->safe_psql('upgraded', $quiet_jobs_sql);
# the running job: its definition
my $tick_sql = q{SELECT job_id, job_name, owner, schedule, command, misfire,
						atomic, enabled, created_at
				   FROM schedlock.jobs WHERE job_name = 'tick'};
my $tick_before = $node->safe_psql('upgraded', $tick_sql);
# finished runs do not change any more
my $last_finished = $node->safe_psql('upgraded', q{
	SELECT max(run_id) FROM schedlock.job_runs WHERE finished_at IS NOT NULL});
my $runs_sql = "SELECT $run_cols FROM schedlock.job_runs "
  . "WHERE run_id <= $last_finished AND finished_at IS NOT NULL ORDER BY run_id";
my $runs_before = $node->safe_psql('upgraded', $runs_sql);

# --- the upgrade, with the workers running jobs -----------------------------

$node->safe_psql('upgraded', q{ALTER EXTENSION schedlock UPDATE TO '1.1'});
my $at_1_1 = $node->safe_psql('upgraded', 'SELECT clock_timestamp()');
my $ok = $node->poll_query_until('upgraded', qq{
	SELECT count(*) >= 2 FROM app.ticks WHERE at > '$at_1_1'});
ok($ok, '1.1: after the update the scheduler runs the job');
my $busy = $node->safe_psql('upgraded', q{
	SELECT count(*) FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'upgraded'});
cmp_ok($busy, '>=', 1, "$busy job backends of the database are running");
$node->safe_psql('upgraded', 'ALTER EXTENSION schedlock UPDATE');
my $upgraded_at = $node->safe_psql('upgraded', 'SELECT clock_timestamp()');
is($node->safe_psql('upgraded',
		q{SELECT extversion FROM pg_extension WHERE extname = 'schedlock'}),
	$default_version, "ALTER EXTENSION schedlock UPDATE went to $default_version");

# --- everything survived ----------------------------------------------------

is($node->safe_psql('upgraded',
		"SELECT $lock_cols FROM schedlock.lock_state ORDER BY lock_name"),
	$locks_before, 'lock_state rows unchanged');
is($node->safe_psql('upgraded', $quiet_jobs_sql), $quiet_jobs_before,
	'idle jobs unchanged, every 1.0 column');
is($node->safe_psql('upgraded', $tick_sql), $tick_before,
	'the running job keeps its definition');
is($node->safe_psql('upgraded', $runs_sql), $runs_before,
	"run history up to run $last_finished unchanged");

is($node->safe_psql('upgraded',
		"SELECT schedlock_extend('nightly_invoices', $token, '1 hour')"),
	't', 'the 1.0 token still holds its lease (extend)');
is($node->safe_psql('upgraded',
		q{SELECT schedlock_acquire('nightly_invoices') IS NULL}),
	't', 'the lock is still held: a new acquire gets NULL');
is($node->safe_psql('upgraded',
		"SELECT schedlock_release('nightly_invoices', $token)"),
	't', 'the 1.0 token releases it');
my $next_token = $node->safe_psql('upgraded',
	q{SELECT schedlock_acquire('nightly_invoices')});
cmp_ok($next_token, '>', $token, "the next token $next_token is greater");

is($node->safe_psql('upgraded',
		"SELECT schedlock_finish_run($notify_run, true, 'mail sent')"),
	't', 'the run claimed under 1.0 is finished under the new version');

$ok = $node->poll_query_until('upgraded', qq{
	SELECT count(*) >= 3 FROM app.ticks WHERE at > '$upgraded_at'});
ok($ok, 'the scheduler goes on running the job after the upgrade');
$node->safe_psql('upgraded', q{SELECT schedlock.alter_job('tick', enabled => false)});
ok($node->poll_query_until('upgraded', q{
	SELECT count(*) = 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'tick' AND r.finished_at IS NULL}),
	'disabled, the job has no run in progress');
is($node->safe_psql('upgraded', q{
	SELECT string_agg(DISTINCT status, ',') FROM schedlock.job_runs r
	  JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'tick'}),
	'succeeded', 'every run of the job before, during and after the upgrade succeeded');
is($node->safe_psql('upgraded', q{
	SELECT count(*) = count(DISTINCT scheduled_for) FROM schedlock.job_runs r
	  JOIN schedlock.jobs j USING (job_id) WHERE j.job_name = 'tick'}),
	't', 'no slot ran twice across the upgrade');
is($node->safe_psql('upgraded', q{
	SELECT last_status, consecutive_failures FROM schedlock.job_status
	 WHERE job_name = 'tick'}),
	'succeeded|0', 'job_status reads the upgraded tables');

# --- the same schema as a fresh installation --------------------------------

$node->safe_psql('fresh', 'CREATE EXTENSION schedlock');
$node->safe_psql('postgres', 'CREATE DATABASE from11');
$node->safe_psql('from11', q{CREATE EXTENSION schedlock VERSION '1.1'});
$node->safe_psql('from11', 'ALTER EXTENSION schedlock UPDATE');

# schema_dump DB : the extension's objects, normalised
sub schema_dump
{
	my ($db) = @_;
	my ($out, $err);
	my $okrun = IPC::Run::run(
		[
			'pg_dump', '--schema-only', '--binary-upgrade',
			'--exclude-schema=app', '--dbname', $node->connstr($db)
		],
		'>', \$out, '2>', \$err);
	die "pg_dump $db failed: $err" unless $okrun;
	# the random key of psql's \restrict (pg_dump of 15.14 and later)
	$out =~ s/^\\(un)?restrict \S+$/\\$1restrict KEY/mg;
	# OIDs, LSNs and frozen xids of the objects: a property of the database
	$out =~ s/'\d+'::pg_catalog\.oid/'OID'::pg_catalog.oid/g;
	$out =~ s/'\{[^}]*\}'::pg_catalog\.pg_lsn\[\]/'{LSN}'::pg_catalog.pg_lsn[]/g;
	$out =~ s/(relfrozenxid|relminmxid) = '\d+'/$1 = 'XID'/g;
	$out =~ s/^WHERE oid = '\d+';$/WHERE oid = 'OID';/mg;
	# where the sequences stand is data (the upgraded database has run jobs)
	$out =~ s/(pg_catalog\.setval\('[^']+'), \d+, (true|false)\)/$1, N, B)/g;
	# extconfig as OIDs (compared by name below)
	$out =~ s/(binary_upgrade_create_empty_extension\([^)]*?), '\{[\d,]*\}'/$1, '{OIDS}'/g;
	# an ACL that grants no more and no less than the default (left by the
	# update's REVOKE from PUBLIC and later GRANT to PUBLIC, where the
	# install script grants nothing) has a section with no statement in it
	$out =~ s/^--\n-- Name: [^\n]*; Type: ACL; [^\n]*\n--\n\n(SELECT pg_catalog\.binary_upgrade_set_record_init_privs\(true\);\n)(SELECT pg_catalog\.binary_upgrade_set_record_init_privs\(false\);\n)\n\n//mg;
	return $out;
}

my $dump_upgraded = schema_dump('upgraded');
my $dump_fresh = schema_dump('fresh');
like($dump_fresh, qr/ALTER EXTENSION schedlock ADD TABLE schedlock\.jobs;/,
	'the dump lists the extension\'s member objects');
ok($dump_upgraded eq $dump_fresh,
	'pg_dump --schema-only of the upgraded database equals a fresh installation\'s');
ok(schema_dump('from11') eq $dump_fresh,
	'pg_dump --schema-only of a database updated from 1.1 equals a fresh installation\'s');
if ($dump_upgraded ne $dump_fresh)
{
	my $dir = PostgreSQL::Test::Utils::tempdir();
	open(my $fh, '>', "$dir/upgraded.sql") or die;
	print $fh $dump_upgraded;
	close $fh;
	open($fh, '>', "$dir/fresh.sql") or die;
	print $fh $dump_fresh;
	close $fh;
	my ($diff, $derr);
	IPC::Run::run([ 'diff', '-u', "$dir/fresh.sql", "$dir/upgraded.sql" ],
		'>', \$diff, '2>', \$derr);
	diag("schema difference (fresh -> upgraded):\n$diff");
}

my $extconfig_sql = q{SELECT extversion, extrelocatable, extnamespace::regnamespace,
							 extconfig::regclass[], extcondition
						FROM pg_extension WHERE extname = 'schedlock'};
is($node->safe_psql('upgraded', $extconfig_sql),
	$node->safe_psql('fresh', $extconfig_sql),
	'pg_extension: same version, schema and tables dumped with their data');

my $dx_upgraded = $node->safe_psql('upgraded', '\dx+ schedlock');
my $dx_fresh = $node->safe_psql('fresh', '\dx+ schedlock');
cmp_ok(scalar(split /\n/, $dx_fresh), '>', 20,
	'\dx+ schedlock lists the member objects');
is($dx_upgraded, $dx_fresh, '\dx+ schedlock: the same objects');
is($node->safe_psql('from11', '\dx+ schedlock'), $dx_fresh,
	'\dx+ schedlock: the same objects after the update from 1.1');

# --- an application's own functions of the job functions' names ------------

$node->safe_psql('postgres', 'CREATE DATABASE crowded');
$node->safe_psql('crowded', q{
	CREATE FUNCTION public.run_job(text) RETURNS text
		LANGUAGE sql AS $$SELECT 'the application''s run_job ' || $1$$;
	CREATE FUNCTION public.schedule_job(text, text, text) RETURNS int
		LANGUAGE sql AS $$SELECT 7$$;
	CREATE FUNCTION public.alter_job(text) RETURNS void LANGUAGE sql AS '';
	CREATE FUNCTION public.unschedule_job(text) RETURNS int LANGUAGE sql AS $$SELECT 0$$;
	CREATE FUNCTION public.schedule_once(text) RETURNS int LANGUAGE sql AS $$SELECT 0$$;
});
my ($rc, $out, $err) = $node->psql('crowded', 'CREATE EXTENSION schedlock');
is($rc, 0, 'CREATE EXTENSION succeeds beside public.run_job(text) and the like')
  or diag($err);
is($node->safe_psql('crowded', q{SELECT run_job('nightly')}),
	'the application\'s run_job nightly', 'the application\'s run_job is untouched');
is($node->safe_psql('crowded', q{
	SELECT schedlock.schedule_job('nightly', '0 3 * * *', 'SELECT 1') > 0,
		   schedlock.unschedule_job('nightly')}),
	't|t', 'the job functions are called as schedlock.<name>');

$node->stop;
done_testing();
