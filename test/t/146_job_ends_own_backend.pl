# 146_job_ends_own_backend.pl: an atomic job whose command ends its own
# backend (SELECT pg_terminate_backend(pg_backend_pid())).  The claim of
# an atomic run shares the command's transaction, so the backend's end
# rolls back the claim too and the slot is due again as before; without a
# note of the death, the next backend ran the command again about once a
# second, forever, and no run was ever recorded.  Now the next claim of
# that slot and attempt records the run failed (57P01, saying why) instead
# of running it again, so each slot kills a backend once (twice when its
# run was claimed ahead of its instant, see below) at the most, the
# failures count in consecutive_failures, and the job moves on to its next
# slot.  A sequence, which a rollback does not undo, counts the commands
# that started.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockJobNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = job_node('ends_own_backend');
admin(q{
	CREATE EXTENSION schedlock;
	CREATE ROLE kamikaze LOGIN;
	GRANT INSERT ON schedlock.jobs TO kamikaze;
	CREATE SEQUENCE public.tries;
	GRANT USAGE ON SEQUENCE public.tries TO kamikaze;
});
as_role('kamikaze', q{SELECT schedlock.schedule_job('bang', '2 seconds',
	$$SELECT nextval('public.tries'); SELECT pg_terminate_backend(pg_backend_pid())$$)});

ok(wait_for(q{SELECT count(*) >= 3 FROM schedlock.job_runs
	WHERE job_name = 'bang' AND status = 'failed'}, 60),
	'the runs of the job are recorded failed');
my $runs = admin(q{SELECT string_agg(DISTINCT sqlstate || ': ' || message, ', ')
	FROM schedlock.job_runs WHERE job_name = 'bang'});
is($runs, q{57P01: the job's backend ended while this run's command ran},
	'each with the reason');
my ($failed, $slots, $tries) = split /\|/, admin(q{
	SELECT count(*), count(DISTINCT scheduled_for),
		   (SELECT last_value FROM public.tries)
	  FROM schedlock.job_runs WHERE job_name = 'bang' AND status = 'failed'});
is($slots, $failed, 'one failed run per slot');
# a run claimed ahead of its instant commits its claim on its own: its
# backend's end leaves a running row, closed as lost, and the slot runs
# once more as its next attempt (test/t/123_job_lost_atomic_slot.pl), which
# ends the same way; so at most two starts a slot, and two for the slot in
# progress
cmp_ok($tries, '<=', 2 * $failed + 2,
	"the command started at most twice per recorded slot ($tries starts, $failed failed runs)");
cmp_ok(admin(q{SELECT consecutive_failures FROM schedlock.jobs WHERE job_name = 'bang'}),
	'>=', 3, 'the failures count in a row');

$node->stop;
done_testing();
