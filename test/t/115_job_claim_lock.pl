# 115_job_claim_lock.pl: what a lock on a job's row does to its runs.
#   An application table with a foreign key to schedlock.jobs: an open
#     transaction that inserted a row referencing a job (its check holds
#     the job's row FOR KEY SHARE) does not stop the job from running.
#   A transaction that holds the job's row FOR UPDATE does stop it; after
#     10 s its job backend logs one WARNING that names the job, its role and
#     its database, and no second one for the same due time however long
#     the lock is held; once the lock goes, the job runs again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SchedlockJobNode;

my $node = job_node_conf('claim_lock', "max_worker_processes = 16\n");
admin(q{
	CREATE EXTENSION schedlock SCHEMA public;
	CREATE ROLE ticker LOGIN;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO ticker;
	GRANT INSERT ON schedlock.jobs TO ticker;
	CREATE TABLE public.ticks (at timestamptz);
	GRANT INSERT, SELECT ON public.ticks TO ticker;
	CREATE TABLE public.job_notes (job_id bigint REFERENCES schedlock.jobs (job_id), note text);
});
as_role('ticker', q{SELECT schedlock.schedule_job('tick', '1 second',
	'INSERT INTO public.ticks VALUES (clock_timestamp())')});
$node->poll_query_until('app', 'SELECT count(*) >= 2 FROM public.ticks')
  or die 'the job does not run';

my $ticks = sub { admin('SELECT count(*) FROM public.ticks') };

# a foreign-key check's FOR KEY SHARE lock on the job's row, held until the
# job has run three more times (at most the TAP timeout, 180 s)
my $app = $node->background_psql('app');
$app->query_safe(q{BEGIN;
	INSERT INTO public.job_notes
	SELECT job_id, 'held' FROM schedlock.jobs WHERE job_name = 'tick'});
my $n0 = $ticks->();
my $ran = $node->poll_query_until('app',
	"SELECT count(*) >= $n0 + 3 FROM public.ticks");
my $n1 = $ticks->();
$app->query_safe('COMMIT');
ok($ran,
	'a transaction holding the job\'s row FOR KEY SHARE does not stop it (' . ($n1 - $n0) . ' runs while it was held)');

# FOR UPDATE, held until the WARNING (after 10 s due) and four more of the
# backend's looks at its unclaimed jobs (one a second) by the server's clock
my $offset = -s $node->logfile;
$app->query_safe(q{BEGIN;
	SELECT job_id FROM schedlock.jobs WHERE job_name = 'tick' FOR UPDATE});
$n0 = $ticks->();
$node->wait_for_log(qr/WARNING:  schedlock job "tick" [^\n]*could not be claimed/, $offset);
my $warned_at = admin('SELECT clock_timestamp()');
ok($node->poll_query_until('app', qq{
	SELECT clock_timestamp() >= '$warned_at'::timestamptz + interval '4 seconds'}),
	'the lock is held four seconds past the WARNING');
$n1 = $ticks->();
is($n1 - $n0, 0, 'a transaction holding the job\'s row FOR UPDATE stops it');
my $log = slurp_file($node->logfile, $offset);
my @warnings = ($log =~ /WARNING:  (schedlock job "tick" [^\n]*)/g);
is(scalar(@warnings), 1, 'one WARNING while the lock is held');
like($warnings[0] // '',
	qr/^schedlock job "tick" of role "ticker" in database "app" has been due for \d+ s and could not be claimed$/,
	'it names the job, its role and its database');
like($log, qr/DETAIL:  Another transaction holds a lock on its row of schedlock\.jobs \(job_id \d+\)\./,
	'its detail says why');
$app->query_safe('COMMIT');
$app->quit;
$node->poll_query_until('app', "SELECT count(*) > $n1 FROM public.ticks")
  or die 'the job does not run again';
pass('the job runs again once the lock is gone');

$node->stop;
done_testing();
