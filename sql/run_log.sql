--
-- run_log: the settings that decide what a DBA sees of each job run
-- (schedlock.log_runs, schedlock.log_statement, schedlock.max_notice_bytes,
-- src/sched/runlog.c): their defaults, the values they take and refuse, that only
-- superusers change them, and the columns of schedlock.job_runs that hold
-- what a run said.  What the workers do with them is test/t/140_run_detail.pl.
--

SELECT name, boot_val, unit, context, vartype, enumvals, min_val, max_val
  FROM pg_settings
 WHERE name IN ('schedlock.log_runs', 'schedlock.log_statement',
				'schedlock.max_notice_bytes')
 ORDER BY name;

-- every level of log_runs, and values it refuses
SET schedlock.log_runs = 'all';
SHOW schedlock.log_runs;
SET schedlock.log_runs = 'none';
SHOW schedlock.log_runs;
SET schedlock.log_runs = 'failures';
SHOW schedlock.log_runs;
SET schedlock.log_runs = 'everything';
SET schedlock.log_runs = '';
SHOW schedlock.log_runs;

SET schedlock.log_statement = on;
SHOW schedlock.log_statement;
SET schedlock.log_statement = 'sometimes';
RESET schedlock.log_statement;
SHOW schedlock.log_statement;

-- max_notice_bytes is a size in bytes, from 0 (no capture) to 1MB
SET schedlock.max_notice_bytes = '16kB';
SHOW schedlock.max_notice_bytes;
SET schedlock.max_notice_bytes = 0;
SHOW schedlock.max_notice_bytes;
SET schedlock.max_notice_bytes = '1MB';
SHOW schedlock.max_notice_bytes;
SET schedlock.max_notice_bytes = -1;
SET schedlock.max_notice_bytes = '2MB';
SET schedlock.max_notice_bytes = 'lots';
RESET schedlock.max_notice_bytes;
RESET schedlock.log_runs;

-- an ordinary role changes none of them (they decide what the server log
-- gets, as log_statement does)
CREATE ROLE regress_run_log_tenant;
SET ROLE regress_run_log_tenant;
SET schedlock.log_runs = 'none';
SET schedlock.log_statement = on;
SET schedlock.max_notice_bytes = 0;
SHOW schedlock.log_runs;
RESET ROLE;
DROP ROLE regress_run_log_tenant;

-- what a run said, in schedlock.job_runs
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'schedlock.job_runs'::regclass
   AND attname IN ('detail', 'hint', 'duration', 'result_status', 'notices')
 ORDER BY attnum;
