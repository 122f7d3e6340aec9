--
-- The error-as-row helper of the regression tests, read by those that need
-- it with \i sql/include/try.sql: pg_temp.try(query) runs query and returns
-- one row -- SQLSTATE, message, detail and hint of its error, or a NULL
-- state and the message 'no error' -- so that a test shows an error with
-- its SQLSTATE in its output and goes on.  Only in the session's temporary
-- schema: a test leaves nothing behind.
--
CREATE FUNCTION pg_temp.try(query text,
							OUT state text, OUT message text,
							OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	message := 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END;
$$;
