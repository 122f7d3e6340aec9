/*-------------------------------------------------------------------------
 *
 * startwave.h
 *	  Jobs due at one instant start before any of them finishes: the job
 *	  backends that have started their command wait for the others.
 *
 * IDENTIFICATION
 *	  src/sched/startwave.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDLOCK_STARTWAVE_H
#define SCHEDLOCK_STARTWAVE_H

#include "datatype/timestamp.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"

/* Instants with job backends waiting to start at them, at most. */
#define SCHEDLOCK_WAVE_INSTANTS		16

typedef struct SchedlockStartWaves
{
	slock_t		mutex;			/* protects at and pending */
	ConditionVariable started;	/* broadcast when an instant's last backend
								 * has started */
	TimestampTz at[SCHEDLOCK_WAVE_INSTANTS];	/* 0: free */
	int			pending[SCHEDLOCK_WAVE_INSTANTS];	/* backends not started */
} SchedlockStartWaves;

extern void schedlock_waves_attach(SchedlockStartWaves *waves, bool init);
extern void schedlock_wave_join(TimestampTz at);
extern void schedlock_wave_started(void);
extern void schedlock_wave_wait_for_others(void);
extern void schedlock_wave_leave(void);

#endif							/* SCHEDLOCK_STARTWAVE_H */
