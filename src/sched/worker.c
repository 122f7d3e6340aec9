/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The processes the launcher starts on demand: a job backend, connected
 *	  to one database as one role, that claims and runs that role's due
 *	  jobs; and, started the same way, a database's housekeeper.
 *
 * A job backend connects with BackgroundWorkerInitializeConnectionByOid
 * as the role that its queue's jobs run as (their owner, or run_as): that
 * role is its session and current user, as after a login, so a job's SQL
 * never runs in a process where another role, or a superuser to switch
 * back to, is the session user.  The backend serves its queue until it has
 * been idle for schedlock.job_backend_idle_timeout, or until the launcher
 * asks it to leave so that another queue gets its turn (launcher.c).
 *
 * A pass of its loop claims and runs its role's due jobs (dispatch.c)
 * until none is left, publishes the queue's next due time, and then sleeps
 * until that time (at most SCHEDLOCK_MAX_SLEEP_MS), waking
 * SCHEDLOCK_CLAIM_LEAD_MS earlier to claim the next job ahead of its
 * instant.  schedule_job(), alter_job(), run_job() and a failed
 * schedlock_finish_run() set its latch at commit (sched_shmem.c).
 *
 * The housekeeper (housekeeper.c) runs in a process of the same kind,
 * started by schedlock_worker_start.
 *
 * IDENTIFICATION
 *	  src/sched/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/logident.h"
#include "base/owner.h"
#include "base/settings.h"
#include "dispatch.h"
#include "notify_dispatch.h"
#include "runlog.h"
#include "sched/store/jobstore.h"
#include "sched_shmem.h"
#include "startwave.h"
#include "worker.h"

/*
 * The jobs due at the role's next instant are counted up to this many (see
 * next_due); the count scans at most that many of the role's index entries
 * at that instant.
 */
#define WORKER_DUE_COUNT_MAX	25000

/*
 * Linux lets a poll/epoll timeout expire late by up to 0.1 % of its length
 * (timer slack, at most 100 ms), more than SCHEDLOCK_CLAIM_LEAD_MS can absorb
 * on a long sleep.  So a sleep longer than WORKER_SLACK_FREE_MS ends
 * 1/WORKER_SLACK_DIVISOR of its length early (0.4 %) and the backend
 * sleeps the rest again, a sleep whose slack (at most 2 ms) fits in the
 * claim lead.
 */
#define WORKER_SLACK_FREE_MS	2000
#define WORKER_SLACK_DIVISOR	256

/*
 * A job of the backend's role due for longer than WORKER_UNCLAIMED_WARN_MS
 * that its claims skip (another transaction holds its row) is logged once,
 * with a WARNING, per job and due time; the backend looks for such jobs at
 * most every WORKER_UNCLAIMED_CHECK_MS, and only when its role's earliest
 * due job is that old.  It keeps up to WORKER_UNCLAIMED_MAX of them.
 */
#define WORKER_UNCLAIMED_WARN_MS	10000
#define WORKER_UNCLAIMED_CHECK_MS	1000
#define WORKER_UNCLAIMED_MAX		16

/*
 * A job due now that the pass could not claim is held by another
 * transaction: another backend of the role running it atomically (which
 * moves it on when it commits), or a lock of someone else's.  The backend
 * looks again this much later instead of spinning.
 */
#define WORKER_HELD_RETRY_MS	50

/*
 * How many backends the SQL jobs due at the role's next instant keep busy
 * at once (set by next_due; 0 when not counted): the launcher starts that
 * many before the instant, and as many of the role's backends wake on it.
 */
static int	due_together = 0;

/* Names of this backend's database and role, for its messages. */
static char my_dbname[NAMEDATALEN] = "";
static char my_rolename[NAMEDATALEN] = "";

/*
 * The overdue jobs this backend has warned about, with the due time each
 * was warned at (see warn_unclaimed).
 */
static int64 warned_job[WORKER_UNCLAIMED_MAX];
static TimestampTz warned_due[WORKER_UNCLAIMED_MAX];
static int	nwarned = 0;
static TimestampTz unclaimed_checked_at = 0;

/* The previous emit_log_hook, chained by report_start_error. */
static emit_log_hook_type prev_emit_log_hook = NULL;

/*
 * worker_detach
 *		before_shmem_exit callback: clear this process's pid and latch so
 *		that DROP DATABASE and the wakeups stop looking at it.  A backend
 *		that ends in the middle of a run has the database's housekeeping
 *		close it as lost (sched_shmem.c).
 */
static void
worker_detach(int code, Datum arg)
{
	schedlock_wave_leave();
	schedlock_backend_detach(schedlock_my_slot);
}

