--
-- cron_parse: every kind of schedule the cron engine rejects, with the
-- message, detail and hint a user sees.  All of these are
-- invalid_parameter_value (22023); the last query checks the SQLSTATE of
-- each.  Schedules pg_cron would half-read are rejected on purpose.
--
SET schedlock.timezone = 'UTC';

-- trailing text after an element
SELECT cron_next('5% * * * *', '2024-01-01 00:00+00');
SELECT cron_next('1#2 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('*/2-4 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 L * *', '2024-01-01 00:00+00');
SELECT cron_next('5-10-15 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * * 1,', '2024-01-01 00:00+00');
SELECT cron_next('1,,2 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('*/ * * * *', '2024-01-01 00:00+00');
SELECT cron_next('5- * * * *', '2024-01-01 00:00+00');
-- a sixth field, too few fields
SELECT cron_next('0 0 * * * 2024', '2024-01-01 00:00+00');
SELECT cron_next('*/10 * * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * *', '2024-01-01 00:00+00');
SELECT cron_next('* * *', '2024-01-01 00:00+00');
-- wrap-around ranges are accepted (their times are in the pgTAP known
-- answers); the other rules still hold for them
SELECT cron_next('0 22-2 * * *', '2024-01-01 03:00+00', 'UTC') AT TIME ZONE 'UTC' AS utc;
SELECT cron_next('0 0 20-10 * *', '2024-01-11 00:00+00', 'UTC') AT TIME ZONE 'UTC' AS utc;
SELECT cron_next('0 0 1 dec-jan *', '2024-01-01 00:00+00', 'UTC') AT TIME ZONE 'UTC' AS utc;
SELECT cron_next('0 0 * * fri-mon', '2024-01-01 00:00+00', 'UTC') AT TIME ZONE 'UTC' AS utc;
SELECT cron_next('0 0 * * mon-sun', '2024-01-01 00:00+00', 'UTC') AT TIME ZONE 'UTC' AS utc;
SELECT cron_next('0 22-2/24 * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 22-24 * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * * sat-8', '2024-01-01 00:00+00');
SELECT cron_next('0 0 30-31 feb *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 22-2x * *', '2024-01-01 00:00+00');
-- steps of 0 or larger than the field's span
SELECT cron_next('*/0 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('*/60 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 */24 * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 */31 * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 1 */12 *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * * */8', '2024-01-01 00:00+00');
SELECT cron_next('0-30/99999999999 * * * *', '2024-01-01 00:00+00');
-- full month and day names
SELECT cron_next('0 0 * january *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * sept *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * * Monday', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * * funday', '2024-01-01 00:00+00');
SELECT cron_next('0 0 jan * *', '2024-01-01 00:00+00');
-- N/step without a range
SELECT cron_next('5/10 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 3/2 * * *', '2024-01-01 00:00+00');
-- out-of-range numbers
SELECT cron_next('60 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0-60 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 24 * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 0 * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 32 * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 1 0 *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 1 13 *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 * * 8', '2024-01-01 00:00+00');
SELECT cron_next('99999999999 * * * *', '2024-01-01 00:00+00');
SELECT cron_next('-5 * * * *', '2024-01-01 00:00+00');
-- characters other crons use
SELECT cron_next('? * * * *', '2024-01-01 00:00+00');
SELECT cron_next('$ * * * *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 $,1 * *', '2024-01-01 00:00+00');
-- schedules that can never fire
SELECT cron_next('0 0 30 2 *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 31 4 *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 31 apr,jun,sep,nov *', '2024-01-01 00:00+00');
SELECT cron_next('0 0 30-31 feb */2', '2024-01-01 00:00+00');
-- empty and NULL schedules
SELECT cron_next('', '2024-01-01 00:00+00');
SELECT cron_next(E' \t ', '2024-01-01 00:00+00');
SELECT cron_next(NULL, '2024-01-01 00:00+00');
-- keywords
SELECT cron_next('@daily extra', '2024-01-01 00:00+00');
SELECT cron_next('@every 5m', '2024-01-01 00:00+00');
SELECT cron_next('@', '2024-01-01 00:00+00');
-- the interval form
SELECT cron_next('0 seconds', '2024-01-01 00:00+00');
SELECT cron_next('60 seconds', '2024-01-01 00:00+00');
SELECT cron_next('-5 seconds', '2024-01-01 00:00+00');
SELECT cron_next('1.5 seconds', '2024-01-01 00:00+00');
-- a schedule longer than 1000 bytes
SELECT cron_next(repeat('1,', 600) || '1 * * * *', '2024-01-01 00:00+00');
-- a long field is quoted only in part
SELECT cron_next(repeat('1,', 40) || '1x * * * *', '2024-01-01 00:00+00');

-- cron_next_runs() checks the schedule the same way
SELECT * FROM cron_next_runs('0 0 31 4 *', 3, '2024-01-01 00:00+00');

-- every rejection above is SQLSTATE 22023, never XX000
CREATE FUNCTION pg_temp.cron_sqlstate(schedule text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
BEGIN
	PERFORM cron_next(schedule, '2024-01-01 00:00+00', 'UTC');
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
	RETURN state;
END
$$;
SELECT pg_temp.cron_sqlstate(s) AS sqlstate, count(*)
  FROM unnest(ARRAY['5% * * * *', '1#2 * * * *', '*/2-4 * * * *', '0 0 L * *',
					'5-10-15 * * * *', '0 0 * * 1,', '1,,2 * * * *', '*/ * * * *',
					'5- * * * *', '0 0 * * * 2024', '*/10 * * * * *', '0 0 * *',
					'* * *', '0 22-2/24 * * *', '0 0 30-31 feb *', '*/0 * * * *',
					'*/60 * * * *', '0 */24 * * *', '0 0 */31 * *', '0 0 1 */12 *',
					'0 0 * * */8', '0-30/99999999999 * * * *', '0 0 * january *',
					'0 0 * sept *', '0 0 * * Monday', '0 0 * * funday', '0 0 jan * *',
					'5/10 * * * *', '0 3/2 * * *', '60 * * * *', '0-60 * * * *',
					'0 24 * * *', '0 0 0 * *', '0 0 32 * *', '0 0 1 0 *',
					'0 0 1 13 *', '0 0 * * 8', '99999999999 * * * *', '-5 * * * *',
					'? * * * *', '$ * * * *', '0 0 $,1 * *', '0 0 30 2 *',
					'0 0 31 4 *', '0 0 31 apr,jun,sep,nov *', '0 0 30-31 feb */2',
					'', E' \t ', NULL, '@daily extra', '@every 5m', '@',
					'0 seconds', '60 seconds', '-5 seconds', '1.5 seconds',
					repeat('1,', 600) || '1 * * * *']) AS s
 GROUP BY 1;
