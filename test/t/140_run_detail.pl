# 140_run_detail.pl: what a run tells the DBA (issue 13, src/sched/runlog.c).
#  (a) schedlock.job_runs: a failed atomic run keeps the error's SQLSTATE,
#      message, DETAIL and HINT; result_status is the last statement's
#      command tag as psql prints it (INSERT 0 5, VACUUM); notices holds the
#      NOTICE / INFO / WARNING output of the job's command, also what it
#      raises as another role (a SECURITY DEFINER function), of atomic and
#      non-atomic runs, bounded by schedlock.max_notice_bytes with a marker
#      that says exactly how much was cut, and nothing once it is 0;
#      duration = finished_at - started_at for succeeded and failed runs,
#      for a lost run, and for a NOTIFY run finished by schedlock_finish_run;
#  (b) the server log: NOTICE and INFO of jobs do not reach it (WARNING
#      does, as before); the worker and launcher starts are not logged at
#      LOG; schedlock.log_runs = failures (default) logs each failed run
#      once with its SQLSTATE (a lost run with its job and run id), all adds
#      succeeded runs with their duration,
#      none logs no run; schedlock.log_statement logs each command before it
#      runs; changes take effect in the workers on reload.  Each line
#      names the job, the role it runs as and its database, and a job
#      backend fills %u, %d and %a of log_line_prefix like a login.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SchedlockNode;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = schedlock_node('run_detail',
	conf => [
		"max_worker_processes = 32",
		"schedlock.max_notice_bytes = '1kB'" ],
	app => 'extension');
my $su = $node->safe_psql('app', 'SELECT current_user');

$node->safe_psql('app', q{
	CREATE ROLE tenant LOGIN;
	CREATE TABLE t (i int);
	GRANT ALL ON t TO tenant;
	CREATE FUNCTION chat() RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		RAISE NOTICE 'notice from chat' USING DETAIL = 'notice detail';
		RAISE INFO 'info from chat';
		RAISE WARNING 'warning from chat' USING HINT = 'warning hint';
	END $$;
	CREATE FUNCTION fail() RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		RAISE EXCEPTION 'job failed on purpose'
			USING DETAIL = 'the detail of it', HINT = 'the hint of it';
	END $$;
	CREATE FUNCTION chatty() RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		FOR i IN 1..100 LOOP
			RAISE NOTICE 'line % %', i, repeat('y', 50);
		END LOOP;
	END $$;
	CREATE FUNCTION as_owner() RETURNS void LANGUAGE plpgsql
	SECURITY DEFINER SET search_path = pg_catalog AS $$
	BEGIN
		RAISE NOTICE 'raised as %', current_user;
	END $$;
});

# the newest finished run of a job, columns joined by |
sub last_run
{
	my ($job, $cols) = @_;
	return $node->safe_psql('app', qq{
		SELECT $cols FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.finished_at IS NOT NULL
		 ORDER BY r.run_id DESC LIMIT 1});
}

# wait until job $job has a run that started after $since and finished
sub wait_run_after
{
	my ($job, $since) = @_;
	$node->poll_query_until('app', qq{
		SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.started_at > '$since'
		   AND r.finished_at IS NOT NULL})
	  or die "job $job did not run after $since";
}

