# 129_job_claimed_ahead.pl: atomic runs that share a commit
# (schedlock.runs_per_commit) and are due at one instant are claimed before
# it, their runs written as running and committed, so that at the instant
# only their commands are left to run.
#
# 40 one-off jobs of one role fall due at one instant, with
# runs_per_commit = 10.  One of them waits on a gate while it runs, one
# fails, one says a NOTICE.
# Meanwhile the runs of its batch are all marked running, as its backend's,
# and none of them looks lost (RUNNER_GONE: the pid a run names is the one
# schedlock.job_worker_pid tells), nor is closed as lost by the database's
# housekeeping.  Each command ran in a transaction begun on its instant
# (now() is not before its slot), saw the runs of its batch in progress,
# and each job ran exactly once, with its effects once; the outcomes,
# recorded for the batch in one statement, are each run's own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node_conf('claimed_ahead', qq{
max_worker_processes = 16
schedlock.runs_per_commit = 10
});
admin(q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.gate (hold boolean);
	INSERT INTO public.gate VALUES (true);
	CREATE TABLE public.hits (name text, at timestamptz, tx bigint, pid int,
							  now_ok boolean, in_progress bigint);
});

# every command records itself: its transaction, whether now() is at or
# after its slot, and how many runs of its instant its backend has marked
# running and shared memory tells are in progress
my $record = q{INSERT INTO public.hits SELECT %L, clock_timestamp(), txid_current(), pg_backend_pid(),
	now() >= current_setting('schedlock.scheduled_for')::timestamptz,
	(SELECT count(*) FROM schedlock.job_runs r
	  WHERE r.status = 'running'
		AND r.scheduled_for = current_setting('schedlock.scheduled_for')::timestamptz
		AND r.worker_pid = pg_backend_pid()
		AND r.worker_pid = schedlock.job_worker_pid(r.job_id))};

# due 4 s ahead: the role's backend is there to claim them before the instant
admin(qq{
	SELECT count(schedlock.schedule_once('j' || lpad(i::text, 2, '0'),
		date_trunc('second', now()) + interval '4 seconds',
		format(\$f\$$record\$f\$, 'j' || lpad(i::text, 2, '0'))
		|| CASE i
			WHEN 5 THEN '; DO \$g\$BEGIN FOR i IN 1 .. 600 LOOP EXIT WHEN NOT (SELECT hold FROM public.gate); PERFORM pg_sleep(0.1); END LOOP; END\$g\$'
			WHEN 3 THEN '; DO \$d\$BEGIN RAISE NOTICE ''j03 says hello''; END\$d\$'
			WHEN 7 THEN '; SELECT 1/0'
			ELSE '' END))
	  FROM generate_series(1, 40) i});

ok( wait_for(q{SELECT count(*) = 1 FROM pg_stat_activity
			   WHERE backend_type = 'schedlock job' AND query LIKE '%j05%public.gate%'}, 30),
	'the job held by the gate runs');
my $pid = admin(q{SELECT pid FROM pg_stat_activity
				   WHERE backend_type = 'schedlock job' AND query LIKE '%j05%public.gate%'});

# its batch: claimed ahead, committed as running, and in progress
is( admin(qq{SELECT count(*) FROM schedlock.job_runs
			  WHERE status = 'running' AND worker_pid = $pid}),
	'10', 'the ten runs of the held batch are marked running, as its backend\'s');
is( admin(q{SELECT count(*) FROM schedlock.job_runs
			 WHERE status = 'running'
			   AND worker_pid IS DISTINCT FROM schedlock.job_worker_pid(job_id)}),
	'0', 'none of the runs marked running looks lost');
is( admin(q{SELECT count(*) FROM schedlock.job_status
			 WHERE running_pid IS NOT NULL AND job_name LIKE 'j%'}) >= 10 ? 1 : 0,
	1, 'job_status shows the runs of the batch as running');

# the database's housekeeping (a new database has every database probed)
# does not close them as lost
ok(housekeep_all($node, 'app', 'probe'), 'the database was housekept again');
is( admin(qq{SELECT count(*) FROM schedlock.job_runs
			  WHERE status = 'running' AND worker_pid = $pid}),
	'10', 'after a housekeeping of the database, the ten are still running');

admin('UPDATE public.gate SET hold = false');
ok( wait_for(q{SELECT count(*) = 40 FROM schedlock.job_runs
			   WHERE job_name ~ '^j[0-9]+$' AND finished_at IS NOT NULL}, 60),
	'the 40 runs ended');
is( admin(q{SELECT status, coalesce(sqlstate, ''), count(*) FROM schedlock.job_runs
			 WHERE job_name ~ '^j[0-9]+$' GROUP BY 1, 2 ORDER BY 1}),
	"failed|22012|1\nsucceeded||39", 'the failing job failed with its error, the others succeeded, none was lost');
is( admin(q{SELECT count(*), count(DISTINCT name), count(*) FILTER (WHERE name = 'j07')
			  FROM public.hits}),
	'39|39|0', 'each job ran once, with its effects once; the failed one left none');
like( admin(q{SELECT notices FROM schedlock.job_runs WHERE job_name = 'j03'}),
	qr/j03 says hello/, 'what a command of the batch said is kept with its run');
is( admin(q{SELECT count(*) FROM schedlock.jobs
			 WHERE job_name ~ '^j[0-9]+$'
			   AND (total_runs <> 1 OR next_run_at IS NOT NULL
					OR failed_runs <> (job_name = 'j07')::int
					OR last_duration IS NULL)}),
	'0', "each job counted its one run in its statistics and ended");
is( admin(q{SELECT count(*) FROM public.hits WHERE NOT now_ok}),
	'0', "no command's now() was before its slot");
is( admin(qq{SELECT count(*), count(DISTINCT tx), min(in_progress), max(in_progress)
			   FROM public.hits WHERE pid = $pid
				AND tx = (SELECT tx FROM public.hits WHERE name = 'j05')}),
	'9|1|10|10',
	'the held batch: its runs in one transaction (the failing one left no row), each saw the ten in progress');
is( admin(qq{SELECT count(DISTINCT r.started_at),
					   count(*) FILTER (WHERE r.started_at BETWEEN r.scheduled_for AND h.at)
				  FROM schedlock.job_runs r JOIN public.hits h ON h.name = r.job_name
				 WHERE h.pid = $pid AND h.tx = (SELECT tx FROM public.hits WHERE name = 'j05')}),
	'9|9', "each run of the held batch records when its own command started");
cmp_ok(admin(q{SELECT max(in_progress) FROM public.hits}), '<=', 10,
	'no backend had more than runs_per_commit runs in progress');

$node->stop;
done_testing();
