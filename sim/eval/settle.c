/* settle.c - simulate a synthesised graph and make it a trace of itself. */
#include "settle.h"

#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "metrics.h"
#include "sim.h"

double settle_bubble(int stages, int64_t span_ns, const int64_t *busy_ns)
{
	double idle = 0;
	for (int r = 0; r < stages && r < LAYOUT_MAX_STAGES && span_ns > 0; r++)
		idle += 1.0 - (double)busy_ns[r] / (double)span_ns;
	return stages > 0 ? idle / stages : 0;
}

/* Intervals by start (for the union of a rank's communication). */
struct ival {
	int64_t a, b;
};

static int cmp_ival(const void *x, const void *y)
{
	const struct ival *p = x, *q = y;
	return p->a < q->a ? -1 : p->a > q->a;
}

/* u[*n] sorted and merged into its union (*n intervals left).  The union
 * does not depend on the order of intervals of one start, so input already
 * in order (one stream's tasks, mostly) is not sorted again. */
static void merge_ivals(struct ival *u, size_t *n)
{
	size_t m = 0, i = 1;
	while (i < *n && u[i - 1].a <= u[i].a)
		i++;
	if (i < *n)
		qsort(u, *n, sizeof(*u), cmp_ival);
	for (i = 0; i < *n; i++) {
		if (m && u[i].a <= u[m - 1].b) {
			if (u[i].b > u[m - 1].b)
				u[m - 1].b = u[i].b;
		} else {
			u[m++] = u[i];
		}
	}
	*n = m;
}

/* The first of u (merged, sorted) that ends after x. */
static size_t first_after(const struct ival *u, size_t n, int64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u[mid].b <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* |[x, y) n u|, u merged and sorted; *p: the first interval that may
 * meet an interval starting at x or later (advanced). */
static int64_t covered(const struct ival *u, size_t n, size_t *p, int64_t x, int64_t y)
{
	int64_t c = 0;
	while (*p < n && u[*p].b <= x)
		(*p)++;
	for (size_t k = *p; k < n && u[k].a < y; k++)
		c += (u[k].b < y ? u[k].b : y) - (u[k].a > x ? u[k].a : x);
	return c;
}

/* [x, y) clipped to [a, b) appended to *u (*n of *cap; grown by
 * doubling) where anything is left: 1 appended, 0 nothing left, -1 out of
 * memory (*u freed). */
static int push_clipped(struct ival **u, size_t *n, size_t *cap, int64_t x, int64_t y, int64_t a,
			int64_t b)
{
	if (x < a)
		x = a;
	if (y > b)
		y = b;
	if (x >= y)
		return 0;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct ival *nu = prism_realloc(*u, nc * sizeof(*nu));
		if (!nu) {
			free(*u);
			*u = NULL;
			return -1;
		}
		*u = nu;
		*cap = nc;
	}
	(*u)[(*n)++] = (struct ival){x, y};
	return 1;
}

/* The merged union, sorted, of rank r's tasks in [a, b) on its GPU
 * processors other than comp, of kinds collectives and point-to-point
 * (comm 1) or every other kind (comm 0: what metrics.h counts as compute
 * there -- activation offloading's copies, the copy kernels DeepSpeed,
 * FSDP and FSDP2 run on the data-parallel stream): into *u (*n of them).  0 or PRISM_ENOMEM (*u
 * freed). */
static int other_union(const struct sim *sm, uint32_t r, uint32_t comp, int64_t a, int64_t b,
		       int comm, struct ival **u, size_t *n)
{
	const struct graph *g = sm->g;
	size_t cap = 0;
	*u = NULL;
	*n = 0;
	for (uint32_t p = 0; p < g->n_procs; p++) {
		if (g->procs[p].rank != r || !g->procs[p].gpu || p == comp)
			continue;
		for (uint32_t v = g->procs[p].first; v < g->procs[p].first + g->procs[p].n; v++) {
			int k = g->kind[v];
			if ((k == GN_COLL || k == GN_P2P) == comm &&
			    push_clipped(u, n, &cap, sm->start_ns[v], sm->end_ns[v], a, b) < 0)
				return PRISM_ENOMEM;
		}
	}
	merge_ivals(*u, n);
	return 0;
}

