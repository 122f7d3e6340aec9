# 144_job_command_plans.pl: a job backend keeps the plan of an atomic
# command of one query and runs it again, and the kept plan stays right;
# the scheduler's own statements are never JIT-compiled.
#   (a) 20 jobs of one role with one command of one statement, due every
#       second: pg_stat_statements counts a few plans of it (one per
#       backend), not one per run;
#   (b) its table dropped and created again (another column type): the
#       runs after that succeed and write to the new table;
#   (c) two jobs with the same command text and different search_paths
#       each write to their own schema's table, run after run;
#   (d) a command whose table does not exist fails its runs with the
#       error it gets run from its text (42P01), and succeeds once the
#       table exists;
#   (e) more different commands than a backend keeps plans for (64): every
#       one runs, again and again;
#   (f) with JIT available and its default thresholds, no statement of the
#       scheduler's on its tables is compiled (the housekeeper's count of
#       the jobs, planned with enable_seqscan off, was at each pass).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockNode;

my $node = schedlock_node('command_plans',
	preload => [ 'schedlock', 'pg_stat_statements' ],
	conf => [
		"max_worker_processes = 32",
		"pg_stat_statements.track = all",
		"pg_stat_statements.track_planning = on",
		"schedlock.timezone = 'UTC'"
	],
	app => 'extension');
$node->safe_psql('app', q{
	CREATE EXTENSION pg_stat_statements;
	CREATE ROLE ticker LOGIN;
	GRANT INSERT ON schedlock.jobs TO ticker;
	GRANT CREATE ON SCHEMA public TO ticker;
	GRANT CREATE ON DATABASE app TO ticker;
});

sub as_ticker
{
	my ($sql) = @_;
	return $node->safe_psql('app', "SET ROLE ticker;\n$sql");
}

sub wait_app
{
	my ($sql, $seconds) = @_;
	return wait_true($node, 'app', $sql, $seconds // 60);
}

# --- (a) one command, 20 jobs, every second
as_ticker(q{
	CREATE TABLE hits (v int);
	SELECT count(schedlock.schedule_job('tick' || i, '1 seconds', 'INSERT INTO hits VALUES (1)'))
	FROM generate_series(1, 20) i;
});
ok(wait_app(q{SELECT count(*) >= 200 FROM hits}), 'the 20 jobs have run 200 times');
my ($calls, $plans) = split /\|/, $node->safe_psql('app', q{
	SELECT sum(calls), sum(plans) FROM pg_stat_statements
	WHERE query = 'INSERT INTO hits VALUES ($1)'});
cmp_ok($calls, '>=', 200, "pg_stat_statements counts the runs of the command ($calls)");
cmp_ok($plans * 10, '<=', $calls,
	"... and at most a tenth as many plans of it ($plans): the backends keep the plan");

# --- (b) the table dropped and made again
$node->safe_psql('app', q{
	SET ROLE ticker;
	BEGIN;
	DROP TABLE hits;
	CREATE TABLE hits (v text);
	COMMIT;
});
my $after = $node->safe_psql('app', 'SELECT clock_timestamp()');
ok(wait_app(q{SELECT count(*) >= 60 FROM hits}),
	'the jobs write to the table made again (text column)');
is($node->safe_psql('app', qq{
	SELECT count(*) FROM schedlock.job_runs
	WHERE job_name LIKE 'tick%' AND started_at > '$after'::timestamptz + interval '1 second'
	  AND status <> 'succeeded'}), '0',
	'... and every run since has succeeded');
is($node->safe_psql('app', q{SELECT DISTINCT v FROM hits}), '1', '... writing its value as text');
as_ticker(q{SELECT count(schedlock.unschedule_job('tick' || i)) FROM generate_series(1, 20) i});

# --- (c) one text, two search_paths
as_ticker(q{
	CREATE SCHEMA sa;
	CREATE SCHEMA sb;
	CREATE TABLE sa.t (v text);
	CREATE TABLE sb.t (v text);
	SET search_path = sa;
	SELECT schedlock.schedule_job('pa', '1 seconds', 'INSERT INTO t VALUES (current_schema())');
	SET search_path = sb;
	SELECT schedlock.schedule_job('pb', '1 seconds', 'INSERT INTO t VALUES (current_schema())');
});
ok(wait_app(q{SELECT (SELECT count(*) FROM sa.t) >= 5 AND (SELECT count(*) FROM sb.t) >= 5}),
	'both jobs have run 5 times');
is($node->safe_psql('app', q{SELECT string_agg(DISTINCT v, ',') FROM sa.t}), 'sa',
	'the job of search_path sa wrote only to sa.t');
is($node->safe_psql('app', q{SELECT string_agg(DISTINCT v, ',') FROM sb.t}), 'sb',
	'the job of search_path sb wrote only to sb.t');
as_ticker(q{SELECT schedlock.unschedule_job('pa'), schedlock.unschedule_job('pb')});

# --- (d) a table that does not exist yet
as_ticker(q{SELECT schedlock.schedule_job('late', '1 seconds', 'INSERT INTO later VALUES (1)')});
ok(wait_app(q{SELECT count(*) >= 2 FROM schedlock.job_runs WHERE job_name = 'late' AND status = 'failed'}),
	'the runs of a command on a missing table fail');
is($node->safe_psql('app', q{
	SELECT DISTINCT sqlstate || ' ' || message FROM schedlock.job_runs
	WHERE job_name = 'late' AND status = 'failed'}),
	'42P01 relation "later" does not exist',
	'... with the error of the statement');
as_ticker(q{CREATE TABLE later (v int)});
ok(wait_app(q{SELECT count(*) >= 3 FROM later}), 'once the table exists, the runs write to it');
as_ticker(q{SELECT schedlock.unschedule_job('late')});

# --- (e) more commands than a backend keeps plans for
as_ticker(q{
	CREATE TABLE many (v int);
	SELECT count(schedlock.schedule_job('c' || i, '1 seconds', 'INSERT INTO many VALUES (' || i || ')'))
	FROM generate_series(1, 80) i;
});
ok(wait_app(q{SELECT count(DISTINCT v) = 80 AND min(n) >= 3
	FROM (SELECT v, count(*) n FROM many GROUP BY v) s}, 90),
	'80 different commands have each run 3 times');
is($node->safe_psql('app', q{
	SELECT count(*) FROM schedlock.job_runs WHERE job_name ~ '^c[0-9]+$' AND status <> 'succeeded'}),
	'0', '... and no run failed');
as_ticker(q{SELECT count(schedlock.unschedule_job('c' || i)) FROM generate_series(1, 80) i});

# --- (f) no JIT for the scheduler's statements
SKIP:
{
	skip 'no JIT in this build of PostgreSQL', 2
	  unless $node->safe_psql('app', 'SELECT pg_jit_available()') eq 't';
	# every database is housekept at a reload: its jobs are counted
	my $counted = q{SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
		WHERE query LIKE '%FILTER (WHERE enabled)%FROM schedlock.jobs%'};
	my $before = $node->safe_psql('app', $counted);
	$node->safe_psql('app', 'SELECT pg_reload_conf()');
	ok(wait_app("SELECT ($counted) > $before"), 'the housekeeper counted the jobs again');
	is($node->safe_psql('app', q{
		SELECT coalesce(string_agg(left(regexp_replace(query, '\s+', ' ', 'g'), 60), ' / '), 'none')
		FROM pg_stat_statements
		WHERE query ~ 'schedlock\.(jobs|job_runs|home)' AND jit_functions > 0}),
		'none', 'no statement on the scheduler\'s tables was JIT-compiled');
}

done_testing();
