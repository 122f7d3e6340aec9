# 215_job_leftovers_stress.pl: under load, with a small worker budget, what
# one role's jobs leave in their session reaches no job of another role, no
# role gains a right, and every slot of the other roles' jobs runs once.
#
# What it reproduces: atomic jobs of every role share the dispatch workers'
# sessions, which run_command.c cleans after each job from a fixed list; whatever
# is not on the list, or comes back after the cleaning, reaches the next job
# or the worker's superuser.  Three roles -- dirty and clean (ordinary) and
# sup (a superuser) -- have "1 seconds" jobs of random kinds (atomic,
# non-atomic, NOTIFY; seed SL_SEED, default 215) in three databases for
# about 40 s, with schedlock.max_workers = 2.  Every job of dirty's leaves
# all it can: temporary tables (one named "seen", like the table the others
# insert into unqualified, with a trigger that runs dirty's escalation),
# SET search_path (with dirty's look-alike pg_backend_pid() before
# pg_catalog) and a custom dirty.x, a session advisory lock, a prepared
# statement, a WITH HOLD cursor, a LISTEN (refused in a background worker;
# tried anyway) and a deferred trigger that defers itself again so that it
# is still queued when the job ends.  The jobs of clean and sup record what
# their session shows.  Today the re-deferred trigger fires at the claim's
# commit as the bootstrap superuser and makes dirty a superuser.
#
# Intended behaviour: each job runs in a backend connected as its role,
# reused only for that role's jobs in that database, so clean's and sup's
# jobs see none of dirty's leftovers, dirty's functions never run as anyone
# but dirty, dirty and clean stay ordinary roles, and every slot of clean's
# and sup's SQL jobs (misfire => run_all) runs exactly once and succeeds.
# NOTIFY jobs need no listener here: they must be notified (runs pending or
# timed out), never lost or failed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;
use List::Util qw(shuffle);
use Time::HiRes qw(time usleep);

my $seed = $ENV{SL_SEED} // 215;
srand($seed);
note("seed $seed");
my $stress_seconds = 40;

# today's per-database pool of 2 workers; room for the job backends of
# non-atomic runs besides them
my $node = job_node_conf('leftovers_stress', qq{
max_worker_processes = 16
schedlock.max_workers = 2
});
my $super = $node->safe_psql('postgres', 'SELECT current_user');
my @dbs = ('app', 'db2', 'db3');
my @roles = ('dirty', 'clean', 'sup');

