/* reshape.c - repeat, drop and add tasks of a traced graph (reshape.h). */
#include "reshape.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "imap.h"
#include "vec.h"

#define NONE32 UINT32_MAX

void reshape_plan_init(struct reshape_plan *p)
{
	memset(p, 0, sizeof(*p));
}

/* A task of the candidate: a copy of base task u, or an added one. */
struct xn {
	uint32_t u; /* base node, NONE32 for an added task */
	uint32_t proc;
	int32_t cm, cl; /* microbatch and layer copy */
	int32_t layer, mb;
	int64_t start;
	uint8_t dropped;
};

/* An added task (add_dp), placed after (or before) a copied one. */
struct sn {
	uint32_t proc;
	uint32_t after, before; /* xn index it follows / precedes, or NONE32 */
	uint8_t kind, rtclass, phase;
	int64_t dur, lag, corr;
	uint32_t name, op;
	int32_t iter, layer, mb;
	int has_coll;
	struct graph_coll coll;
};

/* An edge between refs: an xn index, or nx + an sn index. */
struct xe {
	uint32_t src, dst;
	uint8_t kind;
};

struct rs {
	const struct graph *g;
	const struct reshape_plan *p;
	struct prism_err *err;
	/* Effective labels (bridges take their group's). */
	int32_t *lay, *mbv;
	uint8_t *ph;
	uint32_t *mg, *lg;	   /* microbatch and layer group, or NONE32 */
	uint32_t *late_m, *late_l; /* the group a task comes between the parts
				    * of, without being its own work (bridges) */
	uint32_t *x0, *sm, *sl;
	int32_t *lfirst, *mfirst;  /* new index of copy 0 of each base layer/mb */
	uint32_t *in_off, *in_src; /* edges by target */
	VEC(struct xn) x;
	VEC(struct sn) s;
	VEC(struct xe) e;
	uint32_t n_newproc;
	uint32_t newproc_rank[1024]; /* rank of each new stream */
	int64_t corr;		     /* the next added launch's (-2, -3, ...) */
	struct reshape_stats *st;
};

static int oom(struct rs *r)
{
	return prism_err_set(r->err, PRISM_ENOMEM, "reshape: out of memory");
}

static int copies_of(const int32_t *v, int32_t n, int32_t i)
{
	return v && i >= 0 && i < n ? v[i] : 1;
}

/* Keys of the groups: (step, microbatch) and (step, phase, microbatch,
 * layer); -1 where a task is in none. */
static int64_t mkey(int32_t it, int32_t mb)
{
	if (it < 0 || mb < 0 || it >= (1 << 21) || mb >= (1 << 20))
		return -1;
	return (int64_t)it << 21 | mb;
}

static int64_t lkey(int32_t it, uint8_t ph, int32_t mb, int32_t l)
{
	if (it < 0 || l < 0 || it >= (1 << 21) || mb >= (1 << 16) || l >= (1 << 21))
		return -1;
	return (int64_t)it << 41 | (int64_t)ph << 38 | (int64_t)(mb + 1) << 21 | l;
}

/* Dense group ids of every task from its effective labels. */
static int group_ids(struct rs *r)
{
	const struct graph *g = r->g;
	struct imap mm = {0}, lm = {0};
	uint32_t nm = 0, nl = 0;
	int rc = 0;

	for (uint32_t u = 0; u < g->n_nodes && !rc; u++) {
		int64_t k = r->p->mb_copies ? mkey(g->iter[u], r->mbv[u]) : -1;
		uint32_t id;
		r->mg[u] = r->lg[u] = NONE32;
		if (k >= 0) {
			if ((id = imap_get(&mm, k)) == IMAP_NONE &&
			    (rc = imap_put(&mm, k, id = nm++, NULL)))
				break;
			r->mg[u] = id;
		}
		k = r->p->layer_copies ? lkey(g->iter[u], r->ph[u], r->mbv[u], r->lay[u]) : -1;
		if (k >= 0) {
			if ((id = imap_get(&lm, k)) == IMAP_NONE &&
			    (rc = imap_put(&lm, k, id = nl++, NULL)))
				break;
			r->lg[u] = id;
		}
	}
	imap_release(&mm);
	imap_release(&lm);
	r->st->groups = nm + nl;
	return rc ? oom(r) : 0;
}

/* Breadth first from seeds along the edges off/adj (CSR): every task
 * stamped from that is reached through tasks stamped from is stamped to
 * and queued (the seeds themselves are not).  How many were. */
static uint32_t flood(const uint32_t *off, const uint32_t *adj, const uint32_t *seed,
		      uint32_t n_seed, uint32_t *stamp, uint32_t from, uint32_t to, uint32_t *queue)
{
	uint32_t head = 0, tail = 0;
	for (uint32_t i = 0; i < n_seed + tail; i++) {
		uint32_t v = i < n_seed ? seed[i] : queue[head++];
		for (uint32_t e = off[v]; e < off[v + 1]; e++)
			if (stamp[adj[e]] == from) {
				stamp[adj[e]] = to;
				queue[tail++] = adj[e];
			}
	}
	return tail;
}

/*
 * Tasks between the parts of a group: outside it, on a path from the group
 * back into it.  Edges never go back in traced start order, so such a task
 * started between the group's first and last start: each group searches
 * that window only.  Of these (mb: microbatch groups, else layer groups),
 * tasks of no group of the kind, in the group's step (for layers: its
 * microbatch, outside every layer), are the group's own work (a
 * collective on another stream between two parts of a layer): with
 * relabel, bridges, they take its labels and repeat with it.  The others
 * (another step's: a pipelined input copy that a late backward kernel
 * waited for; another group's) come after the group's copies: late[w]
 * names the group, and edges from w into it enter its last copy.
 */
