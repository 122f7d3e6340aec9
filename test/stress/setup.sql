-- test/stress/setup.sql: the critical-section log and its checker.
CREATE EXTENSION schedlock;

-- One row per critical section.  Both ends are written in a transaction that
-- first passed schedlock_assert, i.e. while the lease was proven in force
-- and nobody could take it over before that transaction committed:
-- entered_at by stress_enter() after the acquire has committed (an acquire
-- takes effect only at its commit), left_at by the leave transaction of the
-- scripts.  A holder that "crashes" never writes left_at.
CREATE TABLE crit (
	id bigserial PRIMARY KEY,
	name text NOT NULL,
	token bigint NOT NULL,
	client int NOT NULL,
	kind text NOT NULL,
	entered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	left_at timestamptz
);

-- stress_enter(name, tok, client, kind): record entering the critical
-- section of the lease held with tok; false (nothing recorded) when the
-- lease was already lost -- a short lease can expire before its holder gets
-- here on a loaded machine, and such a holder must not enter.
CREATE FUNCTION stress_enter(p_name text, p_tok bigint, p_client int, p_kind text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM schedlock_assert(p_name, p_tok);
	INSERT INTO crit (name, token, client, kind) VALUES (p_name, p_tok, p_client, p_kind);
	RETURN true;
EXCEPTION WHEN SQLSTATE 'SL001' THEN
	RETURN false;
END;
$$;

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