/*
 * worker_note_died_run
 *		before_shmem_exit callback, registered once connected, so that it
 *		runs before the transaction in progress is rolled back: a backend
 *		that ends in the middle of a run notes it (schedlock_note_died_run),
 *		so that the next claim of the same slot records it failed instead
 *		of running a command that ends its backend again and again.
 */
static void
worker_note_died_run(int code, Datum arg)
{
	schedlock_note_died_run(schedlock_my_slot);
}

/*
 * report_start_error
 *		emit_log_hook while the backend connects: an error that ends it then
 *		(FATAL: the role cannot log in, does not exist, or the database is
 *		gone) is kept in its slot, for the launcher to hold the queue back
 *		and the housekeeper to fail its due runs with that error.
 */
static void
report_start_error(ErrorData *edata)
{
	if (schedlock_my_slot != NULL && edata->elevel >= FATAL)
	{
		LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
		schedlock_my_slot->start_sqlerrcode = edata->sqlerrcode;
		strlcpy(schedlock_my_slot->start_error,
				edata->message ? edata->message : "unknown error",
				sizeof(schedlock_my_slot->start_error));
		LWLockRelease(schedlock_shared->lock);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

static void leave_old_tables(const SchedlockStoreCaps *caps);

/*
 * look_at_extension
 *		Whether the extension exists in this database with tables the
 *		library serves; if so, read its owner (own transaction).  Tables
 *		older than that are said once (leave_old_tables).
 */
static bool
look_at_extension(void)
{
	bool		present;
	const SchedlockStoreCaps *old = NULL;

	StartTransactionCommand();
	if (my_dbname[0] == '\0')
	{
		char	   *name = get_database_name(MyDatabaseId);

		strlcpy(my_dbname, name ? name : "?", sizeof(my_dbname));
		strlcpy(my_rolename, GetUserNameFromId(GetSessionUserId(), false),
				sizeof(my_rolename));
	}
	schedlock_runlog_where();
	present = OidIsValid(get_extension_oid("schedlock", true));
	if (present)
	{
		const SchedlockStoreCaps *caps = schedlock_store_caps();

		schedlock_bookkeeper = schedlock_extension_owner();
		if (caps->too_old)
			old = caps;
	}
	CommitTransactionCommand();
	MemoryContextSwitchTo(schedlock_run_cxt);
	if (old != NULL)
		leave_old_tables(old);
	return present;
}

/*
 * leave_old_tables
 *		The database's tables are older than the library serves: run
 *		nothing there.  The first process to find them says so in one
 *		WARNING; then, as without the extension, the launcher leaves the
 *		database alone until ALTER EXTENSION (or CREATE DATABASE) asks it to
 *		look again, and the housekeeper that finds served tables clears the
 *		mark.  caps: the store's, of those tables.  Exits.
 */
static void
leave_old_tables(const SchedlockStoreCaps *caps)
{
	SchedlockDatabase *db;
	bool		warn;

	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	db = schedlock_find_database(MyDatabaseId, false);
	warn = db == NULL || !db->old_tables;
	if (db != NULL)
		db->old_tables = true;
	schedlock_my_slot->no_extension = true;
	LWLockRelease(schedlock_shared->lock);
	if (warn)
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no job of database \"%s\" runs: its schedlock tables are of release %s",
						my_dbname, caps->release_name),
				 errdetail("This version of the library serves the tables of schedlock %s and later.",
						   caps->oldest_served_name),
				 errhint("Run ALTER EXTENSION schedlock UPDATE in database \"%s\".",
						 my_dbname)));
	proc_exit(0);
}

/*
 * leave_no_extension
 *		The extension is gone (or was never here): say so in the slot, for
 *		the launcher to leave the database alone until CREATE EXTENSION, and
 *		exit.
 */
static void
leave_no_extension(void)
{
	LWLockAcquire(schedlock_shared->lock, LW_EXCLUSIVE);
	schedlock_my_slot->no_extension = true;
	LWLockRelease(schedlock_shared->lock);
	proc_exit(0);
}

/*
 * next_due
 *		The role's next job due (its earliest next_run_at in the future, or
 *		now when one is due already), DT_NOEND when it has none; and, when
 *		it lies ahead, how much earlier to claim the NOTIFY jobs due then
 *		(schedlock_notify_lead) and how many backends its SQL jobs due then
 *		keep busy at once (due_together).
 */