static int bridges(struct rs *r, int mb, int relabel, uint32_t *late)
{
	const struct graph *g = r->g;
	uint32_t *grp = mb ? r->mg : r->lg, ng = 0;
	uint32_t *stamp = NULL, *queue = NULL, *members = NULL, *moff = NULL;
	int64_t *t0 = NULL, *t1 = NULL;
	uint32_t *rep = NULL; /* a member of each group */
	int rc = 0;

	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (grp[u] != NONE32 && grp[u] + 1 > ng)
			ng = grp[u] + 1;
	if (!ng)
		return 0;
	stamp = prism_calloc(g->n_nodes, sizeof(*stamp));
	queue = prism_malloc(g->n_nodes * sizeof(*queue));
	members = prism_malloc(g->n_nodes * sizeof(*members));
	moff = prism_calloc((size_t)ng + 1, sizeof(*moff));
	t0 = prism_malloc(ng * sizeof(*t0));
	t1 = prism_malloc(ng * sizeof(*t1));
	rep = prism_malloc(ng * sizeof(*rep));
	if (!stamp || !queue || !members || !moff || !t0 || !t1 || !rep) {
		rc = oom(r);
		goto out;
	}
	for (uint32_t k = 0; k < ng; k++) {
		t0[k] = INT64_MAX;
		t1[k] = INT64_MIN;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (grp[u] != NONE32) {
			moff[grp[u] + 1]++;
			rep[grp[u]] = u;
			if (g->start_ns[u] < t0[grp[u]])
				t0[grp[u]] = g->start_ns[u];
			if (g->start_ns[u] > t1[grp[u]])
				t1[grp[u]] = g->start_ns[u];
		}
	for (uint32_t k = 0; k < ng; k++)
		moff[k + 1] += moff[k];
	{
		uint32_t *fill = prism_calloc(ng, sizeof(*fill));
		if (!fill) {
			rc = oom(r);
			goto out;
		}
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (grp[u] != NONE32)
				members[moff[grp[u]] + fill[grp[u]]++] = u;
		free(fill);
	}
	for (uint32_t k = 0; k < ng; k++) {
		/* stamp: 3k+1 a candidate (outside, same step, in the window),
		 * 3k+2 reaches the group, 3k+3 a bridge. */
		uint32_t c1 = 3 * k + 1, c2 = 3 * k + 2, c3 = 3 * k + 3, tail = 0;
		uint32_t ru = rep[k];
		int found = 0;
		for (uint32_t p = 0; p < g->n_procs; p++) {
			const struct graph_proc *pr = &g->procs[p];
			uint32_t lo = pr->first, hi = pr->first + pr->n;
			if (g->procs[p].rank != g->procs[g->proc[ru]].rank)
				continue;
			while (lo < hi) { /* first task starting at or after t0 */
				uint32_t mid = lo + (hi - lo) / 2;
				if (g->start_ns[mid] < t0[k])
					lo = mid + 1;
				else
					hi = mid;
			}
			for (uint32_t u = lo; u < pr->first + pr->n && g->start_ns[u] <= t1[k]; u++)
				if (relabel ? grp[u] == NONE32 && g->iter[u] == g->iter[ru] &&
						  (mb || (r->mbv[u] == r->mbv[ru] && r->lay[u] < 0))
					    : grp[u] != k) {
					stamp[u] = c1;
					found = 1;
				}
		}
		if (!found)
			continue;
		/* Backward from the group through candidates, then forward from
		 * the group through those. */
		if (!flood(r->in_off, r->in_src, members + moff[k], moff[k + 1] - moff[k], stamp,
			   c1, c2, queue))
			continue;
		tail = flood(g->out_off, g->out_dst, members + moff[k], moff[k + 1] - moff[k],
			     stamp, c2, c3, queue);
		for (uint32_t i = 0; i < tail; i++) {
			uint32_t w = queue[i];
			int own = grp[w] == NONE32 && g->iter[w] == g->iter[ru] &&
				  (mb || (r->mbv[w] == r->mbv[ru] && r->lay[w] < 0));
			if (!relabel) {
				if (!own && late)
					late[w] = k;
			} else if (own && mb) {
				r->mbv[w] = r->mbv[ru];
				r->st->bridges++;
			} else if (own) {
				r->lay[w] = r->lay[ru];
				r->ph[w] = r->ph[ru];
				r->mbv[w] = r->mbv[ru];
				r->st->bridges++;
			}
		}
	}
out:
	free(stamp);
	free(queue);
	free(members);
	free(moff);
	free(t0);
	free(t1);
	free(rep);
	return rc;
}

static int km_of(const struct rs *r, uint32_t u)
{
	return r->mg[u] == NONE32 ? 1 : copies_of(r->p->mb_copies, r->p->n_mbs, r->mbv[u]);
}

static int kl_of(const struct rs *r, uint32_t u)
{
	return r->lg[u] == NONE32 ? 1 : copies_of(r->p->layer_copies, r->p->n_layers, r->lay[u]);
}

/* The candidate's index of copy c of base layer (microbatch) i, from the
 * first copies' indices first[0..n] (first[n]: all the plan's copies). */
static int32_t new_index(const int32_t *first, int32_t n, int32_t i, int32_t c)
{
	return (i < n ? first[i] : first[n] + (i - n)) + c;
}

static int emit(struct rs *r, uint32_t u, int32_t cm, int32_t cl)
{
	struct xn x;
	int km = km_of(r, u), kl = kl_of(r, u);
	if (cm == 0 && cl == 0)
		r->x0[u] = (uint32_t)r->x.n;
	memset(&x, 0, sizeof(x));
	x.u = u;
	x.proc = r->g->proc[u];
	x.cm = cm;
	x.cl = cl;
	x.dropped = km == 0 || kl == 0;
	x.layer = r->lg[u] != NONE32 && !x.dropped
		      ? new_index(r->lfirst, r->p->n_layers, r->lay[u], cl)
		      : r->g->layer[u];
	x.mb = r->mg[u] != NONE32 && !x.dropped ? new_index(r->mfirst, r->p->n_mbs, r->mbv[u], cm)
						: r->g->mb[u];
	if (x.dropped)
		r->st->nodes_dropped++;
	else if (cm || cl)
		r->st->nodes_added++;
	return VEC_PUSH(r->x, x) ? oom(r) : 0;
}

/* The layer run [a, b) of one processor, in copy cm of its microbatch. */
static int emit_lrun(struct rs *r, uint32_t a, uint32_t b, int32_t cm)
{
	int k = kl_of(r, a);
	size_t x_start = r->x.n, span = 0;
	int rc = 0;
	for (int c = 0; c < (k > 0 ? k : 1) && !rc; c++) {
		for (uint32_t u = a; u < b && !rc; u++)
			rc = emit(r, u, cm, c);
		if (c == 0)
			span = r->x.n - x_start;
	}
	for (uint32_t u = a; u < b; u++)
		r->sl[u] = (uint32_t)span;
	return rc;
}

/* Tasks [a, b) of one processor outside microbatch runs, or one copy of a
 * microbatch run: single tasks and layer runs. */
static int emit_inner(struct rs *r, uint32_t a, uint32_t b, int32_t cm)
{
	int rc = 0;
	for (uint32_t u = a; u < b && !rc;) {
		if (r->lg[u] == NONE32) {
			r->sl[u] = 0;
			rc = emit(r, u, cm, 0);
			u++;
			continue;
		}
		{
			uint32_t j = u + 1;
			while (j < b && r->lg[j] == r->lg[u])
				j++;
			rc = emit_lrun(r, u, j, cm);
			u = j;
		}
	}
	return rc;
}

static int emit_proc(struct rs *r, uint32_t p)
{
	const struct graph_proc *pr = &r->g->procs[p];
	uint32_t end = pr->first + pr->n;
	int rc = 0;
	for (uint32_t u = pr->first; u < end && !rc;) {
		uint32_t j = u + 1;
		if (r->mg[u] == NONE32) {
			while (j < end && r->mg[j] == NONE32)
				j++;
			for (uint32_t w = u; w < j; w++)
				r->sm[w] = 0;
			rc = emit_inner(r, u, j, 0);
		} else {
			int k = km_of(r, u);
			size_t x_start = r->x.n, span = 0;
			while (j < end && r->mg[j] == r->mg[u])
				j++;
			for (int c = 0; c < (k > 0 ? k : 1) && !rc; c++) {
				rc = emit_inner(r, u, j, c);
				if (c == 0)
					span = r->x.n - x_start;
			}
			for (uint32_t w = u; w < j; w++)
				r->sm[w] = (uint32_t)span;
		}
		u = j;
	}
	return rc;
}

static uint32_t xid(const struct rs *r, uint32_t u, int32_t cm, int32_t cl)
{
	return r->x0[u] + (uint32_t)cm * r->sm[u] + (uint32_t)cl * r->sl[u];
}

/* The base's edges between copies (order edges are made anew). */
static int map_edges(struct rs *r)
{
	const struct graph *g = r->g;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		int km = km_of(r, u), kl = kl_of(r, u);
		km = km > 0 ? km : 1;
		kl = kl > 0 ? kl : 1;
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++) {
			uint32_t v = g->out_dst[e];
			int same_m = r->mg[u] != NONE32 && r->mg[u] == r->mg[v];
			int same_l = r->lg[u] != NONE32 && r->lg[u] == r->lg[v];
			if (GE_KIND(g->out_kind[e]) == GE_ORDER)
				continue;
			for (int cm = 0; cm < km; cm++) {
				if (!same_m && cm != km - 1)
					continue;
				for (int cl = 0; cl < kl; cl++) {
					struct xe x;
					if (!same_l && cl != kl - 1)
						continue;
					int km2 = km_of(r, v), kl2 = kl_of(r, v);
					/* A task after the group's copies enters the last. */
					int cm2 = same_m ? cm
						  : r->late_m[u] == r->mg[v] && r->mg[v] != NONE32
						      ? (km2 > 0 ? km2 - 1 : 0)
						      : 0;
					int cl2 = same_l ? cl
						  : r->late_l[u] == r->lg[v] && r->lg[v] != NONE32
						      ? (kl2 > 0 ? kl2 - 1 : 0)
						      : 0;
					x.src = xid(r, u, cm, cl);
					x.dst = xid(r, v, cm2, cl2);
					x.kind = g->out_kind[e];
					if (VEC_PUSH(r->e, x))
						return oom(r);
				}
			}
		}
	}
	return 0;
}

