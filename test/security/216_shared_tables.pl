# 216_shared_tables.pl: schedlock's tables have no side doors, and an
# approval of run_as seals what the job means.
#
# A database owned by a non-superuser (dbowner); alice and bob, granted
# the job API; maint, the role a superuser lets alice's job run as;
# mallory, a LOGIN role and nothing else; etl, with BYPASSRLS and the
# predefined roles pg_write_all_data and pg_read_all_data (the pair
# PostgreSQL's documentation suggests for ETL roles); peeker, with
# BYPASSRLS alone.
#  (a) The approval covers search_path: while alice's job runs as maint,
#      alice may not change its search_path (42501, nothing written).
#  (b) The approval is checked where the job runs: a change that took
#      another path than the API (a superuser's direct UPDATE, as a restore
#      would write) or an approver who is no longer a superuser pauses the
#      job with a stopped_reason saying who must approve it again; nothing
#      runs as maint.  A superuser's alter_job approves it again.
#  (c) No role but the extension owner writes, row-locks or locks the
#      tables: mallory's LOCK TABLE job_runs IN ACCESS EXCLUSIVE MODE,
#      alice's LOCK TABLE jobs IN ROW EXCLUSIVE MODE (she holds INSERT, the
#      API's grant), etl's UPDATE of run_as, INSERT, DELETE, COPY FROM,
#      SELECT ... FOR UPDATE and LOCK TABLE, peeker's DELETE of a pending
#      NOTIFY run: all 42501, nothing changed, and etl is still no
#      superuser.  On PostgreSQL 17 and later a pg_maintain member's LOCK,
#      REINDEX, CLUSTER and VACUUM FULL are refused too.
#  (d) What is left to every role does not stop the jobs: while mallory
#      holds the ROW EXCLUSIVE lock a prepared DELETE takes (PostgreSQL's
#      parser takes it for any role), alice's every-second job still runs.
#  (e) Fencing tokens: peeker (BYPASSRLS) cannot read schedlock.lock_state;
#      schedlock.locks still shows a holder its own token.  Payloads:
#      peeker and mallory cannot read schedlock.jobs.payload (42501), and
#      schedlock.job_payloads shows each role its own jobs' only; etl
#      (pg_read_all_data with BYPASSRLS) reads them all, as meant.
#  (f) An owner deletes its own ended runs with schedlock.delete_runs, not
#      another role's, and not a run still pending.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('shared_tables',
	conf => [ "max_worker_processes = 32" ]);
my $su = $node->safe_psql('postgres', 'SELECT current_user');
my $pgver = $node->safe_psql('postgres', 'SHOW server_version_num');

$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE maint LOGIN;
	CREATE ROLE mallory LOGIN;
	CREATE ROLE etl LOGIN BYPASSRLS;
	GRANT pg_write_all_data, pg_read_all_data TO etl;
	CREATE ROLE peeker LOGIN BYPASSRLS;
	CREATE ROLE boss LOGIN SUPERUSER;
	CREATE DATABASE app OWNER dbowner;
});
$node->safe_psql('app', q{
	CREATE EXTENSION schedlock;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
	CREATE SCHEMA alice_s AUTHORIZATION alice;
	CREATE TABLE public.payroll_staging (loaded_at timestamptz, who text);
	GRANT SELECT, INSERT, DELETE ON public.payroll_staging TO maint;
	CREATE TABLE public.ran_as (who text, at timestamptz DEFAULT clock_timestamp());
	GRANT INSERT, SELECT ON public.ran_as TO PUBLIC;
});

