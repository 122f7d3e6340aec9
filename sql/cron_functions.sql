--
-- cron_functions: behaviour of cron_next() and cron_next_runs() beyond
-- single known answers (those are in test/pgtap/cron_known_answers.sql):
-- argument handling, series, @reboot, the time zone setting, and agreement
-- with AT TIME ZONE over a whole year.
--
SET TimeZone = 'UTC';
SET schedlock.timezone = 'UTC';

-- series: the last day of each month of 2024, and of February across leap
-- and non-leap years
SELECT * FROM cron_next_runs('0 0 $ * *', 12, '2024-01-01 00:00+00');
SELECT * FROM cron_next_runs('30 23 $ 2 *', 5, '2096-01-01 00:00+00');
-- every 30 seconds from mid-slot
SELECT * FROM cron_next_runs('30 seconds', 3, '2024-01-01 00:00:10+00');
-- New York autumn: 01:00 and 01:30 fire once (EDT); the repeated hour does not
SELECT r, r AT TIME ZONE 'America/New_York' AS local
  FROM cron_next_runs('*/30 1-2 * * *', 6, '2023-11-05 00:00-04', 'America/New_York') r;
-- Prague spring: the skipped 02:00-02:59 fires once, at 03:00 CEST
SELECT r, r AT TIME ZONE 'Europe/Prague' AS local
  FROM cron_next_runs('*/20 2-3 * * *', 5, '2024-03-31 00:00+00', 'Europe/Prague') r;

-- @reboot has no next time
SELECT cron_next('@reboot', '2024-01-01 00:00+00') IS NULL AS reboot_is_null;
SELECT count(*) AS reboot_runs FROM cron_next_runs('@reboot', 5, '2024-01-01 00:00+00');

-- defaults: after = now(), timezone = schedlock.timezone
SELECT cron_next('* * * * *') > now() AS after_defaults_to_now;
SELECT cron_next('* * * * *') - date_trunc('minute', now()) = interval '1 minute' AS next_minute;
SELECT count(*) FROM cron_next_runs('@hourly', 3);
SET schedlock.timezone = 'Asia/Tokyo';
SELECT cron_next('0 9 * * *', '2024-01-01 00:00+00') AS tokyo_9am;
SELECT cron_next('0 9 * * *', '2024-01-01 00:00+00', NULL) AS null_zone_is_setting;
SELECT cron_next('0 9 * * *', '2024-01-01 00:00+00', 'UTC') AS explicit_zone;
SET schedlock.timezone = 'Mars/Olympus_Mons';
RESET schedlock.timezone;
SHOW schedlock.timezone;

-- count: 0 gives nothing; negative, too large and NULL are errors
SELECT count(*) FROM cron_next_runs('* * * * *', 0, '2024-01-01 00:00+00');
SELECT count(*) FROM cron_next_runs('* * * * *', 100000, '2024-01-01 00:00+00');
SELECT * FROM cron_next_runs('* * * * *', -1, '2024-01-01 00:00+00');
SELECT * FROM cron_next_runs('* * * * *', 100001, '2024-01-01 00:00+00');
SELECT * FROM cron_next_runs('* * * * *', NULL, '2024-01-01 00:00+00');

-- after must be a finite, non-NULL timestamp
SELECT cron_next('* * * * *', NULL);
SELECT cron_next('* * * * *', 'infinity');
SELECT * FROM cron_next_runs('* * * * *', 1, '-infinity');

-- unknown and empty time zones
SELECT cron_next('* * * * *', '2024-01-01 00:00+00', 'Mars/Olympus_Mons');
SELECT cron_next('* * * * *', '2024-01-01 00:00+00', '');
SELECT * FROM cron_next_runs('* * * * *', 1, '2024-01-01 00:00+00', 'Nowhere');
-- POSIX zone specifications are accepted as for the TimeZone setting, but
-- only with UTC offsets real zones use (at most 24 hours either way): the
-- next-time search relies on that bound, and a zone "AAA+99BBB-99,..." made
-- cron_next_runs fail with XX000
SELECT cron_next('0 2 * * *', '2026-03-01 00:00+00', 'AAA+99BBB-99,M3.2.0,M11.1.0');
SELECT * FROM cron_next_runs('0 2 * * *', 20, '2026-03-01 00:00+00', 'AAA+99BBB-99,M3.2.0,M11.1.0');
SET schedlock.timezone = 'AAA+99BBB-99,M3.2.0,M11.1.0';
CREATE FUNCTION pg_temp.zone_sqlstate(zone text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
BEGIN
	PERFORM count(*) FROM cron_next_runs('0 2 * * *', 20, '2026-03-01 00:00+00', zone);
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
	RETURN state;
END
$$;
SELECT z AS zone, pg_temp.zone_sqlstate(z) AS sqlstate
  FROM unnest(ARRAY['AAA+99BBB-99,M3.2.0,M11.1.0', 'AAA+99BBB-99,J60/0,J365/0',
					'AAA+25', 'AAA-25', 'AAA+24', 'AAA-24',
					'EST5EDT,M3.2.0,M11.1.0', 'Pacific/Kiritimati']) AS z;
SELECT cron_next('0 2 * * *', '2026-03-15 00:00+00', 'EST5EDT,M3.2.0,M11.1.0') AS posix_new_york;
-- zone names are case-insensitive, as for the TimeZone setting
SELECT cron_next('0 12 * * *', '2024-01-01 00:00+00', 'europe/prague');

-- near the end of timestamptz there may be no next time
SELECT cron_next('0 0 1 1 *', '294276-06-01 00:00+00') IS NULL AS beyond_range;
SELECT cron_next('59 23 31 12 *', '294276-06-01 00:00+00');
-- early dates work too
SELECT cron_next('0 0 29 2 *', '0100-01-01 00:00+00');

-- agreement with AT TIME ZONE: from 12:00 UTC on every day of 2024, the
-- next "0 12 * * *" is local noon, the same local day when it is still
-- morning there, else the next day (no zone changes its offset at noon);
-- and a daily 02:30 shows local 02:30 except where 02:30 did not exist
SELECT z,
	   count(*) AS days,
	   count(*) FILTER (WHERE (cron_next('0 12 * * *', d, z) AT TIME ZONE z)
						= (d AT TIME ZONE z)::date
						  + CASE WHEN (d AT TIME ZONE z)::time < '12:00' THEN 0 ELSE 1 END
						  + time '12:00') AS local_noon
  FROM unnest(ARRAY['UTC', 'Europe/Prague', 'America/New_York',
					'Australia/Lord_Howe', 'Australia/Sydney', 'Asia/Kolkata']) AS z,
	   generate_series('2024-01-01 12:00+00'::timestamptz, '2024-12-31 12:00+00', '1 day') AS d
 GROUP BY z ORDER BY z;
SELECT (r AT TIME ZONE 'Europe/Prague')::time AS local_time, count(*)
  FROM cron_next_runs('30 2 * * *', 366, '2024-01-01 00:00+00', 'Europe/Prague') r
 GROUP BY 1 ORDER BY 1;

-- the functions' declared properties
SELECT p.proname, p.provolatile, p.proparallel, p.proisstrict, p.proretset
  FROM pg_proc p
 WHERE p.proname IN ('cron_next', 'cron_next_runs')
 ORDER BY 1;
