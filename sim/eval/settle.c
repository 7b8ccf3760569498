/* settle.c - simulate a synthesised graph and make it a trace of itself. */
#include "settle.h"

#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "metrics.h"
#include "sim.h"
#include "msort.h"
#include "vec.h"

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

struct ivec {
	struct ival *v;
	size_t n, cap;
};

/* What settling works in, kept from graph to graph (settle.h; zeroed:
 * empty): the breakdown's unions (u, w, cm, mu, and tmp to sort them),
 * the unit tasks' idle time inside (inner), the folded tasks
 * (fold_tasks), the metrics' own.  Each use fills or zeroes what it reads,
 * as a new allocation would be. */
struct settle_scratch {
	struct ivec u, w, cm, mu, tmp;
	VEC(int64_t) inner;
	VEC(struct sim_piece) pc;
	VEC(struct sim_folded) ft;
	VEC(uint8_t) done;
	struct metrics_scratch *ms;
};

/* u[0..n) by start, tmp n of scratch: a natural merge sort (the input is
 * each stream's tasks in their order, runs one after another). */
MSORT_RUNS(sort_ivals, struct ival, a)

/* u sorted and merged into its union (tmp: scratch).  The union does not
 * depend on the order of intervals of one start, so input already in
 * order (one stream's tasks, mostly) is not sorted again.  0 or
 * PRISM_ENOMEM. */
