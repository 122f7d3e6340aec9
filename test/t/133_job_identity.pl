# 133_job_identity.pl: schedlock's processes are identifiable in
# pg_stat_activity: the launcher and the job backends carry an
# application_name, an idle job backend waits on schedlock's own wait event
# where the server offers custom wait events (PostgreSQL 17+; "Extension"
# before), and a running job shows its name in the query column.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('job_identity',
	conf => [ "max_worker_processes = 32" ],
	app => 'extension');

$node->safe_psql('app', q{SELECT schedlock.schedule_job('quick job', '1 second', 'SELECT 1')});
ok($node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND datname = 'app'}),
	'a job backend serves database app');

is($node->safe_psql('app', q{
	SELECT string_agg(backend_type || ':' || application_name || ':' || usename, ','
					  ORDER BY backend_type)
	  FROM pg_stat_activity WHERE backend_type IN ('schedlock launcher', 'schedlock job')}),
	'schedlock job:schedlock job:postgres,schedlock launcher:schedlock launcher:postgres',
	'launcher and job backend carry an application_name; the backend is its role\'s');

my $version = $node->safe_psql('app', 'SHOW server_version_num');
my $event = $version >= 170000 ? 'SchedlockIdle' : 'Extension';
ok($node->poll_query_until('app', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND wait_event_type = 'Extension'
	   AND wait_event = '$event'}),
	"an idle job backend waits on wait event $event");
$node->safe_psql('app', q{SELECT schedlock.alter_job('quick job', enabled => false)});

$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('slow job', '1 second', 'SELECT pg_sleep(30)')});
ok($node->poll_query_until('app', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND state = 'active'
	   AND query = '/* schedlock job: slow job */ SELECT pg_sleep(30)'}),
	'a running job shows its name and command in pg_stat_activity.query');

like($node->safe_psql('app', q{
	SELECT string_agg(DISTINCT query, ',') FROM pg_stat_activity
	 WHERE backend_type = 'schedlock job' AND state = 'active'}),
	qr/^\/\* schedlock job: slow job \*\//, 'no other activity text while it runs');

# no alter_job of the slow job here: a run claimed after its instant (on a
# loaded machine) runs in its claim's transaction, which holds the job's row
# for its 30 s, and alter_job gives up after bookkeeping_lock_timeout
$node->stop;
done_testing();
