# 217_trusted_search_path.pl: a job's stored search_path resolves names
# only in schemas that no role without the rights of the job's role can
# put objects in.
#
#  (a) A database owned by a non-superuser (dbowner).  A superuser
#      schedules the README's job, DELETE FROM sessions WHERE expires <
#      now(), with the usual "$user", public.  dbowner creates schema
#      "postgres" (named after the superuser, so "$user") with a sessions
#      table whose trigger would make dbowner a superuser, and a sessions
#      table in public (the database owner's).  The job runs without both
#      schemas (a WARNING names dbowner), fails to find sessions, and
#      dbowner stays an ordinary role; the superuser's own rows elsewhere
#      are untouched.
#  (b) In a database the superuser owns, mallory (CREATE on the database)
#      creates the schema named after the superuser: the job leaves it out
#      and resolves sessions in public, the superuser's.
#  (c) An ordinary role's job resolves names in its own schema ("$user")
#      and in a public the superuser owns, as before.
#  (d) public writable by PUBLIC: bob's job leaves it out (a WARNING says
#      every role can create objects there); a name it qualifies still
#      resolves, and length() is pg_catalog's: alice's length(text) planted
#      in public, ahead of pg_catalog in the path, never runs as bob.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('trusted_path',
	conf => [ "max_worker_processes = 16" ]);
my $su = $node->safe_psql('postgres', 'SELECT current_user');

$node->safe_psql('postgres', qq{
	CREATE ROLE dbowner LOGIN;
	CREATE ROLE mallory LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE DATABASE owned OWNER dbowner;
	CREATE DATABASE mine;
	CREATE DATABASE open;
	GRANT CREATE ON DATABASE mine TO mallory;
});

# run SQL in DB as ROLE (undef: the superuser)
sub sql
{
	my ($db, $role, $sql) = @_;
	$sql = "SET ROLE $role;\n$sql" if defined $role;
	return $node->safe_psql($db, $sql);
}

# the trigger a hostile owner of a schema puts on its sessions table
sub trap_sql
{
	my ($schema, $who) = @_;
	return qq{
	CREATE TABLE $schema.sessions (expires timestamptz);
	INSERT INTO $schema.sessions VALUES ('2000-01-01');
	CREATE FUNCTION $schema.grab() RETURNS trigger LANGUAGE plpgsql AS \$\$
	BEGIN
		EXECUTE 'ALTER ROLE $who SUPERUSER';
		RETURN OLD;
	END \$\$;
	CREATE TRIGGER grab BEFORE DELETE ON $schema.sessions
		FOR EACH ROW EXECUTE FUNCTION $schema.grab();
	};
}

# the first run of JOB in DB, once it ended: "status|sqlstate|message"
sub first_run
{
	my ($db, $job) = @_;
	my $q = qq{SELECT status || '|' || coalesce(sqlstate, '') || '|' || coalesce(message, '')
				 FROM schedlock.job_runs WHERE job_name = '$job' AND finished_at IS NOT NULL
				ORDER BY run_id LIMIT 1};
	wait_true($node, $db, "SELECT EXISTS ($q)", 60)
	  or return 'no run';
	return $node->safe_psql($db, $q);
}

sub run_now
{
	my ($db, $role, $job) = @_;
	sql($db, $role, qq{SELECT schedlock.run_job('$job')});
}

# --- (a) the database owner's schemas, for a superuser's job -----------
sql('owned', undef, q{CREATE EXTENSION schedlock});
sql('owned', 'dbowner', q{CREATE SCHEMA } . $node->safe_psql('postgres', "SELECT quote_ident('$su')")
	  . ';' . trap_sql(qq{"$su"}, 'dbowner') . trap_sql('public', 'dbowner'));
sql('owned', undef, q{
	SET search_path = "$user", public;
	SELECT schedlock.schedule_job('cleanup', '@daily',
		'DELETE FROM sessions WHERE expires < now()');
});
is(sql('owned', undef, q{SELECT search_path FROM schedlock.jobs WHERE job_name = 'cleanup'}),
	'"$user", public', 'the job stored the usual search_path');
