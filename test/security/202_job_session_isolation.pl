# 202_job_session_isolation.pl: jobs of different roles run in backends of
# their own roles, and nothing one role's job leaves behind reaches another
# role's job or the bookkeeping.
#
# Each role's jobs run in a job backend connected as that role (the first
# probe shows which pid bob's backend has).  alice's jobs leave every
# kind of session state behind them -- a temporary table "accounts" with a
# trigger, a session advisory lock, a prepared statement, a WITH HOLD
# cursor, sequence currval state, and settings changed with SET,
# set_config() and SET SESSION CHARACTERISTICS -- once as an atomic job and
# once as a non-atomic one.  After each, bob's job probes the session and
# must see exactly what a fresh session showed it, and his INSERT INTO
# accounts must not reach alice's table or fire her trigger.
#
# Then what a job queues for its commit must run as the job's role, not as
# a superuser: a deferred constraint trigger and a WITH HOLD
# cursor, whose functions make alice superuser when the superuser runs
# them.  carol, who lacks TEMPORARY on the database, must not get temporary
# tables through the namespace an earlier job created.  And settings that
# would break the backend's bookkeeping must not: a plain SET of
# default_transaction_read_only (atomic), SET SESSION CHARACTERISTICS
# (non-atomic), and transaction_read_only set with set_config(..., true).
# (LISTEN needs no test: PostgreSQL refuses it in a background worker.)
#
# status_of(RESULT): "status|sqlstate" of run_and_wait's result
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('session_isolation');

sub schedule
{
	my ($role, $job, $command, $atomic) = @_;
	$atomic //= 'true';
	as_role($role, qq{
		SELECT schedlock.schedule_job('$job', '0 0 1 1 *', \$cmd\$$command\$cmd\$,
							atomic => $atomic)});
}

admin(q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE carol LOGIN;
	REVOKE TEMPORARY ON DATABASE app FROM PUBLIC;
	GRANT TEMPORARY ON DATABASE app TO alice, bob;
	CREATE EXTENSION schedlock SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO alice, bob, carol;
	GRANT INSERT ON schedlock.jobs TO alice, bob, carol;
	GRANT CREATE ON SCHEMA public TO alice, bob, carol;
});

# alice: her trap for the temporary table, a loot table anyone may write,
# a sequence bob may read, and functions that make her superuser when the
# superuser runs them
as_role('alice', q{
	CREATE TABLE public.loot (who name, super boolean, what text);
	GRANT INSERT ON public.loot TO PUBLIC;
	CREATE FUNCTION public.alice_trap() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.loot
			SELECT current_user, rolsuper, 'accounts trigger saw ' || NEW.who
			  FROM pg_catalog.pg_roles WHERE rolname = current_user;
		RETURN NEW;
	END $$;
	CREATE FUNCTION public.alice_escalate(what text) RETURNS integer
	LANGUAGE plpgsql SET search_path = pg_catalog AS $$
	BEGIN
		INSERT INTO public.loot
			SELECT current_user, rolsuper, what FROM pg_roles WHERE rolname = current_user;
		IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'ALTER ROLE alice SUPERUSER';
		END IF;
		RETURN 1;
	END $$;
	CREATE FUNCTION public.alice_late() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM public.alice_escalate('deferred trigger');
		RETURN NULL;
	END $$;
	CREATE TABLE public.alice_t (x int);
	CREATE CONSTRAINT TRIGGER late AFTER INSERT ON public.alice_t
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.alice_late();
	CREATE SEQUENCE public.alice_seq;
	GRANT SELECT, USAGE ON SEQUENCE public.alice_seq TO bob;
});