sub sql
{
	my ($db, $sql, $role) = @_;
	return $node->safe_psql($db, $sql,
		extra_params => [ '-U', $role // $super ]);
}

$node->safe_psql('postgres', q{
	CREATE ROLE dirty LOGIN;
	CREATE ROLE clean LOGIN;
	CREATE ROLE sup LOGIN SUPERUSER;
	CREATE DATABASE db2;
	CREATE DATABASE db3;
});

for my $db (@dbs)
{
	sql($db, q{
		CREATE EXTENSION schedlock SCHEMA public;
		GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dirty, clean;
		GRANT INSERT ON schedlock.jobs TO dirty, clean;
		CREATE SCHEMA dirty AUTHORIZATION dirty;
		CREATE TABLE public.seen (job text, kind text, pid int, sess name, cur name,
								  dirty_x text, temp_rels text, prepared text, cursors text,
								  listening text, advisory bigint, search_path text,
								  ts timestamptz DEFAULT clock_timestamp());
		GRANT INSERT ON public.seen TO clean;
		CREATE TABLE public.loot (what text, who name, sess name, super boolean,
								  outcome text, ts timestamptz DEFAULT clock_timestamp());
		GRANT INSERT ON public.loot TO PUBLIC;
	});

	# dirty's traps: an escalation that records who ran it, a deferred
	# trigger that defers itself again, the trigger of her temporary "seen",
	# and a look-alike pg_backend_pid() for a search_path that puts her
	# schema before pg_catalog
	sql($db, q{
		GRANT USAGE ON SCHEMA dirty TO PUBLIC;
		CREATE FUNCTION dirty.escalate(what text) RETURNS void LANGUAGE plpgsql AS $$
		DECLARE
			outcome text := '-';
		BEGIN
			IF current_user <> 'dirty' THEN
				BEGIN
					EXECUTE 'ALTER ROLE dirty SUPERUSER';
					outcome := 'ALTER ROLE succeeded';
				EXCEPTION WHEN others THEN
					outcome := 'ALTER ROLE failed ' || SQLSTATE;
				END;
			END IF;
			INSERT INTO public.loot (what, who, sess, super, outcome)
				SELECT what, current_user, session_user, r.rolsuper, outcome
				  FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
		END $$;
		CREATE TABLE dirty.first (x int);
		CREATE TABLE dirty.second (x int);
		CREATE FUNCTION dirty.first_fires() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			SET CONSTRAINTS ALL DEFERRED;
			INSERT INTO dirty.second VALUES (NEW.x);
			RETURN NULL;
		END $$;
		CREATE FUNCTION dirty.second_fires() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM dirty.escalate('deferred trigger');
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER first_late AFTER INSERT ON dirty.first
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION dirty.first_fires();
		CREATE CONSTRAINT TRIGGER second_late AFTER INSERT ON dirty.second
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION dirty.second_fires();
		CREATE FUNCTION dirty.trap() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM dirty.escalate('temporary seen of ' || NEW.cur);
			RETURN NEW;
		END $$;
		CREATE FUNCTION dirty.pg_backend_pid() RETURNS integer LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM dirty.escalate('look-alike pg_backend_pid');
			RETURN pg_catalog.pg_backend_pid();
		END $$;
	}, 'dirty');
}

# what every job of dirty's leaves behind
my $leave = q{
	CREATE TEMP TABLE IF NOT EXISTS dirty_tmp (x int);
	DROP TABLE IF EXISTS pg_temp.seen;
	CREATE TEMP TABLE seen (job text, kind text, pid int, sess name, cur name,
							dirty_x text, temp_rels text, prepared text, cursors text,
							listening text, advisory bigint, search_path text,
							ts timestamptz DEFAULT clock_timestamp());
	CREATE TRIGGER dirty_trap BEFORE INSERT ON pg_temp.seen
		FOR EACH ROW EXECUTE FUNCTION dirty.trap();
	GRANT ALL ON pg_temp.seen TO PUBLIC;
	SET search_path = dirty, pg_catalog, public;
	SET dirty.x = 'leak';
	SELECT pg_catalog.pg_advisory_lock(215);
	DEALLOCATE ALL;
	PREPARE dirty_stmt AS SELECT 1;
	CLOSE ALL;
	DECLARE dirty_cur CURSOR WITH HOLD FOR SELECT 1;
	DO $do$ BEGIN EXECUTE 'LISTEN dirty_chan'; EXCEPTION WHEN others THEN NULL; END $do$;
	INSERT INTO dirty.first VALUES (1);
};

# what every job of clean's and sup's records: "seen" unqualified and
# pg_backend_pid() unqualified, as a job written for the default
# search_path would
my $record = q{
	INSERT INTO seen (job, kind, pid, sess, cur, dirty_x, temp_rels, prepared, cursors,
					  listening, advisory, search_path)
	SELECT '%s', '%s', pg_backend_pid(), session_user, current_user,
		   coalesce(current_setting('dirty.x', true), ''),
		   (SELECT coalesce(string_agg(relname, ' ' ORDER BY relname), '')
			  FROM pg_class WHERE relnamespace = pg_my_temp_schema()),
		   (SELECT coalesce(string_agg(name, ' ' ORDER BY name), '')
			  FROM pg_prepared_statements),
		   (SELECT coalesce(string_agg(name, ' ' ORDER BY name), '') FROM pg_cursors),
		   (SELECT coalesce(string_agg(c, ' ' ORDER BY c), '') FROM pg_listening_channels() c),
		   (SELECT count(*) FROM pg_locks
			 WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
		   current_setting('search_path')
};

# the probe sees each of dirty's leftovers when it runs in her session
# after them (its "seen" is then her temporary one): a leak could not go
# unnoticed
my @self = split /\n/, sql('app', $leave . ";\n" . sprintf($record, 'self', 'self') . q{;
	SELECT concat_ws('|', dirty_x, temp_rels, prepared, cursors, listening, advisory, search_path)
	  FROM pg_temp.seen WHERE job = 'self'}, 'dirty');
is($self[-1], 'leak|dirty_tmp seen|dirty_stmt|dirty_cur|dirty_chan|1|dirty, pg_catalog, public',
	'in dirty\'s own session the probe sees every leftover of her job');

# the jobs: per role, each kind at least once over the three databases,
# then kinds at random, two jobs per role and database
my %jobs;	# "db role" => [ [ name, kind ], ... ]
for my $role (@roles)
{
	my @kinds = shuffle('atomic', 'toplevel', 'notify',
		map { (qw(atomic toplevel notify))[ int(rand(3)) ] } 1 .. 3);
	for my $db (@dbs)
	{
		for my $i (1, 2)
		{
			my $kind = shift @kinds;
			push @{ $jobs{"$db $role"} }, [ "${role}_${kind}_$i", $kind ];
		}
	}
}
note(join('; ', map { "$_: " . join(' ', map { $_->[0] } @{ $jobs{$_} }) } sort keys %jobs));

for my $key (sort keys %jobs)
{
	my ($db, $role) = split / /, $key;
	my $schedule = '';
	for my $j (@{ $jobs{$key} })
	{
		my ($name, $kind) = @$j;
		if ($kind eq 'notify')
		{
			$schedule .= qq{SELECT schedlock.schedule_job('$name', '1 seconds', notify_channel => 'ch_$role',
						payload => '{"from": "$role"}', timeout => '2 seconds');\n};
			next;
		}
		my $command = $role eq 'dirty' ? $leave : sprintf($record, $name, $kind);
		my $atomic = $kind eq 'atomic' ? 'true' : 'false';
		$schedule .= qq{SELECT schedlock.schedule_job('$name', '1 seconds', \$cmd\$$command\$cmd\$,
						atomic => $atomic, misfire => 'run_all');\n};
	}
	sql($db, $schedule, $role);
}

# the load runs for $stress_seconds (the duration of the test, not a
# synchronisation), then every job is disabled and the test waits, with a
# deadline, until no SQL run is in progress
my $t0 = time();
while (time() - $t0 < $stress_seconds)
{
	usleep(500_000);
}
for my $key (sort keys %jobs)
{
	my ($db, $role) = split / /, $key;
	sql($db, q{SELECT schedlock.alter_job(job_name, enabled => false) FROM schedlock.jobs
				WHERE owner = current_user::regrole}, $role);
}
my $settled = 0;
my $deadline = time() + 30;
while (!$settled && time() < $deadline)
{
	$settled = !grep {
		sql($_, q{SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
				   WHERE j.command IS NOT NULL AND r.status IN ('queued', 'running')}) ne '0'
	} @dbs;
	usleep(200_000) unless $settled;
}
ok($settled, 'every SQL run ended within 30 s of disabling the jobs');

# --- dirty's jobs did leave their state (else the test proves nothing) ---
for my $db (@dbs)
{
	for my $j (grep { $_->[1] ne 'notify' } @{ $jobs{"$db dirty"} })
	{
		cmp_ok(sql($db, qq{SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
							WHERE j.job_name = '$j->[0]' AND r.status = 'succeeded'}),
			'>=', 5, "dirty's job $j->[0] in $db ran and succeeded at least 5 times");
	}
}

# --- what clean's and sup's jobs saw -------------------------------------
my %leak = (
	'dirty.x or dirty\'s search_path' =>
	  q{dirty_x <> '' OR search_path LIKE '%dirty%'},
	'dirty\'s temporary tables' => q{temp_rels ~ '(^| )(dirty_tmp|seen)( |$)'},
	'dirty\'s prepared statement' => q{prepared LIKE '%dirty_stmt%'},
	'dirty\'s WITH HOLD cursor' => q{cursors LIKE '%dirty_cur%'},
	'a LISTEN' => q{listening <> ''},
	'a session advisory lock' => q{advisory > 0},);
for my $what (sort keys %leak)
{
	my @offenders;
	for my $db (@dbs)
	{
		my $o = sql($db, qq{SELECT string_agg(DISTINCT job, ' ') FROM public.seen
							 WHERE $leak{$what}});
		push @offenders, "$db: $o" if $o ne '';
	}
	is(join('; ', @offenders), '', "no job of clean or sup saw $what");
}
my $rows = 0;
$rows += sql($_, 'SELECT count(*) FROM public.seen') for @dbs;
cmp_ok($rows, '>', 0, "the jobs of clean and sup recorded what they saw ($rows rows)");

# --- no role gained a right ------------------------------------------------
is($node->safe_psql('postgres', q{
	SELECT string_agg(rolname || ' ' || rolsuper || ' ' || rolcreaterole || ' ' || rolcreatedb
					  || ' ' || rolreplication || ' ' || rolbypassrls, ', ' ORDER BY rolname)
	  FROM pg_roles WHERE rolname IN ('dirty', 'clean')}),
	'clean false false false false false, dirty false false false false false',
	'dirty and clean are still ordinary roles');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
	 WHERE r.rolname IN ('dirty', 'clean')}), '0', 'dirty and clean were granted no role');