/* The pairs' side lanes (sim.h: the ring's transfers inside a unit task
 * of compute stream comp) in [a, b), as the sim ran them (sim.xstart,
 * xend), added to u (*n; merged and sorted again): the communication the
 * kernel-level run has on its side stream there.  0 or PRISM_ENOMEM (*u
 * freed). */
static int side_union(const struct sim *sm, const struct synth_out *so, uint32_t comp, int64_t a,
		      int64_t b, struct ival **u, size_t *n)
{
	size_t cap = *n, add = 0;
	for (size_t i = 0; i < so->n_marks; i++) {
		const struct synth_fold_mark *mk = &so->marks[i];
		if (!mk->n_kern2 || sm->g->proc[mk->node] != comp)
			continue;
		for (uint32_t l = 0; l < mk->n_kern2; l++) {
			size_t q = sm->xoff[i] + mk->n_kern + l;
			int got = push_clipped(u, n, &cap, sm->xstart[q], sm->xend[q], a, b);
			if (got < 0)
				return PRISM_ENOMEM;
			add += (size_t)got;
		}
	}
	if (add)
		merge_ivals(*u, n);
	return 0;
}

/* The intersection of merged sorted u[nu] and v[nv] into *w (*nw); 0 or
 * PRISM_ENOMEM. */
static int meet(const struct ival *u, size_t nu, const struct ival *v, size_t nv, struct ival **w,
		size_t *nw)
{
	size_t i = 0, j = 0;
	*nw = 0;
	*w = prism_malloc((nu + nv + 1) * sizeof(**w));
	if (!*w)
		return PRISM_ENOMEM;
	while (i < nu && j < nv) {
		int64_t x = u[i].a > v[j].a ? u[i].a : v[j].a,
			y = u[i].b < v[j].b ? u[i].b : v[j].b;
		if (x < y)
			(*w)[(*nw)++] = (struct ival){x, y};
		if (u[i].b < v[j].b)
			i++;
		else
			j++;
	}
	return 0;
}

/*
 * The breakdown (metrics.h) counts a folded unit task as compute over its
 * whole span.  Inside it are its kernels, collectives and the gaps between
 * them (lags, launches): each kernel's time is found again as the full
 * simulation has it (the later of the previous end and its launch, plus
 * its lag, from the task's predecessor and its unit's host start), and
 * each part is counted against the rank's other communication (its
 * data-parallel and point-to-point streams) and its other streams'
 * other tasks ("copies": activation offloading's, the ZeRO
 * implementations' copy kernels on the data-parallel stream, all of
 * which metrics.h counts as compute) as metrics.h does: compute beside
 * communication is overlap, alone exposed compute; collectives beside a
 * copy overlap, else exposed communication; gaps beside communication
 * exposed communication, beside a copy compute, beside both overlap,
 * alone idle (the figures of it are corrected).  0 or PRISM_ENOMEM.
 */
