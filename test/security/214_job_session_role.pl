# 214_job_session_role.pl: every job, atomic or not, runs in a session whose
# session user, current user and pg_stat_activity user are all the job's
# role (its owner, or run_as when set).
#
# What it reproduces: an atomic job runs in the dispatch worker's session,
# which is connected as the bootstrap superuser; the worker only switches
# current_user to the job's role for the job.  So for atomic jobs
# session_user and pg_stat_activity.usename are the bootstrap superuser,
# whoever owns the job (a non-atomic job already runs in a backend
# connected as its role).  The roles: alice and bob (ordinary), sup (a
# superuser other than the bootstrap one, so that "runs as the superuser"
# cannot pass by accident), and jobs of sup with run_as => bob (atomic) and
# run_as => alice (non-atomic).
#
# Intended behaviour: every job runs in a backend connected as its role, so
# for every row the three names are the job's role.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('session_role');

admin(q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE sup LOGIN SUPERUSER;
	CREATE EXTENSION schedlock SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO alice, bob;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
	CREATE TABLE public.who (tag text, sess name, cur name, activity name);
	GRANT INSERT ON public.who TO PUBLIC;
});

my $record = q{INSERT INTO public.who
	SELECT '%s', session_user, current_user,
		   (SELECT usename FROM pg_stat_activity WHERE pid = pg_backend_pid())};

# [ tag, scheduling role, run_as, atomic, expected role ]
my @jobs = (
	[ 'alice_atomic',    'alice', undef,   'true',  'alice' ],
	[ 'alice_toplevel',  'alice', undef,   'false', 'alice' ],
	[ 'bob_atomic',      'bob',   undef,   'true',  'bob' ],
	[ 'bob_toplevel',    'bob',   undef,   'false', 'bob' ],
	[ 'sup_atomic',      'sup',   undef,   'true',  'sup' ],
	[ 'sup_toplevel',    'sup',   undef,   'false', 'sup' ],
	[ 'sup_as_bob',      'sup',   'bob',   'true',  'bob' ],
	[ 'sup_as_alice',    'sup',   'alice', 'false', 'alice' ],);

for my $j (@jobs)
{
	my ($tag, $role, $run_as, $atomic, $expected) = @$j;
	my $command = sprintf($record, $tag);
	my $as = defined $run_as ? ", run_as => '$run_as'" : '';
	as_role($role, qq{
		SELECT schedlock.schedule_job('$tag', '0 0 1 1 *', \$cmd\$$command\$cmd\$,
							atomic => $atomic$as)});
	my $r = run_and_wait($role, $tag);
	like($r, qr/^succeeded\|\|/, "job $tag succeeds ($r)");
	is(admin(qq{SELECT sess || ' ' || cur || ' ' || coalesce(activity, '-')
				  FROM public.who WHERE tag = '$tag'}),
		"$expected $expected $expected",
		"job $tag ran with session_user, current_user and pg_stat_activity user $expected");
}

$node->stop;
done_testing();
