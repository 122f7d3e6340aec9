-- test/pgtap/job_once_behaviour.sql
--
-- Behaviour table for one-off jobs (schedule_once) and schedlock.alter_job(...,
-- next_run_at): for a job in a given state, a call, and what it leaves:
-- the SQLSTATE (ok, or the error; an error changes nothing), the schedule,
-- enabled, the next slot and whether a pending retry is kept.
--
-- Job states (pg_temp.setup):
--   cron           '0 3 * * *' in UTC, enabled
--   cron_disabled  the same, disabled
--   cron_retrying  the same, with a retry of attempt 2 pending
--   once           one-off at 2030-06-01 12:00 UTC
--   once_disabled  the same, disabled
--   once_retrying  the same, with a retry pending
--   ended          a one-off job whose run is over (next_slot NULL)
--   ended_disabled the same, disabled
--
-- Next slot: "keep" (as before the call), "now" (the instant of the call:
-- an instant in the past means now), "none" (NULL), or an SQL expression.
-- Everything runs in one transaction that rolls back: no worker sees it.

BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';

SELECT plan(40);

CREATE FUNCTION pg_temp.setup(kind text, name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF kind LIKE 'cron%' THEN
		PERFORM schedlock.schedule_job(name, '0 3 * * *', 'SELECT 1', timezone => 'UTC');
	ELSE
		PERFORM schedlock.schedule_once(name, '2030-06-01 12:00+00', 'SELECT 1');
	END IF;
	IF kind LIKE '%retrying' THEN
		UPDATE schedlock.jobs SET retry_slot = next_slot - interval '1 day', retry_attempt = 2,
			   retry_at = '2029-12-31 03:01+00', next_run_at = '2029-12-31 03:01+00'
		 WHERE job_name = name;
	END IF;
	IF kind LIKE 'ended%' THEN
		UPDATE schedlock.jobs SET next_slot = NULL, next_run_at = NULL WHERE job_name = name;
	END IF;
	IF kind LIKE '%disabled' THEN
		PERFORM schedlock.alter_job(name, enabled => false);
	END IF;
END
$$;

CREATE TEMP TABLE behaviour (
	id serial PRIMARY KEY,
	kind text NOT NULL,
	call text NOT NULL,			-- %1$L is the job's name
	state text NOT NULL,
	schedule text NOT NULL,
	enabled boolean NOT NULL,
	next_slot text,				-- keep, now, none, or an expression
	retry text NOT NULL,		-- kept or none
	what text NOT NULL
) ON COMMIT DROP;

INSERT INTO behaviour (kind, call, state, schedule, enabled, next_slot, retry, what) VALUES
	('cron', $$schedlock.alter_job(%1$L, next_run_at => '2030-01-01 10:17+00')$$, 'ok', '0 3 * * *', true, $$'2030-01-01 10:17+00'$$, 'none', 'next_run_at moves the next slot of a recurring job'),
	('cron', $$schedlock.alter_job(%1$L, next_run_at => NULL)$$, 'ok', '0 3 * * *', true, 'keep', 'none', 'next_run_at => NULL leaves it alone'),
	('cron', $$schedlock.alter_job(%1$L, next_run_at => '2000-01-01 00:00+00')$$, 'ok', '0 3 * * *', true, 'now', 'none', 'an instant in the past means now'),
	('cron', $$schedlock.alter_job(%1$L, next_run_at => now() - interval '1 second')$$, 'ok', '0 3 * * *', true, 'now', 'none', 'a second ago means now'),
	('cron', $$schedlock.alter_job(%1$L, next_run_at => 'infinity')$$, '22023', '0 3 * * *', true, 'keep', 'none', 'infinity is refused'),
	('cron', $$schedlock.alter_job(%1$L, next_run_at => '-infinity')$$, '22023', '0 3 * * *', true, 'keep', 'none', '-infinity is refused'),
	('cron', $$schedlock.alter_job(%1$L, next_run_at => now() + interval '36526 days')$$, '22023', '0 3 * * *', true, 'keep', 'none', 'more than 100 years ahead is refused'),
	('cron', $$schedlock.alter_job(%1$L, next_run_at => date_trunc('second', now()) + interval '36524 days')$$, 'ok', '0 3 * * *', true, $$date_trunc('second', now()) + interval '36524 days'$$, 'none', 'just under 100 years ahead is taken'),
	('cron', $$schedlock.alter_job(%1$L, enabled => false, next_run_at => '2030-01-01 00:00+00')$$, '55000', '0 3 * * *', true, 'keep', 'none', 'disabling and moving at once is refused'),
	('cron', $$schedlock.alter_job(%1$L, schedule => '*/10 * * * *', next_run_at => '2030-01-01 00:00+00')$$, 'ok', '*/10 * * * *', true, $$'2030-01-01 00:00+00'$$, 'none', 'next_run_at wins over the first slot of a new schedule'),
	('cron', $$schedlock.alter_job(%1$L, schedule => '@once')$$, '22023', '0 3 * * *', true, 'keep', 'none', 'a recurring job becomes a one-off one only with next_run_at'),
	('cron', $$schedlock.alter_job(%1$L, schedule => '@ONCE', next_run_at => '2030-02-01 00:00+00')$$, 'ok', '@once', true, $$'2030-02-01 00:00+00'$$, 'none', 'a recurring job becomes a one-off job'),
	('cron', $$schedlock.alter_job(%1$L, schedule => '@once', next_run_at => '2030-02-01 00:00+00', misfire => 'skip')$$, '22023', '0 3 * * *', true, 'keep', 'none', 'a one-off job has no misfire but run_once'),
	('cron_disabled', $$schedlock.alter_job(%1$L, next_run_at => '2030-01-01 00:00+00')$$, '55000', '0 3 * * *', false, 'keep', 'none', 'next_run_at of a disabled job is refused'),
	('cron_disabled', $$schedlock.alter_job(%1$L, enabled => true, next_run_at => '2030-01-01 00:00+00')$$, 'ok', '0 3 * * *', true, $$'2030-01-01 00:00+00'$$, 'none', 'enabling and moving at once'),
	('cron_disabled', $$schedlock.alter_job(%1$L, enabled => true)$$, 'ok', '0 3 * * *', true, $$cron_next('0 3 * * *', now(), 'UTC')$$, 'none', 'enabling a recurring job: its first slot after now'),
	('cron_retrying', $$schedlock.alter_job(%1$L, next_run_at => '2030-01-01 00:00+00')$$, 'ok', '0 3 * * *', true, $$'2030-01-01 00:00+00'$$, 'none', 'next_run_at drops a pending retry'),
	('cron_retrying', $$schedlock.alter_job(%1$L, max_attempts => 5)$$, 'ok', '0 3 * * *', true, 'keep', 'kept', 'other changes keep a pending retry'),
	('once', $$schedlock.alter_job(%1$L, next_run_at => '2031-01-01 00:00+00')$$, 'ok', '@once', true, $$'2031-01-01 00:00+00'$$, 'none', 'next_run_at moves the instant of a one-off job'),
	('once', $$schedlock.alter_job(%1$L, next_run_at => '2000-01-01 00:00+00')$$, 'ok', '@once', true, 'now', 'none', 'a one-off job moved into the past is due now'),
	('once', $$schedlock.alter_job(%1$L, enabled => false)$$, 'ok', '@once', false, 'keep', 'none', 'disabling a one-off job keeps its instant'),
	('once', $$schedlock.alter_job(%1$L, timezone => 'Europe/Prague', command => 'SELECT 2')$$, 'ok', '@once', true, 'keep', 'none', 'a new time zone or command keeps the instant'),
	('once', $$schedlock.alter_job(%1$L, misfire => 'skip')$$, '22023', '@once', true, 'keep', 'none', 'misfire skip is refused for a one-off job'),
	('once', $$schedlock.alter_job(%1$L, misfire => 'run_all')$$, '22023', '@once', true, 'keep', 'none', 'misfire run_all is refused for a one-off job'),
	('once', $$schedlock.alter_job(%1$L, schedule => '0 3 * * *')$$, 'ok', '0 3 * * *', true, $$cron_next('0 3 * * *', now(), 'UTC')$$, 'none', 'a one-off job becomes a recurring one: first slot after now'),
	('once', $$schedlock.schedule_job(%1$L, '@once', 'SELECT 1')$$, '22023', '@once', true, 'keep', 'none', 'schedule_job makes no one-off job'),
	('once', $$schedlock.schedule_job(%1$L, '0 3 * * *', 'SELECT 1', timezone => 'UTC')$$, 'ok', '0 3 * * *', true, $$cron_next('0 3 * * *', now(), 'UTC')$$, 'none', 'schedule_job replaces a one-off job'),
	('once', $$schedlock.schedule_once(%1$L, NULL, 'SELECT 1')$$, '22004', '@once', true, 'keep', 'none', 'run_at NULL is refused'),
	('once', $$schedlock.schedule_once(%1$L, '2030-05-05 05:05+00', 'SELECT 2', enabled => false)$$, 'ok', '@once', false, $$'2030-05-05 05:05+00'$$, 'none', 'schedule_once replaces a one-off job'),
	('once_disabled', $$schedlock.alter_job(%1$L, enabled => true)$$, 'ok', '@once', true, $$'2030-06-01 12:00+00'$$, 'none', 'enabling a one-off job again keeps its instant'),
	('once_disabled', $$schedlock.alter_job(%1$L, next_run_at => '2030-01-01 00:00+00')$$, '55000', '@once', false, 'keep', 'none', 'moving a disabled one-off job is refused'),
	('once_retrying', $$schedlock.alter_job(%1$L, next_run_at => '2031-01-01 00:00+00')$$, 'ok', '@once', true, $$'2031-01-01 00:00+00'$$, 'none', 'moving a one-off job drops its pending retry'),
	('once_retrying', $$schedlock.alter_job(%1$L, command => 'SELECT 2')$$, 'ok', '@once', true, 'keep', 'kept', 'a one-off job keeps its pending retry'),
	('once_retrying', $$schedlock.schedule_once(%1$L, '2031-01-01 00:00+00', 'SELECT 2')$$, 'ok', '@once', true, $$'2031-01-01 00:00+00'$$, 'none', 'schedule_once forgets a pending retry'),
	('ended', $$schedlock.alter_job(%1$L, next_run_at => '2030-09-01 00:00+00')$$, 'ok', '@once', true, $$'2030-09-01 00:00+00'$$, 'none', 'next_run_at arms an ended one-off job again'),
	('ended', $$schedlock.schedule_once(%1$L, '2030-09-01 00:00+00', 'SELECT 1')$$, 'ok', '@once', true, $$'2030-09-01 00:00+00'$$, 'none', 'schedule_once arms an ended one-off job again'),
	('ended', $$schedlock.alter_job(%1$L, max_attempts => 3)$$, 'ok', '@once', true, 'none', 'none', 'an ended one-off job stays ended'),
	('ended', $$cron_next('@once', now())$$, '22023', '@once', true, 'none', 'none', '@once is not a cron schedule'),
	('ended_disabled', $$schedlock.alter_job(%1$L, enabled => true)$$, 'ok', '@once', true, 'none', 'none', 'enabling an ended one-off job does not run it again'),
	('ended_disabled', $$schedlock.alter_job(%1$L, enabled => true, next_run_at => '2030-09-01 00:00+00')$$, 'ok', '@once', true, $$'2030-09-01 00:00+00'$$, 'none', 'enabling it with next_run_at arms it');

CREATE FUNCTION pg_temp.check_row(b behaviour) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	name text := 'once_b' || b.id;
	before timestamptz;
	got_state text := 'ok';
	j record;
	next_ok boolean;
	expected timestamptz;
BEGIN
	PERFORM pg_temp.setup(b.kind, name);
	SELECT next_slot INTO before FROM schedlock.jobs WHERE job_name = name;
	BEGIN
		EXECUTE 'SELECT ' || format(b.call, name);
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS got_state = RETURNED_SQLSTATE;
	END;
	SELECT * INTO j FROM schedlock.jobs WHERE job_name = name;
	IF b.next_slot = 'keep' THEN
		next_ok := j.next_slot IS NOT DISTINCT FROM before;
	ELSIF b.next_slot = 'now' THEN
		next_ok := j.next_slot >= now() AND j.next_slot <= clock_timestamp();
	ELSIF b.next_slot = 'none' THEN
		next_ok := j.next_slot IS NULL;
	ELSE
		EXECUTE 'SELECT ' || b.next_slot INTO expected;
		next_ok := j.next_slot = expected;
	END IF;
	RETURN format('%s|%s|%s|%s|%s|%s', got_state, j.schedule, j.enabled,
				  CASE WHEN next_ok THEN 'next_slot as expected' ELSE 'next_slot ' || coalesce(j.next_slot::text, 'NULL') END,
				  CASE WHEN j.retry_at IS NULL THEN 'none' ELSE 'kept' END,
				  -- next_run_at follows next_slot and the retry; none while
				  -- the job is disabled
				  CASE WHEN j.next_run_at IS NOT DISTINCT FROM
						  (CASE WHEN NOT j.enabled THEN NULL
								WHEN j.retry_at IS NULL THEN j.next_slot ELSE least(j.next_slot, j.retry_at) END)
					   THEN 'next_run_at consistent' ELSE 'next_run_at ' || coalesce(j.next_run_at::text, 'NULL') END);
END
$$;

SELECT is(pg_temp.check_row(b),
		  format('%s|%s|%s|next_slot as expected|%s|next_run_at consistent', b.state, b.schedule, b.enabled, b.retry),
		  format('%s: %s', b.kind, b.what))
  FROM behaviour b ORDER BY b.id;

SELECT * FROM finish();
ROLLBACK;