static int fold_breakdown(const struct sim *sm, const struct synth_out *so, struct metrics_iter *it)
{
	const struct sim_piece_time *lg = sm->plog.v;
	size_t nlg = sm->plog.n;
	const struct graph *g = sm->g;
	int64_t a = it->sim_start_ns, b = a + it->predicted_ns;
	uint32_t comp = it->rank < (uint32_t)so->stages ? so->compute[it->rank] : UINT32_MAX;
	int64_t d_overlap = 0, d_comm = 0, d_comp = 0, d_idle = 0;
	struct ival *u = NULL, *cm = NULL, *mu = NULL, *w = NULL;
	size_t n = 0, ncm = 0, nmu = 0, nw = 0;

	/* The unions of the rank's other communication and copies in the
	 * window, and where they meet; w: the other communication with the
	 * pairs' side lanes (the kernel-level run's side stream), what the
	 * kernels inside are counted against (metrics.h counted the unit
	 * tasks against u). */
	if (other_union(sm, it->rank, comp, a, b, 1, &u, &n))
		return PRISM_ENOMEM;
	if (other_union(sm, it->rank, comp, a, b, 1, &w, &nw) ||
	    side_union(sm, so, comp, a, b, &w, &nw) ||
	    other_union(sm, it->rank, comp, a, b, 0, &cm, &ncm) ||
	    meet(w, nw, cm, ncm, &mu, &nmu)) {
		free(u);
		free(w);
		free(cm);
		return PRISM_ENOMEM;
	}
	for (size_t i = 0; i < so->n_marks; i++) {
		const struct synth_fold_mark *mk = &so->marks[i];
		uint32_t v = mk->node;
		int64_t x = sm->start_ns[v] > a ? sm->start_ns[v] : a;
		int64_t y = sm->end_ns[v] < b ? sm->end_ns[v] : b;
		int64_t e, h, x0, cin = 0, co = 0, tin = 0, to = 0, X, XW;
		int64_t cmm = 0, cmu = 0, tm = 0, tmu = 0, XM = 0, XMU = 0, gU, gM, gMU;
		size_t p, pm = 0, pu = 0, l, hi = nlg;
		if (g->proc[v] != comp || x >= y || v == 0)
			continue;
		/* The kernels run from the end of the task before (its
		 * first kernel's), where the task may start later. */
		e = sm->end_ns[v - 1];
		h = sm->start_ns[mk->host];
		x0 = e > a ? e : a;
		p = first_after(w, nw, x0);
		pm = first_after(cm, ncm, x0);
		pu = first_after(mu, nmu, x0);
		/* The pieces the sim followed under contention (sim.h), by
		 * task (mark i) and piece: their times as simulated (a pair's
		 * all of them, sim.xstart and xend). */
		for (l = 0; l < hi;) {
			size_t mid = l + (hi - l) / 2;
			if (lg[mid].task < i)
				l = mid + 1;
			else
				hi = mid;
		}
		for (uint32_t k = 0; k < mk->n_kern; k++) {
			const struct synth_fold_kern *kk = &so->kerns[mk->kern0 + k];
			int64_t at = prism_time_add(h, kk->rel_ns), kx, ky, ks;
			if (mk->n_kern2) {
				ks = sm->xstart[sm->xoff[i] + k];
				e = sm->xend[sm->xoff[i] + k];
			} else if (l < nlg && lg[l].task == i && lg[l].piece == k) {
				ks = lg[l].start_ns;
				e = lg[l++].end_ns;
			} else {
				ks = prism_time_add(e > at ? e : at, kk->lag_ns);
				e = prism_time_add(ks, kk->dur_ns);
			}
			kx = ks > x0 ? ks : x0;
			ky = e < y ? e : y;
			if (kx >= ky)
				continue;
			if (kk->comm) {
				tin += ky - kx;
				to += covered(w, nw, &p, kx, ky);
				if (ncm) {
					tm += covered(cm, ncm, &pm, kx, ky);
					tmu += covered(mu, nmu, &pu, kx, ky);
				}
			} else {
				cin += ky - kx;
				co += covered(w, nw, &p, kx, ky);
				if (ncm) {
					cmm += covered(cm, ncm, &pm, kx, ky);
					cmu += covered(mu, nmu, &pu, kx, ky);
				}
			}
		}
		p = first_after(u, n, x);
		X = covered(u, n, &p, x, y);
		p = first_after(w, nw, x);
		XW = covered(w, nw, &p, x, y);
		if (ncm) {
			pm = first_after(cm, ncm, x);
			pu = first_after(mu, nmu, x);
			XM = covered(cm, ncm, &pm, x, y);
			XMU = covered(mu, nmu, &pu, x, y);
		}
		/* metrics.h counted [x, y) as compute (beside X of other
		 * communication: overlap) and the gap before it as idle or
		 * exposed communication; the kernels say what each part was:
		 * the gaps beside communication (gU), copies (gM), both (gMU);
		 * a pair's side lane is communication beside its kernels. */
		gU = XW - co - to;
		gM = XM - cmm - tm;
		gMU = XMU - cmu - tmu;
		d_overlap += co + tm + gMU - X;
		d_comp += (cin - co) + (gM - gMU) - ((y - x) - X);
		d_comm += (tin - tm) + (gU - gMU);
		d_idle += ((y - x) - cin - tin) - gU - gM + gMU;
	}
	free(cm);
	free(mu);
	free(u);
	free(w);
	it->overlap_ns += d_overlap;
	it->exposed_comm_ns += d_comm;
	it->exposed_compute_ns += d_comp;
	it->idle_ns += d_idle;
	return 0;
}

