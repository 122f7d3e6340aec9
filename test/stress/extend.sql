-- a holder with a short lease that renews it half-way through its work
\set n random(1, 4)
SELECT coalesce(schedlock_acquire('stress-' || :n, '5 seconds', '0', 'client-' || :client_id), 0) AS tok \gset
\if :tok > 0
SELECT stress_enter('stress-' || :n, :tok, :client_id, 'extend') AS entered \gset
\if :entered
SELECT pg_sleep(0.001);
-- fails the client (division by zero) if the extend was refused
SELECT 1 / schedlock_extend('stress-' || :n, :tok, '5 seconds')::int AS extended;
SELECT pg_sleep(0.001);
BEGIN;
SELECT schedlock_assert('stress-' || :n, :tok);
UPDATE crit SET left_at = clock_timestamp() WHERE name = 'stress-' || :n AND token = :tok;
COMMIT;
SELECT schedlock_release('stress-' || :n, :tok);
\endif
\endif