static TimestampTz
next_due(void)
{
	TimestampTz next;

	schedlock_notify_lead = 0;
	due_together = 0;
	schedlock_worker_begin_tx("schedlock: computing the next wakeup");
	if (!schedlock_next_role_wakeup(schedlock_my_role, &next))
		next = DT_NOEND;
	else if (next > TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												SCHEDLOCK_CLAIM_LEAD_MS) &&
			 schedlock_store_caps()->run_sets)
	{
		int			notify;
		int			sql;

		sql = schedlock_jobs_due_at(schedlock_my_role, next,
									WORKER_DUE_COUNT_MAX, &notify);
		sql -= notify;
		schedlock_notify_lead = schedlock_notify_lead_ms(notify);

		/*
		 * A backend runs one SQL job at a time, or a set of up to
		 * schedlock.runs_per_commit of them; the caps on the role's and the
		 * database's backends bound the count (the launcher applies them
		 * again, with the budget, the role's counting its backends of every
		 * database).
		 */
		if (schedlock_runs_per_commit > 1)
			sql = (sql + schedlock_runs_per_commit - 1) /
				schedlock_runs_per_commit;
		if (schedlock_max_runs_per_role > 0)
			sql = Min(sql, schedlock_max_runs_per_role);
		due_together = Min(sql, schedlock_max_workers);
	}
	schedlock_worker_end_tx();
	return next;
}

/*
 * sleep_ms_until
 *		Milliseconds until SCHEDLOCK_CLAIM_LEAD_MS (and schedlock_notify_lead)
 *		before next, capped at SCHEDLOCK_MAX_SLEEP_MS; a long sleep ends
 *		early by more than its timer slack (see WORKER_SLACK_FREE_MS).  When next is within the
 *		claim lead but the pass claimed nothing, another backend holds the
 *		job while it waits for its instant: sleep past the instant; when it
 *		is past, the job is held (WORKER_HELD_RETRY_MS) -- never spin.
 */
static long
sleep_ms_until(TimestampTz next, bool claimed)
{
	TimestampTz now = GetCurrentTimestamp();
	long		ms;

	if (next == DT_NOEND)
		return SCHEDLOCK_MAX_SLEEP_MS;
	ms = (long) Min((next - now) / 1000 + 1 - SCHEDLOCK_CLAIM_LEAD_MS -
					schedlock_notify_lead,
					(int64) SCHEDLOCK_MAX_SLEEP_MS);
	if (ms <= 0 && claimed)
		ms = 0;
	else if (ms <= 0 && next > now)
		ms = (long) ((next - now) / 1000 + 1);
	else if (ms <= 0)
		ms = WORKER_HELD_RETRY_MS;
	else if (ms > WORKER_SLACK_FREE_MS)
		ms -= ms / WORKER_SLACK_DIVISOR + 1;
	return ms;
}

/*
 * warn_unclaimed
 *		After a pass of a job backend whose role's earliest due job is at
 *		'next': when that is more than WORKER_UNCLAIMED_WARN_MS ago, the
 *		pass skipped it.  Log each such job once per due time whose row
 *		another transaction holds locked (an open alter_job(), a SELECT ...
 *		FOR UPDATE; a backend of this role that runs it holds it too, and
 *		does not count), as schedlock_overdue_jobs sees: a pass that ended
 *		early, because the launcher asked the backend to make room, left
 *		its due jobs unlocked, and they are no row lock's.  Called outside a
 *		transaction.
 */
static void
warn_unclaimed(TimestampTz next)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz before = TimestampTzPlusMilliseconds(now,
													 -WORKER_UNCLAIMED_WARN_MS);
	SchedlockOverdueJob jobs[WORKER_UNCLAIMED_MAX];
	int64		still_job[WORKER_UNCLAIMED_MAX];
	TimestampTz still_due[WORKER_UNCLAIMED_MAX];
	int			nstill = 0;
	int			n;
	int			i;

	if (next == DT_NOEND || next > before)
	{
		nwarned = 0;			/* every episode is over */
		return;
	}
	if (!TimestampDifferenceExceeds(unclaimed_checked_at, now,
									WORKER_UNCLAIMED_CHECK_MS))
		return;
	unclaimed_checked_at = now;

	schedlock_worker_begin_tx("schedlock: looking for jobs it could not claim");
	n = schedlock_overdue_jobs(schedlock_my_role, before, jobs, WORKER_UNCLAIMED_MAX,
							   schedlock_run_cxt);
	schedlock_worker_end_tx();

	for (i = 0; i < n; i++)
	{
		bool		warned = false;
		int			j;

		if (schedlock_running_pid(MyDatabaseId, jobs[i].job_id) != 0)
			continue;
		for (j = 0; j < nwarned; j++)
			if (warned_job[j] == jobs[i].job_id &&
				warned_due[j] == jobs[i].next_run_at)
				warned = true;
		if (!warned)
		{
			long		secs;
			int			usecs;

			TimestampDifference(jobs[i].next_run_at, now, &secs, &usecs);
			ereport(WARNING,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("schedlock job \"%s\" of role \"%s\" in database \"%s\" has been due for %ld s and could not be claimed",
							jobs[i].job_name, my_rolename, my_dbname, secs),
					 errdetail("Another transaction holds a lock on its row of schedlock.jobs (job_id " INT64_FORMAT ").",
							   jobs[i].job_id),
					 errhint("Look in pg_stat_activity for a transaction that changed or locked the job and is still open.")));
		}
		still_job[nstill] = jobs[i].job_id;
		still_due[nstill] = jobs[i].next_run_at;
		nstill++;
	}
	memcpy(warned_job, still_job, sizeof(int64) * nstill);
	memcpy(warned_due, still_due, sizeof(TimestampTz) * nstill);
	nwarned = nstill;
}

