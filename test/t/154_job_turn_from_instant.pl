# 154_job_turn_from_instant.pl: a job backend started ahead of its
# queue's instant has its turn from that instant, not from its start.
#
# One job backend for the cluster (schedlock.max_job_backends = 1), and two
# roles with 3 one-off jobs each, all due at one instant.  The launcher
# starts one role's backend ahead of the instant; the other role waits for
# the budget, so the first backend is asked to leave once it has had its
# turn (SCHEDLOCK_TURN_MS, 50 ms).  Counted from its start, 100 ms or more
# before the instant, that turn was over before the backend ran a job: it
# ran the one run it had claimed ahead and left, and its role's other runs
# needed a backend more.  Counted from the instant, the backend runs its
# role's 3 quick jobs (a few ms) and leaves after them.  Three instants;
# the first backend of an instant must run more than one of its role's
# runs in at least one of them (before the change it ran exactly one in
# every one).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node_conf('turn_from_instant', qq{
max_worker_processes = 16
schedlock.max_job_backends = 1
});
admin(q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.hits (who text, at timestamptz DEFAULT clock_timestamp());
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT INSERT ON public.hits TO alice, bob;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
});

# three instants, 2 s apart, the first 4 s ahead; each role's 3 jobs at each
my $at = admin(q{SELECT date_trunc('second', now()) + interval '4 seconds'});
for my $role ('alice', 'bob')
{
	as_role($role, qq{
		SELECT count(schedlock.schedule_once('$role' || k || '_' || i,
			'$at'::timestamptz + (k - 1) * interval '2 seconds',
			format('INSERT INTO public.hits (who) VALUES (%L)', '$role')))
		  FROM generate_series(1, 3) k, generate_series(1, 3) i});
}
ok(wait_for(q{SELECT count(*) = 18 FROM schedlock.job_runs
	WHERE status = 'succeeded'}, 60), 'all 18 runs succeeded');

# for each instant: how many runs of its role the backend of the first run
# ran at that instant
my $firsts = admin(q{
	WITH first AS (
		SELECT DISTINCT ON (scheduled_for) scheduled_for, owner, worker_pid
		  FROM schedlock.job_runs ORDER BY scheduled_for, started_at)
	SELECT string_agg((SELECT count(*) FROM schedlock.job_runs r
		WHERE r.scheduled_for = f.scheduled_for AND r.owner = f.owner
		  AND r.worker_pid = f.worker_pid)::text, ' ' ORDER BY f.scheduled_for)
	  FROM first f});
note("runs of its role by each instant's first backend: $firsts");
my @n = split ' ', $firsts;
is(scalar @n, 3, 'three instants');
ok((grep { $_ > 1 } @n) > 0,
	"a backend started ahead runs more than the one run it claimed ahead in at least one instant ($firsts)");

$node->stop;
done_testing();
