# 205_role_lifecycle.pl: a job ties its owner (and its run_as role) to the
# job the way an object ties its owner, in every database of the cluster,
# and a job whose role cannot log in does not run.
#  (a) DROP ROLE of a role that owns jobs, or that jobs run as, fails with
#      SQLSTATE 2BP01 and a detail naming how many jobs in which database,
#      also for jobs in another database than the one DROP ROLE runs in and
#      from a database without the extension; nothing is dropped.  Roles
#      without the right to drop roles learn nothing about jobs.
#  (b) DROP OWNED BY removes the role's jobs and their runs in the current
#      database only, and the jobs that run as the role; only a role with
#      the privileges of the dropped role may do it.
#  (c) REASSIGN OWNED BY hands the jobs (and run_as) over; the job then runs
#      as the new owner.  A job name both roles use is a clear error and
#      nothing changes; only a role with the privileges of both may do it.
#  (d) DROP EXTENSION and DROP DATABASE release the roles of their jobs.
#  (e) A job whose owner or run_as role cannot log in (NOLOGIN, VALID UNTIL
#      past, no CONNECT on the database, role gone) does not run: its run
#      is recorded failed with 28000, 42501 or 42704 and the reason, for
#      atomic, non-atomic and NOTIFY jobs, and other jobs keep running on
#      time.
#
# Two or more non-superuser roles, three databases with the extension, one
# owned by a non-superuser, and one without it.  Job functions may stop
# being executable by PUBLIC: every role is granted EXECUTE explicitly.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('roles', conf => [ "max_worker_processes = 32" ]);

my @roles = qw(appown admin alice bob carol dave erin gina hank ivan jack
  okay ghost lena mona nora pat quinn);
$node->safe_psql('postgres', join("\n",
	(map { "CREATE ROLE $_ LOGIN;" } @roles),
	'ALTER ROLE admin CREATEROLE;',
	'CREATE DATABASE app OWNER appown;',
	'CREATE DATABASE other;',
	'CREATE DATABASE third;',
	'CREATE DATABASE fourth;',
	'CREATE DATABASE fifth;'));

# error as "SQLSTATE|message|detail|hint", or "ok"
my $try_fn = q{
	CREATE FUNCTION public.try(q text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE s text; m text; d text; h text;
	BEGIN
		EXECUTE q;
		RETURN 'ok';
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT,
			d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
		RETURN s || '|' || m || '|' || d || '|' || h;
	END $$;
};
$node->safe_psql('postgres', $try_fn);
# each role is granted EXECUTE only where it schedules jobs, so that DROP
# OWNED in those databases leaves nothing else of it
my %users = (
	app    => [qw(admin alice bob carol dave erin gina hank ivan jack okay ghost)],
	other  => [qw(alice)],
	third  => [qw(lena)],
	fourth => [qw(mona)]);
for my $db (sort keys %users)
{
	$node->safe_psql($db, 'CREATE EXTENSION schedlock');
	$node->safe_psql($db, 'GRANT INSERT ON schedlock.jobs TO '
		  . join(', ', @{ $users{$db} }));
	$node->safe_psql($db, $try_fn);
}
$node->safe_psql('app', q{
	CREATE TABLE public.log (job text, who text, at timestamptz DEFAULT clock_timestamp());
	GRANT INSERT, SELECT ON public.log TO PUBLIC;
	GRANT CREATE ON SCHEMA public TO carol;
	CREATE FUNCTION public.jobs_of(r text) RETURNS bigint LANGUAGE sql
		AS $$SELECT count(*) FROM schedlock.jobs WHERE owner::text = r$$;
});

# run SQL in a database as a role
sub as
{
	my ($db, $role, $sql) = @_;
	return $node->safe_psql($db, "SET ROLE $role;\n$sql");
}

# --- (a) DROP ROLE of a job owner fails, in any database ---
as('app', 'alice', q{
	SELECT schedlock.schedule_job('a1', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('a2', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('tick', '1 second', $$INSERT INTO public.log VALUES ('tick', current_user)$$);
});
as('other', 'alice', q{SELECT schedlock.schedule_job('a_other', '0 0 1 1 *', 'SELECT 1')});
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('su_as_bob', '0 0 1 1 *', 'SELECT 1', run_as => 'bob')});
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM public.log WHERE job = 'tick'})
  or die 'alice\'s job did not run';