/* The unit tasks of so as the sim's folded tasks (sim.h), task i being
 * mark i; the pieces of a template are shared by its units. */
static int fold_tasks(const struct synth_out *so, struct sim_fold *fo)
{
	struct sim_piece *pc = prism_malloc((so->n_kerns ? so->n_kerns : 1) * sizeof(*pc));
	struct sim_folded *ft = prism_malloc(so->n_marks * sizeof(*ft));
	uint8_t *done = prism_calloc(so->n_kerns ? so->n_kerns : 1, 1);

	if (!pc || !ft || !done) {
		free(pc);
		free(ft);
		free(done);
		return PRISM_ENOMEM;
	}
	for (size_t k = 0; k < so->n_kerns; k++) {
		const struct synth_fold_kern *kk = &so->kerns[k];
		memset(&pc[k], 0, sizeof(pc[k]));
		pc[k].rel_ns = kk->rel_ns;
		pc[k].lag_ns = kk->lag_ns;
		pc[k].dur_ns = kk->dur_ns;
		/* As sim.c's contended() has them: kernels compute, the
		 * (one-member) collectives communication, transfers neither. */
		pc[k].kind = kk->comm == SYNTH_KERN_COLL  ? SIM_PIECE_COMM
			     : kk->comm == SYNTH_KERN_P2P ? SIM_PIECE_IDLE
							  : SIM_PIECE_COMPUTE;
		pc[k].xw = kk->xw == SYNTH_NO_XW ? SIM_NO_XW : kk->xw;
	}
	for (size_t i = 0; i < so->n_marks; i++) {
		const struct synth_fold_mark *mk = &so->marks[i];
		ft[i] = (struct sim_folded){mk->node,	mk->host,  mk->kern0,
					    mk->n_kern, mk->kern2, mk->n_kern2};
		if (mk->n_kern && !done[mk->kern0]) {
			sim_fold_pieces(pc, mk->kern0, mk->n_kern);
			done[mk->kern0] = 1;
		}
	}
	free(done);
	fo->tasks = ft;
	fo->n_tasks = (uint32_t)so->n_marks;
	fo->pieces = pc;
	return 0;
}

static void fold_tasks_free(struct sim_fold *fo)
{
	free((void *)fo->tasks);
	free((void *)fo->pieces);
	memset(fo, 0, sizeof(*fo));
}

/* sm when it is not the caller's kept one. */
static void sim_drop(struct sim *keep, struct sim *sm)
{
	if (sm != keep)
		sim_free(sm);
}

/* settle_synth(), with the max-plus pass tried first or not, through
 * keep (bound to g) or a simulator of its own. */
static int settle_run(struct sim *keep, struct graph *g, const struct synth_out *so,
		      struct settle_out *out, int maxplus, struct prism_err *err)
{
	struct sim *sm = keep ? (sim_bind(keep, g) ? NULL : keep) : sim_new(g);
	struct sim_opts o;
	struct graph_iter *it;
	int rc, P = so->stages, steps = so->steps;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int64_t *inner = NULL; /* folded units: idle time inside a unit task */
	size_t per_step;
	struct sim_fold fo;

