--
-- cluster_status: schedlock.cluster_status() shows every database the
-- launcher serves, to superusers and members of pg_monitor only (42501 for
-- other roles, from any database).  The numbers move with the scheduler,
-- so only what is stable is shown: this database's row, and that the
-- counts are not negative.
--
SET client_min_messages = warning;

-- wait (at most 30 s) for the housekeeping of this database to have
-- counted its jobs and ended its pass (it runs when the extension is
-- created; has_extension is known once the pass is over)
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM schedlock.cluster_status()
						   WHERE datname = current_database()
							 AND jobs_counted_at IS NOT NULL
							 AND has_extension IS NOT NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END
$$;

-- this database has the extension; every count is 0 or more
SELECT has_extension, paused,
	   jobs >= 0 AND enabled_jobs >= 0 AND failing_jobs >= 0
		 AND quarantined_jobs >= 0 AS jobs_counted,
	   runs_in_progress >= 0 AND queues >= 0 AND late_queues >= 0
		 AND waiting_queues >= 0 AND job_backends >= 0 AND housekeepers >= 0
		 AS counts_ok
  FROM schedlock.cluster_status()
 WHERE datname = current_database();

-- another role: refused, unless it is a member of pg_monitor
CREATE ROLE regress_pane_plain;
CREATE ROLE regress_pane_monitor IN ROLE pg_monitor;
SET ROLE regress_pane_plain;
SELECT count(*) FROM schedlock.cluster_status();
RESET ROLE;
SET ROLE regress_pane_monitor;
SELECT count(*) > 0 AS sees_databases FROM schedlock.cluster_status();
RESET ROLE;
DROP ROLE regress_pane_plain, regress_pane_monitor;