my $log_start = -s $node->logfile;
my $t0 = $node->safe_psql('app', 'SELECT clock_timestamp()');
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('ins', '1 seconds',
		$$SELECT chat(); INSERT INTO t SELECT generate_series(1, 5)$$);
	SELECT schedlock.schedule_job('fail', '1 seconds', 'SELECT fail()');
	SELECT schedlock.schedule_job('chatty', '1 seconds', 'SELECT chatty()');
	SELECT schedlock.schedule_job('definer', '1 seconds', 'SELECT as_owner()', run_as => 'tenant');
	SELECT schedlock.schedule_job('na', '1 seconds', 'SELECT chat(); VACUUM t', atomic => false);
	SELECT schedlock.schedule_job('na_fail', '1 seconds', 'SELECT 1; SELECT fail()', atomic => false);
	-- a superuser's job that sets log_min_messages: the worker's setting
	-- is back to what it was after the run (else the NOTICEs of later runs
	-- would reach the log)
	SELECT schedlock.schedule_job('setter', '1 seconds', $$SET log_min_messages = 'notice'; SELECT 1$$);
});
wait_run_after($_, $t0) for qw(ins fail chatty definer na na_fail setter);
my $t0b = $node->safe_psql('app', 'SELECT clock_timestamp()');
wait_run_after($_, $t0b) for qw(ins setter);

# --- (a) job_runs ---
my $chat_out = "NOTICE:  notice from chat\nDETAIL:  notice detail\n"
  . "INFO:  info from chat\n"
  . "WARNING:  warning from chat\nHINT:  warning hint\n";

is(last_run('ins', q{status, result_status, notices, sqlstate IS NULL AND detail IS NULL}),
	"succeeded|INSERT 0 5|$chat_out|t",
	'an atomic run: INSERT 0 5, and its NOTICE, INFO and WARNING output in order');
is(last_run('fail', q{status, sqlstate, message, detail, hint, result_status IS NULL, notices IS NULL}),
	'failed|P0001|job failed on purpose|the detail of it|the hint of it|t|t',
	'a failed atomic run keeps SQLSTATE, message, DETAIL and HINT');
is(last_run('na', q{status, result_status, notices}),
	"succeeded|VACUUM|$chat_out",
	'a non-atomic run: the tag of its last statement and its output');
is(last_run('na_fail', q{status, sqlstate, detail, hint, result_status IS NULL}),
	'failed|P0001|the detail of it|the hint of it|t',
	'a failed non-atomic run keeps DETAIL and HINT');
is(last_run('definer', q{status, result_status, notices}),
	"succeeded|SELECT 1|NOTICE:  raised as $su\n",
	'what the job raises as another role (SECURITY DEFINER) is its output');

# chatty raises 100 lines; 1kB of them are kept, and the marker counts the rest
my $full = join('', map { "NOTICE:  line $_ " . ('y' x 50) . "\n" } 1 .. 100);
my $notices = last_run('chatty', 'notices');
my ($kept, $cut_bytes, $cut_msgs) =
  ($notices =~ /\A(.*?)\n?\[schedlock: (\d+) more bytes of (\d+) messages cut \(schedlock\.max_notice_bytes\)\]\z/s);
ok(defined $kept, 'output beyond schedlock.max_notice_bytes ends with the cut marker')
  or diag($notices);
is(length($kept), 1024, 'the first 1024 bytes (1kB) are kept');
is($kept, substr($full, 0, 1024), 'what is kept is the first messages, in order');
is($cut_bytes, length($full) - 1024, 'the marker says how many bytes were cut');
my $whole = () = substr($full, 0, 1024) =~ /\n/g;
is($cut_msgs, 100 - $whole, 'and of how many messages');

is($node->safe_psql('app', q{
	SELECT count(*) FILTER (WHERE duration IS NULL
							OR duration <> finished_at - started_at
							OR duration < interval '0'),
		   count(*)
	  FROM schedlock.job_runs WHERE status IN ('succeeded', 'failed')}) =~ /^0\|(\d+)$/ && $1 >= 6,
	1, 'every succeeded and failed run has duration = finished_at - started_at');

# a NOTIFY run finished by the application
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('nt', '0 0 1 1 *', notify_channel => 'nt_due', timezone => 'UTC')});
my $run = $node->safe_psql('app', q{SELECT schedlock.run_job('nt')});
$node->poll_query_until('app', qq{
	SELECT status = 'pending' FROM schedlock.job_runs WHERE run_id = $run})
  or die 'run_job did not notify';
