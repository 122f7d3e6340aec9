# 203_api_escalation.pl: the job API against hostile tenants (issue 10,
# defects 1, 5, 7 and 8).
#
# A database owned by a non-superuser (dbowner), two tenant LOGIN roles
# (alice, bob) and a role nobody granted anything (carol).
#  (a) Nothing until granted: PUBLIC may not call the job functions (42501)
#      until the DBA grants them; the lock functions and cron_next stay open.
#  (b) search_path: alice puts look-alike operators (=, <, >, <>, +, -, *)
#      and a look-alike type float8 in her schema m, first on her
#      search_path, each recording who called it and, when called with more
#      rights than alice has, making alice a superuser.  She then calls every
#      job function with valid arguments, so that each call commits.  After
#      each: alice is no superuser and no look-alike ran as anyone else.
#  (c) NOTIFY payloads: bob, listening on alice's channel, hears the run
#      but not its payload and cannot claim it; alice gets the payload from
#      schedlock_claim_run_payload.
#  (d) run_as: after a superuser sets run_as on alice's job, alice cannot
#      change what it runs (command, schedule, atomic, notify_channel:
#      42501, nothing changed); she may disable it, clear run_as by naming
#      herself, or replace the job with schedlock.schedule_job (which clears run_as
#      too).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = schedlock_node('api', conf => [ "max_worker_processes = 32" ]);
my $su = $node->safe_psql('postgres', 'SELECT current_user');

$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE carol LOGIN;
	CREATE DATABASE app OWNER dbowner;
});
$node->safe_psql('app', 'CREATE EXTENSION schedlock');

# run SQL in app as a role; returns (SQLSTATE or '', stdout, stderr)
sub as_role
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('app', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	my ($state) = ($err =~ /ERROR:\s+([0-9A-Z]{5}):/);
	return ($state // '', $out, $err);
}

sub su_sql
{
	return $node->safe_psql('app', $_[0]);
}

# --- (a) nothing until granted ---
my ($state, $out, $err);
($state, $out, $err) = as_role('carol', q{SELECT schedlock.schedule_job('c', '@daily', 'SELECT 1')});
is($state, '42501', 'a role nobody granted anything cannot call schedule_job');
like($err, qr/HINT:  A superuser grants them with one statement: GRANT INSERT ON schedlock.jobs TO carol;/,
	'the hint is the statement that grants the job functions');
for my $call (q{schedlock.schedule_once('c', now(), 'SELECT 1')}, q{schedlock.alter_job('c', enabled => false)},
	q{schedlock.unschedule_job('c')}, q{schedlock.unschedule_job(1)}, q{schedlock.run_job('c')})
{
	($state) = as_role('carol', "SELECT $call");
	is($state, '42501', "nor $call");
}
# the claim functions are every role's, and find only the runs of the
# caller's jobs: carol has none
for my $call (q{schedlock_claim_run(1)}, q{schedlock_finish_run(1, true)},
	q{schedlock_claim_run_payload(1)})
{
	($state) = as_role('carol', "SELECT $call");
	is($state, '42704', "$call finds no run of carol's");
}
($state, $out, $err) = as_role('carol', q{INSERT INTO schedlock.jobs (job_name, owner, schedule, command) VALUES ('x', 'carol', '@daily', 'SELECT 1')});
is($state, '42501', 'carol cannot write the jobs table');
($state, $out) = as_role('carol', q{SELECT schedlock_acquire('carol_lock') IS NOT NULL, cron_next('@daily', '2030-01-01') IS NOT NULL});
is($out, 't|t', 'the lock functions and cron_next stay open to every role');
is(su_sql(q{SELECT count(*) FROM schedlock.jobs}), '0', 'carol wrote no job');

# what the README tells a DBA to grant
su_sql(q{GRANT INSERT ON schedlock.jobs TO alice, bob, carol});
($state, $out) = as_role('carol', q{SELECT schedlock.schedule_job('c', '@daily', 'SELECT 1') > 0});
is($out, 't', 'once granted, carol may schedule a job');
($state, $out, $err) = as_role('carol', q{INSERT INTO schedlock.jobs (job_name, owner, schedule, command) VALUES ('x', 'carol', '@daily', 'SELECT 1')});
is($state, '42501', 'the grant writes no row of the jobs table directly (row-level security)');
as_role('carol', q{SELECT schedlock.unschedule_job('c')});
# nor for a role that bypasses row-level security: a job row written by
# hand could name any run_as
# (with a job id and this database's home id, which the columns' defaults
# could not read)
su_sql(qq{CREATE ROLE rlsfree LOGIN BYPASSRLS; GRANT INSERT ON schedlock.jobs TO rlsfree});
my $home = su_sql(q{SELECT schedlock.home_id()});
($state, $out, $err) = as_role('rlsfree', qq{INSERT INTO schedlock.jobs (job_id, job_name, owner, run_as, schedule, command, home_id) VALUES (999999, 'x', 'rlsfree', '$su', '\@daily', 'ALTER ROLE rlsfree SUPERUSER', '$home')});
is($state, '42501', 'a role with BYPASSRLS and the grant cannot write a job row directly');
like($err, qr/permission denied to write to schedlock\.jobs/, 'the guard says so');
is(su_sql(q{SELECT count(*) FROM schedlock.jobs}), '0', 'no job row was written');
su_sql(q{REVOKE INSERT ON schedlock.jobs FROM rlsfree; DROP ROLE rlsfree});

# --- (b) the caller's search_path must not reach the owner's SQL ---
# dbowner lets the tenants create schemas in its database
$node->safe_psql('app', 'GRANT CREATE ON DATABASE app TO alice, bob', extra_params => [ '-U', 'dbowner' ]);

# bob's jobs and runs are rows a look-alike operator would be called on
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('b_job', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('b_mail', '0 0 1 1 *', notify_channel => 'bob_due');
	SELECT schedlock.run_job('b_mail');
}, extra_params => [ '-U', 'bob' ]);