# run SQL in app as a role; returns (SQLSTATE or '', stdout, stderr)
sub as_role
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('app', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	my ($state) = ($err =~ /ERROR:\s+([0-9A-Z]{5}):/);
	return ($state // '', $out, $err);
}

# run SQL in app as a role that must succeed; returns stdout
sub as_safe
{
	my ($role, $sql) = @_;
	return $node->safe_psql('app', $sql, extra_params => [ '-U', $role ]);
}

sub su_sql
{
	return $node->safe_psql('app', "SET search_path = pg_catalog, public;\n$_[0]");
}

sub wait_su
{
	my ($sql, $seconds) = @_;
	return wait_true($node, 'app', "SET search_path = pg_catalog, public;\n$sql", $seconds);
}

my ($state, $out, $err);

# --- (a) an approval covers search_path ---
as_safe('alice', q{SELECT schedlock.schedule_job('cleanup', '@daily',
	$$DELETE FROM public.payroll_staging WHERE loaded_at < now() - interval '1 day'$$)});
su_sql(q{SELECT schedlock.alter_job('cleanup', run_as => 'maint')});
is(su_sql(q{SELECT approved_by::text || '|' || (approval IS NOT NULL) FROM schedlock.jobs WHERE job_name = 'cleanup'}),
	"$su|true", 'the superuser\'s alter_job approved run_as');
($state, $out, $err) = as_role('alice', q{SELECT schedlock.alter_job('cleanup', command => 'SELECT 1')});
is($state, '42501', 'alice may not change the command of the approved job');
my $path_before = su_sql(q{SELECT search_path FROM schedlock.jobs WHERE job_name = 'cleanup'});
($state, $out, $err) = as_role('alice',
	q{SELECT schedlock.alter_job('cleanup', search_path => 'alice_s, pg_catalog, public')});
is($state, '42501', 'nor its search_path');
like($err, qr/search_path of a job that runs as another role/, 'the detail names search_path');
is(su_sql(q{SELECT search_path FROM schedlock.jobs WHERE job_name = 'cleanup'}), $path_before,
	'the search_path is unchanged');
($state) = as_role('alice', q{SELECT schedlock.alter_job('cleanup', timeout => '1 minute')});
is($state, '', 'alice may still change what does not change what the job means');
is(su_sql(q{SELECT approved_by::text FROM schedlock.jobs WHERE job_name = 'cleanup'}), $su,
	'and the approval stays');

# --- (b) the approval is checked where the job runs ---
as_safe('alice', q{SELECT schedlock.schedule_job('stamp', '@daily',
	$$INSERT INTO public.ran_as (who) VALUES (current_user)$$)});
su_sql(q{SELECT schedlock.alter_job('stamp', run_as => 'maint')});
my $run = as_safe('alice', q{SELECT schedlock.run_job('stamp')});
ok(wait_su(qq{SELECT status = 'succeeded' FROM schedlock.job_runs WHERE run_id = $run}),
	'the approved job runs');
is(su_sql(q{SELECT string_agg(who, ',') FROM public.ran_as}), 'maint', 'as maint');

# a change that did not go through the API
su_sql(q{UPDATE schedlock.jobs SET command = $$INSERT INTO public.ran_as (who) VALUES ('changed:' || current_user)$$
	WHERE job_name = 'stamp'});
$run = as_safe('alice', q{SELECT schedlock.run_job('stamp')});
ok(wait_su(qq{SELECT status = 'failed' FROM schedlock.job_runs WHERE run_id = $run}),
	'a job changed since its approval does not run');
is(su_sql(qq{SELECT sqlstate FROM schedlock.job_runs WHERE run_id = $run}), '42501',
	'its run failed with 42501');
is(su_sql(q{SELECT count(*) FROM public.ran_as WHERE who LIKE 'changed:%'}), '0',
	'the changed command did not run');
is(su_sql(q{SELECT enabled FROM schedlock.jobs WHERE job_name = 'stamp'}), 'f', 'the job is paused');
like(as_safe('alice', q{SELECT stopped_reason FROM schedlock.job_status WHERE job_name = 'stamp'}),
	qr/^unapproved: the job runs as role "maint", and it changed since a superuser approved that; a superuser approves it again/,
	'its stopped_reason says who must approve it again');
($state) = as_role('alice', q{SELECT schedlock.alter_job('stamp', enabled => true)});
$run = as_safe('alice', q{SELECT schedlock.run_job('stamp')});
ok(wait_su(qq{SELECT status = 'failed' FROM schedlock.job_runs WHERE run_id = $run}),
	'enabling it again is not approving it');
su_sql(q{SELECT schedlock.alter_job('stamp', run_as => 'maint', enabled => true)});
$run = as_safe('alice', q{SELECT schedlock.run_job('stamp')});
ok(wait_su(qq{SELECT status = 'succeeded' FROM schedlock.job_runs WHERE run_id = $run}),
	'a superuser\'s alter_job approves it again');
is(su_sql(q{SELECT count(*) FROM public.ran_as WHERE who = 'changed:maint'}), '1',
	'and then the command runs, as maint');

# the same for a scheduled job, whose runs are claimed ahead of their
# instant (the claim commits, then the run starts on the instant): the
# approval check pauses the job in the claim, and the run is recorded as
# failed with 42501, not skipped as a run of a job disabled meanwhile
as_safe('alice', q{SELECT schedlock.schedule_job('tick', '1 seconds',
	$$INSERT INTO public.ran_as (who) VALUES ('tick:' || current_user)$$)});
su_sql(q{SELECT schedlock.alter_job('tick', run_as => 'maint')});
ok(wait_su(q{SELECT count(*) >= 2 FROM public.ran_as WHERE who = 'tick:maint'}),
	'the approved every-second job runs as maint');
su_sql(q{UPDATE schedlock.jobs SET command = $$INSERT INTO public.ran_as (who) VALUES ('tick changed:' || current_user)$$
	WHERE job_name = 'tick'});
ok(wait_su(q{SELECT NOT enabled FROM schedlock.jobs WHERE job_name = 'tick'}),
	'changed, the every-second job is paused');
ok(wait_su(q{SELECT count(*) = 0 FROM schedlock.job_runs WHERE job_name = 'tick' AND finished_at IS NULL}),
	'and its last run has ended');
is( su_sql(q{SELECT string_agg(DISTINCT r.status || ' ' || coalesce(r.sqlstate, ''), ',')
			   FROM schedlock.job_runs r
			  WHERE r.job_name = 'tick' AND r.status <> 'succeeded'}),
	'failed 42501', 'its run was recorded failed with 42501, none skipped');
is(su_sql(q{SELECT count(*) FROM public.ran_as WHERE who LIKE 'tick changed:%'}), '0',
	'the changed command did not run');
as_safe('alice', q{SELECT schedlock.unschedule_job('tick')});

# an approver who is no longer a superuser
$node->safe_psql('app', q{SELECT schedlock.alter_job('stamp', run_as => 'maint')},
	extra_params => [ '-U', 'boss' ]);
is(su_sql(q{SELECT approved_by::text FROM schedlock.jobs WHERE job_name = 'stamp'}), 'boss',
	'boss approved the job');
su_sql(q{ALTER ROLE boss NOSUPERUSER});
$run = as_safe('alice', q{SELECT schedlock.run_job('stamp')});
ok(wait_su(qq{SELECT status = 'failed' FROM schedlock.job_runs WHERE run_id = $run}),
	'once boss is no superuser, the job does not run as maint');
like(su_sql(q{SELECT quarantine_reason FROM schedlock.jobs WHERE job_name = 'stamp'}),
	qr/role "boss", which approved that, is no longer a superuser/, 'and the reason names boss');

# --- (c) no role but the extension owner writes or locks the tables ---
as_safe('alice', q{SELECT schedlock.schedule_job('ping', '@daily', notify_channel => 'alice_ch',
	payload => '{"password": "s3cret"}')});
my $pending = as_safe('alice', q{SELECT schedlock.run_job('ping')});
ok(wait_su(qq{SELECT status = 'pending' FROM schedlock.job_runs WHERE run_id = $pending}),
	'alice\'s NOTIFY run is pending');

my @refused = (
	[ 'mallory', 'BEGIN; LOCK TABLE schedlock.job_runs IN ACCESS EXCLUSIVE MODE; COMMIT' ],
	[ 'mallory', 'BEGIN; LOCK TABLE schedlock.jobs IN ACCESS EXCLUSIVE MODE; COMMIT' ],
	[ 'mallory', 'DELETE FROM schedlock.job_runs' ],
	[ 'alice', 'BEGIN; LOCK TABLE schedlock.jobs IN ROW EXCLUSIVE MODE; COMMIT' ],
	[ 'alice', 'BEGIN; LOCK TABLE schedlock.job_runs IN SHARE MODE; COMMIT' ],
	[ 'alice', 'DELETE FROM schedlock.job_runs' ],
	[ 'etl', q{UPDATE schedlock.jobs SET run_as = 'postgres'::regrole, command = 'ALTER ROLE etl SUPERUSER'} ],
	[ 'etl', q{INSERT INTO schedlock.jobs (job_name, owner, schedule, command, run_as) VALUES ('x', 'etl', '@daily', 'ALTER ROLE etl SUPERUSER', 'postgres')} ],
	[ 'etl', 'DELETE FROM schedlock.job_runs' ],
	[ 'etl', q{UPDATE schedlock.lock_state SET token = 0} ],
	[ 'etl', 'SELECT job_id FROM schedlock.jobs FOR UPDATE' ],
	[ 'etl', 'SELECT run_id FROM schedlock.job_runs FOR KEY SHARE' ],
	[ 'etl', 'BEGIN; LOCK TABLE schedlock.jobs IN ACCESS EXCLUSIVE MODE; COMMIT' ],
	[ 'etl', 'BEGIN; LOCK TABLE schedlock.locks IN ACCESS EXCLUSIVE MODE; COMMIT' ],
	[ 'etl', q{MERGE INTO schedlock.jobs j USING (SELECT 1) s ON true WHEN MATCHED THEN UPDATE SET enabled = false} ],
	[ 'peeker', 'DELETE FROM schedlock.job_runs' ],
	[ 'peeker', 'BEGIN; LOCK TABLE schedlock.job_runs IN EXCLUSIVE MODE; COMMIT' ],
	[ 'dbowner', 'VACUUM FULL schedlock.job_runs' ],
	[ 'dbowner', 'DELETE FROM schedlock.job_runs' ],
);
my $census = q{SELECT (SELECT count(*) FROM schedlock.jobs) || '|' ||
	(SELECT count(*) FROM schedlock.job_runs) || '|' ||
	(SELECT string_agg(job_name || ':' || COALESCE(run_as::text, '-') || ':' || command, ',' ORDER BY job_id) FROM schedlock.jobs)};
my $before = su_sql($census);
for my $r (@refused)
{
	my ($role, $sql) = @$r;
	($state, $out, $err) = as_role($role, $sql);
	is($state, '42501', "$role: $sql is refused");
}
($state, $out, $err) = as_role('etl', "COPY schedlock.job_runs (job_id, owner, scheduled_for, status) FROM stdin;\n1\tetl\t2030-01-01\tqueued\n\\.\n");
is($state, '42501', 'etl: COPY schedlock.job_runs FROM stdin is refused');
is(su_sql($census), $before, 'nothing was written');
is(su_sql(qq{SELECT status FROM schedlock.job_runs WHERE run_id = $pending}), 'pending',
	'alice\'s pending NOTIFY run is still there');
is(su_sql(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'etl'}), 'f', 'etl is no superuser');
($state, $out) = as_role('etl', q{SELECT count(*) > 0 FROM schedlock.jobs});
is("$state|$out", '|t', 'etl may still read the jobs, as pg_read_all_data with BYPASSRLS reads every table');
($state, $out, $err) = as_role('mallory', q{BEGIN; LOCK TABLE schedlock.job_runs IN ACCESS SHARE MODE; COMMIT});
is($state, '', 'ACCESS SHARE, which no statement of schedlock waits for, stays every reader\'s');
unlike($err, qr/ERROR|WARNING/, 'without a word');
($state, $out, $err) = as_role('etl', q{DELETE FROM schedlock.job_runs});
like($err, qr/HINT:  Delete ended runs of your own jobs with schedlock\.delete_runs/,
	'a DELETE of the run history is pointed to delete_runs');

