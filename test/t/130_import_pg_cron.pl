# 130_import_pg_cron.pl: schedlock_import_pg_cron() against a real pg_cron
# (Debian's postgresql-NN-cron, preloaded beside schedlock, its jobs in
# database "app").  Realistic jobs of every kind the import must handle:
# named and unnamed, inactive, of another role, of a role since dropped, of
# another database, on another server, VACUUM / CREATE INDEX CONCURRENTLY /
# REINDEX CONCURRENTLY / CALL / DO (non-atomic), transaction control and a schedule schedlock refuses
# (reported, not imported), wrap-around ranges pg_cron read otherwise
# (imported disabled), @reboot and @monthly, and "$" and "N seconds" where
# the installed pg_cron has them (1.6 and 1.5).  It checks:
#  (a) the dry run (the default) reports a row per job and changes nothing;
#  (b) the import creates exactly the expected jobs with owner, schedule,
#      command, time zone, atomic and enabled, and tells what is left to do;
#  (c) a second import finds the jobs there ("exists") and creates nothing;
#      a job of the same name with another definition is not overwritten;
#  (d) deactivate => true sets the pg_cron jobs inactive in the same
#      transaction: rolled back together with the import;
#  (e) who may call it: PUBLIC may not; a role that is not a superuser
#      imports only its own jobs, and only if it may call schedule_job;
#  (f) in a database without pg_cron it says where pg_cron is.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('import',
	preload => [ 'schedlock', 'pg_cron' ],
	conf => [ "cron.database_name = 'app'", "max_worker_processes = 32" ]);
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('postgres', 'CREATE DATABASE analytics');
$node->safe_psql('app', 'CREATE EXTENSION pg_cron');
$node->safe_psql('app', 'CREATE EXTENSION schedlock');
$node->safe_psql('analytics', 'CREATE EXTENSION schedlock');
$node->safe_psql('postgres', q{
	CREATE ROLE reporter LOGIN;
	CREATE ROLE ghost LOGIN;
	GRANT CONNECT ON DATABASE app TO reporter, ghost;
});

my $version = $node->safe_psql('app',
	"SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'");
my ($major, $minor) = $version =~ /^(\d+)\.(\d+)/;
my $v16 = ($major > 1 || $minor >= 6);
note "pg_cron extension version $version";

