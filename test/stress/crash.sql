-- a holder that "crashes": takes a 50 ms lease, enters, never leaves or
-- releases; the others must wait for the lease to expire
\set n random(1, 4)
SELECT coalesce(schedlock_acquire('stress-' || :n, '50 milliseconds', '0', 'client-' || :client_id), 0) AS tok \gset
\if :tok > 0
SELECT stress_enter('stress-' || :n, :tok, :client_id, 'crash');
\endif