static int is_grad_coll(const struct graph *g, uint32_t u, int64_t group)
{
	const struct graph_coll *c;
	if (g->coll[u] == NONE32)
		return 0;
	c = &g->colls[g->coll[u]];
	return c->group_size == group && (c->kind == GC_ALL_REDUCE || c->kind == GC_REDUCE_SCATTER);
}

/* In all copies of a microbatch but its last, drop the gradient
 * collectives of the plan's group and the host calls that launched them
 * (the launch, the op's CPU time before it, and the event record and
 * stream wait just before that). */
static int strip(struct rs *r)
{
	const struct graph *g = r->g;
	uint8_t *drop = prism_calloc(g->n_nodes ? g->n_nodes : 1, 1);
	if (!drop)
		return oom(r);
	for (uint32_t c = 0; c < g->n_colls; c++) {
		uint32_t v = g->colls[c].node;
		if (!is_grad_coll(g, v, r->p->strip_group))
			continue;
		drop[v] = 1;
		for (uint32_t e = r->in_off[v]; e < r->in_off[v + 1]; e++) {
			uint32_t w = r->in_src[e], first;
			int launch = 0;
			for (uint32_t k = g->out_off[w]; k < g->out_off[w + 1]; k++)
				if (g->out_dst[k] == v && GE_KIND(g->out_kind[k]) == GE_LAUNCH)
					launch = 1;
			if (!launch)
				continue;
			first = g->procs[g->proc[w]].first;
			drop[w] = 1;
			if (w > first && g->kind[w - 1] == GN_CPU)
				drop[--w] = 1;
			while (w > first && g->kind[w - 1] == GN_RUNTIME &&
			       (g->rtclass[w - 1] == RT_EVENT_RECORD ||
				g->rtclass[w - 1] == RT_STREAM_WAIT))
				drop[--w] = 1;
		}
	}
	for (size_t i = 0; i < r->x.n; i++) {
		struct xn *x = &r->x.v[i];
		if (x->u != NONE32 && drop[x->u] && !x->dropped && x->cm < km_of(r, x->u) - 1) {
			x->dropped = 1;
			r->st->nodes_dropped++;
		}
	}
	free(drop);
	return 0;
}

/* ---- added gradient collectives ------------------------------------- */

static int add_sn(struct rs *r, const struct sn *s, uint32_t *ref)
{
	if (VEC_PUSH(r->s, *s))
		return oom(r);
	*ref = (uint32_t)(r->s.n - 1); /* an sn index; made a ref later */
	r->st->nodes_added++;
	return 0;
}

static int add_edge(struct rs *r, uint32_t src, uint32_t dst, uint8_t kind)
{
	struct xe x = {src, dst, kind};
	return VEC_PUSH(r->e, x) ? oom(r) : 0;
}

/* An op's CPU time (where the plan gives one) and its launch call (*call),
 * added as *s places them; the launch takes the next added correlation. */
static int add_op_launch(struct rs *r, struct sn *s, uint32_t op, uint32_t launch, uint32_t *call)
{
	uint32_t ref;
	int rc;

	s->kind = GN_CPU;
	s->rtclass = RT_OTHER;
	s->dur = r->p->cpu_op_ns;
	s->name = s->op = op;
	s->corr = -1;
	if (r->p->cpu_op_ns > 0 && (rc = add_sn(r, s, &ref)))
		return rc;
	s->kind = GN_RUNTIME;
	s->rtclass = RT_LAUNCH;
	s->dur = r->p->launch_ns;
	s->name = launch;
	s->corr = r->corr;
	return add_sn(r, s, call);
}

/* The launch call of copy x (a GPU task), or NONE32. */
static uint32_t launcher(const struct rs *r, uint32_t xi)
{
	const struct graph *g = r->g;
	const struct xn *x = &r->x.v[xi];
	uint32_t v = x->u;
	for (uint32_t e = r->in_off[v]; e < r->in_off[v + 1]; e++) {
		uint32_t w = r->in_src[e];
		for (uint32_t k = g->out_off[w]; k < g->out_off[w + 1]; k++)
			if (g->out_dst[k] == v && GE_KIND(g->out_kind[k]) == GE_LAUNCH)
				return xid(r, w,
					   r->mg[w] != NONE32 && r->mg[w] == r->mg[v] ? x->cm : 0,
					   r->lg[w] != NONE32 && r->lg[w] == r->lg[v] ? x->cl : 0);
	}
	return NONE32;
}

/* Copies by layer, then in emission order. */
static int cmp_layer(const void *a, const void *b, void *ctx)
{
	const struct rs *r = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	if (r->x.v[i].layer != r->x.v[j].layer)
		return r->x.v[i].layer < r->x.v[j].layer ? -1 : 1;
	return (i > j) - (i < j);
}

/*
 * add_dp: per rank and step, after each layer's backward in the step's
 * last microbatch (in the order the backward runs them), on the thread
 * that launched its last kernel: event record, stream wait, the op's CPU
 * time and the launch of an all-reduce on a new stream of the rank; the
 * all-reduce waits for that kernel.  Before the optimizer's first task on
 * its thread, a record and a wait; its first kernel, and the step's
 * closing device synchronise, wait for the last all-reduce.
 */