my $r = $node->safe_psql('app', q{SELECT try('DROP ROLE alice')});
my ($state, $msg, $detail, $hint) = split /\|/, $r, 4;
is($state, '2BP01', 'DROP ROLE of a job owner fails with 2BP01 (dependent objects still exist)');
is($msg, 'role "alice" cannot be dropped because some objects depend on it',
	'... with PostgreSQL\'s message');
like($detail, qr/^owner of 3 jobs in database app$/m,
	'... the detail names the 3 jobs in this database');
like($detail, qr/^owner of 1 job in database other$/m,
	'... and the job in the other database');
like($hint // '', qr/DROP OWNED/, '... and the hint names DROP OWNED');
like($hint // '', qr/REASSIGN OWNED/, '... and REASSIGN OWNED');

$r = $node->safe_psql('postgres', q{SELECT try('DROP ROLE alice')});
($state, $msg, $detail) = split /\|/, $r, 4;
is($state, '2BP01', 'DROP ROLE from a database without the extension fails too');
like($detail, qr/^owner of 3 jobs in database app$/m, '... naming the jobs in app');
like($detail, qr/^owner of 1 job in database other$/m, '... and in other');

# A non-superuser with CREATEROLE, dropping a role it may drop on every
# version: one it created itself (since PostgreSQL 16 CREATEROLE alone may
# drop only roles it has ADMIN OPTION on, which the creator gets).
$node->safe_psql('postgres', q{SET ROLE admin; CREATE ROLE rosa LOGIN});
for my $db (qw(app other))
{
	$node->safe_psql($db, 'GRANT INSERT ON schedlock.jobs TO rosa');
}
as('app', 'rosa', q{
	SELECT schedlock.schedule_job('r1', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('r2', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('r3', '0 0 1 1 *', 'SELECT 1');
});
as('other', 'rosa', q{SELECT schedlock.schedule_job('r_other', '0 0 1 1 *', 'SELECT 1')});
$r = $node->safe_psql('app', q{SET ROLE admin; SELECT try('DROP ROLE rosa')});
($state, undef, $detail) = split /\|/, $r, 4;
is("$state " . ($detail // ''), "2BP01 owner of 3 jobs in database app\nowner of 1 job in database other",
	'a non-superuser with CREATEROLE is refused the same way (databases in name order)')
  or diag($r);
$node->safe_psql($_, 'DROP OWNED BY rosa') for qw(app other);
is($node->safe_psql('app', q{SET ROLE admin; SELECT try('DROP ROLE rosa')}), 'ok',
	'... and may drop the role once its jobs are gone');

# a role the CREATEROLE role did not create: on 15 it may drop it and is
# refused for the jobs; since 16 PostgreSQL refuses it before the jobs count
$r = $node->safe_psql('app', q{SET ROLE admin; SELECT try('DROP ROLE alice')});
if ($node->pg_version >= 16)
{
	like($r, qr/^42501\|permission denied to drop role\|/,
		'... a role without ADMIN OPTION on the job owner gets PostgreSQL\'s permission error (16+)');
}
else
{
	($state, undef, $detail) = split /\|/, $r, 4;
	is("$state " . ($detail // ''),
		"2BP01 owner of 3 jobs in database app\nowner of 1 job in database other",
		'... and so is any role it drops (15: CREATEROLE may drop every non-superuser)')
	  or diag($r);
}

$r = $node->safe_psql('app', q{SET ROLE carol; SELECT try('DROP ROLE alice')});
like($r, qr/^42501\|permission denied to drop role\|/,
	'a role that may not drop roles gets PostgreSQL\'s permission error, not the job counts');

$r = $node->safe_psql('app', q{SELECT try('DROP ROLE bob')});
($state, undef, $detail) = split /\|/, $r, 4;
is("$state " . ($detail // ''), '2BP01 run_as of 1 job in database app',
	'DROP ROLE of a role a job runs as fails and says so');

is($node->safe_psql('app', q{SELECT count(*) FROM pg_roles WHERE rolname IN ('alice', 'bob')}),
	'2', 'nothing was dropped');
is($node->safe_psql('app', q{SELECT jobs_of('alice')}), '3', 'alice\'s jobs are all there');

# in one transaction with other statements: still refused, all rolled back
$r = $node->psql('app', q{BEGIN; DROP ROLE pat; DROP ROLE alice; COMMIT;});
is($node->safe_psql('app', q{SELECT count(*) FROM pg_roles WHERE rolname IN ('alice', 'pat')}),
	'2', 'a transaction that drops a job owner among other roles drops none');

# --- (b) DROP OWNED BY removes the jobs of this database only ---
my $tick_id = $node->safe_psql('app', q{SELECT job_id FROM schedlock.jobs WHERE job_name = 'tick'});
ok($node->safe_psql('app', "SELECT count(*) > 0 FROM schedlock.job_runs WHERE job_id = $tick_id") eq 't',
	'alice\'s tick job has run history');

$r = $node->safe_psql('app', q{SET ROLE carol; SELECT try('DROP OWNED BY alice')});
like($r, qr/^42501\|permission denied to drop objects\|/,
	'DROP OWNED BY another role without its privileges is refused');
is($node->safe_psql('app', q{SELECT jobs_of('alice')}), '3', '... and removes nothing');

$node->safe_psql('app', q{DROP OWNED BY alice});
is($node->safe_psql('app', q{SELECT jobs_of('alice')}), '0',
	'DROP OWNED BY alice removes her jobs in this database');
is($node->safe_psql('app', "SELECT count(*) FROM schedlock.job_runs WHERE job_id = $tick_id"),
	'0', '... and their run history');
is($node->safe_psql('other', q{SELECT count(*) FROM schedlock.jobs WHERE owner::text = 'alice'}),
	'1', '... but not her job in the other database');
$r = $node->safe_psql('app', q{SELECT try('DROP ROLE alice')});
($state, undef, $detail) = split /\|/, $r, 4;
is("$state " . ($detail // ''), '2BP01 owner of 1 job in database other',
	'DROP ROLE still fails, naming only the other database');
$node->safe_psql('other', q{DROP OWNED BY alice});
is($node->safe_psql('app', q{SELECT try('DROP ROLE alice')}), 'ok',
	'after DROP OWNED in both databases DROP ROLE succeeds');

# a role may DROP OWNED BY itself; the job that runs as it goes too
as('app', 'bob', q{SELECT schedlock.schedule_job('b1', '0 0 1 1 *', 'SELECT 1')});
as('app', 'bob', q{DROP OWNED BY bob});
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.jobs WHERE owner::text = 'bob' OR run_as::text = 'bob'}),
	'0', 'DROP OWNED BY bob removes his job and the job that runs as him');
# privileges granted to bob by the superuser only the superuser revokes
$node->safe_psql('app', q{DROP OWNED BY bob});
is($node->safe_psql('app', q{SELECT try('DROP ROLE bob')}), 'ok', 'and bob can be dropped');

# --- (c) REASSIGN OWNED BY hands the jobs over ---
as('app', 'carol', q{
	CREATE TABLE carol_t (x int);
	SELECT schedlock.schedule_job('clash', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('report', '1 second', $$INSERT INTO public.log VALUES ('report', current_user)$$);
});
as('app', 'dave', q{SELECT schedlock.schedule_job('clash', '0 0 1 1 *', 'SELECT 2')});
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('su_as_carol', '0 0 1 1 *', 'SELECT 1', run_as => 'carol')});
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM public.log WHERE job = 'report' AND who = 'carol'})
  or die 'carol\'s report did not run';

$r = $node->safe_psql('app', q{SET ROLE erin; SELECT try('REASSIGN OWNED BY carol TO dave')});
like($r, qr/^42501\|permission denied to reassign objects\|/,
	'REASSIGN OWNED without the privileges of both roles is refused');

$r = $node->safe_psql('app', q{SELECT try('REASSIGN OWNED BY carol TO dave')});
($state, $msg, $detail, $hint) = split /\|/, $r, 4;
is($state, '42710', 'REASSIGN OWNED onto a role with a job of the same name fails with 42710');
like($msg, qr/"dave".*"clash"|"clash".*"dave"/, '... naming the role and the job') or diag($r);
is($node->safe_psql('app', q{
	SELECT string_agg(job_name || ':' || owner::text, ',' ORDER BY job_name, owner::text)
	  FROM schedlock.jobs WHERE job_name IN ('clash', 'report')}),
	'clash:carol,clash:dave,report:carol', '... and no job changed hands');
is($node->safe_psql('app', q{SELECT tableowner FROM pg_tables WHERE tablename = 'carol_t'}),
	'carol', '... nor any other object');

as('app', 'dave', q{SELECT schedlock.unschedule_job('clash')});
$node->safe_psql('app', q{REASSIGN OWNED BY carol TO dave});
is($node->safe_psql('app', q{
	SELECT string_agg(job_name || ':' || owner::text, ',' ORDER BY job_name)
	  FROM schedlock.jobs WHERE job_name IN ('clash', 'report')}),
	'clash:dave,report:dave', 'REASSIGN OWNED BY carol TO dave hands her jobs to dave');
is($node->safe_psql('app', q{SELECT run_as::text FROM schedlock.jobs WHERE job_name = 'su_as_carol'}),
	'dave', '... and the job that ran as carol now runs as dave');
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'report' AND r.owner::text <> 'dave'}),
	'0', '... with the run history');
