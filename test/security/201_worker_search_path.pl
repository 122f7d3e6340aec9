# 201_worker_search_path.pl: a job backend runs its bookkeeping with the
# extension owner's rights; none of its statements may resolve to an object
# a tenant created, whatever search_path the database, the session or a job
# says.
#
# Database "shared" has a writable public schema (as in clusters upgraded
# from before PostgreSQL 15).  The tenant mallory creates there the
# look-alike operator public.*(float8, integer), which the worker's claim
# query would call for "timeout::float8 * 1000", and in her own schema m an
# operator m.=(bigint, bigint).  Her jobs set search_path to "m,
# pg_catalog" in every way a job can (SET, SET LOCAL, set_config() for the
# session and for the transaction, atomic and not), after which the
# worker's bookkeeping would compare bigints with her operator.  Each
# operator records who called it and, called by a superuser, makes mallory
# superuser.  A second tenant's later job must run with the search_path it
# was scheduled with.
#
# Database "owned" belongs to the ordinary role dbowner, who runs ALTER
# DATABASE owned SET search_path = public, pg_catalog and creates
# public.=(bigint, bigint): the path every session of that database gets.
# dbowner's own job, scheduled from such a session, runs with that path (and
# may call his operator, as himself).
#
# The test passes when neither tenant became superuser and no look-alike
# operator ever ran as a superuser.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = schedlock_node('worker_search_path',
	conf => [
		qq{
max_worker_processes = 32
} ]);

# the superuser's own statements: pinned path, whatever the tenants made
sub admin
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, "SET search_path = pg_catalog, public;\n$sql");
}

# a tenant's statements; the scheduler's functions are called with the
# tenant's path pinned too, so that only the worker is under test here
sub as_role
{
	my ($db, $role, $sql) = @_;
	return $node->safe_psql($db, $sql, extra_params => [ '-U', $role ]);
}

# schedule a job from a session whose search_path is pg_catalog (the job
# keeps it), or, with $path_of_session, the session's own path
sub schedule
{
	my ($db, $role, $job, $command, $atomic, $path_of_session) = @_;
	$atomic //= 'true';
	my $set = $path_of_session ? '' : 'SET search_path = pg_catalog;';
	as_role($db, $role, qq{
		$set
		SELECT schedlock.schedule_job('$job', '0 0 1 1 *', \$cmd\$$command\$cmd\$,
								   atomic => $atomic)});
}

# run_job as the owner, wait (at most 30 s) for the run to finish; returns
# "status|sqlstate", or "timeout"
sub run_and_wait
{
	my ($db, $role, $job) = @_;
	my $run = as_role($db, $role,
		"SET search_path = pg_catalog; SELECT schedlock.run_job('$job')");
	for (1 .. 300)
	{
		my $r = admin($db, qq{
			SELECT status || '|' || coalesce(sqlstate, '')
			  FROM schedlock.job_runs
			 WHERE run_id = $run AND finished_at IS NOT NULL});
		return $r if $r ne '';
		usleep(100_000);
	}
	return 'timeout';
}

# the recorder every look-alike operator calls: who ran it, whether a
# superuser, from which kind of backend (visible for its own sessions
# only); a superuser caller makes $tenant superuser
sub recorder_sql
{
	my ($tenant) = @_;
	return qq{
	CREATE TABLE public.seen (who name, super boolean, backend text, what text);
	GRANT INSERT ON public.seen TO PUBLIC;
	CREATE FUNCTION public.record_and_escalate(what text) RETURNS void
	LANGUAGE plpgsql SET search_path = pg_catalog AS \$\$
	BEGIN
		INSERT INTO public.seen
			SELECT current_user, r.rolsuper,
				   (SELECT a.backend_type FROM pg_stat_activity a
					 WHERE a.pid = pg_backend_pid()), what
			  FROM pg_roles r WHERE r.rolname = current_user;
		IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'ALTER ROLE $tenant SUPERUSER';
		END IF;
	END \$\$;
	GRANT EXECUTE ON FUNCTION public.record_and_escalate(text) TO PUBLIC;
	};
}

# an operator =(bigint, bigint) in schema $schema that records its callers
sub eq8_sql
{
	my ($schema) = @_;
	return qq{
	CREATE FUNCTION $schema.eq8(a bigint, b bigint) RETURNS boolean
	LANGUAGE plpgsql SET search_path = pg_catalog AS \$\$
	BEGIN
		PERFORM public.record_and_escalate('bigint = bigint');
		RETURN a OPERATOR(pg_catalog.=) b;
	END \$\$;
	CREATE OPERATOR $schema.= (LEFTARG = bigint, RIGHTARG = bigint,
							   FUNCTION = $schema.eq8);
	};
}