SKIP:
{
	skip 'pg_maintain is PostgreSQL 17\'s', 4 if $pgver < 170000;
	$node->safe_psql('postgres', q{CREATE ROLE janitor LOGIN IN ROLE pg_maintain});
	for my $sql ('BEGIN; LOCK TABLE schedlock.job_runs IN ACCESS EXCLUSIVE MODE; COMMIT',
		'REINDEX TABLE schedlock.jobs', 'CLUSTER schedlock.job_runs USING job_runs_pkey',
		'VACUUM FULL schedlock.jobs')
	{
		($state) = as_role('janitor', $sql);
		is($state, '42501', "a pg_maintain member: $sql is refused");
	}
}

# --- (d) what is left to every role does not stop the jobs ---
as_safe('alice', q{SELECT schedlock.schedule_job('tick', '1 second',
	$$INSERT INTO public.ran_as (who) VALUES ('tick')$$)});
ok(wait_su(q{SELECT count(*) >= 2 FROM public.ran_as WHERE who = 'tick'}), 'alice\'s every-second job runs');
my $held = $node->background_psql('app', on_error_stop => 1,
	extra_params => [ '-U', 'mallory' ]);
$held->query_safe(q{BEGIN; PREPARE d AS DELETE FROM schedlock.job_runs; PREPARE l AS SELECT 1 FROM schedlock.jobs});
is(su_sql(q{SELECT string_agg(l.mode, ',' ORDER BY l.mode) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	WHERE a.usename = 'mallory' AND l.relation IN ('schedlock.job_runs'::regclass, 'schedlock.jobs'::regclass)}),
	'AccessShareLock,RowExclusiveLock', 'mallory holds what any role can: ROW EXCLUSIVE and ACCESS SHARE');
