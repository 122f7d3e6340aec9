# 132_import_race.pl: schedlock_import_pg_cron() racing schedlock.schedule_job() of
# the same name.  The import looks for a schedlock job of the pg_cron job's
# name and, finding none, creates it through schedule_job's upsert.  When
# another session has scheduled a job of that name and not yet committed,
# the import does not see it, its upsert waits for that session, and then
# replaced the other session's definition with pg_cron's, reporting
# "created".  The import must leave a job created meanwhile alone and say
# so, like one it finds (c of 130_import_pg_cron.pl).  Two imports at once
# create the job once: the second reports it as existing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = schedlock_node('import_race',
	preload => [ 'schedlock', 'pg_cron' ],
	conf => [ "cron.database_name = 'app'", "schedlock.timezone = 'UTC'" ]);
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE EXTENSION pg_cron');
$node->safe_psql('app', 'CREATE EXTENSION schedlock');
$node->safe_psql('app', q{
	SELECT cron.schedule('nightly', '0 3 * * *', 'SELECT 1');
	SELECT cron.schedule('hourly', '0 * * * *', 'SELECT 2');
});

# wait until a backend running a query like $pattern waits for a lock
sub wait_for_lock
{
	my ($pattern) = @_;
	$node->poll_query_until('app', qq{
		SELECT count(*) > 0 FROM pg_stat_activity
		 WHERE query LIKE '$pattern' AND wait_event_type = 'Lock'})
	  or die "no backend running $pattern waits for a lock";
}

# --- schedule_job of the same name, not yet committed, then the import
my $other = $node->background_psql('app');
$other->query_safe(q{BEGIN; SELECT schedlock.schedule_job('nightly', '0 4 * * *', 'SELECT 42');});
my $import = $node->background_psql('app');
$import->query_until(qr/start/, q{\echo start
SELECT string_agg(action || ':' || cron_jobname, ',' ORDER BY cron_jobid)
  FROM schedlock_import_pg_cron(dry_run => false);
});
wait_for_lock('%schedlock_import_pg_cron%');
$other->query_safe('COMMIT');
$other->quit;
my $result = $import->query_safe(q{SELECT 'done'});
$import->quit;
like($result, qr/skip:nightly,created:hourly/,
	'the import skips the job another session scheduled meanwhile');
is($node->safe_psql('app', q{
	SELECT schedule || '|' || command FROM schedlock.jobs WHERE job_name = 'nightly'}),
	'0 4 * * *|SELECT 42', 'the other session\'s job keeps its definition');
is($node->safe_psql('app', q{SELECT count(*) FROM schedlock.jobs}),
	'2', 'one job per name');

# --- two imports at once
$node->safe_psql('app', q{SELECT schedlock.unschedule_job('nightly'), schedlock.unschedule_job('hourly')});
my $first = $node->background_psql('app');
$first->query_safe(q{BEGIN;
SELECT string_agg(action || ':' || cron_jobname, ',' ORDER BY cron_jobid)
  FROM schedlock_import_pg_cron(dry_run => false);});
my $second = $node->background_psql('app');
$second->query_until(qr/start/, q{\echo start
SELECT string_agg(action || ':' || cron_jobname, ',' ORDER BY cron_jobid)
  FROM schedlock_import_pg_cron(dry_run => false);
});
wait_for_lock('%schedlock_import_pg_cron%');
$first->query_safe('COMMIT');
$first->quit;
$result = $second->query_safe(q{SELECT 'done'});
$second->quit;
like($result, qr/exists:nightly,exists:hourly/,
	'the second of two concurrent imports finds the jobs the first created');
is($node->safe_psql('app', q{
	SELECT string_agg(job_name || '|' || schedule || '|' || command, ',' ORDER BY job_name)
	  FROM schedlock.jobs}),
	'hourly|0 * * * *|SELECT 2,nightly|0 3 * * *|SELECT 1', 'each job once, as pg_cron has it');

$node->stop;
done_testing();