# --- database "shared": public writable, two tenants ---
$node->safe_psql('postgres', 'CREATE DATABASE shared');
admin('shared', q{
	CREATE ROLE mallory LOGIN;
	CREATE ROLE tenant2 LOGIN;
	GRANT CREATE ON SCHEMA public TO PUBLIC;
	CREATE EXTENSION schedlock SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO mallory, tenant2;
	GRANT INSERT ON schedlock.jobs TO mallory, tenant2;
	GRANT CREATE ON DATABASE shared TO mallory;
});
as_role('shared', 'mallory', recorder_sql('mallory') . q{
	CREATE FUNCTION public.mul(a float8, b integer) RETURNS float8
	LANGUAGE plpgsql CALLED ON NULL INPUT SET search_path = pg_catalog AS $$
	BEGIN
		PERFORM public.record_and_escalate('float8 * integer');
		RETURN a OPERATOR(pg_catalog.*) b;
	END $$;
	CREATE OPERATOR public.* (LEFTARG = float8, RIGHTARG = integer,
							  FUNCTION = public.mul);
	CREATE SCHEMA m;
	GRANT USAGE ON SCHEMA m TO PUBLIC;
} . eq8_sql('m'));
as_role('shared', 'tenant2', q{CREATE TABLE public.t2_path (path text)});

# --- database "owned": an ordinary owner sets the database's path ---
admin('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE DATABASE owned OWNER dbowner;
});
admin('owned', q{
	CREATE EXTENSION schedlock SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dbowner;
	GRANT INSERT ON schedlock.jobs TO dbowner;
});
as_role('owned', 'dbowner', recorder_sql('dbowner') . eq8_sql('public') . q{
	ALTER DATABASE owned SET search_path = public, pg_catalog;
	CREATE TABLE public.job_path (who name, path text, equal boolean);
});

# new sessions: the workers get the database's path and plan afresh
$node->restart;

# --- the worker's own statements under a writable public ---
schedule('shared', 'mallory', 'plain', q{SELECT 1});
schedule('shared', 'mallory', 'set_path_toplevel',
	q{SET search_path = m, pg_catalog; SELECT 1}, 'false');
schedule('shared', 'mallory', 'set_path', q{SET search_path = m, pg_catalog; SELECT 1});
schedule('shared', 'mallory', 'set_local_path',
	q{SET LOCAL search_path = m, pg_catalog; SELECT 1});
schedule('shared', 'mallory', 'set_config_local_path',
	q{SELECT set_config('search_path', 'm, pg_catalog', true)});
schedule('shared', 'mallory', 'set_config_path',
	q{SELECT set_config('search_path', 'm, pg_catalog', false)});
# tenant2's job runs in a backend of its own, after mallory's
for my $job ('plain', 'set_path_toplevel', 'set_path', 'set_local_path',
	'set_config_local_path', 'set_config_path')
{
	is(run_and_wait('shared', 'mallory', $job), 'succeeded|',
		"mallory's job $job succeeds");
}
schedule('shared', 'tenant2', 'path',
	q{INSERT INTO public.t2_path VALUES (current_setting('search_path'))});
is(run_and_wait('shared', 'tenant2', 'path'), 'succeeded|', 'tenant2\'s job succeeds');
is(admin('shared', q{SELECT string_agg(path, ',') FROM public.t2_path}),
	'pg_catalog', 'tenant2\'s job runs with the search_path it was scheduled with, not mallory\'s');

is(admin('shared', q{SELECT count(*) FROM public.seen WHERE super}), '0',
	'no look-alike operator ran as a superuser in "shared"');
is(admin('shared', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f',
	'mallory is still an ordinary role');

# --- the database owner's search_path ---
schedule('owned', 'dbowner', 'own_path', q{
	INSERT INTO public.job_path
		SELECT current_user, current_setting('search_path'), 7::bigint = 7::bigint},
	'true', 1);
is(run_and_wait('owned', 'dbowner', 'own_path'), 'succeeded|', 'dbowner\'s job succeeds');
is(admin('owned', q{SELECT who || '|' || path || '|' || equal FROM public.job_path}),
	'dbowner|public, pg_catalog|true',
	'the job runs with the search_path of the session that scheduled it (the database\'s)');
is(admin('owned', q{
	SELECT count(*) FROM public.seen
	 WHERE who = 'dbowner' AND NOT super AND what = 'bigint = bigint'}),
	'1', 'the job itself found dbowner\'s operator on that path, as dbowner');
is(admin('owned', q{SELECT count(*) FROM public.seen WHERE super}), '0',
	'no look-alike operator ran as a superuser in "owned"');
is(admin('owned', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbowner'}), 'f',
	'dbowner is still an ordinary role');

$node->stop;
done_testing();