# --- the pg_cron jobs ---
my %id;
sub sched
{
	my ($key, $sql) = @_;
	$id{$key} = $node->safe_psql('app', $sql);
	return $id{$key};
}
sched('purge', q{SELECT cron.schedule('nightly-purge', '30 3 * * *', $$DELETE FROM sessions WHERE expires < now()$$)});
sched('unnamed', q{SELECT cron.schedule('*/5 * * * *', 'SELECT refresh_counters()')});
sched('vacuum', q{SELECT cron.schedule('vacuum-events', '0 4 * * *', 'VACUUM ANALYZE events')});
sched('reindex', q{SELECT cron.schedule('reindex-events', '0 5 * * 0', 'REINDEX INDEX CONCURRENTLY events_pkey')});
sched('cic', q{SELECT cron.schedule('index-events', '0 3 * * 6', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS events_ts ON events (ts)')});
sched('call', q{SELECT cron.schedule('archive', '15 * * * *', 'CALL archive_old_rows(30)')});
sched('do', q{SELECT cron.schedule('do-block', '@hourly', $q$DO $b$ BEGIN PERFORM 1; END $b$$q$)});
sched('weekday', q{SELECT cron.schedule('weekday-report', '0 9 * * 1-5', $$INSERT INTO reports SELECT now(), count(*) FROM orders$$)});
sched('paused', q{SELECT cron.schedule('paused-job', '0 12 * * *', 'SELECT 1')});
$node->safe_psql('app', "SELECT cron.alter_job($id{paused}, active := false)");
sched('other_db', q{SELECT cron.schedule_in_database('analytics-rollup', '0 1 * * *', $$SELECT rollup('day')$$, 'analytics')});
sched('feb30', q{SELECT cron.schedule('feb-30', '0 0 30 2 *', 'SELECT 1')});
sched('txn', q{SELECT cron.schedule('txn-control', '0 6 * * *', 'BEGIN; DELETE FROM queue WHERE done; COMMIT;')});
sched('night', q{SELECT cron.schedule('night-batch', '0 22-2 * * *', 'SELECT run_batch()')});
sched('weekend', q{SELECT cron.schedule('long-weekend', '0 8 * * fri-mon', 'SELECT 1')});
sched('reporter', q{SELECT cron.schedule_in_database('reporter-daily', '0 7 * * *', 'SELECT 2', 'app', 'reporter')});
sched('reporter_dup', q{SELECT cron.schedule_in_database('reporter-dup', '0 8 * * *', 'SELECT 3', 'app', 'reporter')});
sched('ghost', q{SELECT cron.schedule_in_database('ghost-job', '0 9 * * *', 'SELECT 4', 'app', 'ghost')});
sched('reboot', q{SELECT cron.schedule('warm-up', '@reboot', 'SELECT 5')});
sched('monthly', q{SELECT cron.schedule('monthly-close', '@monthly', 'SELECT 6')});
sched('remote', q{SELECT cron.schedule('remote-node', '0 2 * * *', 'SELECT 7')});
$node->safe_psql('app', "UPDATE cron.job SET nodename = 'db2.example.com' WHERE jobid = $id{remote}");
$node->safe_psql('postgres', 'REVOKE CONNECT ON DATABASE app FROM ghost; DROP ROLE ghost');

# "$" (pg_cron 1.6) and "N seconds" (pg_cron 1.5): schedule them where the
# installed pg_cron accepts them
my ($ok_last) = $node->psql('app', q{SELECT cron.schedule('month-end', '0 23 $ * *', 'SELECT 8')});
$id{last} = $node->safe_psql('app', "SELECT jobid FROM cron.job WHERE jobname = 'month-end'") if $ok_last == 0;
my ($ok_secs) = $node->psql('app', q{SELECT cron.schedule('heartbeat', '30 seconds', 'SELECT 9')});
$id{secs} = $node->safe_psql('app', "SELECT jobid FROM cron.job WHERE jobname = 'heartbeat'") if $ok_secs == 0;

my $njobs = $node->safe_psql('app', 'SELECT count(*) FROM cron.job');
cmp_ok($njobs, '>=', 20, "pg_cron has $njobs jobs to import");

# a schedlock job reporter made before, of the same name as its pg_cron job
$node->safe_psql('app', q{
	GRANT INSERT ON schedlock.jobs TO reporter;
	SET ROLE reporter;
	SELECT schedlock.schedule_job('reporter-dup', '0 20 * * *', 'SELECT 33', timezone => 'UTC');
});

my $zone = ($major == 1 && $minor < 5) ? 'GMT' : $node->safe_psql('app', "SHOW cron.timezone");
note "pg_cron reads schedules in $zone";

# plan: a row per pg_cron job, key => "action|job_name|atomic|enabled"
sub plan_rows
{
	my ($sql) = @_;
	my %rows;
	for my $line (split /\n/, $node->safe_psql('app', $sql))
	{
		my ($jobid, @rest) = split /\|/, $line, -1;
		$rows{$jobid} = join('|', @rest);
	}
	return \%rows;
}
my $cols = "cron_jobid, action, job_name, coalesce(atomic::text, ''), coalesce(enabled::text, '')";

my %expect = (
	purge => 'create|nightly-purge|true|true',
	unnamed => "create|pg_cron_$id{unnamed}|true|true",
	vacuum => 'create|vacuum-events|false|true',
	reindex => 'create|reindex-events|false|true',
	cic => 'create|index-events|false|true',
	call => 'create|archive|false|true',
	do => 'create|do-block|false|true',
	weekday => 'create|weekday-report|true|true',
	paused => 'create|paused-job|true|false',
	other_db => 'skip|analytics-rollup|true|true',
	feb30 => 'skip|feb-30|true|true',
	txn => 'skip|txn-control|true|true',
	# pg_cron before 1.6 never ran 22-2; 1.6 runs 22, 23, 0, 1, 2 as schedlock
	night => 'create|night-batch|true|' . ($v16 ? 'true' : 'false'),
	# fri-mon selects no day in any pg_cron
	weekend => 'create|long-weekend|true|false',
	reporter => 'create|reporter-daily|true|true',
	reporter_dup => 'skip|reporter-dup|true|true',
	ghost => 'skip|ghost-job|true|true',
	reboot => 'create|warm-up|true|true',
	monthly => 'create|monthly-close|true|true',
	remote => 'skip|remote-node|true|true');
$expect{last} = 'create|month-end|true|true' if defined $id{last};
$expect{secs} = 'create|heartbeat|true|true' if defined $id{secs};

# --- (a) dry run ---
my $before = $node->safe_psql('app', 'SELECT count(*) FROM schedlock.jobs');
my $dry = plan_rows("SELECT $cols FROM schedlock_import_pg_cron()");
is(scalar(keys %$dry), $njobs, 'dry run: one row per pg_cron job');
for my $k (sort keys %expect)
{
	is($dry->{ $id{$k} }, $expect{$k}, "dry run: $k");
}
is($node->safe_psql('app', 'SELECT count(*) FROM schedlock.jobs'), $before,
	'dry run: no schedlock job created');
is($node->safe_psql('app', 'SELECT count(*) FROM cron.job WHERE NOT active'), '1',
	'dry run: pg_cron jobs unchanged');
is($node->safe_psql('app', "SELECT count(*) FROM schedlock_import_pg_cron() WHERE job_id IS NOT NULL"),
	'0', 'dry run: no job ids');

SKIP:
{
	skip "pg_cron $version has no \"\$\" (last day of the month; pg_cron 1.6 added it)", 1 unless defined $id{last};
	is($node->safe_psql('app', "SELECT action || '|' || enabled FROM schedlock_import_pg_cron() WHERE cron_jobid = $id{last}"),
		'create|true', '$: imported as it is, enabled');
}
SKIP:
{
	skip "pg_cron $version has no \"N seconds\" schedules (pg_cron 1.5 added them)", 1 unless defined $id{secs};
	like($node->safe_psql('app', "SELECT detail FROM schedlock_import_pg_cron() WHERE cron_jobid = $id{secs}"),
		qr/same period, another phase/, 'N seconds: the phase differs, and the row says so');
}

# the reasons
my %detail = split /\x1f/, $node->safe_psql('app', q{
	SELECT string_agg(cron_jobid || chr(31) || coalesce(detail, '') || ' TODO ' || todo, chr(31))
	  FROM schedlock_import_pg_cron()});
like($detail{ $id{other_db} }, qr/runs in database "analytics".*In database "analytics".*SELECT schedlock\.schedule_job\(job_name => 'analytics-rollup', schedule => '0 1 \* \* \*', command => 'SELECT rollup\(''day''\)', timezone => '\Q$zone\E'\);.*SELECT cron\.unschedule\($id{other_db}\)/s,
	'other database: skipped, with the schedule_job call to make there and the unschedule here');
like($detail{ $id{feb30} }, qr/selects no day that exists/, 'a schedule schedlock refuses: skipped with the reason');
like($detail{ $id{txn} }, qr/transaction control/, 'transaction control: skipped with the reason');
like($detail{ $id{vacuum} }, qr/Non-atomic: VACUUM cannot run inside a transaction block/, 'VACUUM: non-atomic, and why');
like($detail{ $id{reindex} }, qr/Non-atomic: REINDEX CONCURRENTLY/, 'REINDEX CONCURRENTLY: non-atomic');
like($detail{ $id{unnamed} }, qr/no name: named "pg_cron_$id{unnamed}"/, 'unnamed job: the generated name is reported');
like($detail{ $id{weekend} }, qr/never ran this schedule: days of the week none there, 0-1,5-6 in schedlock; imported disabled/,
	'fri-mon: pg_cron never ran it; imported disabled, with both meanings');
if ($v16)
{
	is($detail{ $id{night} } =~ /never ran|part of/ ? 1 : 0, 0, '22-2: pg_cron 1.6 reads it as schedlock does');
}
else
{
	like($detail{ $id{night} }, qr/never ran this schedule: hours none there, 0-2,22-23 in schedlock/,
		'22-2: pg_cron before 1.6 never ran it');
}
like($detail{ $id{ghost} }, qr/Role "ghost" does not exist/, 'job of a dropped role: skipped');
like($detail{ $id{remote} }, qr/host "db2\.example\.com"/, 'job on another server: skipped');
like($detail{ $id{reporter_dup} }, qr/already has a schedlock job named "reporter-dup"/,
	'name taken by another definition: skipped');
like($detail{ $id{purge} }, qr/TODO SELECT cron\.unschedule\($id{purge}\); -- until then pg_cron runs the job too/,
	'active job kept in pg_cron: the unschedule call to make');
like($detail{ $id{paused} }, qr/inactive: imported disabled.*optional/s, 'inactive job: imported disabled, unschedule optional');

# --- (b) the import ---
my $real = plan_rows("SELECT $cols FROM schedlock_import_pg_cron(dry_run => false)");
my $created = 0;
for my $k (sort keys %expect)
{
	(my $e = $expect{$k}) =~ s/^create\|/created|/;
	is($real->{ $id{$k} }, $e, "import: $k");
	$created++ if $e =~ /^created/;
}
is($node->safe_psql('app', 'SELECT count(*) FROM schedlock.jobs') - $before, $created,
	"import: $created schedlock jobs created");
is($node->safe_psql('app', q{
	SELECT owner || '|' || schedule || '|' || command || '|' || timezone || '|' || atomic || '|' || enabled
	  FROM schedlock.jobs WHERE job_name = 'vacuum-events'}),
	"postgres|0 4 * * *|VACUUM ANALYZE events|$zone|false|true", 'import: VACUUM job as defined');
is($node->safe_psql('app', "SELECT owner FROM schedlock.jobs WHERE job_name = 'reporter-daily'"),
	'reporter', 'import: a job of another role is owned by it');
is($node->safe_psql('app', "SELECT schedule || '|' || command FROM schedlock.jobs WHERE job_name = 'reporter-dup'"),
	'0 20 * * *|SELECT 33', 'import: the existing job of the same name is not overwritten');
isnt($node->safe_psql('app', "SELECT next_run_at FROM schedlock.jobs WHERE job_name = 'nightly-purge'"),
	'', 'import: an enabled job has its next run');
is($node->safe_psql('app', 'SELECT count(*) FROM cron.job WHERE NOT active'), '1',
	'import without deactivate: pg_cron jobs stay active');
is($node->safe_psql('app', 'SELECT count(*) FROM schedlock_import_pg_cron(dry_run => false) WHERE action = \'created\''),
	'0', 'second import: nothing created');
is($node->safe_psql('app', "SELECT action || '|' || job_id FROM schedlock_import_pg_cron(jobids => ARRAY[$id{purge}])"),
	'exists|' . $node->safe_psql('app', "SELECT job_id FROM schedlock.jobs WHERE job_name = 'nightly-purge'"),
	'second import: the job is found, with its id');

# --- (d) deactivate, atomically with the import ---
$node->safe_psql('app', "SELECT schedlock.unschedule_job('weekday-report')");
my ($rc, $out, $err) = $node->psql('app', qq{
	BEGIN;
	SELECT action FROM schedlock_import_pg_cron(dry_run => false, deactivate => true, jobids => ARRAY[$id{weekday}]);
	SELECT active FROM cron.job WHERE jobid = $id{weekday};
	ROLLBACK;
	SELECT count(*) FROM schedlock.jobs WHERE job_name = 'weekday-report';
	SELECT active FROM cron.job WHERE jobid = $id{weekday};
});
is($out, "created\nf\n0\nt", 'deactivate: in the transaction of the import, and rolled back with it');
is($node->safe_psql('app', qq{
	SELECT action || '|' || todo FROM schedlock_import_pg_cron(dry_run => false, deactivate => true,
		jobids => ARRAY[$id{weekday}, $id{purge}]) ORDER BY cron_jobid}),
	"exists|None: the pg_cron job is now inactive (SELECT cron.unschedule($id{purge}) removes it).\n"
	  . "created|None: the pg_cron job is now inactive (SELECT cron.unschedule($id{weekday}) removes it).",
	'deactivate: imported and already imported jobs are set inactive');
is($node->safe_psql('app', "SELECT string_agg(active::text, ',' ORDER BY jobid) FROM cron.job WHERE jobid IN ($id{weekday}, $id{purge})"),
	'false,false', 'deactivate: cron.job.active is false');
is($node->safe_psql('app', "SELECT string_agg(action, ',') FROM schedlock_import_pg_cron(deactivate => true, jobids => ARRAY[$id{feb30}])"),
	'skip', 'deactivate: a job that is not imported stays active');
is($node->safe_psql('app', "SELECT active FROM cron.job WHERE jobid = $id{feb30}"), 't',
	'deactivate: the skipped pg_cron job is still active');

# --- (e) who may call it ---
($rc, $out, $err) = $node->psql('app', 'SET ROLE reporter; SELECT * FROM schedlock_import_pg_cron()');
like($err, qr/permission denied for function schedlock_import_pg_cron/, 'PUBLIC may not call it');
$node->safe_psql('app', q{
	CREATE ROLE importer LOGIN;
	GRANT EXECUTE ON FUNCTION schedlock_import_pg_cron(boolean, boolean, bigint[]) TO reporter, importer;
	-- how pg_cron lets a role use it
	GRANT USAGE ON SCHEMA cron TO reporter, importer;
});
($rc, $out, $err) = $node->psql('app', 'SET ROLE importer; SELECT * FROM schedlock_import_pg_cron()');
like($err, qr/ERROR:  permission denied to import pg_cron jobs/,
	'a role that may not call schedule_job may not import (42501)');
$node->safe_psql('app', "SELECT schedlock.unschedule_job(job_name => 'reporter-daily')");
is($node->safe_psql('app', q{
	SET ROLE reporter;
	SELECT string_agg(action || ':' || job_name, ',' ORDER BY cron_jobid) FROM schedlock_import_pg_cron(dry_run => false)}),
	'created:reporter-daily,skip:reporter-dup', 'a role that is not a superuser imports its own jobs only');
is($node->safe_psql('app', "SELECT owner FROM schedlock.jobs WHERE job_name = 'reporter-daily'"),
	'reporter', 'and owns them');

# deactivating goes through cron.alter_job for a role that is not a
# superuser; pg_cron grants it to nobody
$node->safe_psql('app', "SELECT schedlock.unschedule_job(job_name => 'reporter-daily')");
is($node->safe_psql('app', qq{
	SET ROLE reporter;
	SELECT action || '|' || detail FROM schedlock_import_pg_cron(dry_run => false, deactivate => true, jobids => ARRAY[$id{reporter}])}),
	'skip|permission denied for function alter_job.',
	'deactivate without EXECUTE on cron.alter_job: the job is skipped');
is($node->safe_psql('app', "SELECT count(*) FROM schedlock.jobs WHERE job_name = 'reporter-daily'")
	  . $node->safe_psql('app', "SELECT active FROM cron.job WHERE jobid = $id{reporter}"),
	'0t', 'and neither created nor deactivated');
$node->safe_psql('app', 'GRANT EXECUTE ON FUNCTION cron.alter_job(bigint, text, text, text, text, boolean) TO reporter');
is($node->safe_psql('app', qq{
	SET ROLE reporter;
	SELECT action FROM schedlock_import_pg_cron(dry_run => false, deactivate => true, jobids => ARRAY[$id{reporter}])}),
	'created', 'with EXECUTE on cron.alter_job: created');
is($node->safe_psql('app', "SELECT active FROM cron.job WHERE jobid = $id{reporter}"), 'f',
	'and the pg_cron job deactivated');

# --- (f) where pg_cron is not installed ---
($rc, $out, $err) = $node->psql('analytics', 'SELECT * FROM schedlock_import_pg_cron()');
like($err, qr/extension "pg_cron" is not installed in this database.*HINT:  Call schedlock_import_pg_cron\(\) in database "app" \(cron\.database_name\)/s,
	'another database: where pg_cron is');

$node->stop;
done_testing();