$node->safe_psql('app', qq{SELECT schedlock_claim_run($run, 'app-1')});
usleep(200_000);
$node->safe_psql('app', qq{SELECT schedlock_finish_run($run, true, 'done')});
is($node->safe_psql('app', qq{
	SELECT status, duration = finished_at - started_at, duration >= interval '0.2 seconds'
	  FROM schedlock.job_runs WHERE run_id = $run}),
	'succeeded|t|t', 'a NOTIFY run finished by schedlock_finish_run has its duration');

# --- (b) the server log under the defaults ---
my $log = slurp_file($node->logfile, $log_start);
unlike($log, qr/notice from chat|info from chat|raised as|line 1 y/,
	'NOTICE and INFO output of jobs does not reach the server log (also after a job SET log_min_messages)');
like($log, qr/WARNING:  warning from chat/, 'a WARNING of a job still does, as before');
my $all = slurp_file($node->logfile);
unlike($all, qr/LOG:  schedlock (?:worker \d+ for database \w+|launcher) started/,
	'worker and launcher starts are not logged at LOG');
my $fail_run = last_run('fail', 'run_id');
my @lines = ($log =~ /^.*LOG:  schedlock job "fail" of role "\w+" in database "app" run $fail_run failed: SQLSTATE P0001: job failed on purpose$/mg);
is(scalar @lines, 1, 'log_runs = failures: a failed run is logged once, with SQLSTATE and message');
like($log, qr/LOG:  schedlock job "na_fail" of role "\w+" in database "app" run \d+ failed: SQLSTATE P0001: job failed on purpose/,
	'so is a failed non-atomic run');
unlike($log, qr/schedlock job "\w+" .*run \d+ (?:succeeded|statement)/,
	'no line for succeeded runs, nor statements');

# a lost run: its worker is terminated while the job sleeps (non-atomic:
# an atomic run shows as running only once it has ended)
$node->safe_psql('app', q{
	SELECT schedlock.schedule_job('stuck', '0 0 1 1 *', 'SELECT pg_sleep(60)', timezone => 'UTC', atomic => false)});
my $stuck = $node->safe_psql('app', q{SELECT schedlock.run_job('stuck')});
$node->poll_query_until('app', qq{
	SELECT status = 'running' FROM schedlock.job_runs WHERE run_id = $stuck})
  or die 'the stuck job did not start';
$node->safe_psql('app', qq{
	SELECT pg_terminate_backend(worker_pid) FROM schedlock.job_runs WHERE run_id = $stuck});
$node->poll_query_until('app', qq{
	SELECT status = 'lost' FROM schedlock.job_runs WHERE run_id = $stuck})
  or die 'the stuck run was not closed as lost';
is($node->safe_psql('app', qq{
	SELECT duration = finished_at - started_at FROM schedlock.job_runs WHERE run_id = $stuck}),
	't', 'a lost run has its duration');
$log = slurp_file($node->logfile, $log_start);
like($log, qr/LOG:  schedlock job "stuck" of role "\w+" in database "app" run $stuck lost: the job backend running it ended before the run finished/,
	'log_runs = failures: a lost run is logged, with its job and run');

# --- log_runs = all and log_statement = on, by ALTER SYSTEM and reload ---
my $before_reload = -s $node->logfile;
$node->safe_psql('app', q{
	ALTER SYSTEM SET schedlock.log_runs = 'all';
	ALTER SYSTEM SET schedlock.log_statement = on;
	ALTER SYSTEM SET log_line_prefix = '%m [%p] %q%u@%d (%a) ';
	SELECT pg_reload_conf()});
