# 145_job_backends_ahead.pl: SQL jobs of one role due at one instant get
# their backends before it, all of them, rather than one after another
# once the jobs are due.
#
# With no job backend of the role yet, 8 one-off jobs of one second each
# fall due at one instant, with room for 8 backends: each runs in a backend
# of its own, and every one of them started before any had finished (added
# one at a time, each only after the role's backends had all been busy for a
# while, the last ones started after the first had ended).  With
# schedlock.runs_per_commit = 4, 8 jobs due at one instant run in 2
# backends, 4 in each, both started before the instant.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use SchedlockJobNode;

my $node = job_node_conf('backends_ahead', qq{
max_worker_processes = 24
schedlock.max_job_backends = 12
schedlock.max_workers = 10
schedlock.max_runs_per_role = 8
});
admin(q{
	CREATE EXTENSION schedlock;
	CREATE TABLE public.hits (name text, at timestamptz, pid int);
	CREATE ROLE bob LOGIN;
	GRANT INSERT ON public.hits TO bob;
	GRANT INSERT ON schedlock.jobs TO bob;
});

my $workers_q = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'schedlock job' AND datname = 'app'};
ok(wait_for("SELECT ($workers_q) = 0", 30), 'no job backend before there is a job');

# schedule N one-off jobs named PREFIX1..PREFIXN, due 4 s ahead, as ROLE
# (undef: the superuser); each records its start and sleeps SLEEP s
sub schedule_burst
{
	my ($role, $prefix, $n, $sleep) = @_;
	my $sql = qq{
		SELECT count(schedlock.schedule_once('$prefix' || i,
			date_trunc('second', now()) + interval '4 seconds',
			format('INSERT INTO public.hits VALUES (%L, clock_timestamp(), pg_backend_pid()); SELECT pg_sleep($sleep)',
				   '$prefix' || i)))
		  FROM generate_series(1, $n) i};
	return defined $role ? as_role($role, $sql) : admin($sql);
}

# the largest number of ROLE's job backends seen until DONE (a condition
# in SQL) holds, polled every 20 ms for at most 60 s; and when each backend
# seen started (pid => backend_start)
sub watch_backends
{
	my ($role, $done) = @_;
	my $max = 0;
	my %started;
	my $t0 = time;
	while (time - $t0 < 60)
	{
		my ($backends, $over, @pids) = split /\|/, admin(qq{
			SELECT count(*), ($done), string_agg(pid || '=' || backend_start, '|')
			  FROM pg_stat_activity
			 WHERE backend_type = 'schedlock job' AND datname = 'app'
			   AND usename = '$role'});
		$max = $backends if $backends > $max;
		for (@pids)
		{
			my ($pid, $start) = split /=/, $_, 2;
			$started{$pid} //= $start;
		}
		last if $over eq 't';
		sleep 0.02;
	}
	return ($max, \%started);
}

# 1. eight one-second jobs at one instant: eight backends, all at work
# before any run ends
my $super = admin('SELECT current_user');
schedule_burst(undef, 'a', 8, 1);
my ($max) = watch_backends($super, q{SELECT count(*) = 8 FROM schedlock.job_runs
	WHERE job_name LIKE 'a%' AND finished_at IS NOT NULL});
is( admin(q{SELECT count(*) FROM schedlock.job_runs
			 WHERE job_name LIKE 'a%' AND status = 'succeeded'}),
	'8', 'the eight runs succeeded');
is(admin(q{SELECT count(DISTINCT pid) FROM public.hits WHERE name LIKE 'a%'}),
	'8', 'each of the eight ran in a backend of its own');
my ($first_end, $last_start, $late) = split /\|/, admin(q{
	SELECT (SELECT min(finished_at) FROM schedlock.job_runs WHERE job_name LIKE 'a%'),
		   (SELECT max(at) FROM public.hits WHERE name LIKE 'a%'),
		   (SELECT count(*) FROM public.hits h
			 WHERE h.name LIKE 'a%'
			   AND h.at >= (SELECT min(finished_at) FROM schedlock.job_runs
							 WHERE job_name LIKE 'a%'))});
note "first run ended $first_end; last command started $last_start";
is($late, '0', 'every run of the instant started before any of them ended');
is( admin(q{SELECT count(*) FROM schedlock.job_runs
			 WHERE job_name LIKE 'a%' AND started_at < scheduled_for}),
	'0', 'none started before its instant');
is($max, 8, 'the role had eight job backends');

# 2. runs sharing a commit: 8 jobs at 4 per commit keep two backends busy,
# and both are there before the instant (a backend added only once the
# first has been busy for a while starts after it)
$node->append_conf('postgresql.conf', 'schedlock.runs_per_commit = 4');
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('schedlock.runs_per_commit') = '4'})
  or die 'the reload did not take';
schedule_burst('bob', 'c', 8, 0.2);
my $instant = admin(q{SELECT min(next_run_at) FROM schedlock.jobs WHERE job_name LIKE 'c%'});
my (undef, $started) = watch_backends('bob', q{
	SELECT count(*) = 8 FROM schedlock.job_runs
	 WHERE job_name LIKE 'c%' AND status = 'succeeded'});
is( admin(q{SELECT count(*) FROM schedlock.job_runs
			 WHERE job_name LIKE 'c%' AND status = 'succeeded'}),
	'8', 'the eight runs at 4 per commit succeeded');
my @ran = split /\|/, admin(q{
	SELECT string_agg(pid::text, '|' ORDER BY pid)
	  FROM (SELECT pid FROM public.hits WHERE name LIKE 'c%'
			 GROUP BY pid HAVING count(*) = 4) x});
is(scalar @ran, 2, 'they ran in two backends, four in each');
my $early = 0;
for my $pid (@ran)
{
	my $start = $started->{$pid} // 'infinity';
	note "backend $pid started $start, the instant is $instant";
	$early++ if admin("SELECT '$start'::timestamptz < '$instant'::timestamptz") eq 't';
}
is($early, 2, 'both backends had started before the instant');

$node->stop;
done_testing();
