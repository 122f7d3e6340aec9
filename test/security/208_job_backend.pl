# 208_job_backend.pl: a non-atomic job runs in a job backend connected as
# the job's role, like a login of that role.
#
#  (a) Statements that start and commit transactions themselves -- VACUUM
#      of two tables, CALL of a procedure that COMMITs, CREATE INDEX
#      CONCURRENTLY -- run and succeed, and their effects are there (in a
#      cassert build, starting those transactions under a switched-in user
#      was an assertion failure, xact.c "s->prevSecContext == 0").
#  (b) The job's role is both current_user and session_user, the job runs
#      in a job backend (application_name "schedlock job"), and it cannot
#      reach the superuser: SET ROLE and SET
#      SESSION AUTHORIZATION to the superuser fail, RESET ROLE, SET ROLE
#      NONE and RESET SESSION AUTHORIZATION leave it the job's role (a
#      function that makes alice superuser when a superuser calls it shows
#      who ran it).
#  (c) pg_cancel_backend of the pid shown for the run cancels the job
#      (57014); terminating the job's backend leaves the run to be closed as
#      lost, saying why; the role's next job runs in a new backend.
#  (d) A role's CONNECTION LIMIT does not count background workers, so a
#      job backend is not refused by it, even at CONNECTION LIMIT 0, and
#      does not take one of the role's connections.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;
use Time::HiRes qw(usleep);

my $node = job_node('job_backend');

# schedule a non-atomic job as alice and run it once; returns wait_run's
sub run_nonatomic
{
	my ($job, $command) = @_;
	as_role('alice', qq{
		SELECT schedlock.schedule_job('$job', '0 0 1 1 *', \$cmd\$$command\$cmd\$,
							atomic => false)});
	return wait_run(as_role('alice', "SELECT schedlock.run_job('$job')"));
}

my $super = admin('SELECT current_user');

admin(q{
	CREATE ROLE alice LOGIN;
	CREATE EXTENSION schedlock SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO alice;
	GRANT INSERT ON schedlock.jobs TO alice;
	GRANT CREATE ON SCHEMA public TO alice;
});
as_role('alice', q{
	CREATE TABLE public.t1 (x int);
	CREATE TABLE public.t2 (x int);
	INSERT INTO public.t1 SELECT g FROM generate_series(1, 1000) g;
	INSERT INTO public.t2 SELECT g FROM generate_series(1, 1000) g;
	CREATE TABLE public.steps (step int, xid xid8);
	CREATE PROCEDURE public.commit_twice() LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.steps VALUES (1, pg_current_xact_id());
		COMMIT;
		INSERT INTO public.steps VALUES (2, pg_current_xact_id());
		COMMIT;
	END $$;
	CREATE TABLE public.who (tag text, cur name, sess name, super boolean,
							 pid int, app text);
	CREATE FUNCTION public.record_who(tag text) RETURNS void LANGUAGE sql AS $$
		INSERT INTO public.who
		SELECT tag, current_user, session_user, r.rolsuper, pg_backend_pid(),
			   current_setting('application_name')
		  FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
	$$;
	CREATE FUNCTION public.escalate(tag text) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM public.record_who(tag);
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'ALTER ROLE alice SUPERUSER';
		END IF;
	END $$;
});

# --- (a) statements that commit transactions of their own -----------------
my $r = run_nonatomic('maintain', q{
	SELECT public.record_who('maintain');
	VACUUM public.t1, public.t2;
	CALL public.commit_twice();
	CREATE INDEX CONCURRENTLY t1_x ON public.t1 (x);
	VACUUM (ANALYZE) public.t1, public.t2;
});
my ($status, $state, $worker_pid) = split /\|/, $r;
is("$status|$state", 'succeeded|',
	'VACUUM of two tables, CALL with COMMIT and CREATE INDEX CONCURRENTLY succeed');
