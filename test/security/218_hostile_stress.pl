# 218_hostile_stress.pl: three roles with random jobs in five databases
# under a budget of two job backends, one of them hostile: every slot of
# the other two runs, none twice.
#
# alice and bob each get, in each of five databases, a job every 5 s and
# one more whose period is drawn (3, 4, 6 or 7 s; the seed is printed), all
# with misfire => 'run_all' (a slot missed while no backend was free runs
# late, not never).  Each run records its slot.  mallory, granted the job
# API like them, gets in each database two every-second jobs that sleep 2 s
# (the longest a due job of another role should wait behind), and, while
# the others run, holds everything she can:
#	- LOCK TABLE on every table of the schema schedlock in the strongest
#	  mode the extension lets her have (ACCESS EXCLUSIVE is refused, 42501;
#	  ACCESS SHARE is every reader's), in a transaction kept open;
#	- a transaction kept open in which she altered her own jobs (their rows
#	  stay locked until it ends);
#	- SELECT ... FOR UPDATE on schedlock.jobs (refused, 42501).
# After 40 s her sessions end and her jobs go; once alice's and bob's
# jobs have caught up, each of their jobs ran every slot from its first
# to the end of the window exactly once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $seed = $ENV{SL_STRESS_SEED} // int(time()) % 100000;
srand($seed);
note "seed $seed (SL_STRESS_SEED=$seed repeats the draw)";

my $node = schedlock_node('hostile_stress',
	conf => [ "max_worker_processes = 16\nschedlock.max_job_backends = 2\nschedlock.max_workers = 2" ]);
my @dbs = map { "d$_" } 1 .. 5;
$node->safe_psql('postgres', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE mallory LOGIN;
});
my %period;					# "db/role/job" => seconds
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
		CREATE EXTENSION schedlock;
		GRANT INSERT ON schedlock.jobs TO alice, bob, mallory;
		CREATE TABLE public.hits (who name, job text, slot timestamptz);
		GRANT INSERT ON public.hits TO alice, bob;
	});
	for my $role ('alice', 'bob')
	{
		my %jobs = (g5 => 5, gx => (3, 4, 6, 7)[ int(rand(4)) ]);
		for my $job (sort keys %jobs)
		{
			$period{"$db/$role/$job"} = $jobs{$job};
			$node->safe_psql($db, qq{
				SET ROLE $role;
				SELECT schedlock.schedule_job('$job', '$jobs{$job} seconds',
					\$\$INSERT INTO public.hits VALUES (current_user, '$job',
						current_setting('schedlock.scheduled_for')::timestamptz)\$\$,
					misfire => 'run_all');
			});
		}
	}
	$node->safe_psql($db, q{
		SET ROLE mallory;
		SELECT schedlock.schedule_job('h1', '1 second', 'SELECT pg_sleep(2)');
		SELECT schedlock.schedule_job('h2', '1 second', 'SELECT pg_sleep(2)');
	});
}
note join ', ', map { "$_ every $period{$_} s" } sort keys %period;

# run Q in background session S; returns what it wrote to stderr (the
# error, if any), and leaves S ready for the next query
sub try_query
{
	my ($s, $q) = @_;
	$s->{stderr} = '';
	$s->query($q);
	my $err = $s->{stderr};
	$s->{stderr} = '';
	return $err;
}

# mallory's sessions: in each database, one holding table locks and one
# holding her own job rows
my @held;
my $refused = 0;
for my $db (@dbs)
{
	my $locks = $node->background_psql($db, on_error_stop => 0);
	$locks->query_safe('SET ROLE mallory');
	my @tables = split /\n/, $node->safe_psql($db, q{
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = 'schedlock' AND c.relkind IN ('r', 'p')
		   AND has_table_privilege('mallory', c.oid,
				'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
		 ORDER BY 1});
	$locks->query_safe('BEGIN');
	for my $t (@tables)
	{
		# the strongest first; each refusal rolls back to the savepoint
		$locks->query_safe('SAVEPOINT s');
		my $err = try_query($locks,
			"LOCK TABLE schedlock.$t IN ACCESS EXCLUSIVE MODE");
		if ($err =~ /permission denied|42501/)
		{
			$refused++;
			$locks->query_safe('ROLLBACK TO SAVEPOINT s');
			# ACCESS SHARE needs SELECT on the table, which on
			# schedlock.jobs she has for some columns only
			$locks->query_safe('SAVEPOINT s');
			$locks->query_safe('ROLLBACK TO SAVEPOINT s')
			  if try_query($locks, "LOCK TABLE schedlock.$t IN ACCESS SHARE MODE")
			  =~ /permission denied|42501/;
		}
	}
	$locks->query_safe('SAVEPOINT f');
	$refused++
	  if try_query($locks, 'SELECT * FROM schedlock.jobs FOR UPDATE') =~ /permission denied|42501/;
	$locks->query_safe('ROLLBACK TO SAVEPOINT f');
	push @held, $locks;

	my $rows = $node->background_psql($db, on_error_stop => 1);
	$rows->query_safe(q{
		SET ROLE mallory;
		BEGIN;
		SELECT schedlock.alter_job('h1', timeout => '10s');
		SELECT schedlock.alter_job('h2', timeout => '10s');});
	push @held, $rows;
}
cmp_ok($refused, '>=', 10, "mallory's ACCESS EXCLUSIVE locks and FOR UPDATE were refused ($refused refusals)");

my $t0 = time;
sleep 1 while time - $t0 < 40;
my $cutoff = $node->safe_psql('postgres', 'SELECT now()');
$_->quit for @held;
for my $db (@dbs)
{
	$node->safe_psql($db, q{
		SET ROLE mallory;
		SELECT schedlock.unschedule_job('h1');
		SELECT schedlock.unschedule_job('h2');
	});
}

# every job of alice and bob catches up to the end of the window
for my $key (sort keys %period)
{
	my ($db, $role, $job) = split m{/}, $key;
	my $p = $period{$key};
	ok( wait_true($node, $db, qq{
			SELECT coalesce(max(slot), '-infinity') > '$cutoff'::timestamptz - interval '$p seconds'
			  FROM public.hits WHERE who = '$role' AND job = '$job'}, 120),
		"$key caught up to the end of the window");
	my ($n, $distinct, $expected) = split /\|/, $node->safe_psql($db, qq{
		SELECT count(*), count(DISTINCT slot),
			   floor(extract(epoch FROM max(slot) - min(slot)) / $p)::int + 1
		  FROM public.hits
		 WHERE who = '$role' AND job = '$job' AND slot <= '$cutoff'});
	is($n, $distinct, "$key: no slot ran twice ($n runs)");
	is($n, $expected, "$key: every slot from its first to the end of the window ran");
}
for my $db (@dbs)
{
	is($node->safe_psql($db, q{SELECT count(*) FROM schedlock.jobs
		WHERE owner IN ('alice'::regrole, 'bob'::regrole)
		  AND (NOT enabled OR quarantine_reason IS NOT NULL)}),
		'0', "$db: no job of alice or bob was held back or quarantined");
}

$node->stop;
done_testing();
