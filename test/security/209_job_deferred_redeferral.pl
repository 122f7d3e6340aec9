# 209_job_deferred_redeferral.pl: a deferred trigger that a job's own
# deferred trigger queues again runs as the job's role, never as a
# superuser.
#
# What it reproduces: an atomic job runs inside the dispatch worker's claim
# transaction, whose session user is the bootstrap superuser.  Before the
# job's subtransaction ends, run_command.c fires the job's deferred triggers with
# SET CONSTRAINTS ALL IMMEDIATE, as the job's role.  But mallory's first
# deferred trigger runs SET CONSTRAINTS ALL DEFERRED and inserts into a
# second table with a deferred trigger: that new event stays queued and
# fires at the claim transaction's COMMIT, after the worker switched back
# to the superuser, so its function runs as the superuser and makes mallory
# one.
#
# Intended behaviour: a job runs in a backend connected as its role, so
# whatever it queues for its commit -- however often it re-defers it --
# runs as that role; mallory stays an ordinary role.  The test passes when
# mallory is not a superuser and the second trigger either ran as mallory
# (whose ALTER ROLE is refused) or did not run because the job's run
# failed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('deferred_redeferral');

admin(q{
	CREATE ROLE mallory LOGIN;
	CREATE EXTENSION schedlock SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO mallory;
	GRANT INSERT ON schedlock.jobs TO mallory;
	CREATE SCHEMA mallory AUTHORIZATION mallory;
});

# mallory's two tables: the first's deferred trigger defers again and queues
# the second's, whose function tries to make mallory superuser and records
# who ran it and whether that worked
as_role('mallory', q{
	CREATE TABLE mallory.seen (what text, who name, sess name, super boolean,
							   outcome text);
	CREATE TABLE mallory.first (x int);
	CREATE TABLE mallory.second (x int);
	CREATE FUNCTION mallory.first_fires() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO mallory.seen
			SELECT 'first', current_user, session_user, r.rolsuper, 'fired'
			  FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
		SET CONSTRAINTS ALL DEFERRED;
		INSERT INTO mallory.second VALUES (NEW.x);
		RETURN NULL;
	END $$;
	CREATE FUNCTION mallory.second_fires() RETURNS trigger LANGUAGE plpgsql AS $$
	DECLARE
		outcome text;
	BEGIN
		BEGIN
			EXECUTE 'ALTER ROLE mallory SUPERUSER';
			outcome := 'ALTER ROLE succeeded';
		EXCEPTION WHEN others THEN
			outcome := 'ALTER ROLE failed ' || SQLSTATE;
		END;
		INSERT INTO mallory.seen
			SELECT 'second', current_user, session_user, r.rolsuper, outcome
			  FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
		RETURN NULL;
	END $$;
	CREATE CONSTRAINT TRIGGER first_late AFTER INSERT ON mallory.first
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mallory.first_fires();
	CREATE CONSTRAINT TRIGGER second_late AFTER INSERT ON mallory.second
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mallory.second_fires();
});

# the trap works as intended in mallory's own session: the second trigger
# fires at commit, as mallory, and her ALTER ROLE is refused
as_role('mallory', q{INSERT INTO mallory.first VALUES (0)});
is(admin(q{SELECT string_agg(what || ':' || who || ':' || outcome, ',' ORDER BY what)
			 FROM mallory.seen}),
	'first:mallory:fired,second:mallory:ALTER ROLE failed 42501',
	'in mallory\'s own session the re-deferred trigger fires at commit, as mallory');
admin(q{TRUNCATE mallory.seen});

# mallory's atomic one-off job sets it off
as_role('mallory', q{
	SELECT schedlock.schedule_once('plant', now(), 'INSERT INTO mallory.first VALUES (1)')});
my $run = wait_job_run('plant');
my ($status) = split /\|/, $run;
isnt($run, 'timeout', "mallory's one-off job ran ($run)");

my $seen = admin(q{SELECT coalesce(string_agg(what || ':' || who || ':' || sess || ':'
											  || super || ':' || outcome, ',' ORDER BY what), '')
					 FROM mallory.seen});
note("recorded by mallory's triggers: $seen");
is(admin(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f',
	'mallory is still an ordinary role after her job');
if (defined $status && $status eq 'succeeded')
{
	is($seen,
		'first:mallory:mallory:false:fired,second:mallory:mallory:false:ALTER ROLE failed 42501',
		'the job succeeded, and both its triggers ran as mallory, in a session of mallory\'s');
}
else
{
	is(admin(q{SELECT count(*) FROM mallory.seen WHERE who <> 'mallory' OR super}), '0',
		'the job failed, and nothing its triggers recorded ran as another role');
}
is(admin(q{SELECT count(*) FROM mallory.seen WHERE outcome = 'ALTER ROLE succeeded'}), '0',
	'no trigger of mallory\'s job could run ALTER ROLE mallory SUPERUSER');

$node->stop;
done_testing();
