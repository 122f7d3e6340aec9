--
-- job_inputs: inputs schedule_job and alter_job accept must never break a
-- worker later.  Every value a worker could not handle is refused up front
-- with a 22023-class error, and nothing is written.
--
SET client_min_messages = warning;

-- the SQLSTATE a statement fails with, or 'ok'
CREATE FUNCTION pg_temp.sqlstate_of(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
	RETURN state;
END
$$;

-- a POSIX zone with offsets of 99 hours made every worker of the database
-- fail with XX000 "could not map wall-clock time" when the job fell due
SELECT schedule_job('zone_99h', '0 2 * * *', 'SELECT 1',
					timezone => 'AAA+99BBB-99,M3.2.0,M11.1.0');
SELECT schedule_job('zone_ok', '0 2 * * *', 'SELECT 1', timezone => 'UTC') > 0 AS scheduled;
SELECT alter_job('zone_ok', timezone => 'AAA+99BBB-99,J60/0,J365/0');
SELECT s AS statement, pg_temp.sqlstate_of(s) AS sqlstate
  FROM unnest(ARRAY[
	$$SELECT schedule_job('zone_99h', '0 2 * * *', 'SELECT 1', timezone => 'AAA+99BBB-99,M3.2.0,M11.1.0')$$,
	$$SELECT schedule_job('zone_julian', '0 2 * * *', 'SELECT 1', timezone => 'AAA+99BBB-99,J60/0,J365/0')$$,
	$$SELECT alter_job('zone_ok', timezone => 'AAA-25')$$]) AS s;
-- nothing was written
SELECT job_name, timezone FROM schedlock.jobs WHERE job_name LIKE 'zone%' ORDER BY job_name;
SELECT unschedule_job('zone_ok');
