--
-- schedlock_import_pg_cron: its SQL surface.  The import itself runs
-- against a real pg_cron in test/t/130_import_pg_cron.pl and
-- test/security/207_import_pg_cron.pl; this server has no pg_cron.
--
-- not executable by PUBLIC
SELECT has_function_privilege('public',
	'schedlock_import_pg_cron(boolean, boolean, bigint[])', 'EXECUTE') AS public_may_import;
-- the arguments and the columns of its rows
SELECT regexp_split_to_table(pg_get_function_arguments(
	'schedlock_import_pg_cron(boolean, boolean, bigint[])'::regprocedure), ', ') AS argument;
-- NULL modes are refused
SELECT * FROM schedlock_import_pg_cron(dry_run => NULL);
SELECT * FROM schedlock_import_pg_cron(deactivate => NULL);
-- without pg_cron in the database: an error that says where it is.  The
-- hint names cron.database_name when pg_cron is preloaded (make
-- installcheck REGRESS_PRELOAD=schedlock,pg_cron), the database pg_cron is
-- installed in otherwise.
\i sql/include/try.sql
-- whether a hint is one of the two above
CREATE FUNCTION pg_temp.says_where(hint text) RETURNS boolean
LANGUAGE sql AS $$
	SELECT hint IN (
		'Call schedlock_import_pg_cron() in the database pg_cron is installed in.',
		format('Call schedlock_import_pg_cron() in database "%s" (cron.database_name).',
			   current_setting('cron.database_name', true)))
$$;
\x on
SELECT state, message, detail, pg_temp.says_where(hint) AS hint_says_where
  FROM pg_temp.try('SELECT * FROM schedlock_import_pg_cron()');
SELECT state, message, detail, pg_temp.says_where(hint) AS hint_says_where
  FROM pg_temp.try('SELECT * FROM schedlock_import_pg_cron(dry_run => false, deactivate => true)');
\x off