static int add_dp(struct rs *r, struct graph *out_names)
{
	const struct graph *g = r->g;
	const struct reshape_plan *p = r->p;
	uint32_t n_cpu, n_launch, n_rec, n_wait, n_kern, pgname, ranks, dtype, empty;
	uint32_t *it_off = NULL, *it_x = NULL, *bw = NULL;
	char buf[64];
	int rc = 0;

	if (strtab_intern(&out_names->st, "c10d::allreduce_", 16, &n_cpu) ||
	    strtab_intern(&out_names->st, "cudaLaunchKernel", 16, &n_launch) ||
	    strtab_intern(&out_names->st, "cudaEventRecord", 15, &n_rec) ||
	    strtab_intern(&out_names->st, "cudaStreamWaitEvent", 19, &n_wait) ||
	    strtab_intern(&out_names->st, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 40,
			  &n_kern) ||
	    strtab_intern(&out_names->st, "BFloat16", 8, &dtype) ||
	    strtab_intern(&out_names->st, "", 0, &empty))
		return oom(r);
	snprintf(buf, sizeof(buf), "[%d]", p->dp);
	if (strtab_intern(&out_names->st, buf, strlen(buf), &ranks))
		return oom(r);
	/* The copies of each step, in emission order (it_x[it_off[it] ..
	 * it_off[it + 1])): each step and layer below looks at its own, not
	 * at every copy (a trace may have 10^5 steps and 10^6 tasks). */
	it_off = prism_calloc((size_t)g->n_iters + 2, sizeof(*it_off));
	it_x = prism_malloc((r->x.n + 1) * sizeof(*it_x));
	bw = prism_malloc((r->x.n + 1) * sizeof(*bw));
	if (!it_off || !it_x || !bw) {
		rc = oom(r);
		goto out;
	}
	for (size_t i = 0; i < r->x.n; i++) {
		uint32_t u = r->x.v[i].u;
		if (u != NONE32 && g->iter[u] >= 0 && (uint32_t)g->iter[u] < g->n_iters)
			it_off[g->iter[u] + 2]++;
	}
	for (uint32_t it = 1; it <= g->n_iters; it++)
		it_off[it + 1] += it_off[it];
	for (size_t i = 0; i < r->x.n; i++) {
		uint32_t u = r->x.v[i].u;
		if (u != NONE32 && g->iter[u] >= 0 && (uint32_t)g->iter[u] < g->n_iters)
			it_x[it_off[g->iter[u] + 1]++] = (uint32_t)i;
	}
	for (uint32_t rk = 0; rk < g->n_ranks && !rc; rk++) {
		uint32_t dproc = g->n_procs + r->n_newproc;
		int used = 0;
		snprintf(buf, sizeof(buf), "dp.%u", rk);
		if (strtab_intern(&out_names->st, buf, strlen(buf), &pgname)) {
			rc = oom(r);
			break;
		}
		for (uint32_t it = 0; it < g->n_iters && !rc; it++) {
			int32_t last_mb = -1, top = -1;
			double bucket = 0; /* parameters whose gradients wait */
			uint32_t last_ar = NONE32, opt_first = NONE32, opt_host = NONE32,
				 sync = NONE32;
			const uint32_t *xs = it_x + it_off[it];
			uint32_t nxs = it_off[it + 1] - it_off[it];
			size_t nb = 0;
			if (g->iters[it].rank != rk)
				continue;
			/* The step's last microbatch and its layers. */
			for (uint32_t j = 0; j < nxs; j++) {
				const struct xn *x = &r->x.v[xs[j]];
				if (x->dropped)
					continue;
				if (g->phase[x->u] == PH_BACKWARD || r->ph[x->u] == PH_BACKWARD) {
					if (x->mb > last_mb)
						last_mb = x->mb;
					if (x->layer > top)
						top = x->layer;
				}
			}
			if (top < 0)
				continue;
			/* Its backward copies of the last microbatch, by layer. */
			for (uint32_t j = 0; j < nxs; j++) {
				const struct xn *x = &r->x.v[xs[j]];
				if (!x->dropped && x->layer >= 0 && x->mb == last_mb &&
				    r->ph[x->u] == PH_BACKWARD)
					bw[nb++] = xs[j];
			}
			if (nb)
				qsort_r(bw, nb, sizeof(*bw), cmp_layer, r);
			/* From the top layer down: the backward runs them so. */
			bucket = p->dp_first && rk < p->n_dp_extra ? p->dp_first[rk] : 0;
			for (size_t hi = nb, lo = nb; hi > 0 && !rc; hi = lo) {
				uint32_t kx = NONE32, call, host, host_last = NONE32, ref;
				int32_t l = r->x.v[bw[hi - 1]].layer;
				struct sn s;
				while (lo > 0 && r->x.v[bw[lo - 1]].layer == l)
					lo--;
				double sz[2], tail = lo == 0 && p->dp_last && rk < p->n_dp_extra
							 ? p->dp_last[rk]
							 : 0;
				int nsz;
				bucket += p->dp_layer_params;
				if (bucket < p->dp_bucket_params && lo > 0)
					continue; /* the bucket is not full */
				/* bw[lo .. hi): layer l's, in emission order */
				for (size_t j = lo; j < hi; j++) {
					const struct xn *x = &r->x.v[bw[j]];
					if (g->kind[x->u] < GN_KERNEL || g->kind[x->u] == GN_COLL)
						continue;
					if (kx == NONE32 ||
					    g->start_ns[x->u] >= g->start_ns[r->x.v[kx].u])
						kx = bw[j];
				}
				if (kx == NONE32 || (call = launcher(r, kx)) == NONE32)
					continue;
				for (size_t j = lo; j < hi; j++)
					if (r->x.v[bw[j]].proc == r->x.v[call].proc)
						host_last = bw[j];
				if (host_last == NONE32)
					host_last = call;
				host = r->x.v[call].proc; /* the launching thread */
				/* A bucket the bottom layer fills goes before the
				 * embedding's gradients, which follow in their own. */
				nsz = 0;
				if (lo == 0 && tail > 0 && bucket >= p->dp_bucket_params) {
					sz[nsz++] = bucket;
					bucket = 0;
				}
				bucket += lo == 0 ? tail : 0;
				if (bucket > 0)
					sz[nsz++] = bucket;
				for (int q = 0; q < nsz && !rc; q++) {
					bucket = sz[q];
					memset(&s, 0, sizeof(s));
					s.proc = host;
					s.after = host_last;
					s.before = NONE32;
					s.iter = (int32_t)it;
					s.layer = l;
					s.mb = last_mb;
					s.phase = PH_BACKWARD;
					s.corr = -1;
					s.op = empty;
					s.kind = GN_RUNTIME;
					s.rtclass = RT_EVENT_RECORD;
					s.dur = p->event_ns;
					s.name = n_rec;
					if ((rc = add_sn(r, &s, &ref)))
						break;
					s.rtclass = RT_STREAM_WAIT;
					s.name = n_wait;
					if ((rc = add_sn(r, &s, &ref)))
						break;
					if ((rc = add_op_launch(r, &s, n_cpu, n_launch, &call)))
						break;
					s.proc = dproc;
					s.after = NONE32;
					s.kind = GN_COLL;
					s.rtclass = RT_OTHER;
					s.dur = p->dp_coll_ns(p->dp_ctx, bucket * p->dp_grad_bytes);
					s.lag = p->gpu_lag_ns;
					s.name = n_kern;
					s.has_coll = 1;
					memset(&s.coll, 0, sizeof(s.coll));
					s.coll.kind = GC_ALL_REDUCE;
					s.coll.bytes = (int64_t)(bucket * p->dp_grad_bytes);
					s.coll.group_size = p->dp;
					s.coll.pg = pgname;
					s.coll.ranks = ranks;
					s.coll.dtype = dtype;
					r->corr--;
					if ((rc = add_sn(r, &s, &ref)))
						break;
					used = 1;
					r->st->colls_added++;
					if ((rc = add_edge(r, call | 0x80000000u, ref | 0x80000000u,
							   GE_LAUNCH)) ||
					    (rc = add_edge(r, kx, ref | 0x80000000u, GE_EVENT)))
						break;
					last_ar = ref;
					bucket = 0;
				}
			}
			if (rc || last_ar == NONE32)
				continue;
			/* The optimizer's first kernel and its host, the closing sync. */
			for (uint32_t j = 0; j < nxs; j++) {
				const struct xn *x = &r->x.v[xs[j]];
				if (x->dropped)
					continue;
				if (g->phase[x->u] == PH_OPTIMIZER && g->kind[x->u] >= GN_KERNEL &&
				    (opt_first == NONE32 ||
				     g->start_ns[x->u] < g->start_ns[r->x.v[opt_first].u]))
					opt_first = xs[j];
				if (g->kind[x->u] == GN_WAIT &&
				    g->rtclass[x->u] == RT_DEVICE_SYNC &&
				    x->proc == (uint32_t)g->iters[it].proc)
					sync = xs[j];
			}
			if (opt_first != NONE32) {
				uint32_t call = launcher(r, opt_first), ref;
				struct sn s;
				for (uint32_t j = 0; call != NONE32 && j < nxs; j++) {
					const struct xn *x = &r->x.v[xs[j]];
					if (x->proc == r->x.v[call].proc && !x->dropped &&
					    g->phase[x->u] == PH_OPTIMIZER) {
						opt_host = xs[j];
						break;
					}
				}
				memset(&s, 0, sizeof(s));
				if (opt_host != NONE32) {
					s.proc = r->x.v[opt_host].proc;
					s.after = NONE32;
					s.before = opt_host;
					s.iter = (int32_t)it;
					s.layer = -1;
					s.mb = -1;
					s.phase = PH_OPTIMIZER;
					s.corr = -1;
					s.op = empty;
					s.kind = GN_RUNTIME;
					s.rtclass = RT_EVENT_RECORD;
					s.dur = p->event_ns;
					s.name = n_rec;
					if ((rc = add_sn(r, &s, &ref)))
						break;
					s.rtclass = RT_STREAM_WAIT;
					s.name = n_wait;
					if ((rc = add_sn(r, &s, &ref)))
						break;
				}
				if ((rc = add_edge(r, last_ar | 0x80000000u, opt_first, GE_EVENT)))
					break;
			}
			if (sync != NONE32 &&
			    (rc = add_edge(r, last_ar | 0x80000000u, sync, GE_SYNC)))
				break;
		}
		if (used && r->n_newproc < 1024)
			r->newproc_rank[r->n_newproc++] = rk;
		else if (used)
			rc =
			    prism_err_set(r->err, PRISM_ELIMIT, "reshape: over 1024 added streams");
	}
out:
	free(it_off);
	free(it_x);
	free(bw);
	return rc;
}