/*
 * job_backend_loop
 *		The life of a job backend: passes over its role's due jobs, sleeps
 *		in between, and an exit when it has been idle for
 *		schedlock.job_backend_idle_timeout or the launcher asks it to leave.
 */
static void
job_backend_loop(void)
{
	TimestampTz idle_since = GetCurrentTimestamp();
	bool		first = true;

	for (;;)
	{
		TimestampTz next;
		TimestampTz now;
		long		sleep_ms;
		bool		more = false;
		bool		again;
		uint64		seen;
		long		lead_used;
		int			claims = 0;
		int			rank;
		bool		earlier_free = false;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!look_at_extension())
			leave_no_extension();
		if (!schedlock_enabled)
			proc_exit(0);

		(void) schedlock_set_idle(schedlock_my_slot, false);
		seen = schedlock_note_count();
		lead_used = schedlock_notify_lead;
		claims = schedlock_dispatch_due(schedlock_my_role, NULL, &more);
		if (claims > 0 && first && schedlock_history_retention > 0)
		{
			/* history to prune, one retention period from now at most */
			schedlock_housekeep_by(MyDatabaseId,
								   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															   (int64) schedlock_history_retention * 60000));
			first = false;
		}
		if (more)
		{
			next = GetCurrentTimestamp();
			due_together = 0;
		}
		else
		{
			next = next_due();
			warn_unclaimed(next);
		}
		now = GetCurrentTimestamp();

		/*
		 * A pass that ran jobs keeps the backend; that of a queue's extra
		 * backend only when it had a backlog or the backends before it were
		 * all busy.  Otherwise the first backend could have run them, and an
		 * extra one that wins the race now and then (its wake is only
		 * SCHEDLOCK_EXTRA_DELAY_MS later) would never be idle long enough to
		 * leave.
		 */
		rank = -1;
		if (claims > 0 && !more)
			rank = schedlock_queue_rank(schedlock_my_slot, &earlier_free);
		if (claims > 0 && (more || !earlier_free))
			idle_since = now;
		if (schedlock_publish_due(schedlock_my_slot, next,
								  (int) schedlock_notify_lead, due_together,
								  more, seen, &again))
			proc_exit(0);
		if (more || again)
			continue;

		/*
		 * Idle for long enough, and nothing due before the timeout ends.  A
		 * pass that did not yet know the NOTIFY jobs of the next instant
		 * (schedlock_notify_lead) counts as one that claimed: the next pass,
		 * with them known, may be due now.
		 */
		sleep_ms = sleep_ms_until(next, claims > 0 ||
								  schedlock_notify_lead > lead_used);
		if (sleep_ms > 0)
		{
			long		idle_left = (long) (schedlock_job_backend_idle_timeout -
											(now - idle_since) / 1000);

			/*
			 * Idle until the timeout, or the role's next job comes after it
			 * (the launcher starts a backend for it then): leave now.
			 */
			if (idle_left <= 0 || next == DT_NOEND ||
				(next - now) / 1000 > idle_left + schedlock_start_lead_ms())
				proc_exit(0);

			/*
			 * The queue's first backend takes the jobs when it is free; when
			 * the next instant has SQL jobs for more backends, as many wake
			 * on it.
			 */
			if (rank < 0)
				rank = schedlock_queue_rank(schedlock_my_slot, NULL);
			if (rank >= due_together)
				sleep_ms += Min(rank, 3) * SCHEDLOCK_EXTRA_DELAY_MS;
			sleep_ms = Min(sleep_ms, idle_left);
			if (schedlock_set_idle(schedlock_my_slot, true))
				proc_exit(0);
		}

		MemoryContextReset(schedlock_run_cxt);
		/* statistics end_tx held back (at most one report a second) */
		if (sleep_ms != 0)
			pgstat_report_stat(true);
		pgstat_report_activity(STATE_IDLE, NULL);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms,
						 schedlock_wait_event_idle());
		ResetLatch(MyLatch);
	}
}