is(admin(q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.t1_x'::regclass}),
	't', 'the index built concurrently is valid');
is(admin('SELECT count(DISTINCT xid) FROM public.steps'), '2',
	'the procedure committed twice');
is(admin(q{SELECT count(*) FROM pg_stat_user_tables
			WHERE relname IN ('t1', 't2') AND last_vacuum IS NOT NULL}),
	'2', 'both tables were vacuumed');
is(admin(q{SELECT cur || '|' || sess || '|' || super || '|' || app
			 FROM public.who WHERE tag = 'maintain'}),
	'alice|alice|false|schedlock job',
	'the job runs as alice, who is also its session user, in "schedlock job"');
is(admin(q{SELECT pid FROM public.who WHERE tag = 'maintain'}), $worker_pid,
	'the job ran in the job backend its run names');

# --- (b) no way back to the superuser --------------------------------------
$r = run_nonatomic('set_role', qq{SET ROLE "$super"; SELECT public.escalate('set role')});
like($r, qr/^failed\|42501\|/, 'SET ROLE to the superuser fails (42501)');
$r = run_nonatomic('set_session',
	qq{SET SESSION AUTHORIZATION "$super"; SELECT public.escalate('set session')});
like($r, qr/^failed\|42501\|/, 'SET SESSION AUTHORIZATION to the superuser fails (42501)');
$r = run_nonatomic('reset_role', q{
	RESET ROLE; SELECT public.escalate('reset role');
	SET ROLE NONE; SELECT public.escalate('role none');
	RESET SESSION AUTHORIZATION; SELECT public.escalate('reset session');
	CALL public.commit_twice();
	RESET ROLE; SELECT public.escalate('after commit');
});
like($r, qr/^succeeded\|\|/, 'RESET ROLE, SET ROLE NONE, RESET SESSION AUTHORIZATION run');
is(admin(q{SELECT string_agg(tag || ':' || cur || '/' || sess || '/' || super, ',' ORDER BY tag)
			 FROM public.who WHERE tag <> 'maintain'}),
	'after commit:alice/alice/false,reset role:alice/alice/false,'
	  . 'reset session:alice/alice/false,role none:alice/alice/false',
	'after each of them the job is still alice, and not a superuser');
is(admin(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'}), 'f',
	'alice is still an ordinary role');

# --- (c) cancel and termination --------------------------------------------
as_role('alice', q{
	SELECT schedlock.schedule_job('sleeper', '0 0 1 1 *', 'SELECT pg_sleep(60)', atomic => false)});
my $run = as_role('alice', q{SELECT schedlock.run_job('sleeper')});
my $child = '';
for (1 .. 300)
{
	$child = admin(q{SELECT pid FROM pg_stat_activity
					  WHERE backend_type = 'schedlock job'
						AND query = '/* schedlock job: sleeper */ SELECT pg_sleep(60)'});
	last if $child ne '';
	usleep(100_000);
}
ok($child ne '', 'the sleeping job runs in a job backend');
my $wpid = admin("SELECT worker_pid FROM schedlock.job_runs WHERE run_id = $run");
admin("SELECT pg_cancel_backend($wpid)");
like(wait_run($run), qr/^failed\|57014\|/,
	'pg_cancel_backend of the run\'s worker cancels the job (57014)');

$run = as_role('alice', q{SELECT schedlock.run_job('sleeper')});
$child = '';
for (1 .. 300)
{
	$child = admin(q{SELECT pid FROM pg_stat_activity
					  WHERE backend_type = 'schedlock job'
						AND query = '/* schedlock job: sleeper */ SELECT pg_sleep(60)'});
	last if $child ne '';
	usleep(100_000);
}
admin("SELECT pg_terminate_backend($child)");
like(wait_run($run), qr/^lost\|\|/,
	'terminating the job\'s backend leaves the run lost');
like(admin("SELECT message FROM schedlock.job_runs WHERE run_id = $run"),
	qr/ended before the run finished/, 'the run says why');
like(run_nonatomic('after', q{SELECT public.record_who('after')}), qr/^succeeded\|\|\d+$/,
	'the role\'s next job runs');

# --- (d) CONNECTION LIMIT --------------------------------------------------
admin(q{
	CREATE ROLE carol LOGIN CONNECTION LIMIT 0;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO carol;
	GRANT INSERT ON schedlock.jobs TO carol;
});
$node->safe_psql('app', q{SET ROLE carol;
	SELECT schedlock.schedule_job('limited', '0 0 1 1 *', 'SELECT 1', atomic => false)});
$run = $node->safe_psql('app', q{SET ROLE carol; SELECT schedlock.run_job('limited')});
like(wait_run($run), qr/^succeeded\|\|/,
	'a job of a role at CONNECTION LIMIT 0 runs: background workers do not count');

$node->stop;
done_testing();