my $t0 = $node->safe_psql('app', 'SELECT clock_timestamp()');
$node->poll_query_until('app', qq{
	SELECT count(*) > 0 FROM public.log WHERE job = 'report' AND at > '$t0'})
  or die 'report did not run after REASSIGN OWNED';
is($node->safe_psql('app', qq{
	SELECT string_agg(DISTINCT who, ',') FROM public.log WHERE job = 'report' AND at > '$t0'}),
	'dave', 'the job now runs as dave');
is(as('app', 'dave', q{SELECT count(*) FROM schedlock.job_status WHERE job_name = 'report'}),
	'1', 'dave sees the job as his');
$node->safe_psql('app', q{DROP OWNED BY carol});
is($node->safe_psql('app', q{SELECT try('DROP ROLE carol')}), 'ok',
	'carol can be dropped after REASSIGN OWNED and DROP OWNED');
as('app', 'dave', q{SELECT schedlock.unschedule_job('report')});

# --- (d) DROP EXTENSION and DROP DATABASE release the roles ---
as('third', 'lena', q{SELECT schedlock.schedule_job('l1', '0 0 1 1 *', 'SELECT 1')});
as('fourth', 'mona', q{SELECT schedlock.schedule_job('m1', '0 0 1 1 *', 'SELECT 1')});
$r = $node->safe_psql('app', q{SELECT try('DROP ROLE lena')});
like($r, qr/^2BP01\|.*\|owner of 1 job in database third\|/, 'lena owns a job in third');
$node->safe_psql('third', q{DROP EXTENSION schedlock});
is($node->safe_psql('app', q{SELECT try('DROP ROLE lena')}), 'ok',
	'after DROP EXTENSION in third, lena can be dropped');