/*
 * schedlock_worker_start
 *		What a job backend and a housekeeper do first, from their entry
 *		points: take the slot (arg is its number, bgw_extra its
 *		generation), connect, and look for the extension (leave without
 *		it).  Returns the slot; *cxt is the memory for one pass.
 */
SchedlockBackendSlot *
schedlock_worker_start(Datum arg, MemoryContext *cxt)
{
	int			slotno = DatumGetInt32(arg);
	uint64		generation;
	bool		reload;
	Oid			dboid;
	Oid			role;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, schedlock_job_sigint);
	BackgroundWorkerUnblockSignals();

	/* take the slot first: a launcher that restarts adopts it from there */
	schedlock_my_slot = &schedlock_shared->slots[slotno];
	memcpy(&generation, MyBgworkerEntry->bgw_extra, sizeof(uint64));
	if (!schedlock_backend_attach(schedlock_my_slot, generation, &reload))
		proc_exit(0);
	/* detach on any exit from here on, an error in the reload included */
	before_shmem_exit(worker_detach, (Datum) 0);

	/*
	 * A reload signalled while this process started, before its handler was
	 * in place, was ignored: read the configuration files now if the launcher
	 * has seen one since the slot was reserved (reading them at every start
	 * was 5 % of the cluster's CPU when backends take turns between many
	 * databases).
	 */
	if (reload)
		ProcessConfigFile(PGC_SIGHUP);
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	dboid = schedlock_my_slot->dboid;
	role = schedlock_my_slot->role;
	LWLockRelease(schedlock_shared->lock);

	/* a FATAL while connecting (the role cannot log in) is kept */
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = report_start_error;
	BackgroundWorkerInitializeConnectionByOid(dboid, role, 0);
	emit_log_hook = prev_emit_log_hook;
	schedlock_my_role = GetSessionUserId();
	/* runs before the connection's own exit callback rolls back */
	before_shmem_exit(worker_note_died_run, (Datum) 0);

	/* identifiable in pg_stat_activity */
	SetConfigOption("application_name",
					schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS ?
					"schedlock job" : "schedlock housekeeper",
					PGC_USERSET, PGC_S_OVERRIDE);

	schedlock_run_cxt = AllocSetContextCreate(TopMemoryContext, "schedlock job backend",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(schedlock_run_cxt);

	/* the launcher starts only after recovery; make sure anyway */
	if (RecoveryInProgress())
		proc_exit(0);

	if (!look_at_extension())
		leave_no_extension();
	/* %d, %u and %a of log_line_prefix, as for a login (logident.c) */
	schedlock_set_log_identity(my_dbname, my_rolename,
							   schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS ?
							   "schedlock job" : "schedlock housekeeper");
	if (schedlock_my_slot->kind == SCHEDLOCK_BACKEND_JOBS)
		schedlock_note_start(schedlock_my_slot);
	ereport(DEBUG1,
			(errmsg_internal("%s started", MyBgworkerEntry->bgw_name)));
	*cxt = schedlock_run_cxt;
	return schedlock_my_slot;
}

/*
 * schedlock_worker_main
 *		Entry point of a job backend; bgw_main_arg is its slot number,
 *		bgw_extra its slot's generation.
 */
void
schedlock_worker_main(Datum arg)
{
	MemoryContext cxt;
	sigjmp_buf	local_sigjmp_buf;

	(void) schedlock_worker_start(arg, &cxt);
	/* an error in the loop is logged and the loop goes on (quarantine.c) */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		int			sqlerrcode = schedlock_worker_recover_error();

		/*
		 * A lock it could not get within schedlock.bookkeeping_lock_timeout
		 * (another session holds one on schedlock's tables or a job's row):
		 * leave, so that the budget slot goes to another queue; the launcher
		 * starts one for this queue again after a while, and shows the wait
		 * as its waiting_reason meanwhile (schedlock_backend_left_locked).
		 */
		if (sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			schedlock_backend_left_locked(schedlock_my_slot);
			proc_exit(0);
		}

		/*
		 * Asked to make room meanwhile (a pass that fails again and again
		 * never reaches the end of a pass, where a backend looks): leave now.
		 */
		if (schedlock_my_slot->yield)
			proc_exit(0);
	}
	PG_exception_stack = &local_sigjmp_buf;
	job_backend_loop();
}