my $log_at = -s $node->logfile;
run_now('owned', undef, 'cleanup');
my ($status, $state) = split /\|/, first_run('owned', 'cleanup');
is($status, 'failed', "the superuser's job did not find a sessions table");
is($state, '42P01', '... relation does not exist');
is(sql('owned', undef, q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbowner'}),
	'f', 'dbowner is no superuser');
is(sql('owned', undef, qq{SELECT (SELECT count(*) FROM "$su".sessions) + (SELECT count(*) FROM public.sessions)}),
	'2', 'neither trap table lost its row');
ok(wait_true($node, 'postgres', q{SELECT true}, 1), 'the server is up');
my $log = slurp_file($node->logfile, $log_at);
like($log, qr/job "cleanup" runs without schema "?\Q$su\E"?, public of its search_path/,
	'a WARNING named the schemas left out');
like($log, qr/Role "dbowner" can create objects there and lacks the privileges of role "\Q$su\E"/,
	'... and the role that could change them');

# --- (b) a schema named after the superuser, created by another role ----
sql('mine', undef, q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.sessions (expires timestamptz);
	INSERT INTO public.sessions VALUES ('2000-01-01'), ('2999-01-01');
});
sql('mine', 'mallory', qq{CREATE SCHEMA "$su";} . trap_sql(qq{"$su"}, 'mallory'));
sql('mine', undef, q{
	SET search_path = "$user", public;
	SELECT schedlock.schedule_job('cleanup', '@daily',
		'DELETE FROM sessions WHERE expires < now()');
});
run_now('mine', undef, 'cleanup');
($status) = split /\|/, first_run('mine', 'cleanup');
is($status, 'succeeded', "the superuser's job ran");
is(sql('mine', undef, q{SELECT count(*) FROM public.sessions}), '1',
	'it deleted from public.sessions, the superuser\'s');
is(sql('mine', undef, qq{SELECT count(*) FROM "$su".sessions}), '1',
	"not from mallory's table");
is(sql('mine', undef, q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', 'mallory is no superuser');

# --- (c) an ordinary role's own schema, and a public the superuser owns --
sql('mine', undef, q{
	GRANT INSERT ON schedlock.jobs TO alice;
	CREATE SCHEMA alice AUTHORIZATION alice;
	GRANT USAGE ON SCHEMA public TO alice;
	CREATE TABLE public.shared_hits (who text);
	GRANT INSERT ON public.shared_hits TO alice;
});
sql('mine', 'alice', q{
	CREATE TABLE alice.hits (at timestamptz);
	SET search_path = "$user", public;
	SELECT schedlock.schedule_job('own', '@daily',
		$$INSERT INTO hits VALUES (now()); INSERT INTO shared_hits VALUES ('alice')$$);
});
run_now('mine', 'alice', 'own');
($status) = split /\|/, first_run('mine', 'own');
is($status, 'succeeded', "alice's job resolved hits and shared_hits");
is(sql('mine', undef, q{SELECT (SELECT count(*) FROM alice.hits) || '/' || (SELECT count(*) FROM public.shared_hits)}),
	'1/1', 'in her schema and in public');

# --- (d) a public every role may create objects in ----------------------
sql('open', undef, q{
	CREATE EXTENSION schedlock;
	GRANT CREATE ON SCHEMA public TO PUBLIC;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
	CREATE SCHEMA b AUTHORIZATION bob;
});
sql('open', 'bob', q{
	CREATE TABLE b.t (x int);
	CREATE TABLE public.bt (x int);
	SET search_path = public, pg_catalog;
	SELECT schedlock.schedule_job('plain', '@daily', 'INSERT INTO bt VALUES (1)');
	SELECT schedlock.schedule_job('qualified', '@daily',
		'INSERT INTO b.t SELECT length(''x'')');
});
sql('open', 'alice', q{
	CREATE TABLE public.planted (who name);
	GRANT INSERT ON public.planted TO PUBLIC;
	CREATE FUNCTION public.length(text) RETURNS int LANGUAGE sql
		AS $$INSERT INTO public.planted VALUES (current_user) RETURNING 0$$;
	GRANT EXECUTE ON FUNCTION public.length(text) TO PUBLIC;
});
$log_at = -s $node->logfile;
run_now('open', 'bob', 'plain');
run_now('open', 'bob', 'qualified');
($status, $state) = split /\|/, first_run('open', 'plain');
is("$status $state", 'failed 42P01', "bob's unqualified name is not looked up in a public anyone can write");
($status) = split /\|/, first_run('open', 'qualified');
is($status, 'succeeded', 'a qualified name still resolves');
is(sql('open', undef, q{SELECT count(*) FROM public.planted}), '0',
	"alice's function in public never ran as bob");
$log = slurp_file($node->logfile, $log_at);
like($log, qr/Every role can create objects there \(CREATE is granted to PUBLIC\); the job runs as role "bob"/,
	'a WARNING says every role can create objects there');

$node->stop;
done_testing();
