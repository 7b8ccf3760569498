/* shard.c - a sweep across the processes of an MPI job. */
#include "shard.h"

#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PRISM_MPI
#include <mpi.h>
#endif

/* The process count a launcher gave us, or 0 when none did: Open MPI's
 * mpirun, MPICH's (and srun --mpi=pmi2's) PMI, or srun with PMIx (which
 * gives the rank; Slurm gives the task count). */
static int launched_size(void)
{
	const char *v;
	if ((v = getenv("OMPI_COMM_WORLD_SIZE")) || (v = getenv("PMI_SIZE")))
		return atoi(v) > 0 ? atoi(v) : 1;
	if (getenv("PMIX_RANK"))
		return (v = getenv("SLURM_NTASKS")) && atoi(v) > 0 ? atoi(v) : 1;
	return 0;
}

int shard_init(struct shard *s, int *argc, char ***argv)
{
	int n = launched_size();

	memset(s, 0, sizeof(*s));
	s->size = 1;
#ifdef PRISM_MPI
	if (n > 0) {
		int provided;
		MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
		MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
		MPI_Comm_size(MPI_COMM_WORLD, &s->size);
		s->mpi = 1;
	}
#else
	(void)argc;
	(void)argv;
	if (n > 1) {
		fprintf(stderr,
			"prism: started as %d processes, but this prism was built without "
			"MPI (install libopenmpi-dev and rebuild), so each would run the "
			"whole sweep: run it without mpirun\n",
			n);
		return -1;
	}
#endif
	return 0;
}

void shard_finalize(struct shard *s)
{
#ifdef PRISM_MPI
	if (s->mpi)
		MPI_Finalize();
#endif
	s->mpi = 0;
}

int shard_any(const struct shard *s, int rc)
{
#ifdef PRISM_MPI
	int any = rc;
	if (s->mpi)
		MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return any;
#else
	(void)s;
	return rc;
#endif
}

void shard_bcast(const struct shard *s, void *buf, size_t n)
{
#ifdef PRISM_MPI
	/* In pieces: MPI counts are ints. */
	for (size_t at = 0; s->mpi && at < n;) {
		size_t k = n - at < (1u << 30) ? n - at : (1u << 30);
		MPI_Bcast((char *)buf + at, (int)k, MPI_BYTE, 0, MPI_COMM_WORLD);
		at += k;
	}
#else
	(void)s;
	(void)buf;
	(void)n;
#endif
}

void shard_abort(const struct shard *s, int code)
{
#ifdef PRISM_MPI
	if (s->mpi)
		MPI_Abort(MPI_COMM_WORLD, code);
#else
	(void)s;
	(void)code;
#endif
}

void shard_deal(const struct shard *s, const struct cand *batch, int n, int *owner)
{
	double *load = prism_calloc((size_t)s->size, sizeof(*load));
	int rr = 0;

	for (int i = 0; i < n; i++)
		owner[i] = batch[i].status == CS_PENDING ? -2 : -1;
	/* Longest first, each to the least loaded process (lowest rank on a
	 * tie); n is one batch, so the quadratic pick is cheap.  (Out of
	 * memory for the loads: round-robin.) */
	for (;;) {
		int pick = -1, to = 0;
		for (int i = 0; i < n; i++)
			if (owner[i] == -2 &&
			    (pick < 0 || batch_cost(&batch[i]) > batch_cost(&batch[pick])))
				pick = i;
		if (pick < 0)
			break;
		if (load) {
			for (int r = 1; r < s->size; r++)
				if (load[r] < load[to])
					to = r;
			load[to] += batch_cost(&batch[pick]);
		} else {
			to = rr++ % s->size;
		}
		owner[pick] = to;
	}
	free(load);
}

int shard_gather(const struct shard *s, struct cand *batch, int n, const int *owner,
		 const struct hw_profile *hw)
{
#ifdef PRISM_MPI
	int *counts, *displs, mine = 0, total = 0;
	struct cand *send, *all;

	if (!s->mpi || s->size == 1)
		return 0;
	counts = prism_malloc(2 * (size_t)s->size * sizeof(*counts));
	send = prism_malloc(((size_t)n + 1) * sizeof(*send));
	all = prism_malloc(((size_t)n + 1) * sizeof(*all));
	if (!counts || !send || !all) {
		free(counts);
		free(send);
		free(all);
		return -1;
	}
	displs = counts + s->size;
	/* Each process's entries in batch order; every process knows the deal,
	 * so the receivers put them back by it. */
	for (int i = 0; i < n; i++)
		if (owner[i] == s->rank)
			send[mine++] = batch[i];
	for (int r = 0; r < s->size; r++) {
		int c = 0;
		for (int i = 0; i < n; i++)
			c += owner[i] == r;
		counts[r] = c * (int)sizeof(struct cand);
		displs[r] = total;
		total += counts[r];
	}
	MPI_Allgatherv(send, mine * (int)sizeof(struct cand), MPI_BYTE, all, counts, displs,
		       MPI_BYTE, MPI_COMM_WORLD);
	for (int r = 0; r < s->size; r++) {
		const struct cand *from = (const struct cand *)((const char *)all + displs[r]);
		for (int i = 0, k = 0; i < n; i++)
			if (owner[i] == r) {
				batch[i] = from[k++];
				/* a pointer into the sender's memory: the
				 * candidate's profile of the sweep's, hw[] */
				batch[i].in.hw = &hw[batch[i].hw];
			}
	}
	free(counts);
	free(send);
	free(all);
#else
	(void)s;
	(void)batch;
	(void)n;
	(void)owner;
	(void)hw;
#endif
	return 0;
}