my $n0 = su_sql(q{SELECT count(*) FROM public.ran_as WHERE who = 'tick'});
ok(wait_su(qq{SELECT count(*) >= $n0 + 3 FROM public.ran_as WHERE who = 'tick'}, 30),
	'the every-second job goes on running meanwhile');
$held->query_safe('ROLLBACK');
$held->quit;
as_safe('alice', q{SELECT schedlock.unschedule_job('tick')});

# --- (e) fencing tokens ---
my $token = as_safe('alice', q{SELECT schedlock_acquire('alice_lock', '1 hour')});
ok($token > 0, 'alice holds a lease');
($state, $out, $err) = as_role('peeker', q{SELECT token FROM schedlock.lock_state});
is($state, '42501', 'peeker (BYPASSRLS) cannot read the lock table');
is(as_safe('peeker', q{SELECT coalesce(token::text, 'hidden') FROM schedlock.locks WHERE lock_name = 'alice_lock'}),
	'hidden', 'nor the token in schedlock.locks');
is(as_safe('alice', q{SELECT token FROM schedlock.locks WHERE lock_name = 'alice_lock'}),
	$token, 'alice sees her own token');

# --- (e) payloads ---
($state, $out, $err) = as_role('peeker', q{SELECT payload FROM schedlock.jobs});
is($state, '42501', 'peeker (BYPASSRLS) cannot read the payloads in schedlock.jobs');
is(as_safe('peeker', q{SELECT count(*) FROM schedlock.job_payloads}), '0',
	'and schedlock.job_payloads shows it none of alice\'s');