# bob: a probe of the session state a job starts with
as_role('bob', q{
	CREATE TABLE public.probe (tag text, item text, value text);
	CREATE FUNCTION public.bob_probe(tag text) RETURNS void LANGUAGE plpgsql AS $f$
	DECLARE
		r text;
	BEGIN
		INSERT INTO public.probe VALUES (tag, 'settings', pg_catalog.concat_ws(' | ',
			pg_catalog.current_setting('search_path'),
			pg_catalog.current_setting('work_mem'),
			COALESCE(NULLIF(pg_catalog.current_setting('app.secret', true), ''), '-'),
			pg_catalog.current_setting('default_transaction_isolation'),
			pg_catalog.current_setting('transaction_isolation'),
			pg_catalog.current_setting('default_transaction_read_only'),
			pg_catalog.current_setting('statement_timeout'),
			pg_catalog.current_setting('DateStyle')));
		INSERT INTO public.probe SELECT tag, 'prepared statements', count(*)::text
			FROM pg_catalog.pg_prepared_statements;
		INSERT INTO public.probe SELECT tag, 'cursors', count(*)::text
			FROM pg_catalog.pg_cursors;
		INSERT INTO public.probe SELECT tag, 'listening', count(*)::text
			FROM pg_catalog.pg_listening_channels();
		INSERT INTO public.probe SELECT tag, 'temporary relations', count(*)::text
			FROM pg_catalog.pg_class WHERE relnamespace = pg_catalog.pg_my_temp_schema();
		INSERT INTO public.probe SELECT tag, 'temporary objects', count(*)::text
			FROM pg_catalog.pg_depend
		   WHERE refclassid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
			 AND refobjid = pg_catalog.pg_my_temp_schema();
		INSERT INTO public.probe SELECT tag, 'advisory lock 4242', count(*)::text
			FROM pg_catalog.pg_locks
		   WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid()
			 AND objid = 4242 AND objsubid = 1;
		BEGIN
			r := pg_catalog.currval('public.alice_seq')::text;
		EXCEPTION WHEN others THEN
			r := 'error ' || SQLSTATE;
		END;
		INSERT INTO public.probe VALUES (tag, 'currval', r);
		BEGIN
			INSERT INTO accounts VALUES (1, 'bob');
			r := 'inserted';
		EXCEPTION WHEN others THEN
			r := 'error ' || SQLSTATE;
		END;
		INSERT INTO public.probe VALUES (tag, 'insert into accounts', r);
	END $f$;
});

sub status_of
{
	my ($r) = @_;
	return $r =~ s/\|\d*$//r;
}

# what a fresh session shows bob
schedule('bob', 'probe_fresh', q{SELECT public.bob_probe('fresh')});
my $fresh_run = run_and_wait('bob', 'probe_fresh');
like($fresh_run, qr/^succeeded\|\|\d+$/, 'bob\'s probe runs');
my $fresh = admin(q{SELECT string_agg(item || ' = ' || value, E'\n' ORDER BY item)
					  FROM public.probe WHERE tag = 'fresh'});
like($fresh, qr/insert into accounts = error 42P01/, 'no "accounts" in a fresh session');

# everything alice leaves behind
my $leave = q{
	CREATE TEMP TABLE accounts (id int, who text);
	CREATE TRIGGER steal BEFORE INSERT ON accounts
		FOR EACH ROW EXECUTE FUNCTION public.alice_trap();
	GRANT INSERT ON accounts TO PUBLIC;
	CREATE FUNCTION pg_temp.alice_fn() RETURNS text LANGUAGE sql AS 'SELECT current_user';
	SELECT pg_advisory_lock(4242);
	PREPARE a_secret AS SELECT 'A-secret';
	DECLARE a_cursor CURSOR WITH HOLD FOR SELECT 'A-secret';
	SELECT nextval('public.alice_seq');
	SET work_mem = '7777kB';
	SELECT set_config('app.secret', 'A-secret', false);
	SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ;
	SET statement_timeout = '77s';
	SET DateStyle = 'SQL, DMY';
	SET search_path = alice_private, public;
};
schedule('alice', 'leave_atomic', $leave);
schedule('alice', 'leave_toplevel', $leave, 'false');

