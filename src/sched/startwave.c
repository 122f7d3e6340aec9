/*-------------------------------------------------------------------------
 *
 * startwave.c
 *	  Jobs due at one instant start before any of them finishes.
 *
 * Jobs of many databases and roles often fall due at the same instant (the
 * top of a second, of a minute).  Their job backends claim them in the
 * WORKER_CLAIM_LEAD_MS before it, sleep, and wake together on the instant;
 * each then starts its command and, once the command is over, records the
 * run and commits.  With more backends than CPUs, a backend that started
 * first went on to its bookkeeping and its commit while others had not yet
 * been given a CPU to start theirs: a job's start lag grew with the whole
 * runs of the jobs due with it, not only with their starts.
 *
 * So a backend that will start on an instant joins that instant's wave when
 * its claim has committed, says so when its command is about to start, and
 * after its command waits until every backend of the wave has started (at
 * most WAVE_MAX_WAIT_MS): the CPUs go to the starts first.  What the wait
 * costs is the others' start, on a run's end, not on any start.
 *
 * A backend that joined and ends before it started (an error, a signal)
 * leaves its wave through schedlock_wave_leave, called from its error
 * recovery and its exit; a wave whose count is still not zero is waited for
 * at most WAVE_MAX_WAIT_MS, and its entry is taken for another instant once
 * its instant lies WAVE_STALE_MS in the past.
 *
 * IDENTIFICATION
 *	  src/sched/startwave.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pgstat.h"
#include "utils/wait_event.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "startwave.h"

/* Longest wait for the other backends of a wave to start. */
#define WAVE_MAX_WAIT_MS	20

/* An entry whose instant is this far in the past is free for another. */
#define WAVE_STALE_MS		1000

/* The instant this backend joined and has not started at yet (0: none). */
static TimestampTz joined_at = 0;

/* The instant of the wave whose command this backend started (0: none). */
static TimestampTz started_at = 0;

/* The waves in shared memory (schedlock_waves_attach). */
static SchedlockStartWaves *waves_shared = NULL;

/*
 * schedlock_waves_attach
 *		From the shmem_startup_hook: the waves live at waves, in the
 *		scheduler's shared memory; init when that memory is new.
 */
void
schedlock_waves_attach(SchedlockStartWaves *waves, bool init)
{
	int			i;

	waves_shared = waves;
	if (!init)
		return;
	SpinLockInit(&waves->mutex);
	ConditionVariableInit(&waves->started);
	for (i = 0; i < SCHEDLOCK_WAVE_INSTANTS; i++)
	{
		waves->at[i] = 0;
		waves->pending[i] = 0;
	}
}

/* The entry of instant at, or -1.  Under the mutex. */
static int
find_wave(SchedlockStartWaves *waves, TimestampTz at)
{
	int			i;

	for (i = 0; i < SCHEDLOCK_WAVE_INSTANTS; i++)
		if (waves->at[i] == at)
			return i;
	return -1;
}

/*
 * schedlock_wave_join
 *		This backend will start a command on the instant at (in the
 *		future): count it in that instant's wave.  When every entry is
 *		taken by instants still to come, it joins none, and neither waits
 *		nor is waited for.
 */
void
schedlock_wave_join(TimestampTz at)
{
	SchedlockStartWaves *waves = waves_shared;
	TimestampTz stale = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													-WAVE_STALE_MS);
	int			i;

	Assert(joined_at == 0);
	SpinLockAcquire(&waves->mutex);
	i = find_wave(waves, at);
	if (i < 0)
	{
		for (i = 0; i < SCHEDLOCK_WAVE_INSTANTS; i++)
			if (waves->at[i] == 0 ||
				waves->at[i] < stale ||
				(waves->pending[i] <= 0 && waves->at[i] < at))
				break;
		if (i < SCHEDLOCK_WAVE_INSTANTS)
		{
			waves->at[i] = at;
			waves->pending[i] = 0;
		}
	}
	if (i >= 0 && i < SCHEDLOCK_WAVE_INSTANTS)
	{
		waves->pending[i]++;
		joined_at = at;
	}
	SpinLockRelease(&waves->mutex);
}

/*
 * schedlock_wave_started
 *		This backend's command is about to start (or it gives up its start):
 *		leave the wave it joined, waking the backends that wait for it when
 *		it was the last.  Does nothing when it joined none.
 */
void
schedlock_wave_started(void)
{
	SchedlockStartWaves *waves = waves_shared;
	bool		last = false;
	int			i;

	if (joined_at == 0)
		return;
	SpinLockAcquire(&waves->mutex);
	i = find_wave(waves, joined_at);
	if (i >= 0 && waves->pending[i] > 0)
		last = (--waves->pending[i] == 0);
	SpinLockRelease(&waves->mutex);
	started_at = joined_at;
	joined_at = 0;
	if (last)
		ConditionVariableBroadcast(&waves->started);
}

/*
 * schedlock_wave_wait_for_others
 *		After this backend's command: wait until every backend of its wave
 *		has started, at most WAVE_MAX_WAIT_MS.  Does nothing when it joined
 *		none.
 */
void
schedlock_wave_wait_for_others(void)
{
	SchedlockStartWaves *waves = waves_shared;
	TimestampTz at = started_at;
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													WAVE_MAX_WAIT_MS);
	uint32		wait_event;

	started_at = 0;
	if (at == 0)
		return;
	wait_event = schedlock_wait_event_start_wave();
	ConditionVariablePrepareToSleep(&waves->started);
	for (;;)
	{
		int			i;
		bool		waiting;
		TimestampTz now;

		SpinLockAcquire(&waves->mutex);
		i = find_wave(waves, at);
		waiting = i >= 0 && waves->pending[i] > 0;
		SpinLockRelease(&waves->mutex);
		now = GetCurrentTimestamp();
		if (!waiting || now >= until)
			break;
		(void) ConditionVariableTimedSleep(&waves->started,
										   (long) ((until - now) / 1000) + 1,
										   wait_event);
	}
	ConditionVariableCancelSleep();
}

/*
 * schedlock_wave_leave
 *		On an error or at exit: leave the wave this backend joined, if it
 *		has not started yet, and forget the one it started in.
 */
void
schedlock_wave_leave(void)
{
	schedlock_wave_started();
	started_at = 0;
}