	memset(out, 0, sizeof(*out));
	memset(&fo, 0, sizeof(fo));
	if (so->n_marks && sm) {
		inner = prism_calloc(g->n_nodes, sizeof(*inner));
		if (!inner || fold_tasks(so, &fo)) {
			sim_drop(keep, sm);
			sm = NULL;
		}
	}
	if (!sm) {
		fold_tasks_free(&fo);
		free(inner);
		return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	}
	sim_opts_default(&o);
	o.slow_compute = so->slow_compute;
	o.slow_comm = so->slow_comm;
	o.fold = so->n_marks ? &fo : NULL;
	/* Without the event queue where its order cannot matter (sim.h). */
	rc = 0;
	if (maxplus && (rc = sim_run_maxplus(sm, &o, err)) < 0) {
		sim_drop(keep, sm);
		fold_tasks_free(&fo);
		free(inner);
		return rc;
	}
	out->maxplus = maxplus ? sm->mp_why : SIM_MP_OPTS;
	out->maxplus_queued = rc == 1 ? sm->mp_queued : 0;
	out->maxplus_direct = rc == 1 ? sm->mp_direct : 0;
	if (rc == 0 && (rc = sim_run(sm, &o, err))) {
		sim_drop(keep, sm);
		fold_tasks_free(&fo);
		free(inner);
		return rc;
	}
	/* A unit task's span less the time its pieces ran. */
	for (size_t i = 0; inner && i < so->n_marks; i++) {
		uint32_t u = so->marks[i].node;
		inner[u] = sm->end_ns[u] - sm->start_ns[u] - sm->fold_busy[i];
	}
	fold_tasks_free(&fo);
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
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		uint32_t b = sm->nd[u].binding;
		if (b != UINT32_MAX && g->procs[g->proc[u]].gpu && !g->procs[g->proc[b]].gpu) {
			uint32_t r = g->procs[g->proc[b]].rank;
			out->launch_bound++;
			if (r < LAYOUT_MAX_STAGES)
				out->launch_bound_stage[r]++;
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
	for (int r = 0; r < P && r < LAYOUT_MAX_STAGES && hi > lo; r++) {
		const struct graph_proc *pr = &g->procs[so->compute[r]];
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++)
			if (sm->start_ns[u] >= lo && sm->end_ns[u] <= hi)
				out->unit_busy_ns[r] +=
				    sm->end_ns[u] - sm->start_ns[u] - (inner ? inner[u] : 0);
	}
	out->unit_span_ns = hi > lo ? hi - lo : 0;
	out->bubble = settle_bubble(P, out->unit_span_ns, out->unit_busy_ns);
	{
		struct metrics_iter *its = NULL;
		/* The breakdown of the one iteration reported, not of all. */
		long n = metrics_iteration_times(sm, &its), pick = -1;
		if (n < 0) {
			sim_drop(keep, sm);
			free(inner);
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		}
		if (metrics_step_time(its, n, &out->iter_s)) {
			free(its);
			sim_drop(keep, sm);
			free(inner);
			return prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
		}
		for (long i = 0; i < n; i++)
			if (its[i].step == steps - 1 &&
			    (pick < 0 || its[i].predicted_ns > its[pick].predicted_ns))
				pick = i;
		if (pick >= 0) {
			if (metrics_breakdown(sm, &its[pick]) ||
			    (so->n_marks && fold_breakdown(sm, so, &its[pick]))) {
				free(its);
				sim_drop(keep, sm);
				free(inner);
				return prism_err_set(err, PRISM_ENOMEM,
						     "simulation: out of memory");
			}
			out->exposed_compute_s = (double)its[pick].exposed_compute_ns * 1e-9;
			out->exposed_comm_s = (double)its[pick].exposed_comm_ns * 1e-9;
			out->overlap_s = (double)its[pick].overlap_ns * 1e-9;
			out->idle_s = (double)its[pick].idle_ns * 1e-9;
		}
		free(its);
	}
	sim_drop(keep, sm);
	free(inner);
	return 0;
}

int settle_synth(struct graph *g, const struct synth_out *so, struct settle_out *out,
		 struct prism_err *err)
{
	return settle_run(NULL, g, so, out, 1, err);
}

int settle_synth_sim(struct sim *sm, struct graph *g, const struct synth_out *so,
		     struct settle_out *out, struct prism_err *err)
{
	return settle_run(sm, g, so, out, 1, err);
}

int settle_synth_events(struct graph *g, const struct synth_out *so, struct settle_out *out,
			struct prism_err *err)
{
	return settle_run(NULL, g, so, out, 0, err);
}

int settle_build(const struct synth_in *in, struct graph **g, struct synth_out *so,
		 struct settle_out *st, struct prism_err *err)
{
	int rc;

	*g = NULL;
	if ((rc = synth_build(in, g, so, err)))
		return rc;
	rc = settle_synth(*g, so, st, err);
	if (rc) {
		graph_free(*g);
		synth_out_release(so);
		*g = NULL;
	}
	return rc;
}