/* ---- added gradient accumulation ------------------------------------ */

size_t reshape_taken_grads(const struct graph *g, uint32_t *last, double *elem_bytes)
{
	uint32_t acc = strtab_find(&g->st, GRAPH_ACC_OP, strlen(GRAPH_ACC_OP));
	size_t n = 0;
	double eb = 0;

	for (uint32_t q = 0; q < g->n_procs; q++) {
		uint32_t k = NONE32, end = g->procs[q].first + g->procs[q].n;
		for (uint32_t u = g->procs[q].first; u < end; u++) {
			double n0, n1;
			int e0, e1;
			uint32_t v = u + 1;
			if (last)
				last[u] = NONE32;
			if (g->kind[u] == GN_RUNTIME && g->rtclass[u] == RT_LAUNCH)
				for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
					if (GE_KIND(g->out_kind[e]) == GE_LAUNCH)
						k = g->out_dst[e];
			if (acc == STRTAB_NONE || g->kind[u] != GN_CPU || g->op[u] != acc ||
			    k == NONE32 || !cost_op_input(g, u, &n0, &e0))
				continue;
			/* Added by a hook of its own: Megatron-LM's main_grad.add_
			 * right after each AccumulateGrad. */
			while (v < end &&
			       !(g->kind[v] == GN_RUNTIME && g->rtclass[v] == RT_LAUNCH) &&
			       !(g->kind[v] == GN_CPU && g->op[v] == acc))
				v++;
			if (v < end && g->kind[v] == GN_RUNTIME && g->op[v] &&
			    !strcmp(strtab_get(&g->st, g->op[v]), "aten::add_") &&
			    cost_op_input(g, v, &n1, &e1) && n1 == n0)
				continue;
			if (last)
				last[u] = k;
			eb = e0 > eb ? e0 : eb;
			n++;
		}
	}
	if (elem_bytes)
		*elem_bytes = eb;
	return n;
}

/*
 * add_acc: after each copy but a microbatch's first of a GRAPH_ACC_OP host
 * task (a gradient taken, nothing launched), the add a later microbatch
 * runs: its CPU time and launch on the task's thread, and the kernel after
 * the one that thread launched last (the gradient's producer, or a kernel
 * after it), on that kernel's stream.
 */
static int add_acc(struct rs *r, struct graph *out_names)
{
	const struct graph *g = r->g;
	const struct reshape_plan *p = r->p;
	uint32_t *last = prism_malloc(((size_t)g->n_nodes + 1) * sizeof(*last));
	uint32_t n_op, n_launch, n_kern;
	int rc = 0;

	if (!last)
		return oom(r);
	if (!reshape_taken_grads(g, last, NULL)) {
		free(last);
		return 0;
	}
	if (strtab_intern(&out_names->st, "aten::add_", 10, &n_op) ||
	    strtab_intern(&out_names->st, "cudaLaunchKernel", 16, &n_launch) ||
	    strtab_intern(&out_names->st, GRAPH_ACC_KERNEL, strlen(GRAPH_ACC_KERNEL), &n_kern)) {
		free(last);
		return oom(r);
	}
	for (size_t i = 0; i < r->x.n && !rc; i++) {
		const struct xn *x = &r->x.v[i];
		uint32_t u = x->u, k, kx, ref, call;
		double elems;
		int es;
		struct sn s;
		/* A later microbatch's copy of a taken gradient (last[u]: the
		 * kernel before it, NONE32 for every other task). */
		if (u == NONE32 || x->dropped || x->cm < 1 || (k = last[u]) == NONE32)
			continue;
		cost_op_input(g, u, &elems, &es); /* known: it was taken */
		/* That kernel's copy in the same microbatch copy (and layer
		 * copy): one of another microbatch's would order this add
		 * before the work that launches it. */
		if (r->mg[k] == NONE32 || r->mg[k] != r->mg[u] ||
		    (x->cl && (r->lg[k] == NONE32 || r->lg[k] != r->lg[u])))
			continue;
		kx = xid(r, k, x->cm, r->lg[k] != NONE32 && r->lg[k] == r->lg[u] ? x->cl : 0);
		if (r->x.v[kx].dropped)
			continue;
		memset(&s, 0, sizeof(s));
		s.proc = x->proc;
		s.after = (uint32_t)i;
		s.before = NONE32;
		s.iter = g->iter[u];
		s.layer = x->layer;
		s.mb = x->mb;
		s.phase = r->ph[u];
		if ((rc = add_op_launch(r, &s, n_op, n_launch, &call)))
			break;
		s.proc = r->x.v[kx].proc;
		s.after = kx;
		s.kind = GN_KERNEL;
		s.rtclass = RT_OTHER;
		s.dur = p->acc_ns(p->acc_ctx, 3 * elems * es);
		s.lag = p->gpu_lag_ns;
		s.name = n_kern;
		r->corr--;
		if ((rc = add_sn(r, &s, &ref)) ||
		    (rc = add_edge(r, call | 0x80000000u, ref | 0x80000000u, GE_LAUNCH)))
			break;
		r->st->accs_added++;
	}
	free(last);
	return rc;
}

/* ---- the new graph ---------------------------------------------------- */

/* Traced starts of the copies: each processor keeps its own clock; a copy
 * starts where the latest task before it ended, dropped tasks take no
 * time. */
static void times(struct rs *r)
{
	const struct graph *g = r->g;
	uint32_t p = NONE32, prev = NONE32;
	int64_t delta = 0, maxend = INT64_MIN, drop_at = INT64_MIN;
	for (size_t i = 0; i < r->x.n; i++) {
		struct xn *x = &r->x.v[i];
		uint32_t u = x->u;
		if (x->proc != p) {
			p = x->proc;
			prev = NONE32;
			delta = 0;
			maxend = INT64_MIN;
			drop_at = INT64_MIN;
		}
		/* Times within +-PRISM_TIME_MAX: every difference below fits. */
		if (prev != NONE32 && u <= prev && maxend > INT64_MIN)
			delta = maxend - g->start_ns[u];
		prev = u;
		if (x->dropped) {
			if (drop_at == INT64_MIN)
				drop_at = prism_time_shift(g->start_ns[u], delta);
			x->start = prism_time_shift(g->start_ns[u], delta);
			continue;
		}
		if (drop_at != INT64_MIN) {
			if (drop_at < prism_time_shift(g->start_ns[u], delta))
				delta = drop_at - g->start_ns[u];
			drop_at = INT64_MIN;
		}
		x->start = prism_time_shift(g->start_ns[u], delta);
		if (prism_time_add(x->start, g->dur_ns[u]) > maxend)
			maxend = prism_time_add(x->start, g->dur_ns[u]);
	}
}

/* A base time on processor p, moved as p's tasks moved: through the last
 * copy of the last task starting at or before it. */
