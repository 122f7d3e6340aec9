--
-- cron_blanks: which characters separate the fields of a cron schedule.
--
-- README "Syntax": blanks are the six ASCII white-space characters (space,
-- tab, newline, carriage return, vertical tab, form feed).  Any of them
-- separates fields and may lead or trail a schedule; no other character
-- does (pg_cron takes only spaces and tabs).
--
SET timezone = 'UTC';

CREATE FUNCTION pg_temp.next_or_error(schedule text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN cron_next(schedule, '2024-01-01 00:00+00', 'UTC')::text;
EXCEPTION WHEN others THEN
	RETURN 'ERROR ' || SQLSTATE;
END
$$;

-- each blank alone between the fields, before and after them
SELECT ascii(b) AS blank,
	   pg_temp.next_or_error('30' || b || '12' || b || '*' || b || '*' || b || 'mon') AS between,
	   pg_temp.next_or_error(b || '30 12 * * mon' || b) AS around,
	   pg_temp.next_or_error('30' || b || 'seconds') AS seconds,
	   pg_temp.next_or_error(b || '@daily' || b) AS keyword
  FROM (VALUES (' '), (chr(9)), (chr(10)), (chr(13)), (chr(11)), (chr(12))) AS v(b)
 ORDER BY 1;

-- all of them mixed, several in a row (a schedule pasted from a file with
-- CRLF line ends)
SELECT pg_temp.next_or_error(chr(12) || '30' || chr(9) || chr(11) || '12' || chr(10) || '*'
							 || chr(13) || '*  mon' || chr(13) || chr(10)) AS mixed;

-- not blanks: other control characters and Unicode spaces
SELECT v.name,
	   pg_temp.next_or_error('30' || v.c || '12 * * mon') AS between
  FROM (VALUES ('file separator U+001C', chr(28)),
			   ('no-break space U+00A0', chr(160)),
			   ('em space U+2003', chr(8195)),
			   ('underscore', '_')) AS v(name, c)
 ORDER BY 1;