static int merge_ivals(struct ivec *u, struct ivec *tmp)
{
	size_t m = 0, i = 1;
	while (i < u->n && u->v[i - 1].a <= u->v[i].a)
		i++;
	if (i < u->n) {
		if (VEC_RESERVE(*tmp, u->n))
			return PRISM_ENOMEM;
		sort_ivals(u->v, tmp->v, u->n);
	}
	for (i = 0; i < u->n; i++) {
		if (m && u->v[i].a <= u->v[m - 1].b) {
			if (u->v[i].b > u->v[m - 1].b)
				u->v[m - 1].b = u->v[i].b;
		} else {
			u->v[m++] = u->v[i];
		}
	}
	u->n = m;
	return 0;
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

/* [x, y) clipped to [a, b) appended to u where anything is left: 1
 * appended, 0 nothing left, -1 out of memory. */
static int push_clipped(struct ivec *u, int64_t x, int64_t y, int64_t a, int64_t b)
{
	if (x < a)
		x = a;
	if (y > b)
		y = b;
	if (x >= y)
		return 0;
	if (u->n == u->cap && vec_reserve_((void **)&u->v, &u->cap, u->n + 1, sizeof(*u->v)))
		return -1;
	u->v[u->n++] = (struct ival){x, y};
	return 1;
}

/* The merged union, sorted, of rank r's tasks in [a, b) on its GPU
 * processors other than comp, of kinds collectives and point-to-point
 * (comm 1) or every other kind (comm 0: what metrics.h counts as compute
 * there -- activation offloading's copies, the copy kernels DeepSpeed,
 * FSDP and FSDP2 run on the data-parallel stream): into u (emptied
 * first; tmp scratch).  0 or PRISM_ENOMEM. */
static int other_union(const struct sim *sm, uint32_t r, uint32_t comp, int64_t a, int64_t b,
		       int comm, struct ivec *u, struct ivec *tmp)
{
	const struct graph *g = sm->g;
	u->n = 0;
	for (uint32_t p = 0; p < g->n_procs; p++) {
		if (g->procs[p].rank != r || !g->procs[p].gpu || p == comp)
			continue;
		for (uint32_t v = g->procs[p].first; v < g->procs[p].first + g->procs[p].n; v++) {
			int k = g->kind[v];
			if ((k == GN_COLL || k == GN_P2P) == comm &&
			    push_clipped(u, sm->start_ns[v], sm->end_ns[v], a, b) < 0)
				return PRISM_ENOMEM;
		}
	}
	return merge_ivals(u, tmp);
}

/* The pairs' side lanes (sim.h: the ring's transfers inside a unit task
 * of compute stream comp) in [a, b), as the sim ran them (sim.xstart,
 * xend), added to u (merged and sorted again; tmp scratch): the
 * communication the kernel-level run has on its side stream there.  0 or
 * PRISM_ENOMEM. */
static int side_union(const struct sim *sm, const struct synth_out *so, uint32_t comp, int64_t a,
		      int64_t b, struct ivec *u, struct ivec *tmp)
{
	size_t add = 0;
	for (size_t i = 0; i < so->n_marks; i++) {
		const struct synth_fold_mark *mk = &so->marks[i];
		if (!mk->n_kern2 || sm->g->proc[mk->node] != comp)
			continue;
		for (uint32_t l = 0; l < mk->n_kern2; l++) {
			size_t q = sm->xoff[i] + mk->n_kern + l;
			int got = push_clipped(u, sm->xstart[q], sm->xend[q], a, b);
			if (got < 0)
				return PRISM_ENOMEM;
			add += (size_t)got;
		}
	}
	return add ? merge_ivals(u, tmp) : 0;
}

/* The intersection of merged sorted u[nu] and v[nv] into w (emptied
 * first); 0 or PRISM_ENOMEM. */
static int meet(const struct ival *u, size_t nu, const struct ival *v, size_t nv, struct ivec *w)
{
	size_t i = 0, j = 0;
	w->n = 0;
	if (VEC_RESERVE(*w, nu + nv + 1))
		return PRISM_ENOMEM;
	while (i < nu && j < nv) {
		int64_t x = u[i].a > v[j].a ? u[i].a : v[j].a,
			y = u[i].b < v[j].b ? u[i].b : v[j].b;
		if (x < y)
			w->v[w->n++] = (struct ival){x, y};
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
static int fold_breakdown(const struct sim *sm, const struct synth_out *so, struct metrics_iter *it,
			  struct settle_scratch *sc)
{
	const struct sim_piece_time *lg = sm->plog.v;
	size_t nlg = sm->plog.n;
	const struct graph *g = sm->g;
	int64_t a = it->sim_start_ns, b = a + it->predicted_ns;
	uint32_t comp = it->rank < (uint32_t)so->stages ? so->compute[it->rank] : UINT32_MAX;
	int64_t d_overlap = 0, d_comm = 0, d_comp = 0, d_idle = 0;
	const struct ival *u, *cm, *mu, *w;
	size_t n, ncm, nmu, nw;

	/* The unions of the rank's other communication and copies in the
	 * window, and where they meet; w: the other communication with the
	 * pairs' side lanes (the kernel-level run's side stream), what the
	 * kernels inside are counted against (metrics.h counted the unit
	 * tasks against u). */
	if (other_union(sm, it->rank, comp, a, b, 1, &sc->u, &sc->tmp) ||
	    other_union(sm, it->rank, comp, a, b, 1, &sc->w, &sc->tmp) ||
	    side_union(sm, so, comp, a, b, &sc->w, &sc->tmp) ||
	    other_union(sm, it->rank, comp, a, b, 0, &sc->cm, &sc->tmp) ||
	    meet(sc->w.v, sc->w.n, sc->cm.v, sc->cm.n, &sc->mu))
		return PRISM_ENOMEM;
	u = sc->u.v;
	n = sc->u.n;
	w = sc->w.v;
	nw = sc->w.n;
	cm = sc->cm.v;
	ncm = sc->cm.n;
	mu = sc->mu.v;
	nmu = sc->mu.n;
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
	it->overlap_ns += d_overlap;
	it->exposed_comm_ns += d_comm;
	it->exposed_compute_ns += d_comp;
	it->idle_ns += d_idle;
	return 0;
}

/* The unit tasks of so as the sim's folded tasks (sim.h), task i being
 * mark i, in sc's arrays; the pieces of a template are shared by its
 * units. */
static int fold_tasks(const struct synth_out *so, struct sim_fold *fo, struct settle_scratch *sc)
{
	size_t nk = so->n_kerns ? so->n_kerns : 1;
	struct sim_piece *pc;
	struct sim_folded *ft;
	uint8_t *done;

	if (VEC_RESERVE(sc->pc, nk) || VEC_RESERVE(sc->ft, so->n_marks) ||
	    VEC_RESERVE(sc->done, nk))
		return PRISM_ENOMEM;
	pc = sc->pc.v;
	ft = sc->ft.v;
	done = sc->done.v;
	memset(done, 0, nk);
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
	fo->tasks = ft;
	fo->n_tasks = (uint32_t)so->n_marks;
	fo->pieces = pc;
	return 0;
}

struct settle_scratch *settle_scratch_new(void)
{
	return prism_calloc(1, sizeof(struct settle_scratch));
}

/* sc's arrays freed, sc left empty. */
static void scratch_release(struct settle_scratch *sc)
{
	VEC_FREE(sc->u);
	VEC_FREE(sc->w);
	VEC_FREE(sc->cm);
	VEC_FREE(sc->mu);
	VEC_FREE(sc->tmp);
	VEC_FREE(sc->inner);
	VEC_FREE(sc->pc);
	VEC_FREE(sc->ft);
	VEC_FREE(sc->done);
	metrics_scratch_free(sc->ms);
	sc->ms = NULL;
}

void settle_scratch_free(struct settle_scratch *sc)
{
	if (!sc)
		return;
	scratch_release(sc);
	free(sc);
}

#define TRIM(vec)                                                                                  \
	do {                                                                                       \
		if ((vec).cap > SETTLE_KEEP)                                                       \
			VEC_FREE(vec);                                                             \
	} while (0)

/* sc after a graph: any array with room for more than SETTLE_KEEP
 * entries freed. */
static void scratch_trim(struct settle_scratch *sc)
{
	TRIM(sc->u);
	TRIM(sc->w);
	TRIM(sc->cm);
	TRIM(sc->mu);
	TRIM(sc->tmp);
	TRIM(sc->inner);
	TRIM(sc->pc);
	TRIM(sc->ft);
	TRIM(sc->done);
	if (sc->ms)
		metrics_scratch_trim(sc->ms, SETTLE_KEEP);
}

/* sm when it is not the caller's kept one. */
static void sim_drop(struct sim *keep, struct sim *sm)
{
	if (sm != keep)
		sim_free(sm);
}

/* settle_synth(), with the max-plus pass tried first or not, through
 * keep (bound to g) or a simulator of its own, in ksc's memory or its
 * own. */
static int settle_run(struct sim *keep, struct settle_scratch *ksc, struct graph *g,
		      const struct synth_out *so, struct settle_out *out, int maxplus,
		      struct prism_err *err)
{
	struct sim *sm = keep ? (sim_bind(keep, g) ? NULL : keep) : sim_new(g);
	struct settle_scratch own, *sc = ksc ? ksc : &own;
	struct sim_opts o;
	struct graph_iter *it;
	int rc, P = so->stages, steps = so->steps;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int64_t *inner = NULL; /* folded units: idle time inside a unit task */
	size_t per_step;
	struct sim_fold fo;

	memset(&own, 0, sizeof(own));
	memset(out, 0, sizeof(*out));
	memset(&fo, 0, sizeof(fo));
	if (sm && !sc->ms && !(sc->ms = metrics_scratch_new()))
		goto oom;
	if (so->n_marks && sm) {
		if (VEC_RESERVE(sc->inner, g->n_nodes ? g->n_nodes : 1) || fold_tasks(so, &fo, sc))
			goto oom;
		inner = sc->inner.v;
		memset(inner, 0, g->n_nodes * sizeof(*inner)); /* as calloc left it */
	}
	if (!sm)
		goto oom;
	sim_opts_default(&o);
	o.slow_compute = so->slow_compute;
	o.slow_comm = so->slow_comm;
	o.fold = so->n_marks ? &fo : NULL;
	/* Without the event queue where its order cannot matter (sim.h). */
	rc = 0;
	if (maxplus && (rc = sim_run_maxplus(sm, &o, err)) < 0)
		goto done;
	out->maxplus = maxplus ? sm->mp_why : SIM_MP_OPTS;
	out->maxplus_queued = rc == 1 ? sm->mp_queued : 0;
	out->maxplus_direct = rc == 1 ? sm->mp_direct : 0;
	if (rc == 0 && (rc = sim_run(sm, &o, err)))
		goto done;
	/* A unit task's span less the time its pieces ran. */
	for (size_t i = 0; inner && i < so->n_marks; i++) {
		uint32_t u = so->marks[i].node;
		inner[u] = sm->end_ns[u] - sm->start_ns[u] - sm->fold_busy[i];
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
		struct metrics_iter *its;
		/* The breakdown of the one iteration reported, not of all. */
		long n = metrics_iteration_times_k(sm, sc->ms, &its), pick = -1;
		if (n < 0 || metrics_step_time_k(its, n, sc->ms, &out->iter_s))
			goto oom;
		for (long i = 0; i < n; i++)
			if (its[i].step == steps - 1 &&
			    (pick < 0 || its[i].predicted_ns > its[pick].predicted_ns))
				pick = i;
		if (pick >= 0) {
			if (metrics_breakdown_k(sm, sc->ms, &its[pick]) ||
			    (so->n_marks && fold_breakdown(sm, so, &its[pick], sc)))
				goto oom;
			out->exposed_compute_s = (double)its[pick].exposed_compute_ns * 1e-9;
			out->exposed_comm_s = (double)its[pick].exposed_comm_ns * 1e-9;
			out->overlap_s = (double)its[pick].overlap_ns * 1e-9;
			out->idle_s = (double)its[pick].idle_ns * 1e-9;
		}
	}
	rc = 0;
	goto done;
oom:
	rc = prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
done:
	if (sm)
		sim_drop(keep, sm);
	if (sc == &own)
		scratch_release(&own);
	else
		scratch_trim(sc);
	return rc;
}

int settle_synth(struct graph *g, const struct synth_out *so, struct settle_out *out,
		 struct prism_err *err)
{
	return settle_run(NULL, NULL, g, so, out, 1, err);
}

int settle_synth_sim(struct sim *sm, struct settle_scratch *sc, struct graph *g,
		     const struct synth_out *so, struct settle_out *out, struct prism_err *err)
{
	return settle_run(sm, sc, g, so, out, 1, err);
}

int settle_synth_events(struct graph *g, const struct synth_out *so, struct settle_out *out,
			struct prism_err *err)
{
	return settle_run(NULL, NULL, g, so, out, 0, err);
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
