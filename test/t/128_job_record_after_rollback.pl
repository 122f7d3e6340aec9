# 128_job_record_after_rollback.pl: a run is recorded without tripping
# PostgreSQL's heap_update over a rolled-back update of the job's row.
#
# What it reproduces: the claim locks a job's row (FOR NO KEY UPDATE) in the
# run's transaction.  When a subtransaction of that transaction updates the
# row and rolls back (the job's command changes its own job with alter_job
# and then fails; or the statement that records a set of runs is rolled
# back because one job unscheduled itself), and the transaction itself then
# updates the row (the run's record), PostgreSQL (seen on 15) builds the
# temporary lock heap_update puts on the old version, when the new one goes
# to another page or the row has a TOASTed value, from a multixact that
# still holds the rolled-back update: with assertions enabled the server
# stops (TRAP: FailedAssertion "HEAP_XMAX_IS_LOCKED_ONLY(
# infomask_lock_old_tuple)"), with them disabled the lock is only marked
# wrongly for a moment.  The same in plain SQL:
#
#   BEGIN; SELECT ... FOR NO KEY UPDATE; SAVEPOINT a; UPDATE ...;
#   ROLLBACK TO a; RELEASE a; UPDATE ... (new version off the page)
#
# The jobs here carry a long comment in their command, stored out of line
# (TOAST), so that every update of their row takes that path.  Only the
# cassert layer (test/cassert) sees the failure; the other layers check
# the outcome.
#
# Intended behaviour: no server process ends by a signal; the failing
# job's runs are recorded failed with its change rolled back; in runs that
# share a commit, the job that unscheduled itself ran once and the others
# ran with it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('record_after_rollback');
admin(q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.hits (job text, at timestamptz DEFAULT clock_timestamp());
	CREATE FUNCTION public.long_comment() RETURNS text LANGUAGE sql
	  AS $$SELECT '/* ' || string_agg(md5(i::text), '') || ' */' FROM generate_series(1, 400) i$$;
});
my $logstart = -s $node->logfile;

# --- each run committed alone: the command changes its job, then fails.
# The job is made due by hand, three times, so that each run is claimed
# in the transaction it runs in (a run claimed ahead of its instant commits
# its claim first and holds no lock on the row).
admin(q{
	SELECT schedlock.schedule_job('tune_then_fail', '0 0 1 1 *',
		$$SELECT schedlock.alter_job('tune_then_fail', timeout => '7 seconds');
		  SELECT 1/0; $$ || public.long_comment());
});
is(admin(q{SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class
			 WHERE oid = 'schedlock.jobs'::regclass}),
	't', 'the command is stored out of line');
for my $n (1 .. 3)
{
	admin(q{SELECT schedlock.alter_job('tune_then_fail', next_run_at => now())});
	ok(wait_for(qq{SELECT count(*) >= $n FROM schedlock.job_runs
				   WHERE job_name = 'tune_then_fail' AND finished_at IS NOT NULL}, 30),
		"alone: run $n ended");
}
is(admin(q{SELECT string_agg(DISTINCT status || ':' || sqlstate, ',')
			 FROM schedlock.job_runs WHERE job_name = 'tune_then_fail'}),
	'failed:22012', 'alone: every run is recorded failed, division by zero');
is(admin(q{SELECT timeout IS NULL FROM schedlock.jobs WHERE job_name = 'tune_then_fail'}),
	't', 'alone: the change of its timeout was rolled back with the command');

# --- runs that share a commit: one job unschedules itself, so the set's
# record is rolled back and its runs are recorded one at a time
admin(q{ALTER SYSTEM SET schedlock.runs_per_commit = 16; SELECT pg_reload_conf()});
admin(q{
	SELECT count(schedlock.schedule_job('quick' || i, '1 seconds',
		$$INSERT INTO public.hits (job) VALUES ('quick$$ || i || $$'); $$
		|| public.long_comment()))
	  FROM generate_series(1, 6) i;
	SELECT schedlock.schedule_job('gone', '0 * * * *',
		$$INSERT INTO public.hits (job) VALUES ('gone');
		  SELECT schedlock.unschedule_job('gone'); $$ || public.long_comment());
});
# the quick jobs are due together each second; 'gone' is moved to their
# next second, so that it runs in their set
admin(q{SELECT schedlock.alter_job('gone', next_run_at => date_trunc('second', now()) + interval '2 seconds')});
ok(wait_for(q{SELECT NOT EXISTS (SELECT FROM schedlock.jobs WHERE job_name = 'gone')}, 30),
	'batch: the job that unscheduled itself is gone');
is(admin(q{SELECT count(*) FROM public.hits WHERE job = 'gone'}), '1',
	'batch: it ran once');
is(admin(q{SELECT string_agg(status, ',') FROM schedlock.job_runs WHERE job_name = 'gone'}),
	'succeeded', 'batch: its run is recorded once, succeeded');
ok(wait_for(q{SELECT count(DISTINCT job) = 6 FROM public.hits WHERE job LIKE 'quick%'
				 AND at > (SELECT min(at) FROM public.hits WHERE job = 'gone')}, 30),
	'batch: the other jobs ran after it');
ok(admin(q{SELECT count(*) = count(*) FILTER (WHERE status = 'succeeded')
			 FROM schedlock.job_runs WHERE job_name LIKE 'quick%'}) eq 't',
	'batch: every run of the other jobs succeeded');

my $log = substr(slurp_file($node->logfile), $logstart);
unlike($log, qr/TRAP:|terminated by signal/,
	'no server process ended by a signal (an assertion)');

$node->stop;
done_testing();