$node->safe_psql('postgres', q{DROP DATABASE fourth});
is($node->safe_psql('app', q{SELECT try('DROP ROLE mona')}), 'ok',
	'after DROP DATABASE fourth, mona can be dropped');

# jobs of release 1.0 get their records when the extension is updated (in
# the creating transaction, so that no worker ever sees release 1.0 here)
$node->safe_psql('fifth', q{
	BEGIN;
	CREATE EXTENSION schedlock VERSION '1.0';
	INSERT INTO schedlock.jobs (job_name, owner, schedule, command, enabled)
	VALUES ('n1', 'nora', '0 0 1 1 *', 'SELECT 1', false);
	ALTER EXTENSION schedlock UPDATE;
	COMMIT;
});
$r = $node->safe_psql('app', q{SELECT try('DROP ROLE nora')});
like($r, qr/^2BP01\|.*\|owner of 1 job in database fifth\|/,
	'a job of release 1.0 ties its owner once the extension is updated');

# --- (e) a job whose role cannot log in does not run ---
# every role but ivan keeps CONNECT on app
$node->safe_psql('app', q{
	REVOKE CONNECT ON DATABASE app FROM PUBLIC;
	GRANT CONNECT ON DATABASE app TO okay, gina, hank, jack, ghost;
});
as('app', 'okay', q{
	SELECT schedlock.schedule_job('beat', '1 second', $$INSERT INTO public.log VALUES ('beat', current_user)$$)});
