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

#include "sim.h"

static uint64_t rng = 88172645463325252ull;
static int64_t rnd(int64_t lo, int64_t hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

struct e3 {
	uint32_t s, d;
	uint8_t k;
};

static struct graph *synth(uint32_t target)
{
	const uint32_t ranks = 8;
	uint32_t per_rank = target / ranks, launches = per_rank / 3; /* call, cpu, gpu */
	uint32_t nn, ne = 0, nc = 0, cap_e;
	struct graph *g;
	struct e3 *e;
	uint32_t *ncoll_rank;

	nn = ranks * (launches * 2 + launches + launches / 256 * 2);
	cap_e = nn * 3;
	e = malloc((size_t)cap_e * sizeof(*e));
	ncoll_rank = calloc(ranks, sizeof(*ncoll_rank));
	g = graph_alloc(nn, 0, ranks * 3, ranks, 0, ranks * (launches / 4 + 1));
	if (!g || !e || !ncoll_rank)
		exit(1);
	uint32_t u = 0;
	for (uint32_t r = 0; r < ranks; r++) {
		uint32_t host = r * 3, s0 = host + 1, s1 = host + 2;
		uint32_t base = u, n_host, n_s0 = 0, n_s1 = 0;
		int64_t t = 0;
		uint32_t *calls = malloc(launches * sizeof(*calls));
		/* Host thread: [cpu, launch] x launches, device syncs. */
		for (uint32_t i = 0; i < launches; i++) {
			g->proc[u] = host, g->kind[u] = GN_CPU, g->start_ns[u] = t;
			g->dur_ns[u] = rnd(2000, 9000), t += g->dur_ns[u], u++;
			g->proc[u] = host, g->kind[u] = GN_RUNTIME, g->start_ns[u] = t;
			g->dur_ns[u] = rnd(3000, 6000), t += g->dur_ns[u], calls[i] = u++;
			if (i % 256 == 255) {
				g->proc[u] = host, g->kind[u] = GN_RUNTIME,
				g->flags[u] = NF_BLOCKING;
				g->start_ns[u] = t, u++;
				g->proc[u] = host, g->kind[u] = GN_WAIT, g->start_ns[u] = t;
				g->dur_ns[u] = 2000, u++;
			}
		}
		n_host = u - base;
		for (uint32_t k = base; k + 1 < u; k++)
			e[ne++] = (struct e3){k, k + 1, GE_ORDER};
		/* Streams: compute kernels, then collectives. */
		uint32_t first_s0 = u;
		for (uint32_t i = 0; i < launches; i++) {
			if (i % 4 == 3)
				continue;
			g->proc[u] = s0, g->kind[u] = GN_KERNEL,
			g->start_ns[u] = g->start_ns[calls[i]];
			g->dur_ns[u] = rnd(1000, 40000);
			e[ne++] = (struct e3){calls[i], u, GE_LAUNCH};
			if (u > first_s0)
				e[ne++] = (struct e3){u - 1, u, GE_ORDER};
			u++, n_s0++;
		}
		uint32_t first_s1 = u;
		for (uint32_t i = 3; i < launches; i += 4) {
			g->proc[u] = s1, g->kind[u] = GN_COLL,
			g->start_ns[u] = g->start_ns[calls[i]];
			g->dur_ns[u] = rnd(5000, 80000);
			g->coll[u] = nc;
			g->colls[nc].node = u;
			g->colls[nc].kind = GC_ALL_REDUCE;
			g->colls[nc].seq = ncoll_rank[r]++;
			nc++;
			e[ne++] = (struct e3){calls[i], u, GE_LAUNCH};
			if (u > first_s1)
				e[ne++] = (struct e3){u - 1, u, GE_ORDER};
			u++, n_s1++;
		}
		/* Every 64th compute kernel waits for the latest collective. */
		for (uint32_t k = first_s0 + 64, c = first_s1; k < first_s1; k += 64) {
			while (c + 1 < u && g->start_ns[c + 1] < g->start_ns[k])
				c++;
			if (g->start_ns[c] < g->start_ns[k])
				e[ne++] = (struct e3){c, k, GE_EVENT};
		}
		/* Device syncs wait for the last kernel launched before them. */
		for (uint32_t k = base; k < base + n_host; k++) {
			if (g->kind[k] != GN_WAIT)
				continue;
			uint32_t lo = first_s0, hi = first_s1;
			while (lo < hi) {
				uint32_t mid = (lo + hi) / 2;
				if (g->start_ns[mid] < g->start_ns[k])
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo > first_s0)
				e[ne++] = (struct e3){lo - 1, k, GE_SYNC};
		}
		g->procs[host] = (struct graph_proc){r, 0, 1, 1, base, n_host};
		g->procs[s0] = (struct graph_proc){r, 1, 0, 7, first_s0, n_s0};
		g->procs[s1] = (struct graph_proc){r, 1, 0, 20, first_s1, n_s1};
		g->ranks[r].rank = r;
		free(calls);
	}
	g->n_nodes = u;
	g->n_colls = nc;
	for (uint32_t k = 0; k < u; k++) {
		g->iter[k] = -1;
		if (g->kind[k] != GN_COLL)
			g->coll[k] = UINT32_MAX;
	}
	/* CSR. */
	free(g->out_dst);
	free(g->out_kind);
	g->n_edges = ne;
	g->out_dst = malloc((size_t)ne * sizeof(*g->out_dst));
	g->out_kind = malloc((size_t)ne);
	memset(g->out_off, 0, ((size_t)nn + 1) * sizeof(*g->out_off));
	for (uint32_t k = 0; k < ne; k++)
		g->out_off[e[k].s + 1]++;
	for (uint32_t k = 0; k < u; k++)
		g->out_off[k + 1] += g->out_off[k];
	uint32_t *fill = calloc(nn, sizeof(*fill));
	for (uint32_t k = 0; k < ne; k++) {
		uint32_t at = g->out_off[e[k].s] + fill[e[k].s]++;
		g->out_dst[at] = e[k].d;
		g->out_kind[at] = e[k].k;
	}
	free(fill);
	free(e);
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
