# 124_job_shared_commit.pl: atomic runs that share one commit
# (schedlock.runs_per_commit).  200 one-off jobs of one role due at one
# instant, every tenth failing: each job runs once, a failing one is
# recorded failed alone and its effects are gone, the others' effects stay,
# and the runs took fewer commits than jobs.  Then a job backend is killed
# in the middle of a batch (a slow job after quick ones): the server
# restarts, and every job of the batch has run exactly once, with its
# effects once -- the runs of the batch that had not committed ran again
# (those claimed before their instant were recorded as lost first).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node_conf('shared_commit', qq{
max_worker_processes = 16
schedlock.runs_per_commit = 16
restart_after_crash = on
});
admin(q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.hits (name text, tx bigint);
});

# --- a burst with failures ------------------------------------------------

admin(q{
	SELECT count(schedlock.schedule_once('j' || i, now() + interval '2 seconds',
		CASE WHEN i % 10 = 0 THEN 'INSERT INTO hits VALUES (''never'', 0); SELECT 1/0'
			 ELSE format('INSERT INTO hits VALUES (%L, txid_current())', 'j' || i) END))
	  FROM generate_series(1, 200) i});
ok(wait_for(q{SELECT count(*) = 200 FROM schedlock.job_runs WHERE finished_at IS NOT NULL}, 60),
	'the 200 runs ended');
is(admin(q{SELECT status, coalesce(sqlstate, ''), count(*) FROM schedlock.job_runs
			GROUP BY 1, 2 ORDER BY 1}),
	"failed|22012|20\nsucceeded||180", 'every tenth run failed with its own error, the others succeeded');
is(admin(q{SELECT count(*) FROM (SELECT job_name FROM schedlock.job_runs
								 GROUP BY 1 HAVING count(*) <> 1) x}),
	'0', 'each job ran once');
is(admin(q{SELECT count(*), count(DISTINCT name) FROM hits}), '180|180',
	'each succeeded run left its row once; the failed runs left none');
my $commits = admin(q{SELECT count(DISTINCT tx) FROM hits});
cmp_ok($commits, '<', 180, "the 180 runs shared $commits commits");
is(admin(q{SELECT count(*) FROM schedlock.jobs
			WHERE total_runs <> 1 OR next_run_at IS NOT NULL
			   OR failed_runs <> (job_name IN (SELECT 'j' || i FROM generate_series(10, 200, 10) i))::int}),
	'0', 'each job counted its one run and ended');

# --- a backend killed in the middle of a batch ------------------------------

admin(q{
	TRUNCATE hits;
	CREATE TABLE public.slow (secs int);
	INSERT INTO slow VALUES (30);
	SELECT count(schedlock.schedule_once('k' || i, now() + interval '2 seconds',
		CASE WHEN i = 5 THEN 'INSERT INTO hits VALUES (''k5'', txid_current()); SELECT pg_sleep(secs) FROM slow'
			 ELSE format('INSERT INTO hits VALUES (%L, txid_current())', 'k' || i) END))
	  FROM generate_series(1, 10) i});
ok(wait_for(q{SELECT count(*) = 1 FROM pg_stat_activity
			   WHERE backend_type = 'schedlock job' AND query LIKE '%pg_sleep(secs)%'}, 30),
	'the slow job of the batch runs');
# the quick jobs before it either committed (alone, or in a batch that
# ended) or wait in its batch: what is visible is exactly what is recorded,
# and nothing of the slow job's batch is
is(admin(q{SELECT count(*) = (SELECT count(*) FROM schedlock.job_runs WHERE job_name LIKE 'k%' AND status = 'succeeded')
				  AND count(*) FILTER (WHERE name = 'k5') = 0
			 FROM hits}),
	't', 'what the open batch ran is not visible, nor recorded');
my $pid = admin(q{SELECT pid FROM pg_stat_activity
				   WHERE backend_type = 'schedlock job' AND query LIKE '%pg_sleep(secs)%'});
# the next run of the slow job is quick: an UPDATE, which the running
# statement's lock on the table does not hold up as a TRUNCATE would (that
# waited for the batch to commit, and the kill then found it ended)
admin('UPDATE slow SET secs = 0');
my $logstart = -s $node->logfile;
kill 'KILL', $pid;
wait_crash_restart($node, $logstart);
# the postmaster restarts after the crash; the jobs run again, quickly now
ok($node->poll_query_until('app', q{SELECT count(*) >= 9 FROM schedlock.job_runs
									 WHERE job_name LIKE 'k%' AND status = 'succeeded'}),
	'after the crash the jobs of the batch ran again');
ok(wait_for(q{SELECT count(*) = 10 FROM schedlock.job_runs
			   WHERE job_name LIKE 'k%' AND status = 'succeeded'}, 60),
	'all ten succeeded');
is(admin(q{SELECT count(*), count(DISTINCT name) FROM hits}), '10|10',
	'each job has its effects once');
# runs of the batch claimed before their instant had committed as running:
# those are closed as lost, and their slots ran again
is(admin(q{SELECT count(*) FROM (SELECT job_name FROM schedlock.job_runs
								 WHERE job_name LIKE 'k%'
								 GROUP BY 1
								 HAVING count(*) FILTER (WHERE status = 'succeeded') <> 1
									 OR count(*) FILTER (WHERE status NOT IN ('succeeded', 'lost')) <> 0) x}),
	'0', 'and one succeeded run each (any other was closed as lost)');

$node->stop('immediate');
done_testing();
