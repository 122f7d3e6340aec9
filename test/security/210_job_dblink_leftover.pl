# 210_job_dblink_leftover.pl: a dblink connection that one role's job
# leaves open reaches no job of another role.
#
# What it reproduces: atomic jobs of every role run, one after the other,
# in the dispatch worker's one session, and run_command.c cleans that session after
# each job from a fixed list (settings, temporary objects, cursors, locks,
# prepared statements).  An extension's session state is not on any such
# list: dblink keeps its named connections in the backend's memory, outside
# any transaction.  A superuser's job opens the connection "maint" to the
# server as the superuser and then fails before it disconnects; the next job
# in that worker, eve's, finds "maint" open and runs ALTER ROLE eve
# SUPERUSER through it.  (One worker, schedlock.workers = max_workers = 1,
# so that today both jobs run in the same session.)
#
# Intended behaviour: a job runs in a backend connected as its role, shared
# at most with later jobs of that same role, so eve's job finds no
# connection named "maint", fails, and eve stays an ordinary role.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedlockJobNode;

my $node = job_node('dblink_leftover');
if (admin(q{SELECT count(*) FROM pg_available_extensions WHERE name = 'dblink'}) eq '0')
{
	$node->stop;
	plan skip_all => 'dblink is not installed for this server (a PostgreSQL built without contrib/dblink)';
}
my $super = admin('SELECT current_user');
my $connstr = sprintf('dbname=postgres user=%s host=%s port=%d',
	$super, $node->host, $node->port);

admin(q{
	CREATE ROLE eve LOGIN;
	CREATE EXTENSION schedlock SCHEMA public;
	CREATE EXTENSION dblink SCHEMA public;
	GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO eve;
	GRANT INSERT ON schedlock.jobs TO eve;
});

# the superuser's maintenance job: opens "maint", then fails before it
# could call dblink_disconnect
admin(qq{
	SELECT schedlock.schedule_job('maintenance', '0 0 1 1 *',
		\$cmd\$SELECT dblink_connect('maint', '$connstr');
			   SELECT 1/0;
			   SELECT dblink_disconnect('maint')\$cmd\$)});
my $r = run_and_wait($super, 'maintenance');
like($r, qr/^failed\|22012\|/, "the superuser's job failed with division by zero ($r)");
my ($super_pid) = $r =~ /\|(\d*)$/;

# eve's job uses the connection by name
as_role('eve', q{
	SELECT schedlock.schedule_job('borrow', '0 0 1 1 *',
		$cmd$SELECT dblink_exec('maint', 'ALTER ROLE eve SUPERUSER')$cmd$)});
$r = run_and_wait('eve', 'borrow');
note("eve's run: $r (the superuser's ran in worker $super_pid)");
like($r, qr/^failed\|/, "eve's job fails: no connection named maint in eve's session");
is(admin(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'eve'}), 'f',
	'eve is still an ordinary role');

$node->stop;
done_testing();
