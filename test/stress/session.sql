-- a session-bound holder
\set n random(1, 4)
SELECT coalesce(schedlock_acquire('stress-' || :n, '30 seconds', '0', 'client-' || :client_id, true), 0) AS tok \gset
\if :tok > 0
SELECT stress_enter('stress-' || :n, :tok, :client_id, 'session') AS entered \gset
\if :entered
SELECT pg_sleep(0.002);
BEGIN;
SELECT schedlock_assert('stress-' || :n, :tok);
UPDATE crit SET left_at = clock_timestamp() WHERE name = 'stress-' || :n AND token = :tok;
COMMIT;
SELECT schedlock_release('stress-' || :n, :tok);
\endif
\endif
