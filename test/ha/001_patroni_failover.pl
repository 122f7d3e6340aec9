# 001_patroni_failover.pl: schedlock under Patroni (Debian's patroni with a
# one-member etcd), a primary and a synchronous standby, both with
# shared_preload_libraries = 'schedlock'.  An every-second atomic SQL job
# writes its run's slot into a table, a non-atomic job sleeps in every run
# (so a run is in flight at any instant), a NOTIFY job's runs are claimed and
# finished by the test, and leases are taken before each event, the last
# one right before it.  Then:
#
#   1. kill -9 of the primary's postmaster: Patroni fails over
#      (primary_start_timeout = 0: no restart in place when a standby can
#      take over);
#   2. Patroni brings the old primary back as a standby (crash recovery,
#      pg_rewind when its WAL diverged);
#   3. a planned switchover back with patronictl;
#   4. kill -9 of the primary's postmaster 1.5 s after its walsender was
#      stopped (SIGSTOP): the runs claimed meanwhile were written on the
#      primary but never acknowledged, the standby never got them, and
#      Patroni has to rewind the old primary with pg_rewind.
#
# After each: the new primary runs the jobs about as soon after its
# promotion as node1 ran its first tick after the jobs were scheduled
# (failover times are printed), no slot runs twice across the two servers,
# no run of the old timeline stays open, every token handed out after it is
# greater than every token handed out before, and the standby runs nothing
# and writes nothing.  synchronous_mode makes "no slot runs twice" a
# guarantee: a claim's commit is acknowledged only once the standby has it,
# and Patroni promotes only the synchronous standby.
#
# Everything listens on 127.0.0.1 (and a Unix socket in a private directory)
# on ports picked here; etcd, both Patroni daemons and both servers are
# stopped at the end, also when the test dies.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