for my $kind ('atomic', 'toplevel')
{
	my $r = run_and_wait('alice', "leave_$kind");
	like($r, qr/^succeeded\|\|/, "alice's $kind job leaving state behind succeeds");
	schedule('bob', "probe_$kind", "SELECT public.bob_probe('after $kind')");
	$r = run_and_wait('bob', "probe_$kind");
	is(status_of($r), "succeeded|", "bob's probe after alice's $kind job succeeds");
	my $seen = admin(qq{SELECT string_agg(item || ' = ' || value, E'\n' ORDER BY item)
						  FROM public.probe WHERE tag = 'after $kind'});
	is($seen, $fresh,
		"after alice's $kind job bob's job sees the session a fresh one showed it");
}
is(admin(q{SELECT count(*) FROM public.loot}), '0',
	'bob\'s INSERT INTO accounts never reached alice\'s table or trigger');
is(admin(q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242}),
	'0', 'no advisory lock of a job is held after it');
is(admin(q{SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname LIKE 'pg_temp%' AND c.relname = 'accounts'}),
	'0', 'no temporary table of a job exists after it');

# --- what a job queues for its commit runs as the job's role ---
schedule('alice', 'deferred_atomic', q{INSERT INTO public.alice_t VALUES (1)});
schedule('alice', 'deferred_toplevel', q{INSERT INTO public.alice_t VALUES (2)}, 'false');
schedule('alice', 'held_atomic',
	q{DECLARE c1 CURSOR WITH HOLD FOR SELECT public.alice_escalate('held cursor')});
schedule('alice', 'held_toplevel',
	q{DECLARE c2 CURSOR WITH HOLD FOR SELECT public.alice_escalate('held cursor')}, 'false');
for my $job ('deferred_atomic', 'deferred_toplevel', 'held_atomic', 'held_toplevel')
{
	like(run_and_wait('alice', $job), qr/^succeeded\|\|/, "alice's job $job succeeds");
}
is(admin(q{SELECT count(*) FROM public.loot WHERE what = 'deferred trigger' AND who = 'alice' AND NOT super}),
	'2', 'the deferred trigger of each job fired, as alice');
is(admin(q{SELECT count(*) FROM public.loot WHERE super}), '0',
	'nothing a job queued for its commit ran as a superuser');
is(admin(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'}), 'f',
	'alice is still an ordinary role');

# --- carol lacks TEMPORARY: no temporary namespace of another role's ---
schedule('alice', 'temp_user', q{CREATE TEMP TABLE t_alice (x int)});
like(run_and_wait('alice', 'temp_user'), qr/^succeeded\|\|/,
	'alice, who may, uses a temporary table in a job');
ok(wait_for(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 't_alice'}, 60),
	'alice\'s temporary table goes with her job backend');
schedule('carol', 'temp_atomic', q{CREATE TEMP TABLE t_carol (x int)});
schedule('carol', 'temp_toplevel', q{CREATE TEMP TABLE t_carol (x int)}, 'false');
for my $kind ('atomic', 'toplevel')
{
	is(status_of(run_and_wait('carol', "temp_$kind")), "failed|42501",
		"carol's $kind job cannot create a temporary table (42501)");
}

# --- settings that would break the backend's bookkeeping ---
schedule('alice', 'read_only_atomic', q{SET default_transaction_read_only = on});
schedule('alice', 'read_only_toplevel',
	q{SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY; SELECT 1}, 'false');
schedule('alice', 'read_only_local', q{SELECT set_config('transaction_read_only', 'on', true)});
for my $job ('read_only_atomic', 'read_only_toplevel', 'read_only_local')
{
	is(status_of(run_and_wait('alice', $job)), "succeeded|",
		"alice's job $job is recorded as succeeded");
	schedule('bob', "probe_$job", "SELECT public.bob_probe('after $job')");
	is(status_of(run_and_wait('bob', "probe_$job")), "succeeded|",
		"bob's next job runs after $job");
	is(admin(qq{SELECT string_agg(item || ' = ' || value, E'\n' ORDER BY item)
				  FROM public.probe WHERE tag = 'after $job'}),
		$fresh, "bob's job after $job sees a fresh session");
}

is(admin(q{SELECT count(*) FROM schedlock.job_runs WHERE status IN ('lost', 'running')}), '0',
	'no run was lost or left running: no backend failed');
is(admin(q{SELECT count(*) FROM schedlock.jobs WHERE dispatch_errors > 0}), '0',
	'no bookkeeping error was charged to a job');

$node->stop;
done_testing();
