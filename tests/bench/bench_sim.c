/*
 * bench_sim.c - simulator throughput on synthetic graphs of given sizes.
 *
 * Each graph has R ranks; a rank has one host thread and two streams
 * (compute, communication).  The thread issues launches separated by CPU
 * work; every fourth launch goes to the communication stream and is a
 * collective matched across ranks; every 64th compute kernel waits for the
 * latest collective (an event edge); every 256 launches the thread
 * synchronises its device.  Durations are drawn from a fixed-seed PRNG.
 * The shape is what real training graphs look like to the simulator:
 * mostly chains, a few cross edges, rendezvous across ranks.
 *
 * Prints, per size: nodes, edges, build-free simulation time (best of 3),
 * nodes per second, and the bytes of graph + simulator state per node.
 * Usage: bench_sim [NODES...]   (default 100000 1000000 5000000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gwrite.h"
#include "sim.h"

static uint64_t rng = 88172645463325252ull;
static int64_t rnd(int64_t lo, int64_t hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

static uint32_t task(struct gw *w, uint32_t proc, uint8_t kind, int64_t start, int64_t dur)
{
	struct gw_node x;
	uint32_t id;
	memset(&x, 0, sizeof(x));
	x.proc = proc;
	x.kind = kind;
	x.start_ns = start;
	x.dur_ns = dur;
	x.iter = -1;
	x.coll = UINT32_MAX;
	if (gw_node(w, &x, &id))
		exit(1);
	return id;
}

static struct graph *synth(uint32_t target)
{
	const uint32_t ranks = 8;
	uint32_t per_rank = target / ranks, launches = per_rank / 3; /* call, cpu, gpu */
	uint32_t *ncoll_rank = calloc(ranks, sizeof(*ncoll_rank));
	struct graph *g;
	struct gw w;

	if (!ncoll_rank || gw_init(&w))
		exit(1);
	uint32_t u = 0;
	for (uint32_t r = 0; r < ranks; r++) {
		uint32_t host = r * 3, s0 = host + 1, s1 = host + 2;
		uint32_t base = u, n_host;
		int64_t t = 0;
		uint32_t *calls = malloc(launches * sizeof(*calls));
		struct graph_proc procs[3] = {
		    {r, 0, 1, 1, 0, 0}, {r, 1, 0, 7, 0, 0}, {r, 1, 0, 20, 0, 0}};
		struct graph_rank rk;
		memset(&rk, 0, sizeof(rk));
		rk.rank = r;
		for (int i = 0; i < 3; i++)
			gw_proc(&w, &procs[i], NULL);
		gw_rank(&w, &rk);
		/* Host thread: [cpu, launch] x launches, device syncs. */
		for (uint32_t i = 0; i < launches; i++) {
			int64_t d = rnd(2000, 9000);
			task(&w, host, GN_CPU, t, d);
			t += d;
			d = rnd(3000, 6000);
			calls[i] = task(&w, host, GN_RUNTIME, t, d);
			t += d;
			if (i % 256 == 255) {
				uint32_t call = task(&w, host, GN_RUNTIME, t, 0);
				w.flags[call] = NF_BLOCKING;
				task(&w, host, GN_WAIT, t, 2000);
			}
		}
		u = (uint32_t)w.n_nodes;
		n_host = u - base;
		for (uint32_t k = base; k + 1 < u; k++)
			gw_edge(&w, k, k + 1, GE_ORDER);
		/* Streams: compute kernels, then collectives. */
		uint32_t first_s0 = u;
		for (uint32_t i = 0; i < launches; i++) {
			if (i % 4 == 3)
				continue;
			u = task(&w, s0, GN_KERNEL, w.start_ns[calls[i]], rnd(1000, 40000));
			gw_edge(&w, calls[i], u, GE_LAUNCH);
			if (u > first_s0)
				gw_edge(&w, u - 1, u, GE_ORDER);
			u++;
		}
		uint32_t first_s1 = u;
		for (uint32_t i = 3; i < launches; i += 4) {
			struct graph_coll c;
			u = task(&w, s1, GN_COLL, w.start_ns[calls[i]], rnd(5000, 80000));
			memset(&c, 0, sizeof(c));
			c.kind = GC_ALL_REDUCE;
			c.seq = ncoll_rank[r]++;
			gw_coll(&w, u, &c);
			gw_edge(&w, calls[i], u, GE_LAUNCH);
			if (u > first_s1)
				gw_edge(&w, u - 1, u, GE_ORDER);
			u++;
		}
		/* Every 64th compute kernel waits for the latest collective. */
		for (uint32_t k = first_s0 + 64, c = first_s1; k < first_s1; k += 64) {
			while (c + 1 < u && w.start_ns[c + 1] < w.start_ns[k])
				c++;
			if (w.start_ns[c] < w.start_ns[k])
				gw_edge(&w, c, k, GE_EVENT);
		}
		/* Device syncs wait for the last kernel launched before them. */
		for (uint32_t k = base; k < base + n_host; k++) {
			if (w.kind[k] != GN_WAIT)
				continue;
			uint32_t lo = first_s0, hi = first_s1;
			while (lo < hi) {
				uint32_t mid = (lo + hi) / 2;
				if (w.start_ns[mid] < w.start_ns[k])
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo > first_s0)
				gw_edge(&w, lo - 1, k, GE_SYNC);
		}
		free(calls);
	}
	if (gw_finish(&w, NULL, 0, &g))
		exit(1);
	gw_release(&w);
	free(ncoll_rank);
	return g;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint32_t sizes[8] = {100000, 1000000, 5000000};
	int nsizes = 3;

	if (argc > 1) {
		nsizes = 0;
		for (int i = 1; i < argc && nsizes < 8; i++)
			sizes[nsizes++] = (uint32_t)strtoul(argv[i], NULL, 10);
	}
	printf("%10s %10s %10s %12s %14s %12s\n", "nodes", "edges", "ranks", "sim ms", "M nodes/s",
	       "bytes/node");
	for (int i = 0; i < nsizes; i++) {
		struct graph *g = synth(sizes[i]);
		struct prism_err err;
		struct sim_opts o;
		struct sim *s;
		double best = 1e9;

		prism_err_clear(&err);
		if (graph_check(g, &err)) {
			fprintf(stderr, "bench_sim: %s\n", err.msg);
			return 1;
		}
		s = sim_new(g);
		sim_opts_default(&o);
		for (int rep = 0; rep < 3; rep++) {
			double t0 = now();
			if (sim_run(s, &o, &err)) {
				fprintf(stderr, "bench_sim: %s\n", err.msg);
				return 1;
			}
			if (now() - t0 < best)
				best = now() - t0;
		}
		/* Graph columns + CSR + simulator state, from the types' sizes. */
		double per_node = 8 * 5 + 4 * 6 + 3 + 4 /* graph columns, off */ +
				  (double)g->n_edges / g->n_nodes * 5 /* dst, kind */ + 8 * 3 +
				  4 * 2 /* sim: start, end, ready, binding, indeg */;
		printf("%10u %10u %10u %12.2f %14.1f %12.0f\n", g->n_nodes, g->n_edges, g->n_ranks,
		       best * 1e3, g->n_nodes / best / 1e6, per_node);
		sim_free(s);
		graph_free(g);
	}
	return 0;
}