my @ran_as_other;
for my $db (@dbs)
{
	my $o = sql($db, q{SELECT string_agg(DISTINCT what || ' as ' || who || ' (' || outcome || ')', '; ')
						 FROM public.loot WHERE who <> 'dirty'});
	push @ran_as_other, "$db: $o" if $o ne '';
}
is(join('; ', @ran_as_other), '', 'dirty\'s functions never ran as another role');

# --- every slot of clean's and sup's SQL jobs ran once ----------------------
for my $db (@dbs)
{
	for my $role ('clean', 'sup')
	{
		for my $j (@{ $jobs{"$db $role"} })
		{
			my ($name, $kind) = @$j;
			if ($kind eq 'notify')
			{
				like(sql($db, qq{
					SELECT count(*) FILTER (WHERE r.status IN ('pending', 'timed_out', 'succeeded'))
						   || ' ' || count(*) FILTER (WHERE r.status IN ('lost', 'failed'))
					  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
					 WHERE j.job_name = '$name'}),
					qr/^([3-9]|\d\d+) 0$/,
					"$db: NOTIFY job $name was notified at least 3 times, never lost or failed");
				next;
			}
			my $r = sql($db, qq{
				SELECT count(*) || ' runs, ' || count(DISTINCT (r.scheduled_for, r.attempt))
					   || ' distinct slots, '
					   || (extract(epoch FROM max(r.scheduled_for) - min(r.scheduled_for)) + 1)::int
					   || ' slots from first to last, '
					   || count(*) FILTER (WHERE r.status = 'succeeded') || ' succeeded, '
					   || (SELECT count(*) FROM public.seen s WHERE s.job = '$name') || ' recorded'
				  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
				 WHERE j.job_name = '$name' AND NOT r.manual
				   -- a run claimed ahead of its instant when the job was
				   -- disabled at the end is closed as skipped, not run
				   -- (schedlock_skip_unscheduled_runs, store_runs.c)
				   AND NOT (r.status = 'skipped' AND r.message ~
							'^the job was (disabled|unscheduled) before the run started\$')});
			my ($n) = $r =~ /^(\d+) runs/;
			$n //= 0;
			is($r,
				"$n runs, $n distinct slots, $n slots from first to last, $n succeeded, $n recorded",
				"$db: every slot of $role\'s $kind job $name ran once, succeeded and recorded once")
			  or diag("$db: the runs of $name that did not succeed: ", sql($db, qq{
				SELECT string_agg(format('%s %s attempt %s: %s %s %s (claimed %s, started %s, finished %s)',
										 r.run_id, r.scheduled_for, r.attempt, r.status,
										 r.sqlstate, r.message, r.claimed_at,
										 r.started_at, r.finished_at), E'\n')
				  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
				 WHERE j.job_name = '$name' AND r.status <> 'succeeded'}));
			cmp_ok($n, '>=', $stress_seconds / 2,
				"$db: $role\'s $kind job $name ran at least " . ($stress_seconds / 2) . " times");
		}
	}
}

$node->stop;
done_testing();
