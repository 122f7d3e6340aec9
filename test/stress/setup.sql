-- test/stress/setup.sql: the critical-section log and its checker.
CREATE EXTENSION schedlock;

-- One row per critical section: entered_at is written after the acquire has
-- committed (so the lock is in force), left_at in the same transaction as a
-- schedlock_assert (so the lease was still in force then).  A holder that
-- "crashes" never writes left_at.
CREATE TABLE crit (
	id bigserial PRIMARY KEY,
	name text NOT NULL,
	token bigint NOT NULL,
	client int NOT NULL,
	kind text NOT NULL,
	entered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	left_at timestamptz
);

-- check_log(tab): overlapping holders per name, and tokens that do not
-- increase in the order the sections were entered.
CREATE FUNCTION check_log(tab regclass, OUT sections bigint, OUT overlaps bigint,
						  OUT not_increasing bigint, OUT duplicate_tokens bigint)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT count(*) FROM %s', tab) INTO sections;
	EXECUTE format($q$
		SELECT count(*)
		  FROM %1$s a JOIN %1$s b ON a.name = b.name AND a.id <> b.id AND a.token < b.token
		 WHERE a.entered_at <= coalesce(b.left_at, b.entered_at)
		   AND b.entered_at <= coalesce(a.left_at, a.entered_at)$q$, tab) INTO overlaps;
	EXECUTE format($q$
		SELECT count(*) FROM (
			SELECT token, lag(token) OVER (PARTITION BY name ORDER BY entered_at, id) AS prev
			  FROM %s) x
		 WHERE token <= prev$q$, tab) INTO not_increasing;
	EXECUTE format($q$
		SELECT count(*) - count(DISTINCT (name, token)) FROM %s$q$, tab) INTO duplicate_tokens;
END;
$$;
