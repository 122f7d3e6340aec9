/*-------------------------------------------------------------------------
 *
 * cluster_status.c
 *	  schedlock.cluster_status(): the scheduler of the whole cluster seen
 *	  from any database, one row per database the launcher serves, read
 *	  from shared memory (sched_shmem.h) without touching another database.
 *
 * What is exact and what is not: the job backends, housekeepers, runs in
 * progress and queues waiting for a backend are the state of shared memory
 * at the call.  A queue's due time is its earliest job's next_run_at as
 * last published (by its backend after each pass, by the housekeeper, or
 * by the SQL API at commit), so the late queues are those whose published
 * due time has passed: a job changed by hand in the table is not seen
 * until the next publication.  The job counts (all, enabled, failing,
 * quarantined) are those of the database's last housekeeping, at
 * jobs_counted_at; NULL when it has not counted them since the server
 * started.
 *
 * Only superusers and members of pg_monitor may call it (42501 for
 * others): it tells every database's activity.
 *
 * IDENTIFICATION
 *	  src/sched/cluster_status.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "sched_shmem.h"

PG_FUNCTION_INFO_V1(schedlock_cluster_status);

PGDLLEXPORT Datum schedlock_cluster_status(PG_FUNCTION_ARGS);

/* A queue is late once its due time is this far behind. */
#define CLUSTER_LATE_MS		1000

#define CLUSTER_STATUS_COLS	15

/* One database's row, copied out of shared memory under the lock. */
typedef struct ClusterRow
{
	Oid			dboid;
	NameData	dbname;
	bool		no_extension;
	bool		known;
	bool		paused;
	bool		old_tables;
	TimestampTz counted_at;
	int32		njobs;
	int32		nenabled;
	int32		nfailing;
	int32		nquarantined;
	int32		queues;
	int32		late_queues;
	TimestampTz late_since;		/* DT_NOEND: none late */
	int32		waiting_queues;
	int32		job_backends;
	int32		housekeepers;
	int32		runs;
} ClusterRow;

/*
 * schedlock_cluster_status
 *		SQL: schedlock.cluster_status() -> SETOF record (see the 1.2 script
 *		for the columns).
 */
Datum
schedlock_cluster_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ClusterRow *rows;
	int			nrows = 0;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz late = TimestampTzPlusMilliseconds(now, -CLUSTER_LATE_MS);
	int			i;
	int			j;

	if (!superuser() && !has_privs_of_role(GetUserId(), ROLE_PG_MONITOR))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for schedlock.cluster_status()"),
				 errdetail("It shows the scheduler of every database of the cluster."),
				 errhint("A superuser may GRANT pg_monitor to the role.")));

	InitMaterializedSRF(fcinfo, 0);
	if (schedlock_shared == NULL)
		return (Datum) 0;

	rows = palloc0(sizeof(ClusterRow) * SCHEDLOCK_MAX_DATABASES);
	LWLockAcquire(schedlock_shared->lock, LW_SHARED);
	for (i = 0; i < SCHEDLOCK_MAX_DATABASES; i++)
	{
		SchedlockDatabase *db = &schedlock_shared->dbs[i];
		ClusterRow *r;

		if (!db->in_use)
			continue;
		r = &rows[nrows++];
		r->dboid = db->dboid;
		r->dbname = db->dbname;
		r->no_extension = db->no_extension;
		r->known = db->known;
		r->paused = db->paused || db->old_tables;
		r->old_tables = db->old_tables;
		r->counted_at = db->counted_at;
		r->njobs = db->njobs;
		r->nenabled = db->nenabled;
		r->nfailing = db->nfailing;
		r->nquarantined = db->nquarantined;
		r->late_since = DT_NOEND;
		for (j = 0; j < SCHEDLOCK_MAX_QUEUES; j++)
		{
			SchedlockQueue *q = &schedlock_shared->queues[j];

			if (!q->in_use || q->dboid != db->dboid)
				continue;
			r->queues++;
			if (q->due_at <= late)
			{
				r->late_queues++;
				r->late_since = Min(r->late_since, q->due_at);
			}
			if (q->nbackends == 0 && q->wait != SCHEDLOCK_WAIT_NONE)
				r->waiting_queues++;
		}
		for (j = 0; j < schedlock_shared->nslots; j++)
		{
			SchedlockBackendSlot *slot = &schedlock_shared->slots[j];

			if (!slot->in_use || slot->dboid != db->dboid)
				continue;
			if (slot->kind == SCHEDLOCK_BACKEND_HOUSEKEEPER)
				r->housekeepers++;
			else
				r->job_backends++;
			if (slot->running_job != 0 && slot->pid != 0)
				r->runs++;
		}
	}
	LWLockRelease(schedlock_shared->lock);

	for (i = 0; i < nrows; i++)
	{
		ClusterRow *r = &rows[i];
		Datum		values[CLUSTER_STATUS_COLS];
		bool		nulls[CLUSTER_STATUS_COLS];
		bool		counted = r->counted_at != 0;

		memset(nulls, 0, sizeof(nulls));
		values[0] = NameGetDatum(&r->dbname);
		/* has_extension: unknown until a housekeeper has looked */
		values[1] = BoolGetDatum(!r->no_extension || r->old_tables);
		nulls[1] = !r->known && !r->no_extension;
		values[2] = BoolGetDatum(r->paused);
		values[3] = Int32GetDatum(r->njobs);
		values[4] = Int32GetDatum(r->nenabled);
		values[5] = Int32GetDatum(r->nfailing);
		values[6] = Int32GetDatum(r->nquarantined);
		values[7] = TimestampTzGetDatum(r->counted_at);
		nulls[3] = nulls[4] = nulls[5] = nulls[6] = nulls[7] = !counted;
		values[8] = Int32GetDatum(r->runs);
		values[9] = Int32GetDatum(r->queues);
		values[10] = Int32GetDatum(r->late_queues);
		values[11] = TimestampTzGetDatum(r->late_since);
		nulls[11] = r->late_since == DT_NOEND;
		values[12] = Int32GetDatum(r->waiting_queues);
		values[13] = Int32GetDatum(r->job_backends);
		values[14] = Int32GetDatum(r->housekeepers);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	return (Datum) 0;
}
