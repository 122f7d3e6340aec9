# 147_job_unclaimed_warning.pl: the WARNING that a due job "could not be
# claimed" names a row lock as its cause only when the job's row is locked.
#
# One job backend for the cluster (schedlock.max_job_backends = 1), so that
# the launcher asks a busy role's backend to make room for another role.
# alice's backend runs her 14 s job while her every-second job waits behind
# it (one backend per role); bob's job falls due meanwhile, the launcher
# asks alice's backend to make room, and once her long run has ended that
# backend leaves before claiming her every-second job, which has been due
# for more than 10 s by then.  Nothing holds that job's row: no WARNING may
# say so (one did, with the detail "Another transaction holds a lock on its
# row").  A transaction that does hold the row FOR UPDATE still draws the
# WARNING (test/t/115_job_claim_lock.pl).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('unclaimed_warning',
	conf => [ "max_worker_processes = 16\nschedlock.max_job_backends = 1\nschedlock.max_runs_per_role = 1" ],
	app => 'extension');
$node->safe_psql('app', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT INSERT ON schedlock.jobs TO alice, bob;
	CREATE TABLE public.ran (who text, at timestamptz DEFAULT clock_timestamp());
	GRANT INSERT ON public.ran TO alice, bob;
});
my $offset = -s $node->logfile;
$node->safe_psql('app', q{SELECT schedlock.schedule_job('long', '@daily',
	$$INSERT INTO public.ran (who) VALUES ('long'); SELECT pg_sleep(14)$$, atomic => false)},
	extra_params => [ '-U', 'alice' ]);
$node->safe_psql('app', q{SELECT schedlock.schedule_job('tick', '1 second',
	$$INSERT INTO public.ran (who) VALUES ('tick')$$)}, extra_params => [ '-U', 'alice' ]);
# the long run first, then bob's job falls due while it runs
$node->safe_psql('app', q{SELECT schedlock.run_job('long')}, extra_params => [ '-U', 'alice' ]);
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM public.ran WHERE who = 'long'})
  or die 'the long run did not start';
$node->safe_psql('app', q{SELECT schedlock.schedule_job('bobs', '1 second',
	$$INSERT INTO public.ran (who) VALUES ('bob')$$)}, extra_params => [ '-U', 'bob' ]);

# bob's job runs once the long run has ended and alice's backend made room
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM public.ran WHERE who = 'bob'})
  or die 'bob\'s job never ran';
ok(1, 'bob\'s job ran once alice\'s backend made room');
my $finished = $node->safe_psql('app', q{SELECT count(*) FROM schedlock.job_runs
	WHERE job_name = 'long' AND status = 'succeeded'});
is($finished, '1', 'after alice\'s long run had ended');
# alice's every-second job runs again later, in the budget's turns
$node->poll_query_until('app', q{SELECT count(*) > 0 FROM public.ran
	WHERE who = 'tick' AND at > (SELECT min(at) FROM public.ran WHERE who = 'bob')})
  or die 'alice\'s every-second job never ran again';

my $log = slurp_file($node->logfile, $offset);
my @lockwarn = ($log =~ /(Another transaction holds a lock on its row[^\n]*)/g);
is(scalar(@lockwarn), 0, 'no WARNING blamed a row lock nobody held')
  or diag(join("\n", @lockwarn));

$node->stop;
done_testing();