my @ops = (
	[ '=', 'bigint', 'bigint', 'boolean' ],
	[ '=', 'text', 'text', 'boolean' ],
	[ '=', 'oid', 'oid', 'boolean' ],
	[ '=', 'name', 'name', 'boolean' ],
	[ '<', 'integer', 'integer', 'boolean' ],
	[ '>', 'integer', 'integer', 'boolean' ],
	[ '<>', 'integer', 'integer', 'boolean' ],
	[ '<=', 'timestamptz', 'timestamptz', 'boolean' ],
	[ '+', 'integer', 'integer', 'integer' ],
	[ '-', 'integer', 'integer', 'integer' ],
	[ '+', 'timestamptz', 'interval', 'timestamptz' ],
	[ '*', 'interval', 'double precision', 'interval' ]);
my $hostile = q{
	CREATE SCHEMA m;
	GRANT USAGE ON SCHEMA m TO PUBLIC;
	CREATE TABLE m.hits (who name, what text);
	GRANT INSERT ON m.hits TO PUBLIC;
	-- records a call made with anybody's rights but alice's, and uses them
	CREATE FUNCTION m.trap(what text) RETURNS boolean LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp AS $$
	BEGIN
		IF current_user <> 'alice' THEN
			RAISE WARNING 'schedlock-trap % ran as %', what, current_user;
			INSERT INTO m.hits VALUES (current_user, what);
			IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
				EXECUTE 'ALTER ROLE alice SUPERUSER';
			END IF;
		ELSE
			RAISE NOTICE 'schedlock-lookalike % called by alice', what;
		END IF;
		RETURN true;
	END $$;
	CREATE DOMAIN m.float8 AS pg_catalog.float8 CHECK (m.trap('float8 cast'));
};
my $i = 0;
for my $op (@ops)
{
	my ($name, $l, $r, $res) = @$op;
	$i++;
	$hostile .= qq{
	CREATE FUNCTION m.op$i(a $l, b $r) RETURNS $res LANGUAGE plpgsql STRICT
	SET search_path = pg_catalog, pg_temp AS \$\$
	BEGIN
		PERFORM m.trap('$name($l, $r)');
		RETURN a $name b;
	END \$\$;
	CREATE OPERATOR m.$name (FUNCTION = m.op$i, LEFTARG = $l, RIGHTARG = $r);
};
}
$node->safe_psql('app', $hostile, extra_params => [ '-U', 'alice' ]);

# alice's own jobs, made with an ordinary search_path
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('a_job', '0 0 1 1 *', 'SELECT 1');
	SELECT schedlock.schedule_job('a_mail', '0 0 1 1 *', notify_channel => 'alice_due',
						payload => '{"smtp_password": "s3cr3t"}', timeout => '1 minute');
}, extra_params => [ '-U', 'alice' ]);

# the look-alikes do work when alice's own queries use them
($state, $out, $err) = as_role('alice', q{SET search_path = m, pg_catalog; SELECT 1::bigint = 1::bigint, 'a'::text = 'a'});
like($err, qr/schedlock-lookalike =\(bigint, bigint\) called by alice.*schedlock-lookalike =\(text, text\) called by alice/s,
	'the look-alike operators are what alice\'s own queries call');