as('app', 'gina', q{
	SELECT schedlock.schedule_job('g_sql', '1 second', $$INSERT INTO public.log VALUES ('g_sql', current_user)$$);
	SELECT schedlock.schedule_job('g_notify', '1 second', notify_channel => 'g_due', timeout => '1 second');
});
as('app', 'hank', q{
	SELECT schedlock.schedule_job('h_toplevel', '1 second', $$INSERT INTO public.log VALUES ('h_toplevel', current_user)$$,
						atomic => false)});
as('app', 'ivan', q{
	SELECT schedlock.schedule_job('i_sql', '1 second', $$INSERT INTO public.log VALUES ('i_sql', current_user)$$)});
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('su_as_jack', '1 second', $$INSERT INTO public.log VALUES ('su_as_jack', current_user)$$,
						run_as => 'jack')});
as('app', 'ghost', q{
	SELECT schedlock.schedule_job('ghost_sql', '1 second', $$INSERT INTO public.log (job) VALUES ('ghost_sql')$$)});
# a job whose owner no longer exists, as a restore with triggers disabled (or
# release 1.0) can leave behind: its owner is pointed at a role without jobs,
# which is then dropped
$node->safe_psql('app', q{
	CREATE ROLE vanished;
	ALTER TABLE schedlock.jobs DISABLE TRIGGER USER;
	UPDATE schedlock.jobs SET owner = 'vanished' WHERE job_name = 'ghost_sql';
	ALTER TABLE schedlock.jobs ENABLE TRIGGER USER;
	DROP ROLE vanished;
});
# with the trigger off, ghost's record stayed behind: sync_job_roles() mends it
my (undef, $synced) = $node->psql('app', 'SELECT schedlock.sync_job_roles()');
is($synced, '1', 'sync_job_roles() deletes the one record the disabled trigger left');
is($node->safe_psql('app', q{
	SELECT count(*) FROM pg_shdepend
	 WHERE refobjid = 'ghost'::regrole AND classid = 'pg_extension'::regclass}),
	'0', '... so that ghost owns no job any more');

my $listener = $node->background_psql('app');
$listener->query_safe('LISTEN g_due');
my $listening = $node->safe_psql('app', 'SELECT clock_timestamp()');

# the NOTIFY job must have been notified once, so that its failure below
# is the login check's
$node->poll_query_until('app', qq{
	SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'g_notify' AND r.status IN ('pending', 'timed_out')
	   AND r.started_at > '$listening'})
  or die 'g_notify was never notified';
my $heard_before = () = ($listener->query_safe('SELECT 1') =~ /"g_due"/g);
ok($heard_before > 0, 'gina\'s NOTIFY job notifies while she may log in');

$node->safe_psql('app', q{
	ALTER ROLE gina NOLOGIN;
	ALTER ROLE hank VALID UNTIL '2000-01-01';
	ALTER ROLE jack NOLOGIN;
});
# runs claimed before the change committed may start just after it
my $t1 = $node->safe_psql('app', q{SELECT clock_timestamp() + interval '1 second'});