is(as_safe('peeker', q{SELECT count(*) > 0 FROM schedlock.jobs WHERE owner = 'alice'::regrole}), 't',
	'it still reads the other columns of every role\'s jobs, as the docs say');
($state, $out, $err) = as_role('mallory', q{SELECT payload FROM schedlock.jobs});
is($state, '42501', 'nor can mallory');
($state, $out, $err) = as_role('bob', q{SELECT * FROM schedlock.job_payloads WHERE payload::text LIKE '%s3cret%'});
is("$state|$out", '|', 'bob sees no payload of alice\'s');
is(as_safe('alice', q{SELECT payload->>'password' FROM schedlock.job_payloads WHERE job_name = 'ping'}),
	's3cret', 'alice reads her own payload in schedlock.job_payloads');
is(as_safe('dbowner', q{SELECT count(*) FROM schedlock.jobs WHERE payload IS NOT NULL}), '0',
	'the database owner may read the table whole (pg_dump), its own rows only');
($state, $out) = as_role('etl', q{SELECT payload->>'password' FROM schedlock.jobs WHERE job_name = 'ping'});
is("$state|$out", '|s3cret', 'pg_read_all_data with BYPASSRLS reads every payload, as it is meant to (backups)');

# --- (f) owners delete their own ended runs ---
as_safe('bob', q{SELECT schedlock.schedule_job('bobs', '@daily', 'SELECT 1')});
my $bob_run = as_safe('bob', q{SELECT schedlock.run_job('bobs')});
ok(wait_su(qq{SELECT status = 'succeeded' FROM schedlock.job_runs WHERE run_id = $bob_run}), 'bob\'s job ran');
my $alice_ended = su_sql(q{SELECT count(*) FROM schedlock.job_runs
	WHERE owner = 'alice'::regrole AND status NOT IN ('queued', 'pending', 'running')});
cmp_ok($alice_ended, '>', 0, 'alice has ended runs');
is(as_safe('alice', q{SELECT schedlock.delete_runs(job_name => 'stamp', older_than => '1 hour')}), '0',
	'delete_runs keeps runs younger than older_than');
my $stamp_runs = su_sql(q{SELECT count(*) FROM schedlock.job_runs WHERE job_name = 'stamp'});
is(as_safe('alice', q{SELECT schedlock.delete_runs(job_name => 'stamp')}), $stamp_runs,
	'delete_runs(job_name) deletes that job\'s ended runs');
ok(wait_su(q{SELECT NOT EXISTS (SELECT 1 FROM schedlock.job_runs WHERE owner = 'alice'::regrole AND status = 'running')}),
	'no run of alice\'s is running');
as_safe('alice', q{SELECT schedlock.delete_runs()});
is(su_sql(q{SELECT string_agg(status, ',') FROM schedlock.job_runs WHERE owner = 'alice'::regrole}), 'pending',
	'delete_runs() leaves only alice\'s pending run');
is(su_sql(qq{SELECT count(*) FROM schedlock.job_runs WHERE run_id = $bob_run}), '1', 'and bob\'s run');
($state, $out, $err) = as_role('alice', q{SELECT schedlock.delete_runs(older_than => '-1 day')});
is($state, '22023', 'a negative older_than is refused');

$node->stop;
done_testing();
