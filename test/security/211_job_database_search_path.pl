# 211_job_database_search_path.pl: a non-superuser database owner's
# ALTER DATABASE ... SET search_path does not change what an unqualified
# name means in another role's job.
#
# What it reproduces: a job runs with the search_path of the session it
# runs in, and that session takes the database's settings when it connects
# (the dispatch worker's session for an atomic job, a fresh job backend for
# a non-atomic one).  dbo, who owns database app but is no superuser,
# creates dbo_s.now() and puts dbo_s before pg_catalog in the database's
# search_path; the superuser's cleanup job "DELETE FROM public.audit_log
# WHERE ts < now() - interval '1 day'" then calls dbo's now(), as the
# superuser, and dbo's function makes dbo superuser.  The server restarts
# after the ALTER DATABASE (as servers do), so that the dispatch worker
# connects again and takes the new setting too.
#
# Intended behaviour: a job's search_path is fixed when it is scheduled
# (stored with the job, like CREATE FUNCTION ... SET search_path FROM
# CURRENT), so the database owner's later setting means nothing to it:
# dbo_s.now() never runs and dbo stays an ordinary role.  Two jobs of each
# kind (atomic, non-atomic): one scheduled before the ALTER DATABASE, one
# after it from a session that set the default search_path itself.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('database_search_path');
my $super = admin('SELECT current_user');

admin(q{
	CREATE ROLE dbo LOGIN;
	ALTER DATABASE app OWNER TO dbo;
	CREATE EXTENSION schedlock SCHEMA public;
	CREATE TABLE public.audit_log (ts timestamptz, what text);
	INSERT INTO public.audit_log VALUES (now() - interval '2 days', 'old'),
										(now(), 'new');
});

# the superuser's jobs, scheduled from a session with the default
# search_path; $when is "before" or "after" the ALTER DATABASE
my $cleanup = q{DELETE FROM public.audit_log WHERE ts < now() - interval '1 day'};
sub schedule_cleanup
{
	my ($when) = @_;
	$node->safe_psql('app', qq{
		SET search_path = "\$user", public;
		SELECT schedlock.schedule_job('cleanup_atomic_$when', '0 0 1 1 *', \$cmd\$$cleanup\$cmd\$);
		SELECT schedlock.schedule_job('cleanup_toplevel_$when', '0 0 1 1 *', \$cmd\$$cleanup\$cmd\$,
							atomic => false);
	});
}
schedule_cleanup('before');

# dbo's look-alike now() and the database-level search_path
$node->safe_psql('app', q{
	CREATE SCHEMA dbo_s;
	CREATE TABLE dbo_s.called (who name, super boolean, outcome text);
	GRANT INSERT ON dbo_s.called TO PUBLIC;
	GRANT USAGE ON SCHEMA dbo_s TO PUBLIC;
	CREATE FUNCTION dbo_s.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
	DECLARE
		outcome text;
	BEGIN
		BEGIN
			EXECUTE 'ALTER ROLE dbo SUPERUSER';
			outcome := 'ALTER ROLE succeeded';
		EXCEPTION WHEN others THEN
			outcome := 'ALTER ROLE failed ' || SQLSTATE;
		END;
		INSERT INTO dbo_s.called
			SELECT current_user, r.rolsuper, outcome
			  FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
		RETURN pg_catalog.now();
	END $$;
	ALTER DATABASE app SET search_path = dbo_s, pg_catalog, public;
}, extra_params => [ '-U', 'dbo' ]);

# the setting works as dbo meant for a new session that does not set its own
is($node->safe_psql('app', 'SHOW search_path'), 'dbo_s, pg_catalog, public',
	'a new session in app takes the database owner\'s search_path');

schedule_cleanup('after');
$node->restart;

for my $when ('before', 'after')
{
	for my $kind ('atomic', 'toplevel')
	{
		my $calls = admin(q{SELECT count(*) FROM dbo_s.called});
		my $r = run_and_wait($super, "cleanup_${kind}_$when");
		like($r, qr/^succeeded\|\|/,
			"the superuser's $kind cleanup job scheduled $when the ALTER DATABASE succeeds ($r)");
		is(admin(q{SELECT count(*) FROM dbo_s.called}) - $calls, 0,
			"the $kind job scheduled $when the ALTER DATABASE did not call dbo_s.now()");
	}
}
is(admin(q{SELECT string_agg(what, ',' ORDER BY what) FROM public.audit_log}), 'new',
	'the cleanup deleted the old row');
note('dbo_s.now() was called by: '
	  . admin(q{SELECT coalesce(string_agg(who || ':' || super || ':' || outcome, ','), '')
				  FROM dbo_s.called}));
is(admin(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbo'}), 'f',
	'dbo is still an ordinary role');

$node->stop;
done_testing();