# a job backend reloads between passes: each job's run is logged with its
# statement once the backend that runs it has
for my $job (qw(ins na fail definer))
{
	$node->wait_for_log(qr/schedlock job "$job" of role "\w+" in database "app" run \d+ statement: /,
		$before_reload);
}
my $t1 = $node->safe_psql('app', 'SELECT clock_timestamp()');
wait_run_after($_, $t1) for qw(ins na fail definer);
my $ins_run = last_run('ins', 'run_id');
$log = slurp_file($node->logfile, $log_start);
like($log,
	qr/LOG:  schedlock job "ins" of role "\w+" in database "app" run $ins_run statement: SELECT chat\(\); INSERT INTO t SELECT generate_series\(1, 5\)\n(?:.*\n)*?.*LOG:  schedlock job "ins" of role "\w+" in database "app" run $ins_run succeeded, duration: \d+\.\d{3} ms$/m,
	'log_statement logs the command before it runs, log_runs = all the success with its duration');
like($log, qr/LOG:  schedlock job "na" of role "\w+" in database "app" run \d+ statement: SELECT chat\(\); VACUUM t$/m,
	'log_statement covers non-atomic runs');
like($log, qr/LOG:  schedlock job "na" of role "\w+" in database "app" run \d+ succeeded, duration: /,
	'log_runs = all covers non-atomic runs');
like($log, qr/LOG:  schedlock job "definer" of role "tenant" in database "app" run \d+ succeeded/,
	'a run\'s line names the role the job runs as (run_as)');
like($log, qr/\[\d+\] tenant\@app \(schedlock job\) LOG:  schedlock job "definer" of role "tenant"/,
	'a job backend fills %u, %d and %a of log_line_prefix, as a login does');
$fail_run = last_run('fail', 'run_id');
@lines = ($log =~ /^.*LOG:  schedlock job "fail" of role "\w+" in database "app" run $fail_run failed: SQLSTATE P0001: job failed on purpose$/mg);
is(scalar @lines, 1, 'log_runs = all: a failed run is still logged once');

# --- log_runs = none and log_statement = off; max_notice_bytes = 0 ---
$node->safe_psql('app', q{
	ALTER SYSTEM SET schedlock.log_runs = 'none';
	ALTER SYSTEM SET schedlock.log_statement = off;
	ALTER SYSTEM SET schedlock.max_notice_bytes = 0;
	SELECT pg_reload_conf()});
# the backends have reloaded once the runs of the chatty jobs keep no
# notices (schedlock.max_notice_bytes = 0)
my $reloaded_at = $node->safe_psql('app', 'SELECT clock_timestamp()');
for my $job (qw(ins na))
{
	$node->poll_query_until('app', qq{
		SELECT count(*) > 0 FROM schedlock.job_runs r JOIN schedlock.jobs j USING (job_id)
		 WHERE j.job_name = '$job' AND r.started_at > '$reloaded_at'
		   AND r.finished_at IS NOT NULL AND r.notices IS NULL})
	  or die "job $job did not run with the new settings";
}
my $log_quiet = -s $node->logfile;
my $t2 = $node->safe_psql('app', 'SELECT clock_timestamp()');
wait_run_after($_, $t2) for qw(ins na fail na_fail);
$log = slurp_file($node->logfile, $log_quiet);
unlike($log, qr/schedlock job "\w+" .*run \d+/, 'log_runs = none: no run is logged');
is(last_run('ins', q{result_status, notices IS NULL}), 'INSERT 0 5|t',
	'schedlock.max_notice_bytes = 0: nothing is captured');
is(last_run('na', q{result_status, notices IS NULL}), 'VACUUM|t',
	'not in a job backend either');
like(last_run('fail', 'sqlstate, detail'), qr/^P0001\|the detail of it$/,
	'the run is still recorded in full');

$node->safe_psql('app', q{SELECT schedlock.unschedule_job(j) FROM unnest('{ins,fail,chatty,definer,na,na_fail,stuck,nt,setter}'::text[]) j});
$node->stop;
unlike(slurp_file($node->logfile), qr/TRAP:|PANIC|terminated by signal|XX000/, 'server log clean');

done_testing();