is(su_sql(q{SELECT count(*) FROM m.hits}), '0', 'and record nothing for alice');

# wait until a worker has taken run $run; it must be notified (pending)
sub wait_pending
{
	my $run = shift;
	$node->poll_query_until('app', qq{SELECT status <> 'queued' FROM schedlock.job_runs WHERE run_id = $run})
	  or die "run $run was not taken";
	is(su_sql(qq{SELECT status FROM schedlock.job_runs WHERE run_id = $run}), 'pending',
		"run $run was notified");
}

# run $sql as alice with m first on her search_path; check afterwards
sub hostile_call
{
	my ($what, $sql) = @_;
	my ($st, $o, $e) = as_role('alice', "SET search_path = m, pg_catalog;\n$sql");
	is($st, '', "$what succeeds for alice with m first on her search_path");
	my @traps = ($e =~ /schedlock-trap (.*)/g);
	is(join('; ', @traps), '', "$what: no look-alike ran with anyone's rights but alice's");
	is(su_sql(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'}), 'f',
		"$what: alice is still no superuser");
	is(su_sql(q{SELECT count(*) FROM m.hits WHERE who <> 'alice'}), '0',
		"$what: the look-alikes recorded nothing");
	# independent checks: undo whatever one call did
	su_sql(q{ALTER ROLE alice NOSUPERUSER; TRUNCATE m.hits});
	return $o;
}

hostile_call('schedule_job (an upsert)',
	q{SELECT schedlock.schedule_job('a_job', '0 0 1 1 *', 'SELECT 2')});
hostile_call('alter_job', q{SELECT schedlock.alter_job('a_job', max_attempts => 2)});
my $run = hostile_call('run_job', q{SELECT schedlock.run_job('a_mail')});
like($run, qr/^\d+$/, 'run_job returned a run id');
wait_pending($run);
is(hostile_call('schedlock_claim_run', "SELECT public.schedlock_claim_run($run, 'a')"),
	't', 'and claimed it');
is(hostile_call('schedlock_finish_run (failure)', "SELECT public.schedlock_finish_run($run, false, 'no')"),
	't', 'and reported the failure');
$run = $node->safe_psql('app', q{SELECT schedlock.run_job('a_mail')}, extra_params => [ '-U', 'alice' ]);
wait_pending($run);
like(hostile_call('schedlock_claim_run_payload', "SELECT claimed, payload FROM public.schedlock_claim_run_payload($run, 'a')"),
	qr/^t\|\{"smtp_password": "s3cr3t"\}$/, 'and claimed it with its payload');
is(hostile_call('schedlock_finish_run (success)', "SELECT public.schedlock_finish_run($run, true)"),
	't', 'and reported the success');
is(hostile_call('unschedule_job', q{SELECT schedlock.unschedule_job('a_job')}),
	't', 'and removed the job');

# --- (c) NOTIFY payloads reach only the owner ---
my $bob = $node->background_psql('app', extra_params => [ '-U', 'bob' ]);
my $alice = $node->background_psql('app', extra_params => [ '-U', 'alice' ]);
$bob->query_safe('LISTEN alice_due');
$alice->query_safe('LISTEN alice_due');
$run = $node->safe_psql('app', q{
	SELECT schedlock.schedule_job('a_secret', '0 0 1 1 *', notify_channel => 'alice_due',
						payload => '{"smtp_password": "s3cr3t"}');
	SELECT schedlock.run_job('a_secret');
}, extra_params => [ '-U', 'alice' ]);
$run = (split /\n/, $run)[-1];
wait_pending($run);
my ($heard_bob, $heard_alice) = ('', '');
for (1 .. 50)
{
	$heard_bob .= $bob->query_safe('SELECT 1');
	$heard_alice .= $alice->query_safe('SELECT 1');
	last if $heard_bob =~ /"run_id" : $run\b/ && $heard_alice =~ /"run_id" : $run\b/;
	usleep(100_000);
}
like($heard_bob, qr/Asynchronous notification "alice_due" with payload "\{"job" : "a_secret", "job_id" : \d+, "run_id" : $run, "scheduled_for" : "[^"]+", "attempt" : 1\}"/,
	'bob, listening on alice\'s channel, hears the run: job, ids, slot, attempt');
unlike($heard_bob, qr/s3cr3t|smtp_password/, 'but not its payload');
unlike($heard_alice, qr/s3cr3t/, 'nobody hears the payload, alice neither');
($state, $out) = as_role('bob', "SELECT claimed, payload FROM schedlock_claim_run_payload($run, 'b')");
is($state, '42704', 'bob cannot claim alice\'s run (it does not exist for him)');
unlike($out, qr/s3cr3t/, 'and gets no payload');
($state, $out) = as_role('alice', "SELECT claimed, payload FROM schedlock_claim_run_payload($run, 'a')");
is($out, 't|{"smtp_password": "s3cr3t"}', 'alice claims the run and gets its payload');
($state, $out) = as_role('alice', "SELECT claimed, payload IS NULL FROM schedlock_claim_run_payload($run, 'a2')");
is($out, 'f|t', 'a second claim gets false and no payload');
is(su_sql(qq{SELECT status || ' ' || claimed_by FROM schedlock.job_runs WHERE run_id = $run}),
	'running a', 'the run is alice\'s');
$bob->quit;
$alice->quit;


# --- (d) run_as: what a superuser approved, the owner cannot change ---
$node->safe_psql('app', q{
	CREATE TABLE m.a_log (who name, at timestamptz DEFAULT clock_timestamp());
	GRANT INSERT ON m.a_log TO PUBLIC;
	SELECT schedlock.schedule_job('a_runas', '0 0 1 1 *', 'INSERT INTO m.a_log (who) VALUES (current_user)');
}, extra_params => [ '-U', 'alice' ]);
su_sql(qq{SELECT schedlock.alter_job('a_runas', run_as => '$su')});
is(su_sql(q{SELECT run_as::text FROM schedlock.jobs WHERE job_name = 'a_runas'}), $su,
	'a superuser made alice\'s job run as a superuser');
my $approved = su_sql(q{SELECT row(schedule, command, notify_channel, payload, atomic, run_as)::text FROM schedlock.jobs WHERE job_name = 'a_runas'});
for my $change (q{command => 'ALTER ROLE alice SUPERUSER'}, q{schedule => '@hourly'},
	q{atomic => false}, q{notify_channel => 'alice_due'})
{
	($state, $out, $err) = as_role('alice', "SELECT schedlock.alter_job('a_runas', $change)");
	is($state, '42501', "alice may not schedlock.alter_job($change) of a job that runs as another role");
}
like($err, qr/HINT:.*run_as/, 'the refusal says how to go on');
is(su_sql(q{SELECT row(schedule, command, notify_channel, payload, atomic, run_as)::text FROM schedlock.jobs WHERE job_name = 'a_runas'}),
	$approved, 'the refused calls changed nothing');
# what the superuser approved still runs, as approved
$run = $node->safe_psql('app', q{SELECT schedlock.run_job('a_runas')}, extra_params => [ '-U', 'alice' ]);
$node->poll_query_until('app', qq{SELECT status NOT IN ('queued', 'running') FROM schedlock.job_runs WHERE run_id = $run})
  or die 'a_runas did not run';
is(su_sql(q{SELECT string_agg(who::text, ',') FROM m.a_log}), $su, 'the approved command ran as run_as');
is(su_sql(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'}), 'f', 'alice is still no superuser');
# settings that do not change what runs stay the owner's
($state) = as_role('alice', q{SELECT schedlock.alter_job('a_runas', enabled => false, max_attempts => 3)});
is($state, '', 'alice may still disable the job and change its retries');
# clearing run_as: name the owner; then everything is the owner's again
($state) = as_role('alice', q{SELECT schedlock.alter_job('a_runas', run_as => 'alice')});
is($state, '', 'alice may clear run_as by naming herself');
is(su_sql(q{SELECT run_as IS NULL FROM schedlock.jobs WHERE job_name = 'a_runas'}), 't', 'run_as is cleared');
($state) = as_role('alice', q{SELECT schedlock.alter_job('a_runas', command => 'SELECT 3')});
is($state, '', 'and may then change the command (it runs as alice)');
($state) = as_role('alice', q{SELECT schedlock.alter_job('a_runas', run_as => 'bob')});
is($state, '42501', 'but may not name another role');
# schedule_job by the owner replaces the definition, run_as included
su_sql(q{SELECT schedlock.alter_job('a_runas', run_as => 'bob')});
($state) = as_role('alice', q{SELECT schedlock.schedule_job('a_runas', '0 0 1 1 *', 'SELECT 4')});
is($state, '', 'alice may replace her job with schedule_job');
is(su_sql(q{SELECT command || ' ' || coalesce(run_as::text, 'owner') FROM schedlock.jobs WHERE job_name = 'a_runas'}),
	'SELECT 4 owner', 'which clears run_as');

$node->stop;
done_testing();