static int64_t move_time(const struct rs *r, uint32_t p, int64_t t)
{
	const struct graph *g = r->g;
	const struct graph_proc *pr = &g->procs[p];
	uint32_t lo = pr->first, hi = pr->first + pr->n, u;
	const struct xn *x;
	int km, kl;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (g->start_ns[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == pr->first)
		return t;
	u = lo - 1;
	km = km_of(r, u);
	kl = kl_of(r, u);
	x = &r->x.v[xid(r, u, km > 0 ? km - 1 : 0, kl > 0 ? kl - 1 : 0)];
	return prism_time_shift(x->start, t - g->start_ns[u]); /* t, starts: +-PRISM_TIME_MAX */
}

/* Correlation id of a copy: distinct from every other task's. */
static int64_t copy_corr(int64_t corr, int64_t stride, const struct xn *x)
{
	return corr + stride * (1 + (int64_t)x->cm * 65536 + x->cl);
}

struct csr {
	uint32_t *off, *dst;
	uint8_t *kind;
};

int reshape_apply(const struct graph *g, const struct reshape_plan *p, struct graph **out,
		  struct reshape_stats *st, struct prism_err *err)
{
	struct rs r;
	struct graph *n = NULL, *names = NULL;
	uint32_t nx, nref, *order = NULL, *newid = NULL, *stamp = NULL, *stack = NULL;
	uint32_t *po_off = NULL, n_procs;
	struct csr c = {NULL, NULL, NULL};
	VEC(struct xe) fe = {0};
	VEC(uint32_t) seq = {0}; /* refs in final order */
	int64_t corr_stride = 1;
	uint64_t nkeep = 0, ncolls = 0;
	int rc = 0;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	memset(&r, 0, sizeof(r));
	r.g = g;
	r.p = p;
	r.err = err;
	r.st = st;
	r.corr = -2;
	{
		size_t nn = g->n_nodes ? g->n_nodes : 1;
		r.lay = prism_malloc(nn * sizeof(*r.lay));
		r.mbv = prism_malloc(nn * sizeof(*r.mbv));
		r.ph = prism_malloc(nn);
		r.mg = prism_malloc(nn * sizeof(*r.mg));
		r.lg = prism_malloc(nn * sizeof(*r.lg));
		r.late_m = prism_malloc(nn * sizeof(*r.late_m));
		r.late_l = prism_malloc(nn * sizeof(*r.late_l));
		r.x0 = prism_malloc(nn * sizeof(*r.x0));
		r.sm = prism_calloc(nn, sizeof(*r.sm));
		r.sl = prism_calloc(nn, sizeof(*r.sl));
		r.in_off = prism_calloc(nn + 1, sizeof(*r.in_off));
		r.in_src = prism_malloc((g->n_edges ? g->n_edges : 1) * sizeof(*r.in_src));
		r.lfirst = prism_malloc(((size_t)(p->n_layers > 0 ? p->n_layers : 0) + 1) *
					sizeof(*r.lfirst));
		r.mfirst =
		    prism_malloc(((size_t)(p->n_mbs > 0 ? p->n_mbs : 0) + 1) * sizeof(*r.mfirst));
		if (!r.lay || !r.mbv || !r.ph || !r.mg || !r.lg || !r.late_m || !r.late_l ||
		    !r.x0 || !r.sm || !r.sl || !r.in_off || !r.in_src || !r.lfirst || !r.mfirst) {
			rc = oom(&r);
			goto out;
		}
	}
	/* Edges by target. */
	for (uint32_t e = 0; e < g->n_edges; e++)
		r.in_off[g->out_dst[e] + 1]++;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		r.in_off[u + 1] += r.in_off[u];
	{
		uint32_t *fill = prism_calloc(g->n_nodes ? g->n_nodes : 1, sizeof(*fill));
		if (!fill) {
			rc = oom(&r);
			goto out;
		}
		for (uint32_t u = 0; u < g->n_nodes; u++)
			for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++) {
				uint32_t v = g->out_dst[e];
				r.in_src[r.in_off[v] + fill[v]++] = u;
			}
		free(fill);
	}
	/* New indices of each base layer's and microbatch's first copy. */
	{
		int32_t acc = 0, any_mb = 0;
		for (int32_t l = 0; l < p->n_layers; l++) {
			r.lfirst[l] = acc;
			acc += p->layer_copies[l];
		}
		r.lfirst[p->n_layers > 0 ? p->n_layers : 0] = acc;
		acc = 0;
		for (int32_t m = 0; m < p->n_mbs; m++) {
			r.mfirst[m] = acc;
			acc += p->mb_copies[m];
		}
		r.mfirst[p->n_mbs > 0 ? p->n_mbs : 0] = acc;
		for (uint32_t u = 0; u < g->n_nodes; u++) {
			r.late_m[u] = r.late_l[u] = NONE32;
			r.lay[u] = g->layer[u];
			r.mbv[u] = g->mb[u];
			r.ph[u] = g->phase[u];
			if (g->mb[u] >= 0)
				any_mb = 1;
			if (g->corr[u] >= corr_stride)
				corr_stride = g->corr[u] < INT64_MAX ? g->corr[u] + 1 : INT64_MAX;
		}
		/* No microbatch labels: the step's forward and backward are one. */
		if (p->mb_copies && !any_mb)
			for (uint32_t u = 0; u < g->n_nodes; u++)
				if (g->iter[u] >= 0 &&
				    (g->phase[u] == PH_FORWARD || g->phase[u] == PH_BACKWARD))
					r.mbv[u] = 0;
		if (p->layer_copies) {
			int32_t top = -1;
			for (uint32_t u = 0; u < g->n_nodes; u++)
				if (g->layer[u] > top)
					top = g->layer[u];
			if (top < 0) {
				rc = prism_err_set(
				    err, PRISM_EARG,
				    "the trace has no layers found to repeat or drop");
				goto out;
			}
		}
	}
	if ((rc = group_ids(&r)) || (rc = bridges(&r, 1, 1, NULL)) || (rc = group_ids(&r)) ||
	    (rc = bridges(&r, 0, 1, NULL)) || (rc = group_ids(&r)) ||
	    (rc = bridges(&r, 1, 0, r.late_m)) || (rc = bridges(&r, 0, 0, r.late_l)))
		goto out;
	{
		/* The copies to emit, before emitting them (time and memory in
		 * proportion): every task max(1, its microbatch's copies) x
		 * max(1, its layer's) times. */
		uint64_t nn = 0;
		for (uint32_t u = 0; u < g->n_nodes; u++) {
			int km = km_of(&r, u), kl = kl_of(&r, u);
			uint64_t k = (uint64_t)(km > 1 ? km : 1) * (uint64_t)(kl > 1 ? kl : 1);
			nn = nn > UINT64_MAX - k ? UINT64_MAX : nn + k; /* k < 2^62 */
		}
		if (nn > GRAPH_MAX_TASKS) {
			rc = prism_err_set(err, PRISM_ELIMIT,
					   "reshape: %" PRIu64
					   " tasks, more than the %u prism simulates",
					   nn, GRAPH_MAX_TASKS);
			goto out;
		}
	}
	for (uint32_t pi = 0; pi < g->n_procs && !rc; pi++)
		rc = emit_proc(&r, pi);
	if (rc)
		goto out;
	{
		/* Copies' correlation ids are corr + corr_stride x (1 + cm x
		 * 65536 + cl) (copy_corr), the added tasks' above them: they
		 * must fit in 64 bits. */
		int64_t most = p->add_dp || p->add_acc ? 1 : 0;
		for (size_t i = 0; i < r.x.n; i++) {
			int64_t k = 1 + (int64_t)r.x.v[i].cm * 65536 + r.x.v[i].cl;
			if ((r.x.v[i].cm || r.x.v[i].cl) && k > most)
				most = k;
		}
		if (most && corr_stride > (INT64_MAX - (int64_t)GRAPH_MAX_TASKS) / (most + 1)) {
			rc = prism_err_set(err, PRISM_ELIMIT,
					   "reshape: correlation ids up to %" PRId64
					   " leave no room to number the copies",
					   corr_stride - 1);
			goto out;
		}
	}
	if (r.x.n >= UINT32_MAX / 2) {
		rc = prism_err_set(err, PRISM_ELIMIT, "reshape: %zu tasks: over 2^31", r.x.n);
		goto out;
	}
	if (p->strip_group > 0 && p->mb_copies && (rc = strip(&r)))
		goto out;
	times(&r);
	if ((rc = map_edges(&r)))
		goto out;
	/* Names of added tasks go into the new graph's string table. */
	if (!(names = graph_alloc(0, 0, 0, 0, 0, 0))) {
		rc = oom(&r);
		goto out;
	}
	strtab_release(&names->st);
	if (strtab_copy(&names->st, &g->st)) {
		rc = oom(&r);
		goto out;
	}
	if (p->add_dp && p->dp > 1 && (rc = add_dp(&r, names)))
		goto out;
	if (p->add_acc && p->acc_ns && p->mb_copies && (rc = add_acc(&r, names)))
		goto out;
	nx = (uint32_t)r.x.n;
	nref = nx + (uint32_t)r.s.n;
	/* Refs of added tasks in edges were marked with the top bit. */
	for (size_t i = 0; i < r.e.n; i++) {
		if (r.e.v[i].src & 0x80000000u)
			r.e.v[i].src = nx + (r.e.v[i].src & 0x7fffffffu);
		if (r.e.v[i].dst & 0x80000000u)
			r.e.v[i].dst = nx + (r.e.v[i].dst & 0x7fffffffu);
	}
	/* The final order: per processor its copies, added tasks after (or
	 * before) the copy they follow; then the new streams. */
	n_procs = g->n_procs + r.n_newproc;
	po_off = prism_calloc((size_t)n_procs + 1, sizeof(*po_off));
	if (!po_off || VEC_RESERVE(seq, nref + 1)) {
		rc = oom(&r);
		goto out;
	}
	{
		uint32_t *after_first = prism_malloc(((size_t)nx + 1) * sizeof(*after_first));
		uint32_t *before_first = prism_malloc(((size_t)nx + 1) * sizeof(*before_first));
		uint32_t *next_s = prism_malloc((r.s.n + 1) * sizeof(*next_s));
		uint32_t *proc_first = prism_malloc(((size_t)n_procs + 1) * sizeof(*proc_first));
		uint32_t *proc_last = prism_malloc(((size_t)n_procs + 1) * sizeof(*proc_last));
		if (!after_first || !before_first || !next_s || !proc_first || !proc_last) {
			free(after_first);
			free(before_first);
			free(next_s);
			free(proc_first);
			free(proc_last);
			rc = oom(&r);
			goto out;
		}
		for (uint32_t i = 0; i < nx; i++)
			after_first[i] = before_first[i] = NONE32;
		for (uint32_t q = 0; q < n_procs; q++)
			proc_first[q] = proc_last[q] = NONE32;
		/* Chains of added tasks, in the order they were added. */
		for (size_t k = r.s.n; k-- > 0;) {
			const struct sn *s = &r.s.v[k];
			uint32_t *head = s->after != NONE32    ? &after_first[s->after]
					 : s->before != NONE32 ? &before_first[s->before]
							       : &proc_first[s->proc];
			next_s[k] = *head;
			*head = (uint32_t)k;
		}
		for (uint32_t q = 0, i0 = 0; q < n_procs; q++) {
			po_off[q] = (uint32_t)seq.n;
			if (q < g->n_procs) {
				/* xnodes of q are contiguous, in emission order
				 * (processor by processor): one pass over them all */
				for (uint32_t i = i0; i < nx && r.x.v[i].proc == q; i++, i0++) {
					for (uint32_t k = before_first[i]; k != NONE32;
					     k = next_s[k])
						seq.v[seq.n++] = nx + k;
					seq.v[seq.n++] = i;
					for (uint32_t k = after_first[i]; k != NONE32;
					     k = next_s[k])
						seq.v[seq.n++] = nx + k;
				}
			} else {
				for (uint32_t k = proc_first[q]; k != NONE32; k = next_s[k])
					seq.v[seq.n++] = nx + k;
			}
		}
		po_off[n_procs] = (uint32_t)seq.n;
		free(after_first);
		free(before_first);
		free(next_s);
		free(proc_first);
		free(proc_last);
	}
	/* Order edges along each processor, over dropped tasks too. */
	for (uint32_t q = 0; q < n_procs; q++)
		for (uint32_t i = po_off[q] + 1; i < po_off[q + 1]; i++)
			if ((rc = add_edge(&r, seq.v[i - 1], seq.v[i], GE_ORDER)))
				goto out;
	/* CSR over refs. */
	c.off = prism_calloc((size_t)nref + 1, sizeof(*c.off));
	c.dst = prism_malloc((r.e.n ? r.e.n : 1) * sizeof(*c.dst));
	c.kind = prism_malloc(r.e.n ? r.e.n : 1);
	if (!c.off || !c.dst || !c.kind) {
		rc = oom(&r);
		goto out;
	}
	for (size_t i = 0; i < r.e.n; i++)
		c.off[r.e.v[i].src + 1]++;
	for (uint32_t i = 0; i < nref; i++)
		c.off[i + 1] += c.off[i];
	{
		uint32_t *fill = prism_calloc((size_t)nref + 1, sizeof(*fill));
		if (!fill) {
			rc = oom(&r);
			goto out;
		}
		for (size_t i = 0; i < r.e.n; i++) {
			uint32_t at = c.off[r.e.v[i].src] + fill[r.e.v[i].src]++;
			c.dst[at] = r.e.v[i].dst;
			c.kind[at] = r.e.v[i].kind;
		}
		free(fill);
	}
	VEC_FREE(r.e);
	/* Final ids of the kept refs. */
	newid = prism_malloc(((size_t)nref + 1) * sizeof(*newid));
	order = prism_malloc(((size_t)nref + 1) * sizeof(*order));
	stamp = prism_calloc((size_t)nref + 1, sizeof(*stamp));
	stack = prism_malloc(((size_t)nref + 1) * sizeof(*stack));
	if (!newid || !order || !stamp || !stack) {
		rc = oom(&r);
		goto out;
	}
	for (uint32_t i = 0; i < seq.n; i++) {
		uint32_t ref = seq.v[i];
		int dropped = ref < nx && r.x.v[ref].dropped;
		newid[ref] = dropped ? NONE32 : (uint32_t)nkeep;
		if (!dropped)
			order[nkeep++] = ref;
	}
	/* Kept edges, and edges through dropped tasks contracted. */
	for (uint64_t k = 0; k < nkeep; k++) {
		uint32_t a = order[k];
		uint32_t mark = (uint32_t)k + 1;
		for (uint32_t e = c.off[a]; e < c.off[a + 1]; e++) {
			uint32_t b = c.dst[e], top = 0;
			if (newid[b] != NONE32) {
				struct xe x = {(uint32_t)k, newid[b], c.kind[e]};
				if (stamp[b] != mark && b != a) {
					stamp[b] = mark;
					if (VEC_PUSH(fe, x)) {
						rc = oom(&r);
						goto out;
					}
				}
				continue;
			}
			if (stamp[b] == mark)
				continue;
			stamp[b] = mark;
			stack[top++] = b;
			while (top) {
				uint32_t d = stack[--top];
				for (uint32_t f = c.off[d]; f < c.off[d + 1]; f++) {
					uint32_t w = c.dst[f];
					if (stamp[w] == mark || w == a)
						continue;
					stamp[w] = mark;
					if (newid[w] == NONE32) {
						stack[top++] = w;
					} else {
						uint32_t pa =
						    a < nx ? r.x.v[a].proc : r.s.v[a - nx].proc;
						uint32_t pw =
						    w < nx ? r.x.v[w].proc : r.s.v[w - nx].proc;
						uint8_t kind = GE_ORDER;
						uint8_t wk = w < nx ? g->kind[r.x.v[w].u]
								    : r.s.v[w - nx].kind;
						if (pa != pw)
							kind = wk == GN_WAIT	 ? GE_SYNC
							       : wk >= GN_KERNEL ? GE_EVENT
										 : GE_THREAD;
						{
							struct xe x = {
							    (uint32_t)k, newid[w],
							    (uint8_t)(kind |
								      (c.kind[e] & GE_INFERRED))};
							if (VEC_PUSH(fe, x)) {
								rc = oom(&r);
								goto out;
							}
						}
					}
				}
			}
		}
	}
	if (nkeep >= UINT32_MAX || fe.n >= UINT32_MAX) {
		rc = prism_err_set(err, PRISM_ELIMIT,
				   "reshape: %" PRIu64 " tasks, %zu edges: over 2^32", nkeep, fe.n);
		goto out;
	}
	for (uint64_t k = 0; k < nkeep; k++) {
		uint32_t a = order[k];
		if (a < nx ? g->coll[r.x.v[a].u] != NONE32 : r.s.v[a - nx].has_coll)
			ncolls++;
	}
	n = graph_alloc((uint32_t)nkeep, (uint32_t)fe.n, n_procs, g->n_ranks, g->n_iters,
			(uint32_t)ncolls);
	if (!n) {
		rc = oom(&r);
		goto out;
	}
	strtab_release(&n->st);
	n->st = names->st;
	memset(&names->st, 0, sizeof(names->st));
	n->t0_ns = g->t0_ns;
	n->meta = g->meta;
	n->stats = g->stats;
	memcpy(n->ranks, g->ranks, g->n_ranks * sizeof(*g->ranks));
	{
		uint32_t q = 0, next = 0;
		for (q = 0; q < n_procs; q++) {
			uint32_t cnt = 0;
			for (uint32_t i = po_off[q]; i < po_off[q + 1]; i++)
				cnt += newid[seq.v[i]] != NONE32;
			if (q < g->n_procs) {
				n->procs[q] = g->procs[q];
			} else {
				/* A new stream: the rank of the added tasks on it. */
				memset(&n->procs[q], 0, sizeof(n->procs[q]));
				n->procs[q].gpu = 1;
				n->procs[q].tid = 9000 + q;
			}
			n->procs[q].first = next;
			n->procs[q].n = cnt;
			next += cnt;
		}
	}
	{
		uint32_t ci = 0;
		int64_t corr_max = corr_stride;
		for (uint64_t k = 0; k < nkeep; k++) {
			uint32_t a = order[k];
			if (a < nx && g->corr[r.x.v[a].u] >= 0 && (r.x.v[a].cm || r.x.v[a].cl)) {
				int64_t cc = copy_corr(g->corr[r.x.v[a].u], corr_stride, &r.x.v[a]);
				corr_max = cc > corr_max ? cc : corr_max;
			}
		}
		for (uint64_t k = 0; k < nkeep; k++) {
			uint32_t a = order[k], id = (uint32_t)k;
			if (a < nx) {
				const struct xn *x = &r.x.v[a];
				uint32_t u = x->u;
				graph_copy_nodes(n, id, g, u, 1);
				n->start_ns[id] = x->start;
				/* An idle gap before a thread's wake-up is waiting
				 * the edge into the next task now does. */
				if (g->flags[u] & NF_IDLE_GAP)
					n->dur_ns[id] = 0;
				n->layer[id] = x->layer;
				n->mb[id] = x->mb;
				if (g->corr[u] >= 0 && (x->cm || x->cl))
					n->corr[id] = copy_corr(g->corr[u], corr_stride, x);
				n->coll[id] = NONE32;
				if (g->coll[u] != NONE32) {
					n->colls[ci] = g->colls[g->coll[u]];
					n->colls[ci].node = id;
					n->coll[id] = ci++;
				}
			} else {
				const struct sn *s = &r.s.v[a - nx];
				n->dur_ns[id] = s->dur;
				n->lag_ns[id] = s->lag;
				n->corr[id] = s->corr < -1 ? corr_max - s->corr : -1;
				n->proc[id] = s->proc;
				n->name[id] = s->name;
				n->op[id] = s->op;
				n->src[id] = NONE32;
				n->coll[id] = NONE32;
				n->iter[id] = s->iter;
				n->layer[id] = s->layer;
				n->mb[id] = s->mb;
				n->phase[id] = s->phase;
				n->kind[id] = s->kind;
				n->rtclass[id] = s->rtclass;
				if (s->has_coll) {
					n->flags[id] |= NF_ADDED;
					n->colls[ci] = s->coll;
					n->colls[ci].node = id;
					n->coll[id] = ci++;
				}
			}
		}
	}
	/* Added tasks start after what precedes them on their processor; the
	 * new streams' rank is their first task's launcher's. */
	for (uint32_t q = 0; q < n_procs; q++) {
		for (uint32_t id = n->procs[q].first; id < n->procs[q].first + n->procs[q].n;
		     id++) {
			uint32_t a = order[id];
			if (a >= nx)
				n->start_ns[id] =
				    id > n->procs[q].first
					? prism_time_add(n->start_ns[id - 1], n->dur_ns[id - 1])
					: 0;
			if (id > n->procs[q].first && n->start_ns[id] < n->start_ns[id - 1])
				n->start_ns[id] = n->start_ns[id - 1];
		}
	}
	/* Edges, by source (order already grouped them). */
	for (size_t i = 0; i < fe.n; i++)
		n->out_off[fe.v[i].src + 1]++;
	for (uint32_t i = 0; i < n->n_nodes; i++)
		n->out_off[i + 1] += n->out_off[i];
	{
		uint32_t *fill = prism_calloc((size_t)n->n_nodes + 1, sizeof(*fill));
		if (!fill) {
			rc = oom(&r);
			goto out;
		}
		for (size_t i = 0; i < fe.n; i++) {
			uint32_t at = n->out_off[fe.v[i].src] + fill[fe.v[i].src]++;
			n->out_dst[at] = fe.v[i].dst;
			n->out_kind[at] = fe.v[i].kind;
		}
		free(fill);
	}
	/* New streams belong to the rank whose tasks launch onto them, on its
	 * device (the pid of its other streams). */
	for (uint32_t q = g->n_procs; q < n_procs; q++) {
		n->procs[q].rank = r.newproc_rank[q - g->n_procs];
		for (uint32_t o = 0; o < g->n_procs; o++)
			if (g->procs[o].gpu && g->procs[o].rank == n->procs[q].rank) {
				n->procs[q].pid = g->procs[o].pid;
				break;
			}
	}
	for (uint32_t i = 0; i < g->n_iters; i++) {
		int64_t a = g->iters[i].start_ns, b = prism_time_add(a, g->iters[i].dur_ns);
		uint32_t pq = g->iters[i].proc;
		n->iters[i] = g->iters[i];
		if (pq == NONE32)
			continue;
		n->iters[i].start_ns = move_time(&r, pq, a);
		n->iters[i].dur_ns = move_time(&r, pq, b) - n->iters[i].start_ns;
		if (n->iters[i].dur_ns < 0)
			n->iters[i].dur_ns = 0;
	}
	if (graph_renumber_colls(n, 1)) {
		rc = oom(&r);
		goto out;
	}
	graph_count(n);
	if ((rc = graph_acyclic(n, err))) {
		if (rc == PRISM_EINTERNAL)
			prism_err_prefix(err, "the edited graph waits on itself");
		goto out;
	}
	*out = n;
	n = NULL;
out:
	graph_free(n);
	graph_free(names);
	free(r.lay);
	free(r.mbv);
	free(r.ph);
	free(r.mg);
	free(r.lg);
	free(r.late_m);
	free(r.late_l);
	free(r.x0);
	free(r.sm);
	free(r.sl);
	free(r.in_off);
	free(r.in_src);
	free(r.lfirst);
	free(r.mfirst);
	VEC_FREE(r.x);
	VEC_FREE(r.s);
	VEC_FREE(r.e);
	VEC_FREE(fe);
	VEC_FREE(seq);
	free(po_off);
	free(c.off);
	free(c.dst);
	free(c.kind);
	free(newid);
	free(order);
	free(stamp);
	free(stack);
	return rc;
}