my %expect = (
	g_sql      => [ '28000', qr/^job owner "gina" is not permitted to log in$/ ],
	g_notify   => [ '28000', qr/^job owner "gina" is not permitted to log in$/ ],
	h_toplevel => [ '28000', qr/^job owner "hank" has expired: its VALID UNTIL time 2000-01-01 .* has passed$/ ],
	i_sql      => [ '42501', qr/^job owner "ivan" has no CONNECT privilege on database "app"$/ ],
	su_as_jack => [ '28000', qr/^run_as role "jack" is not permitted to log in$/ ],
	ghost_sql  => [ '42704', qr/^job owner \(role with OID \d+\) does not exist$/ ],
);
for my $job (sort keys %expect)
{
	$node->poll_query_until('app', qq{
		SELECT count(*) >= 2 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.started_at > '$t1'
		   AND r.status NOT IN ('running', 'pending')})
	  or diag("$job has not run twice since the role change");
	# finished runs: a run that fails without running is recorded as
	# running when its claim commits before its instant, and closed on it
	my $runs = $node->safe_psql('app', qq{
		SELECT string_agg(DISTINCT r.status || ' ' || coalesce(r.sqlstate, '-') || ' ' || coalesce(r.message, '-'), E'\\n')
		  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.started_at > '$t1'
		   AND r.status NOT IN ('running', 'pending')});
	my ($st, $code, $text) = split / /, $runs, 3;
	is("$st $code", "failed $expect{$job}[0]",
		"$job: every run since is failed with SQLSTATE $expect{$job}[0]") or diag($runs);
	like($text // '', $expect{$job}[1], "$job: the message says why");
}
is($node->safe_psql('app', qq{
	SELECT count(*) FROM public.log WHERE job <> 'beat' AND at > '$t1'}),
	'0', 'none of their commands ran');
my $notified_after = $node->safe_psql('app', qq{
	SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'g_notify' AND r.started_at > '$t1' AND r.status <> 'failed'});
is($notified_after, '0', 'gina\'s NOTIFY job is no longer notified');
$listener->quit;

# the healthy job ran every second meanwhile, on time: looked at once it has
# run for 3 s since the change (the jobs above may have run twice sooner)
$node->poll_query_until('app', qq{
	SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'beat' AND r.status = 'succeeded'
	   AND r.scheduled_for >= '$t1'::timestamptz + interval '3 seconds'})
  or diag('beat has not run 3 s after the role change');
my ($beats, $lag, $secs) = split /\|/, $node->safe_psql('app', qq{
	SELECT count(*), max(extract(epoch FROM started_at - scheduled_for) * 1000)::int,
		   floor(extract(epoch FROM max(scheduled_for) - '$t1'::timestamptz))::int
	  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
	 WHERE j.job_name = 'beat' AND r.scheduled_for > '$t1' AND r.status = 'succeeded'});
ok($beats >= $secs && $secs >= 2, "okay's job kept running every second ($beats runs in $secs s)");
ok($lag < 500, "... on time (largest start lag $lag ms)");

# logging in again lets the job run again
$node->safe_psql('app', q{ALTER ROLE gina LOGIN});
my $t2 = $node->safe_psql('app', 'SELECT clock_timestamp()');
$node->poll_query_until('app', qq{
	SELECT count(*) > 0 FROM public.log WHERE job = 'g_sql' AND at > '$t2'})
  or diag('g_sql did not run again');
is($node->safe_psql('app', qq{SELECT max(who) FROM public.log WHERE job = 'g_sql' AND at > '$t2'}),
	'gina', 'with LOGIN again, gina\'s job runs again as gina');

# a job written while the trigger was off (a restore with triggers disabled,
# pg_upgrade) has no record until dispatch starts: then worker 0 records it
$node->safe_psql('app', q{
	ALTER TABLE schedlock.jobs DISABLE TRIGGER USER;
	INSERT INTO schedlock.jobs (job_name, owner, schedule, command, enabled)
	VALUES ('q1', 'quinn', '0 0 1 1 *', 'SELECT 1', false);
	ALTER TABLE schedlock.jobs ENABLE TRIGGER USER;
});
$node->restart;
$node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM pg_shdepend WHERE refobjid = 'quinn'::regrole})
  or diag('the job of quinn was not recorded after the restart');
$r = $node->safe_psql('postgres', q{SELECT try('DROP ROLE quinn')});
like($r, qr/^2BP01\|.*\|owner of 1 job in database app\|/,
	'a job written with the trigger off ties its owner once dispatch has started again');

$node->stop;
done_testing();
