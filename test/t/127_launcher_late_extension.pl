# 127_launcher_late_extension.pl: CREATE EXTENSION that commits while a
# housekeeper of the same database is finding no extension there is not
# lost.
#
# What it reproduces: a housekeeper looks for the extension, finds none
# (CREATE EXTENSION has not committed yet) and exits.  CREATE EXTENSION
# then commits and asks the launcher to probe the database again.  When the
# launcher takes that request before it has reaped the housekeeper (both
# wake it; one pass takes probe requests first and reaps after), the reaped
# housekeeper's finding overwrites the newer request: the database is
# marked as having no extension and its jobs never run (until a reload or
# another CREATE DATABASE).  213_job_many_databases met it by chance (the
# last of 8 databases ran nothing in 15 s).
#
# The test makes that order certain: the housekeeper is held on a lock
# before it looks, the launcher is stopped (SIGSTOP) while the housekeeper
# looks and exits, CREATE EXTENSION commits, and the launcher goes on.
#
# Intended behaviour: the database's "1 seconds" job runs, and
# cluster_status() shows the database with the extension.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('late_extension');
admin('CREATE EXTENSION schedlock');
my $launcher_pid;

# the launcher must not stay stopped whatever happens below
END
{
	kill('CONT', $launcher_pid) if $launcher_pid;
}

sub status
{
	my ($db) = @_;
	return admin(qq{
		SELECT coalesce(has_extension::text, 'unknown') || '|' || housekeepers
		  FROM schedlock.cluster_status() WHERE datname = '$db'});
}

# a database without the extension, and the launcher has seen that
$node->safe_psql('postgres', 'CREATE DATABASE late');
ok(wait_for(q{SELECT count(*) = 1 FROM schedlock.cluster_status()
			   WHERE datname = 'late' AND has_extension = false AND housekeepers = 0}),
	'the launcher found no extension in database late');

# CREATE EXTENSION and a job, not yet committed
my $ext = $node->background_psql('late');
$ext->query_safe(q{
	BEGIN;
	CREATE EXTENSION schedlock SCHEMA public;
	CREATE TABLE public.ticks (ts timestamptz);
	SELECT schedlock.schedule_job('tick', '1 seconds',
								  'INSERT INTO public.ticks SELECT clock_timestamp()');
});

# pg_extension locked by another session (CREATE EXTENSION does not keep its
# lock on the catalog until commit); the housekeeper's look for the
# extension will wait for it
my $blocker = $node->background_psql('late');
$blocker->query_safe(q{
	BEGIN;
	LOCK TABLE pg_catalog.pg_extension IN ACCESS EXCLUSIVE MODE;
});

# CREATE DATABASE has every database probed: a housekeeper for late, which
# waits to look at pg_extension
$node->safe_psql('postgres', 'CREATE DATABASE other');
ok( wait_for(q{SELECT count(*) = 1 FROM pg_stat_activity
			 WHERE datname = 'late' AND backend_type = 'schedlock housekeeper'
			   AND wait_event_type = 'Lock'}),
	'a housekeeper of database late waits to look for the extension');

# stop the launcher; let the housekeeper look (no extension yet) and exit
$launcher_pid = admin(q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'schedlock launcher'});
like($launcher_pid, qr/^\d+$/, 'the launcher runs');
ok(kill('STOP', $launcher_pid), 'the launcher is stopped');
$blocker->query_safe('ROLLBACK');
ok( wait_for(q{SELECT count(*) = 0 FROM pg_stat_activity
			 WHERE datname = 'late' AND backend_type = 'schedlock housekeeper'}),
	'the housekeeper looked and exited while the launcher was stopped');

# CREATE EXTENSION commits (it asks for a probe), then the launcher goes on
$ext->query_safe('COMMIT');
$ext->quit;
$blocker->quit;
ok(kill('CONT', $launcher_pid), 'the launcher goes on');
$launcher_pid = undef;

ok( wait_true($node, 'late', 'SELECT count(*) >= 2 FROM public.ticks', 20),
	'the job of database late runs');
is(status('late') =~ s/\|.*//r, 'true',
	'cluster_status() shows the extension in database late');

$node->stop;
done_testing();
