/* settle.c - simulate a synthesised graph and make it a trace of itself. */
#include "settle.h"

#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "sim.h"

int settle_synth(struct graph *g, const struct synth_out *so, struct settle_out *out,
		 struct prism_err *err)
{
	struct sim *sm = sim_new(g);
	struct sim_opts o;
	struct graph_iter *it;
	int rc, P = so->stages, steps = so->steps;
	double idle = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	size_t per_step;

	memset(out, 0, sizeof(*out));
	if (!sm)
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	sim_opts_default(&o);
	o.slow_compute = so->slow_compute;
	o.slow_comm = so->slow_comm;
	if ((rc = sim_run(sm, &o, err))) {
		sim_free(sm);
		return rc;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		g->start_ns[u] = sm->start_ns[u];
		/* What contention made of a task is its traced time: the
		 * settled graph replays (without contention) as it ran. */
		if ((g->kind[u] == GN_KERNEL || g->kind[u] == GN_COLL) &&
		    sm->end_ns[u] - sm->start_ns[u] != g->dur_ns[u])
			g->dur_ns[u] = sm->end_ns[u] - sm->start_ns[u];
		if (g->kind[u] == GN_WAIT && u > 0) {
			int64_t w = sm->start_ns[u] - sm->end_ns[u - 1];
			g->wait_ns[u] = w > 0 ? w : 0;
		}
	}
	it = g->iters;
	for (size_t i = 0; i < so->n_steps; i++) {
		uint32_t f = so->step_first[i], l = so->step_last[i];
		it[i].start_ns = sm->start_ns[f];
		it[i].dur_ns = sm->end_ns[l] - sm->start_ns[f];
	}
	per_step = steps ? so->n_units / (size_t)steps : 0;
	for (size_t i = 0; i < per_step; i++) {
		if (sm->start_ns[so->unit_first[i]] < lo)
			lo = sm->start_ns[so->unit_first[i]];
		if (sm->end_ns[so->unit_last[i]] > hi)
			hi = sm->end_ns[so->unit_last[i]];
	}
	for (int r = 0; r < P && hi > lo; r++) {
		const struct graph_proc *pr = &g->procs[so->compute[r]];
		int64_t busy = 0;
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++)
			if (sm->start_ns[u] >= lo && sm->end_ns[u] <= hi)
				busy += sm->end_ns[u] - sm->start_ns[u];
		idle += 1.0 - (double)busy / (double)(hi - lo);
	}
	out->bubble = P > 0 ? idle / P : 0;
	{
		struct metrics_iter *its = NULL;
		long n = metrics_iterations(sm, &its), pick = -1;
		if (n < 0) {
			sim_free(sm);
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		}
		if (metrics_step_time(its, n, &out->iter_s)) {
			free(its);
			sim_free(sm);
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		}
		for (long i = 0; i < n; i++)
			if (its[i].step == steps - 1 &&
			    (pick < 0 || its[i].predicted_ns > its[pick].predicted_ns))
				pick = i;
		if (pick >= 0) {
			out->exposed_compute_s = (double)its[pick].exposed_compute_ns * 1e-9;
			out->exposed_comm_s = (double)its[pick].exposed_comm_ns * 1e-9;
			out->overlap_s = (double)its[pick].overlap_ns * 1e-9;
			out->idle_s = (double)its[pick].idle_ns * 1e-9;
		}
		free(its);
	}
	sim_free(sm);
	return 0;
}
