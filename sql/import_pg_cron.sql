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
-- without pg_cron in the database: an error that says where it is
SELECT * FROM schedlock_import_pg_cron();
SELECT * FROM schedlock_import_pg_cron(dry_run => false, deactivate => true);
