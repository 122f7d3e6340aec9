# 149_role_cap_cluster.pl: schedlock.max_runs_per_role holds a role to its
# cap in the whole cluster, not in each database.
#
# Every setting at its default: max_worker_processes 8,
# schedlock.max_job_backends 4, schedlock.max_runs_per_role 3.  Role hog
# has two long jobs in database d1 and two in d2; role small has an
# every-second job in d3.  hog never holds more than 3 job backends
# cluster-wide, so the budget keeps one for small, whose job runs every
# second while hog's long runs are in progress.  (Capped per database, hog
# held all 4 backends and small's job did not run at all.)  A job of hog's
# in a fourth database then waits, with the role's cap as its
# waiting_reason.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use SchedlockJobNode;

my $node = job_node_conf('role_cap_cluster', '');
my $cap = admin(q{SELECT current_setting('schedlock.max_runs_per_role')});
is($cap, '3', 'schedlock.max_runs_per_role is at its default');
is(admin(q{SELECT current_setting('schedlock.max_job_backends')}), '4',
	'schedlock.max_job_backends is at its default');

$node->safe_psql('postgres', q{
	CREATE ROLE hog LOGIN;
	CREATE ROLE small LOGIN});
$node->safe_psql('postgres', "CREATE DATABASE $_") for qw(d1 d2 d3);
for my $db (qw(d1 d2))
{
	$node->safe_psql($db, q{
		CREATE EXTENSION schedlock;
		GRANT INSERT ON schedlock.jobs TO hog});
}
$node->safe_psql('d3', q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.ticks (at timestamptz);
	GRANT INSERT ON public.ticks TO small;
	GRANT INSERT ON schedlock.jobs TO small});

my $hog_q = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND usename = 'hog'};

# hog's long jobs: due a second from now, then again as soon as a run ends
for my $db (qw(d1 d2))
{
	$node->safe_psql($db, qq{
		SELECT schedlock.schedule_job('long_${db}_' || i, '1 seconds',
									  'SELECT pg_sleep(30)')
		  FROM generate_series(1, 2) i},
		extra_params => [ '-U', 'hog' ]);
}
ok(wait_true($node, 'postgres', qq{SELECT ($hog_q) >= $cap}, 30),
	"hog's long runs hold $cap job backends or more");

# small's every-second job, in a third database
$node->safe_psql('d3', q{
	SELECT schedlock.schedule_job('tick', '1 seconds',
								  'INSERT INTO public.ticks VALUES (clock_timestamp())')},
	extra_params => [ '-U', 'small' ]);

# until small's job has run 3 times (at most 20 s: hog's runs last 30 s),
# the most job backends hog had at once
my $max_hog = 0;
my $ticks = 0;
my $t0 = time;
while (time - $t0 < 20)
{
	my $n = $node->safe_psql('postgres', $hog_q);
	$max_hog = $n if $n > $max_hog;
	$ticks = $node->safe_psql('d3', 'SELECT count(*) FROM public.ticks');
	last if $ticks >= 3;
	sleep 0.1;
}
my $took = sprintf('%.1f', time - $t0);
note "small's job ran $ticks times in $took s; hog had at most $max_hog job backends";
cmp_ok($ticks, '>=', 3,
	"small's every-second job ran while hog's long runs were in progress ($ticks runs in $took s)");
cmp_ok($max_hog, '<=', $cap,
	"hog never had more than schedlock.max_runs_per_role ($cap) job backends in the cluster (had $max_hog)");
is( $node->safe_psql('d3', q{
		SELECT count(*) FROM schedlock.job_runs
		 WHERE job_name = 'tick' AND status NOT IN ('succeeded', 'running')}),
	'0', "small's runs succeeded");

# for a while longer, hog still holds no more than its cap
$t0 = time;
while (time - $t0 < 3)
{
	my $n = $node->safe_psql('postgres', $hog_q);
	$max_hog = $n if $n > $max_hog;
	sleep 0.1;
}
cmp_ok($max_hog, '<=', $cap, "nor afterwards (had $max_hog)");

# a job of hog's in a fourth database waits for hog's cap, and says so
# (small's job paused: its idle backend leaves room for d4's housekeeper)
$node->safe_psql('d3', q{SELECT schedlock.alter_job('tick', enabled => false)},
	extra_params => [ '-U', 'small' ]);
$node->safe_psql('postgres', 'CREATE DATABASE d4');
$node->safe_psql('d4', q{
	CREATE EXTENSION schedlock;
	GRANT INSERT ON schedlock.jobs TO hog});
$node->safe_psql('d4', q{
	SELECT schedlock.schedule_job('short', '1 seconds', 'SELECT 1')},
	extra_params => [ '-U', 'hog' ]);
my $reason_q = q{SELECT coalesce(waiting_reason, '') FROM schedlock.job_status
	WHERE job_name = 'short'};
ok(wait_true($node, 'd4', "SELECT ($reason_q) LIKE '%schedlock.max_runs_per_role ($cap)%'", 15),
	"the job of hog's in d4 waits for the role's cap: "
	  . $node->safe_psql('d4', $reason_q));
cmp_ok($node->safe_psql('postgres', $hog_q), '<=', $cap,
	'hog still has no more than its cap');

$node->stop;
done_testing();