my ($patroni) = grep { -x $_ } map { "$_/patroni" } (split(/:/, $ENV{PATH} // ''), '/usr/bin');
my ($patronictl) = grep { -x $_ } map { "$_/patronictl" } (split(/:/, $ENV{PATH} // ''), '/usr/bin');
my ($etcd) = grep { -x $_ } map { "$_/etcd" } (split(/:/, $ENV{PATH} // ''), '/usr/bin');
plan skip_all =>
  'patroni and etcd are not installed (Debian packages patroni and etcd-server; test/run-all.sh installs them for the ha layer)'
  unless $patroni && $patronictl && $etcd;

my $bindir = $ENV{PG_BINDIR} // '/usr/lib/postgresql/15/bin';
my $base = PostgreSQL::Test::Utils::tempdir('ha');
my $sockdir = PostgreSQL::Test::Utils::tempdir_short();
my $logdir = $PostgreSQL::Test::Utils::log_path;
my $scope = 'schedlock_ha';

# the daemons running now; the END block stops them whatever happened
my ($etcd_run, %patroni_run);
my %node;    # name => { pgport, restport, dir, config }

END
{
	my $rc = $?;
	# Patroni stops its server on SIGTERM (both at once: no failover to a
	# member that is stopping too); kill_kill waits up to 30 s, then sends
	# SIGKILL, and a server left behind is stopped in immediate mode
	eval { $_->signal('TERM') } for values %patroni_run;
	$_->kill_kill(grace => 30) for values %patroni_run;
	for my $n (grep { $_->{dir} } values %node)
	{
		system("$bindir/pg_ctl", '-D', "$n->{dir}/data", '-m', 'immediate', '-w', 'stop')
		  if -f "$n->{dir}/data/postmaster.pid";
	}
	$etcd_run->kill_kill if $etcd_run;
	$? = $rc;
}
# a test ended by a signal stops them too
$SIG{$_} = sub { die "killed by SIG$_[0]\n" } for qw(INT TERM HUP);

# sql(NAME, SQL[, DB]): (exit status, stdout, stderr) of psql on node NAME
sub sql
{
	my ($name, $sql, $db) = @_;
	my ($out, $err) = ('', '');
	my $ok = eval {
		IPC::Run::run([ "$bindir/psql", '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
			'-h', '127.0.0.1', '-p', $node{$name}{pgport}, '-U', 'postgres',
			'-d', $db // 'app', '-c', $sql ],
			'<', \'', '>', \$out, '2>', \$err, IPC::Run::timeout(20));
	};
	chomp $out;
	return ($ok ? 0 : 1, $out, $err);
}

# safe(NAME, SQL[, DB]): its output; dies on error
sub safe
{
	my ($rc, $out, $err) = sql(@_);
	die "psql on $_[0] failed: $err (SQL: $_[1])" if $rc;
	return $out;
}

# is_primary(NAME): 't' (accepts writes), 'f' (in recovery), '' (down)
sub is_primary
{
	my ($rc, $out) = sql($_[0], 'SELECT NOT pg_is_in_recovery()', 'postgres');
	return $rc ? '' : $out;
}

# serve_notify(NAME): claim and finish the pending runs of the NOTIFY job
# on NAME, as an application would; errors (a server going away) ignored
sub serve_notify
{
	sql($_[0], q{
		SELECT count(*) FROM (SELECT r.run_id FROM schedlock.job_runs r
							   JOIN schedlock.jobs j USING (job_id)
							  WHERE j.job_name = 'ping' AND r.status = 'pending') p,
			   LATERAL schedlock_claim_run_payload(p.run_id, 'ha-test') c
		 WHERE c.claimed});
	sql($_[0], q{
		SELECT count(schedlock_finish_run(r.run_id, true))
		  FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = 'ping' AND r.status = 'running'});
}

# wait_for(SECONDS, CODE): call CODE every 100 ms (serving the NOTIFY job
# on the primary meanwhile) until it returns true; the time it took, or undef
sub wait_for
{
	my ($seconds, $code, $primary) = @_;
	my $t0 = time();
	while (time() - $t0 < $seconds)
	{
		return time() - $t0 if $code->();
		serve_notify($primary) if $primary;
		usleep(100_000);
	}
	return undef;
}

# work(NAME, SECONDS): let the primary NAME run its jobs, serving NOTIFY
sub work
{
	my ($name, $seconds) = @_;
	wait_for($seconds, sub { 0 }, $name);
}

my @tokens;    # every token handed out so far

# acquire(NAME, LEASE): a lease of an hour on NAME's server; its token
sub acquire
{
	my ($name, $lease) = @_;
	my $t = safe($name, "SELECT schedlock_acquire('$lease', '1 hour')");
	die "acquire of $lease returned NULL" if $t eq '';
	push @tokens, $t;
	return $t;
}

sub max_token
{
	my $m = 0;
	$_ > $m and $m = $_ for @tokens;
	return $m;
}

sub patroni_config
{
	my ($name) = @_;
	my $n = $node{$name};
	return qq{scope: $scope
name: $name
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$n->{restport}
  connect_address: 127.0.0.1:$n->{restport}
etcd3:
  hosts: 127.0.0.1:$node{etcd}{clientport}
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    maximum_lag_on_failover: 1048576
    primary_start_timeout: 0
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        shared_preload_libraries: schedlock
        max_worker_processes: 32
        wal_log_hints: 'on'
        synchronous_commit: 'on'
  initdb:
  - encoding: UTF8
  - auth: trust
postgresql:
  listen: 127.0.0.1:$n->{pgport}
  connect_address: 127.0.0.1:$n->{pgport}
  data_dir: $n->{dir}/data
  bin_dir: $bindir
  pgpass: $n->{dir}/pgpass
  basebackup:
  - checkpoint: fast
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
  parameters:
    unix_socket_directories: '$sockdir'
    logging_collector: 'on'
    log_directory: '$logdir'
    log_filename: 'ha_$name.log'
    log_line_prefix: '%m [%p] %e %q%a '
  pg_hba:
  - local all all trust
  - host all all 127.0.0.1/32 trust
  - host replication all 127.0.0.1/32 trust
};
}

sub start_patroni
{
	my ($name) = @_;
	my $n = $node{$name};
	mkdir $n->{dir};
	chmod 0700, $n->{dir};
	PostgreSQL::Test::Utils::append_to_file($n->{config}, patroni_config($name));
	$patroni_run{$name} = IPC::Run::start([ $patroni, $n->{config} ],
		'<', \'', '>>', "$logdir/patroni_$name.out", '2>&1');
}

sub patroni_list
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ $patronictl, '-c', $node{node1}{config}, 'list' ],
		'<', \'', '>', \$out, '2>', \$err, IPC::Run::timeout(20));
	return $out . $err;
}

# the postmaster's process id of node NAME
sub postmaster_pid
{
	my ($name) = @_;
	open my $fh, '<', "$node{$name}{dir}/data/postmaster.pid" or die "no postmaster.pid: $!";
	my $pid = <$fh>;
	close $fh;
	chomp $pid;
	die "no process id in the postmaster.pid of $name" unless $pid =~ /^[1-9][0-9]*$/;
	return $pid;
}

# a synchronous standby OTHER streams from PRIMARY
sub sync_standby
{
	my ($primary, $other) = @_;
	my ($rc, $out) = sql($primary, qq{
		SELECT count(*) FROM pg_stat_replication
		 WHERE application_name = '$other' AND state = 'streaming' AND sync_state = 'sync'},
		'postgres');
	return !$rc && $out eq '1';
}

# ---- set up: etcd, then node1 (bootstraps), then node2 (cloned)
$node{etcd} = { clientport => PostgreSQL::Test::Cluster::get_free_port(),
				peerport => PostgreSQL::Test::Cluster::get_free_port() };
for my $name (qw(node1 node2))
{
	$node{$name} = { pgport => PostgreSQL::Test::Cluster::get_free_port(),
					 restport => PostgreSQL::Test::Cluster::get_free_port(),
					 dir => "$base/$name",
					 config => "$base/$name.yml" };
}
my $etcd_peer = "http://127.0.0.1:$node{etcd}{peerport}";
my $etcd_client = "http://127.0.0.1:$node{etcd}{clientport}";
$etcd_run = IPC::Run::start([ $etcd, '--name', 'ha', '--data-dir', "$base/etcd",
	'--listen-client-urls', $etcd_client, '--advertise-client-urls', $etcd_client,
	'--listen-peer-urls', $etcd_peer, '--initial-advertise-peer-urls', $etcd_peer,
	'--initial-cluster', "ha=$etcd_peer", '--initial-cluster-state', 'new' ],
	'<', \'', '>>', "$logdir/etcd.out", '2>&1');

start_patroni('node1');
defined wait_for(120, sub { is_primary('node1') eq 't' })
  or die "node1 did not become primary:\n" . patroni_list();
safe('node1', 'CREATE DATABASE app', 'postgres');
# the bound for resuming after a promotion, measured here on this machine:
# how long after the jobs are scheduled the first tick runs (the next
# whole second, then a job backend that starts and claims it)
my $scheduled = time();
safe('node1', q{
	CREATE EXTENSION schedlock;
	CREATE TABLE ticks (run_id bigint PRIMARY KEY, scheduled_for timestamptz NOT NULL,
						port int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
	-- the run and its slot as the job backend shows them to the command
	SELECT schedlock.schedule_job('tick', '1 second', $$
		INSERT INTO ticks (run_id, scheduled_for, port)
		VALUES (current_setting('schedlock.run_id')::bigint,
				current_setting('schedlock.scheduled_for')::timestamptz,
				current_setting('port')::int)$$);
	SELECT schedlock.schedule_job('slow', '1 second', 'SELECT pg_sleep(0.7)', atomic => false);
	SELECT schedlock.schedule_job(job_name => 'ping', schedule => '1 second',
						notify_channel => 'ping', timeout => '3 seconds');
});
defined wait_for(60, sub { safe('node1', 'SELECT count(*) > 0 FROM ticks') eq 't' }, 'node1')
  or die 'node1 does not run the tick job';
my $first_tick = time() - $scheduled;
diag(sprintf('node1 ran the first tick %.2f s after the jobs were scheduled', $first_tick));
start_patroni('node2');
defined wait_for(180, sub { sync_standby('node1', 'node2') }, 'node1')
  or die "node2 did not become a synchronous standby:\n" . patroni_list();
pass('Patroni runs node1 as primary and node2 as its synchronous standby');
work('node1', 4);
cmp_ok(safe('node1', 'SELECT count(*) FROM ticks'), '>=', 2, 'the primary runs the jobs');

# check_standby(STANDBY, PRIMARY, WHAT): the standby runs and writes nothing
sub check_standby
{
	my ($standby, $primary, $what) = @_;
	my $since = safe($standby, 'SELECT now()');
	work($primary, 3);
	is(is_primary($standby), 'f', "$what: $standby is in recovery");
	is(safe($standby, q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'schedlock%'}),
		'0', "$what: $standby runs no schedlock launcher, job backend or housekeeper");
	my $lsn = safe($primary, 'SELECT pg_current_wal_lsn()', 'postgres');
	wait_for(30, sub {
		safe($standby, "SELECT pg_last_wal_replay_lsn() >= '$lsn'", 'postgres') eq 't' });
	my $port = $node{$standby}{pgport};
	is(safe($standby, "SELECT count(*) FROM ticks WHERE port = $port AND at >= '$since'"),
		'0', "$what: no run on $standby since it rejoined");
	# the standby first: a commit it has replayed shows on the primary once
	# the primary has its acknowledgement, a moment later
	my @on_standby = split /\n/, safe($standby, 'SELECT run_id FROM ticks');
	my @extra;
	wait_for(10, sub {
		my %on_primary = map { $_ => 1 } split /\n/, safe($primary, 'SELECT run_id FROM ticks');
		@extra = grep { !$on_primary{$_} } @on_standby;
		return !@extra;
	}, $primary);
	is("@extra", '', "$what: $standby holds no run the primary has not");
}

# check_runs(PRIMARY, OLD_TIMELINE, WHAT): no slot twice, no run left open
sub check_runs
{
	my ($primary, $old_tl, $what) = @_;
	my $closed = wait_for(30, sub {
		safe($primary, qq{
			SELECT count(*) = 0 FROM schedlock.job_runs
			 WHERE status IN ('queued', 'pending', 'running') AND timeline <= $old_tl}) eq 't' },
		$primary);
	ok(defined $closed, "$what: no run of the old timeline stays open");
	diag("$what: runs of the old timeline by status: " . safe($primary, qq{
		SELECT string_agg(job_name || ' ' || status || ' ' || n, ', ' ORDER BY job_name, status)
		  FROM (SELECT j.job_name, r.status, count(*) n FROM schedlock.job_runs r
				  JOIN schedlock.jobs j USING (job_id)
				 WHERE r.timeline <= $old_tl GROUP BY 1, 2) s}));
	is(safe($primary, q{
		SELECT count(*) FROM (SELECT job_id, scheduled_for FROM schedlock.job_runs
							   WHERE status = 'succeeded' GROUP BY 1, 2 HAVING count(*) > 1) d}),
		'0', "$what: no slot of any job succeeded twice");
	is(safe($primary, q{
		SELECT count(*) FROM (SELECT scheduled_for FROM ticks GROUP BY 1 HAVING count(*) > 1) d}),
		'0', "$what: no slot's command committed twice (ticks)");
	is(safe($primary, q{
		SELECT count(*) FROM ticks t LEFT JOIN schedlock.job_runs r USING (run_id)
		 WHERE r.status IS DISTINCT FROM 'succeeded' OR r.scheduled_for <> t.scheduled_for}),
		'0', "$what: every tick is a succeeded run of its slot");
	is(safe($primary, q{
		SELECT count(*) FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = 'tick' AND r.status = 'succeeded'
		   AND NOT EXISTS (SELECT FROM ticks t WHERE t.run_id = r.run_id)}),
		'0', "$what: every succeeded run of the tick job has its tick");
}

# take_over(OLD, NEW, WHAT, ACTION): run ACTION (which makes NEW the
# primary and returns the time the event started), measure how long until
# NEW accepts writes and runs the jobs
sub take_over
{
	my ($old, $new, $what, $action) = @_;
	my $old_tl = safe($old, 'SELECT max(timeline) FROM schedlock.job_runs');
	acquire($old, "$what-$_") for 1 .. 3;
	my $before = max_token();
	my $t0 = $action->();
	my $promoted = wait_for(60, sub { is_primary($new) eq 't' });
	ok(defined $promoted, "$what: Patroni made $new the primary")
	  or diag(patroni_list());
	$promoted = defined $promoted ? time() - $t0 : 99;
	my $resumed = wait_for(60, sub {
		safe($new, qq{SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
					   WHERE j.job_name = 'tick' AND r.status = 'succeeded'
						 AND r.timeline > $old_tl}) eq 't' }, $new);
	$resumed = defined $resumed ? time() - $t0 : 99;
	diag(sprintf('%s: %s accepted writes %.2f s after the start, ran the jobs at %.2f s',
		$what, $new, $promoted, $resumed));
	# a slot (1 s) and twice the first tick's latency: a launcher that
	# waited for a nap, a poll or a second start would exceed it
	cmp_ok($resumed, '<=', $promoted + 1 + 2 * $first_tick,
		sprintf('%s: the jobs run on the new primary about as soon as the first tick ran (%.2f s after %.2f s; bound %.2f s)',
			$what, $resumed, $promoted, $promoted + 1 + 2 * $first_tick));
	my @after = map { acquire($new, "$what-after-$_") } 1 .. 3;
	my @small = grep { $_ <= $before } @after;
	is(scalar(@small), 0,
		"$what: tokens after it (@after) are greater than every token before ($before)");
	return ($old_tl, $promoted);
}

# ---- 1. kill -9 of the primary's postmaster
my ($tl, $t) = take_over('node1', 'node2', 'failover', sub {
	acquire('node1', 'failover-last');
	kill 'KILL', postmaster_pid('node1');
	return time();
});
my $rejoined = wait_for(120, sub { sync_standby('node2', 'node1') }, 'node2');
ok(defined $rejoined, 'Patroni brings node1 back as the synchronous standby')
  or diag(patroni_list());
diag(sprintf('failover: node1 streamed again as synchronous standby %.2f s after node2 took over',
	$rejoined // 99));
my $patroni_log = slurp_file("$logdir/patroni_node1.out");
diag('node1 ' . ($patroni_log =~ /running pg_rewind/ ? 'was rewound with pg_rewind'
	: 'needed no pg_rewind (its WAL had not diverged)'));
check_runs('node2', $tl, 'failover');
check_standby('node1', 'node2', 'failover');

# ---- 2. planned switchover back to node1
($tl, $t) = take_over('node2', 'node1', 'switchover', sub {
	acquire('node2', 'switchover-last');
	my ($out, $err) = ('', '');
	my $t0 = time();
	IPC::Run::run([ $patronictl, '-c', $node{node1}{config}, 'switchover', '--leader', 'node2',
		'--candidate', 'node1', '--force', $scope ], '<', \'', '>', \$out, '2>', \$err,
		IPC::Run::timeout(120)) or diag("patronictl switchover: $out $err");
	diag(sprintf('switchover: patronictl switchover returned after %.2f s', time() - $t0));
	return $t0;
});
$rejoined = wait_for(120, sub { sync_standby('node1', 'node2') }, 'node1');
ok(defined $rejoined, 'after the switchover node2 is the synchronous standby')
  or diag(patroni_list());
diag(sprintf('switchover: node2 streamed again as synchronous standby %.2f s after node1 took over',
	$rejoined // 99));
check_runs('node1', $tl, 'switchover');
check_standby('node2', 'node1', 'switchover');

# ---- 4. kill -9 with WAL the standby never got
my $walsender = safe('node1',
	q{SELECT pid FROM pg_stat_replication WHERE application_name = 'node2'}, 'postgres');
die "no walsender for node2 on node1: '$walsender'" unless $walsender =~ /^[1-9][0-9]*$/;
my $rewinds = () = slurp_file("$logdir/patroni_node1.out") =~ /running pg_rewind/g;
($tl, $t) = take_over('node1', 'node2', 'unreplicated', sub {
	acquire('node1', 'unreplicated-last');
	# commits now wait for the standby: claims of runs are written meanwhile
	kill 'STOP', $walsender;
	usleep(1_500_000);
	kill 'KILL', postmaster_pid('node1'), $walsender;
	return time();
});
$rejoined = wait_for(120, sub { sync_standby('node2', 'node1') }, 'node2');
ok(defined $rejoined, 'unreplicated: Patroni brings node1 back as the synchronous standby')
  or diag(patroni_list());
diag(sprintf('unreplicated: node1 streamed again as synchronous standby %.2f s after node2 took over',
	$rejoined // 99));
my $rewound = () = slurp_file("$logdir/patroni_node1.out") =~ /running pg_rewind/g;
cmp_ok($rewound, '>', $rewinds, 'unreplicated: Patroni rewound node1 with pg_rewind');
check_runs('node2', $tl, 'unreplicated');
check_standby('node1', 'node2', 'unreplicated');

done_testing();
