/*
 * shard.h - a sweep across the processes of an MPI job.
 *
 * `mpirun -np N prism search SWEEP`: every process loads the sweep and
 * enumerates the same candidates in the same order.  Process 0 alone opens
 * the results database; it tells the others what is stored already (the
 * resume) and the best simulated times so far.  Then all walk the same
 * batches: the screening decisions are the same everywhere (they depend
 * only on the best times, which every process updates from the same
 * results), the candidates to simulate are dealt to the processes by
 * estimated cost (longest first, to the least loaded: deterministic), each
 * process simulates its share with its threads (pool.h), the results are
 * gathered to every process, and process 0 writes the batch in one
 * transaction.  So the database is row for row the single-process one, a
 * rerun resumes as in a single process, and a killed process loses at
 * most the batch in flight (mpirun then stops the job).
 *
 * Built without MPI (no libopenmpi-dev), or started without mpirun, there
 * is one process and every call here is a no-op.  Results travel as the
 * bytes of struct cand: the processes must run the same build on the same
 * architecture (a homogeneous cluster).
 */
#ifndef PRISM_SHARD_H
#define PRISM_SHARD_H

#include <stddef.h>

#include "sweep.h"

struct shard {
	int rank, size;
	int mpi; /* MPI_Init was called */
};

/*
 * Join the MPI job when started by mpirun (or srun): 0, or -1 when
 * launched as several processes by a build without MPI (with a message on
 * stderr).  Without a launcher: one process, rank 0.
 */
int shard_init(struct shard *s, int *argc, char ***argv);
void shard_finalize(struct shard *s);

/* The largest of every process's rc (0 when all are 0). */
int shard_any(const struct shard *s, int rc);

/* Process 0's n bytes at buf, to every process. */
void shard_bcast(const struct shard *s, void *buf, size_t n);

/* Stop every process (after process 0 failed to write, say). */
void shard_abort(const struct shard *s, int code);

/* owner[i]: the process that simulates batch[i], -1 for candidates already
 * decided (status not pending); the costliest (batch_cost) first, each to
 * the least loaded process. */
void shard_deal(const struct shard *s, const struct cand *batch, int n, int *owner);

/* After each process has simulated its own: every process gets every
 * entry of batch (each from its owner).  0, or -1 when out of memory. */
int shard_gather(const struct shard *s, struct cand *batch, int n, const int *owner,
		 const struct hw_profile *hw);

#endif
