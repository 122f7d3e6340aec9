# 207_import_pg_cron.pl: schedlock_import_pg_cron() against hostile tenants
# (issue 13).  pg_cron (Debian's postgresql-NN-cron) is preloaded beside
# schedlock; its jobs live in database "app", owned by a non-superuser.
#  (a) search_path: alice puts look-alike operators (= on bigint, text,
#      name, oid, regrole; <> on text) in her schema m, each recording who
#      called it and, when called with more rights than alice has, making
#      alice a superuser.  A superuser with m first on its search_path
#      imports (dry run, then for real) the jobs of alice and bob; alice,
#      granted the import, imports her own with m first on her path.
#      Afterwards alice is no superuser and no look-alike ran as anyone but
#      alice.  No job command ran during the import.
#  (b) ownership: the jobs a superuser imports belong to their pg_cron
#      users and run as them (run_as NULL), not as the importer.
#  (c) a tenant sees and imports nothing of another tenant: bob's jobs are
#      neither listed nor created when alice imports, even by jobid.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('import_sec',
	preload => [ 'schedlock', 'pg_cron' ],
	conf => [ "cron.database_name = 'app'", "max_worker_processes = 32" ]);
$node->safe_psql('postgres', q{
	CREATE ROLE dbowner LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE DATABASE app OWNER dbowner;
});
$node->safe_psql('app', 'CREATE EXTENSION pg_cron');
$node->safe_psql('app', 'CREATE EXTENSION schedlock');
$node->safe_psql('app', q{
	GRANT USAGE ON SCHEMA cron TO alice, bob;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
	GRANT EXECUTE ON FUNCTION schedlock_import_pg_cron(boolean, boolean, bigint[]) TO alice, bob;
});
$node->safe_psql('app', 'GRANT CREATE ON DATABASE app TO alice', extra_params => [ '-U', 'dbowner' ]);

my $hostile = q{
	CREATE SCHEMA m;
	GRANT USAGE ON SCHEMA m TO PUBLIC;
	CREATE TABLE m.hits (who name, what text);
	GRANT INSERT ON m.hits TO PUBLIC;
	CREATE FUNCTION m.trap(what text) RETURNS boolean LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp AS $$
	BEGIN
		IF current_user <> 'alice' THEN
			RAISE WARNING 'schedlock-trap % ran as %', what, current_user;
			INSERT INTO m.hits VALUES (current_user, what);
			IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
				EXECUTE 'ALTER ROLE alice SUPERUSER';
			END IF;
		END IF;
		RETURN true;
	END $$;
};
my $i = 0;
for my $op ([ '=', 'bigint' ], [ '=', 'text' ], [ '=', 'name' ], [ '=', 'oid' ],
	[ '=', 'regrole' ], [ '<>', 'text' ])
{
	my ($name, $t) = @$op;
	$i++;
	$hostile .= qq{
	CREATE FUNCTION m.op$i(a $t, b $t) RETURNS boolean LANGUAGE plpgsql STRICT
	SET search_path = pg_catalog, pg_temp AS \$\$
	BEGIN
		PERFORM m.trap('$name($t)');
		RETURN a::pg_catalog.text $name b::pg_catalog.text;
	END \$\$;
	CREATE OPERATOR m.$name (FUNCTION = m.op$i, LEFTARG = $t, RIGHTARG = $t);
};
}
$node->safe_psql('app', $hostile, extra_params => [ '-U', 'alice' ]);

# the tenants' pg_cron jobs; the commands would leave a trace if they ran
my $a1 = $node->safe_psql('app', q{SELECT cron.schedule('a_report', '0 0 1 1 *', $$SELECT m.trap('command of a_report')$$)},
	extra_params => [ '-U', 'alice' ]);
my $a2 = $node->safe_psql('app', q{SELECT cron.schedule('a_vacuum', '0 0 1 1 *', 'VACUUM m.hits')},
	extra_params => [ '-U', 'alice' ]);
my $b1 = $node->safe_psql('app', q{SELECT cron.schedule('b_job', '0 0 1 1 *', $$INSERT INTO m.hits VALUES ('bob', 'command of b_job')$$)},
	extra_params => [ '-U', 'bob' ]);

sub hits
{
	return $node->safe_psql('app', 'SELECT count(*) FROM m.hits');
}
sub alice_super
{
	return $node->safe_psql('app', "SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'");
}

# --- (a) a superuser imports with alice's schema first on its path ---
my ($rc, $out, $err) = $node->psql('app', q{
	SET search_path = m, pg_catalog, public;
	SELECT count(*) FROM schedlock_import_pg_cron();
	SELECT count(*) FROM schedlock_import_pg_cron(jobids => ARRAY[1, 2, 3]::bigint[]);
});
is($rc, 0, 'superuser dry run with m first on search_path works');
is(hits(), '0', 'dry run: no look-alike ran with the superuser\'s rights');
is(alice_super(), 'f', 'dry run: alice is no superuser');

($rc, $out, $err) = $node->psql('app', q{
	SET search_path = m, pg_catalog, public;
	SELECT string_agg(action, ',' ORDER BY cron_jobid) FROM schedlock_import_pg_cron(dry_run => false, deactivate => true, jobids => ARRAY[}
	  . "$a2, $b1" . q{]::bigint[]);
});
is($out, 'created,created', 'superuser import with m first on search_path works');
is(hits(), '0', 'import: no look-alike ran with raised rights, no command ran');
is(alice_super(), 'f', 'import: alice is no superuser');

# --- (b) the imported jobs belong to their pg_cron users ---
is($node->safe_psql('app', q{
	SELECT string_agg(job_name || ':' || owner || ':' || coalesce(run_as::text, '-'), ',' ORDER BY job_name)
	  FROM schedlock.jobs}),
	'a_vacuum:alice:-,b_job:bob:-', 'imported jobs are owned by and run as their pg_cron users');

# --- (a) and (c): alice imports with m first on her own path ---
($rc, $out, $err) = $node->psql('app', q{
	SET search_path = m, pg_catalog, public;
	SELECT string_agg(cron_jobid || ':' || action, ',' ORDER BY cron_jobid) FROM schedlock_import_pg_cron(dry_run => false);
}, extra_params => [ '-U', 'alice' ]);
is($out, "$a1:created,$a2:exists", 'alice imports her own jobs, and sees no other');
($rc, $out, $err) = $node->psql('app', qq{
	SELECT count(*) FROM schedlock_import_pg_cron(dry_run => false, jobids => ARRAY[$b1]);
}, extra_params => [ '-U', 'alice' ]);
is($out, '0', 'alice cannot reach bob\'s job by its id');
is(hits(), '0', 'alice\'s import ran no look-alike with other rights and no command');
is(alice_super(), 'f', 'alice is still no superuser');
is($node->safe_psql('app', 'SELECT count(*) FROM schedlock.jobs'), '3', 'three jobs in all');

$node->stop;
done_testing();
