/* reshape.c - repeat, drop and add tasks of a traced graph (reshape.h). */
#include "reshape.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "dtype.h"
#include "edit.h"
#include "gwrite.h"
#include "imap.h"
#include "vec.h"

#define NONE32 UINT32_MAX

void reshape_plan_init(struct reshape_plan *p)
{
	memset(p, 0, sizeof(*p));
}

/* Where a copy of the candidate came from: base task u, in copy cm of its
 * microbatch and cl of its layer (per staged id below nx). */
struct origin {
	uint32_t u;
	int32_t cm, cl;
};

/* Where an added task goes in its processor's order (per staged id from
 * nx): right after copy i (i), right before it (i | BEFORE), or on a new
 * stream in the order added (NONE32). */
#define BEFORE 0x80000000u

/*
 * The candidate is staged in a graph writer (gwrite.h): first every copy,
 * processor by processor in emission order (staged id = copy index, so
 * xid() below names copies), then the added tasks.
 */
struct rs {
	const struct graph *g;
	const struct reshape_plan *p;
	struct prism_err *err;
	struct gw w;
	/* Effective labels (bridges take their group's). */
	int32_t *lay, *mbv;
	uint8_t *ph;
	uint32_t *mg, *lg;	   /* microbatch and layer group, or NONE32 */
	uint32_t *late_m, *late_l; /* the group a task comes between the parts
				    * of, without being its own work (bridges) */
	uint32_t *x0, *sm, *sl;
	int32_t *lfirst, *mfirst;  /* new index of copy 0 of each base layer/mb */
	uint32_t *in_off, *in_src; /* edges by target */
	VEC(struct origin) o;	   /* per copy */
	VEC(uint32_t) anchor;	   /* per added task */
	int64_t corr;		   /* the next added launch's (-2, -3, ...) */
	struct reshape_stats *st;
};

static int oom(struct rs *r)
{
	return prism_err_set(r->err, PRISM_ENOMEM, "reshape: out of memory");
}

/* The writer's failure, as reshape reports it. */
static int wfail(struct rs *r)
{
	return r->w.rc == PRISM_ELIMIT
		   ? prism_err_set(r->err, PRISM_ELIMIT, "reshape: over 2^32 tasks or edges")
		   : oom(r);
}

/* The copies staged so far (and their staged ids: 0 .. nx - 1). */
static uint32_t n_copies(const struct rs *r)
{
	return (uint32_t)r->o.n;
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
	const struct graph *g = r->g;
	struct gw_node n;
	struct origin o = {u, cm, cl};
	int km = km_of(r, u), kl = kl_of(r, u), dropped = km == 0 || kl == 0;
	uint32_t id;

	gw_node_from(&n, g, u);
	n.layer = r->lg[u] != NONE32 && !dropped
		      ? new_index(r->lfirst, r->p->n_layers, r->lay[u], cl)
		      : g->layer[u];
	n.mb = r->mg[u] != NONE32 && !dropped ? new_index(r->mfirst, r->p->n_mbs, r->mbv[u], cm)
					      : g->mb[u];
	/* An idle gap before a thread's wake-up is waiting the edge into the
	 * next task now does. */
	if (g->flags[u] & NF_IDLE_GAP)
		n.dur_ns = 0;
	if (gw_node(&r->w, &n, &id) || (dropped && gw_drop(&r->w, id)) ||
	    (g->coll[u] != NONE32 && gw_coll(&r->w, id, &g->colls[g->coll[u]])))
		return wfail(r);
	if (VEC_PUSH(r->o, o))
		return oom(r);
	if (cm == 0 && cl == 0)
		r->x0[u] = id;
	if (dropped)
		r->st->nodes_dropped++;
	else if (cm || cl)
		r->st->nodes_added++;
	return 0;
}

/* The layer run [a, b) of one processor, in copy cm of its microbatch. */
static int emit_lrun(struct rs *r, uint32_t a, uint32_t b, int32_t cm)
{
	int k = kl_of(r, a);
	uint32_t x_start = n_copies(r), span = 0;
	int rc = 0;
	for (int c = 0; c < (k > 0 ? k : 1) && !rc; c++) {
		for (uint32_t u = a; u < b && !rc; u++)
			rc = emit(r, u, cm, c);
		if (c == 0)
			span = n_copies(r) - x_start;
	}
	for (uint32_t u = a; u < b; u++)
		r->sl[u] = span;
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
			uint32_t x_start = n_copies(r), span = 0;
			while (j < end && r->mg[j] == r->mg[u])
				j++;
			for (int c = 0; c < (k > 0 ? k : 1) && !rc; c++) {
				rc = emit_inner(r, u, j, c);
				if (c == 0)
					span = n_copies(r) - x_start;
			}
			for (uint32_t w = u; w < j; w++)
				r->sm[w] = span;
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
					if (gw_edge(&r->w, xid(r, u, cm, cl), xid(r, v, cm2, cl2),
						    g->out_kind[e]))
						return wfail(r);
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
	for (uint32_t i = 0; i < n_copies(r); i++) {
		const struct origin *x = &r->o.v[i];
		if (drop[x->u] && !gw_is_dropped(&r->w, i) && x->cm < km_of(r, x->u) - 1) {
			if (gw_drop(&r->w, i)) {
				free(drop);
				return wfail(r);
			}
			r->st->nodes_dropped++;
		}
	}
	free(drop);
	return 0;
}

/* ---- added gradient collectives ------------------------------------- */

/* The next count added tasks staged go where `at` puts them. */
static int anchor(struct rs *r, uint32_t at, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++)
		if (VEC_PUSH(r->anchor, at))
			return oom(r);
	r->st->nodes_added += count;
	return 0;
}

/* A cross-stream wait issued from host labels h (its processor, step,
 * layer, microbatch and phase) where `at` puts it. */
static int add_event_wait(struct rs *r, const struct gw_node *h, uint32_t rec, uint32_t wait,
			  uint32_t at)
{
	if (gw_event_wait(&r->w, h, rec, wait, r->p->event_ns, GW_NONE, GW_NONE, NULL, NULL))
		return wfail(r);
	if (anchor(r, at, 2))
		return PRISM_ENOMEM;
	assert(r->anchor.n + n_copies(r) == r->w.n_nodes); /* each added task placed */
	return 0;
}

/* Host labels h's op (named op) launching task t (placed at t_at): its
 * CPU time where the plan gives one and its launch call, where `at` puts
 * them; the call and t take the next added correlation id; t runs
 * collective c where c is not NULL.  *id: t's staged id. */
static int op_launch(struct rs *r, const struct gw_node *h, uint32_t op, uint32_t launch,
		     uint32_t at, const struct gw_node *t, uint32_t t_at,
		     const struct graph_coll *c, uint32_t *call, uint32_t *id)
{
	struct gw_node x = *h, k = *t;
	int rc;

	x.kind = GN_CPU;
	x.rtclass = RT_OTHER;
	x.dur_ns = r->p->cpu_op_ns;
	x.name = x.op = op;
	x.corr = -1;
	if (r->p->cpu_op_ns > 0 && (gw_node(&r->w, &x, NULL) || anchor(r, at, 1)))
		return r->w.rc ? wfail(r) : PRISM_ENOMEM;
	x.kind = GN_RUNTIME;
	x.rtclass = RT_LAUNCH;
	x.dur_ns = r->p->launch_ns;
	x.name = launch;
	x.corr = r->corr--;
	k.op = op;
	rc = c ? gw_collective(&r->w, &x, &k, c, call, id) : gw_launch(&r->w, &x, &k, call, id);
	if (rc)
		return wfail(r);
	if (anchor(r, at, 1) || anchor(r, t_at, 1))
		return PRISM_ENOMEM;
	assert(r->anchor.n + n_copies(r) == r->w.n_nodes); /* each added task placed */
	return 0;
}

/* The launch call of copy x (a GPU task), or NONE32. */
static uint32_t launcher(const struct rs *r, uint32_t xi)
{
	const struct graph *g = r->g;
	const struct origin *x = &r->o.v[xi];
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
	if (r->w.layer[i] != r->w.layer[j])
		return r->w.layer[i] < r->w.layer[j] ? -1 : 1;
	return (i > j) - (i < j);
}

/* Labels of added host work on processor proc. */
static void host_labels(struct gw_node *h, uint32_t proc, int32_t it, int32_t layer, int32_t mb,
			uint8_t phase, uint32_t op)
{
	gw_node_init(h);
	h->proc = proc;
	h->iter = it;
	h->layer = layer;
	h->mb = mb;
	h->phase = phase;
	h->op = op;
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
/* What add_dp's steps share: the names it writes and the copies of each
 * step in emission order (it_x[it_off[it] .. it_off[it + 1])), so that
 * each step and layer looks at its own, not at every copy (a trace may
 * have 10^5 steps and 10^6 tasks). */
struct dpw {
	uint32_t n_cpu, n_launch, n_rec, n_wait, n_kern, dtype, empty, ranks, pgname;
	uint32_t dproc; /* the rank's new stream */
	uint32_t *it_off, *it_x, *bw;
	int used; /* the rank's stream has work */
};

static int dp_names(struct rs *r, struct dpw *d)
{
	struct gw *w = &r->w;
	char buf[64];
	int half;
	d->n_cpu = gw_intern(w, "c10d::allreduce_");
	d->n_launch = gw_intern(w, "cudaLaunchKernel");
	d->n_rec = gw_intern(w, "cudaEventRecord");
	d->n_wait = gw_intern(w, "cudaStreamWaitEvent");
	/* The gradients' dtype by their size (dp_grad_bytes: 4, the fp32 main
	 * gradients, "Float"), the 16-bit one the trace's activations' (fp16
	 * or bf16), named by the one table as prism synth names its own. */
	edit_activation_type(r->g, NULL, &half);
	d->n_kern =
	    gw_intern(w, r->p->dp_grad_bytes == 4 ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
						  : "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
	d->dtype = gw_intern(w, dtype_coll_name(r->p->dp_grad_bytes, half));
	d->empty = gw_intern(w, "");
	snprintf(buf, sizeof(buf), "[%d]", r->p->dp);
	d->ranks = gw_intern(w, buf);
	return w->rc ? wfail(r) : 0;
}

/* The copies of each step, by a counting sort on their steps. */
static int dp_index(struct rs *r, struct dpw *d)
{
	const struct graph *g = r->g;
	uint32_t nx = n_copies(r);
	d->it_off = prism_calloc((size_t)g->n_iters + 2, sizeof(*d->it_off));
	d->it_x = prism_malloc(((size_t)nx + 1) * sizeof(*d->it_x));
	d->bw = prism_malloc(((size_t)nx + 1) * sizeof(*d->bw));
	if (!d->it_off || !d->it_x || !d->bw)
		return oom(r);
	for (uint32_t i = 0; i < nx; i++) {
		uint32_t u = r->o.v[i].u;
		if (g->iter[u] >= 0 && (uint32_t)g->iter[u] < g->n_iters)
			d->it_off[g->iter[u] + 2]++;
	}
	for (uint32_t it = 1; it <= g->n_iters; it++)
		d->it_off[it + 1] += d->it_off[it];
	for (uint32_t i = 0; i < nx; i++) {
		uint32_t u = r->o.v[i].u;
		if (g->iter[u] >= 0 && (uint32_t)g->iter[u] < g->n_iters)
			d->it_x[d->it_off[g->iter[u] + 1]++] = i;
	}
	return 0;
}

/* One all-reduce of `bucket` parameters' gradients: its host op on the
 * launching thread after host_last (an event wait on it), its kernel on
 * the rank's DP stream after kx (layer l's last backward kernel).  The
 * all-reduce's copy id in *ar. */
static int dp_allreduce(struct rs *r, struct dpw *d, uint32_t it, int32_t l, int32_t mb,
			uint32_t call, uint32_t host_last, uint32_t kx, double bucket, uint32_t *ar)
{
	const struct reshape_plan *p = r->p;
	struct gw_node h, t;
	struct graph_coll c;
	int rc;
	host_labels(&h, r->w.proc[call], (int32_t)it, l, mb, PH_BACKWARD, d->empty);
	if ((rc = add_event_wait(r, &h, d->n_rec, d->n_wait, host_last)))
		return rc;
	t = h;
	t.proc = d->dproc;
	t.dur_ns = p->dp_coll_ns(p->dp_ctx, bucket * p->dp_grad_bytes);
	t.lag_ns = p->gpu_lag_ns;
	t.name = d->n_kern;
	t.flags = NF_ADDED;
	memset(&c, 0, sizeof(c));
	c.kind = GC_ALL_REDUCE;
	c.bytes = (int64_t)(bucket * p->dp_grad_bytes);
	c.group_size = p->dp;
	c.pg = d->pgname;
	c.ranks = d->ranks;
	c.dtype = d->dtype;
	if ((rc = op_launch(r, &h, d->n_cpu, d->n_launch, host_last, &t, NONE32, &c, NULL, ar)))
		return rc;
	d->used = 1;
	r->st->colls_added++;
	return gw_edge(&r->w, kx, *ar, GE_EVENT) ? wfail(r) : 0;
}

/* Step it's gradient buckets on rank rk: the last microbatch's backward
 * copies bw[0 .. nb) by layer, from the top layer down (the backward runs
 * them so), an all-reduce each time a bucket fills.  The last all-reduce
 * in *last_ar (NONE32: none). */
static int dp_buckets(struct rs *r, struct dpw *d, uint32_t rk, uint32_t it, int32_t last_mb,
		      size_t nb, uint32_t *last_ar)
{
	const struct graph *g = r->g;
	const struct reshape_plan *p = r->p;
	const uint32_t *bw = d->bw;
	double bucket = p->dp_first && rk < p->n_dp_extra ? p->dp_first[rk] : 0;
	int rc = 0;
	for (size_t hi = nb, lo = nb; hi > 0 && !rc; hi = lo) {
		uint32_t kx = NONE32, call, host_last = NONE32;
		int32_t l = r->w.layer[bw[hi - 1]];
		while (lo > 0 && r->w.layer[bw[lo - 1]] == l)
			lo--;
		double sz[2],
		    tail = lo == 0 && p->dp_last && rk < p->n_dp_extra ? p->dp_last[rk] : 0;
		int nsz = 0;
		bucket += p->dp_layer_params;
		if (bucket < p->dp_bucket_params && lo > 0)
			continue; /* the bucket is not full */
		/* bw[lo .. hi): layer l's, in emission order */
		for (size_t j = lo; j < hi; j++) {
			uint32_t u = r->o.v[bw[j]].u;
			if (g->kind[u] < GN_KERNEL || g->kind[u] == GN_COLL)
				continue;
			if (kx == NONE32 || g->start_ns[u] >= g->start_ns[r->o.v[kx].u])
				kx = bw[j];
		}
		if (kx == NONE32 || (call = launcher(r, kx)) == NONE32)
			continue;
		for (size_t j = lo; j < hi; j++)
			if (r->w.proc[bw[j]] == r->w.proc[call])
				host_last = bw[j];
		if (host_last == NONE32)
			host_last = call;
		/* A bucket the bottom layer fills goes before the embedding's
		 * gradients, which follow in their own. */
		if (lo == 0 && tail > 0 && bucket >= p->dp_bucket_params) {
			sz[nsz++] = bucket;
			bucket = 0;
		}
		bucket += lo == 0 ? tail : 0;
		if (bucket > 0)
			sz[nsz++] = bucket;
		for (int q = 0; q < nsz && !rc; q++)
			rc =
			    dp_allreduce(r, d, it, l, last_mb, call, host_last, kx, sz[q], last_ar);
		bucket = 0;
	}
	return rc;
}

/* After step it's last all-reduce: the optimizer's first kernel (and its
 * host, by an event wait) and the step's closing sync wait for it. */
static int dp_close(struct rs *r, struct dpw *d, uint32_t it, uint32_t last_ar)
{
	const struct graph *g = r->g;
	struct gw *w = &r->w;
	const uint32_t *xs = d->it_x + d->it_off[it];
	uint32_t nxs = d->it_off[it + 1] - d->it_off[it];
	uint32_t opt_first = NONE32, opt_host = NONE32, sync = NONE32;
	int rc;
	for (uint32_t j = 0; j < nxs; j++) {
		uint32_t u = r->o.v[xs[j]].u;
		if (gw_is_dropped(w, xs[j]))
			continue;
		if (g->phase[u] == PH_OPTIMIZER && g->kind[u] >= GN_KERNEL &&
		    (opt_first == NONE32 || g->start_ns[u] < g->start_ns[r->o.v[opt_first].u]))
			opt_first = xs[j];
		if (g->kind[u] == GN_WAIT && g->rtclass[u] == RT_DEVICE_SYNC &&
		    r->w.proc[xs[j]] == (uint32_t)g->iters[it].proc)
			sync = xs[j];
	}
	if (opt_first != NONE32) {
		uint32_t call = launcher(r, opt_first);
		for (uint32_t j = 0; call != NONE32 && j < nxs; j++)
			if (r->w.proc[xs[j]] == r->w.proc[call] && !gw_is_dropped(w, xs[j]) &&
			    g->phase[r->o.v[xs[j]].u] == PH_OPTIMIZER) {
				opt_host = xs[j];
				break;
			}
		if (opt_host != NONE32) {
			struct gw_node h;
			host_labels(&h, r->w.proc[opt_host], (int32_t)it, -1, -1, PH_OPTIMIZER,
				    d->empty);
			if ((rc = add_event_wait(r, &h, d->n_rec, d->n_wait, opt_host | BEFORE)))
				return rc;
		}
		if (gw_edge(w, last_ar, opt_first, GE_EVENT))
			return wfail(r);
	}
	if (sync != NONE32 && gw_edge(w, last_ar, sync, GE_SYNC))
		return wfail(r);
	return 0;
}

/* Step it of rank rk: its gradient all-reduces (dp_buckets) and what
 * waits for the last (dp_close). */
static int dp_step(struct rs *r, struct dpw *d, uint32_t rk, uint32_t it)
{
	const struct graph *g = r->g;
	struct gw *w = &r->w;
	int32_t last_mb = -1, top = -1;
	uint32_t last_ar = NONE32;
	const uint32_t *xs = d->it_x + d->it_off[it];
	uint32_t nxs = d->it_off[it + 1] - d->it_off[it];
	size_t nb = 0;
	int rc;
	if (g->iters[it].rank != rk)
		return 0;
	/* The step's last microbatch and its layers. */
	for (uint32_t j = 0; j < nxs; j++) {
		uint32_t u = r->o.v[xs[j]].u;
		if (gw_is_dropped(w, xs[j]))
			continue;
		if (g->phase[u] == PH_BACKWARD || r->ph[u] == PH_BACKWARD) {
			if (r->w.mb[xs[j]] > last_mb)
				last_mb = r->w.mb[xs[j]];
			if (r->w.layer[xs[j]] > top)
				top = r->w.layer[xs[j]];
		}
	}
	if (top < 0)
		return 0;
	/* Its backward copies of the last microbatch, by layer. */
	for (uint32_t j = 0; j < nxs; j++)
		if (!gw_is_dropped(w, xs[j]) && r->w.layer[xs[j]] >= 0 &&
		    r->w.mb[xs[j]] == last_mb && r->ph[r->o.v[xs[j]].u] == PH_BACKWARD)
			d->bw[nb++] = xs[j];
	if (nb)
		qsort_r(d->bw, nb, sizeof(*d->bw), cmp_layer, r);
	if ((rc = dp_buckets(r, d, rk, it, last_mb, nb, &last_ar)) || last_ar == NONE32)
		return rc;
	return dp_close(r, d, it, last_ar);
}

/* Rank rk's new stream, on its device (the pid of its other streams). */
static int dp_stream(struct rs *r, uint32_t rk, uint32_t dproc)
{
	const struct graph *g = r->g;
	struct graph_proc q;
	memset(&q, 0, sizeof(q));
	q.rank = rk;
	q.gpu = 1;
	q.tid = 9000 + (int64_t)dproc;
	for (uint32_t o = 0; o < g->n_procs; o++)
		if (g->procs[o].gpu && g->procs[o].rank == rk) {
			q.pid = g->procs[o].pid;
			break;
		}
	return gw_proc(&r->w, &q, NULL) ? wfail(r) : 0;
}

static int add_dp(struct rs *r)
{
	const struct graph *g = r->g;
	struct gw *w = &r->w;
	struct dpw d;
	int rc;

	memset(&d, 0, sizeof(d));
	if ((rc = dp_names(r, &d)) || (rc = dp_index(r, &d)))
		goto out;
	for (uint32_t rk = 0; rk < g->n_ranks && !rc; rk++) {
		char buf[64];
		d.dproc = (uint32_t)w->procs.n;
		d.used = 0;
		snprintf(buf, sizeof(buf), "dp.%u", rk);
		d.pgname = gw_intern(w, buf);
		if (w->rc) {
			rc = wfail(r);
			break;
		}
		for (uint32_t it = 0; it < g->n_iters && !rc; it++)
			rc = dp_step(r, &d, rk, it);
		if (d.used && !rc)
			rc = dp_stream(r, rk, d.dproc);
	}
out:
	free(d.it_off);
	free(d.it_x);
	free(d.bw);
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
static int add_acc(struct rs *r)
{
	const struct graph *g = r->g;
	const struct reshape_plan *p = r->p;
	uint32_t nx = n_copies(r), *last = prism_malloc(((size_t)g->n_nodes + 1) * sizeof(*last));
	uint32_t n_op, n_launch, n_kern;
	int rc = 0;

	if (!last)
		return oom(r);
	if (!reshape_taken_grads(g, last, NULL)) {
		free(last);
		return 0;
	}
	n_op = gw_intern(&r->w, "aten::add_");
	n_launch = gw_intern(&r->w, "cudaLaunchKernel");
	n_kern = gw_intern(&r->w, GRAPH_ACC_KERNEL);
	if (r->w.rc) {
		free(last);
		return wfail(r);
	}
	for (uint32_t i = 0; i < nx && !rc; i++) {
		const struct origin *x = &r->o.v[i];
		uint32_t u = x->u, k, kx;
		double elems;
		int es;
		struct gw_node h, t;
		/* A later microbatch's copy of a taken gradient (last[u]: the
		 * kernel before it, NONE32 for every other task). */
		if (gw_is_dropped(&r->w, i) || x->cm < 1 || (k = last[u]) == NONE32)
			continue;
		cost_op_input(g, u, &elems, &es); /* known: it was taken */
		/* That kernel's copy in the same microbatch copy (and layer
		 * copy): one of another microbatch's would order this add
		 * before the work that launches it. */
		if (r->mg[k] == NONE32 || r->mg[k] != r->mg[u] ||
		    (x->cl && (r->lg[k] == NONE32 || r->lg[k] != r->lg[u])))
			continue;
		kx = xid(r, k, x->cm, r->lg[k] != NONE32 && r->lg[k] == r->lg[u] ? x->cl : 0);
		if (gw_is_dropped(&r->w, kx))
			continue;
		host_labels(&h, r->w.proc[i], g->iter[u], r->w.layer[i], r->w.mb[i], r->ph[u], 0);
		t = h;
		t.proc = r->w.proc[kx];
		t.kind = GN_KERNEL;
		t.dur_ns = p->acc_ns(p->acc_ctx, 3 * elems * es);
		t.lag_ns = p->gpu_lag_ns;
		t.name = n_kern;
		if ((rc = op_launch(r, &h, n_op, n_launch, i, &t, kx, NULL, NULL, NULL)))
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
	for (uint32_t i = 0; i < n_copies(r); i++) {
		uint32_t u = r->o.v[i].u;
		if (r->w.proc[i] != p) {
			p = r->w.proc[i];
			prev = NONE32;
			delta = 0;
			maxend = INT64_MIN;
			drop_at = INT64_MIN;
		}
		/* Times within +-PRISM_TIME_MAX: every difference below fits. */
		if (prev != NONE32 && u <= prev && maxend > INT64_MIN)
			delta = maxend - g->start_ns[u];
		prev = u;
		if (gw_is_dropped(&r->w, i)) {
			if (drop_at == INT64_MIN)
				drop_at = prism_time_shift(g->start_ns[u], delta);
			r->w.start_ns[i] = prism_time_shift(g->start_ns[u], delta);
			continue;
		}
		if (drop_at != INT64_MIN) {
			if (drop_at < prism_time_shift(g->start_ns[u], delta))
				delta = drop_at - g->start_ns[u];
			drop_at = INT64_MIN;
		}
		r->w.start_ns[i] = prism_time_shift(g->start_ns[u], delta);
		if (prism_time_add(r->w.start_ns[i], g->dur_ns[u]) > maxend)
			maxend = prism_time_add(r->w.start_ns[i], g->dur_ns[u]);
	}
}

/* A base time on processor p, moved as p's tasks moved: through the last
 * copy of the last task starting at or before it. */
static int64_t move_time(const struct rs *r, uint32_t p, int64_t t)
{
	const struct graph *g = r->g;
	const struct graph_proc *pr = &g->procs[p];
	uint32_t lo = pr->first, hi = pr->first + pr->n, u;
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
	/* t, starts: +-PRISM_TIME_MAX */
	return prism_time_shift(r->w.start_ns[xid(r, u, km > 0 ? km - 1 : 0, kl > 0 ? kl - 1 : 0)],
				t - g->start_ns[u]);
}

/* Correlation id of a copy: distinct from every other task's. */
static int64_t copy_corr(int64_t corr, int64_t stride, const struct origin *x)
{
	return corr + stride * (1 + (int64_t)x->cm * 65536 + x->cl);
}

/*
 * The candidate's order (every staged id, processor by processor): per
 * base processor its copies, each added task right before or after the
 * copy its anchor names (in the order added); then the new streams.
 * seq: room for every staged id.  0, or PRISM_ENOMEM.
 */
static int final_order(struct rs *r, uint32_t *seq)
{
	uint32_t nx = n_copies(r), n_procs = (uint32_t)r->w.procs.n, na = (uint32_t)r->anchor.n;
	uint32_t *after_first = prism_malloc(((size_t)nx + 1) * sizeof(*after_first));
	uint32_t *before_first = prism_malloc(((size_t)nx + 1) * sizeof(*before_first));
	uint32_t *next_s = prism_malloc(((size_t)na + 1) * sizeof(*next_s));
	uint32_t *proc_first = prism_malloc(((size_t)n_procs + 1) * sizeof(*proc_first));
	uint32_t n = 0;
	int rc = 0;

	if (!after_first || !before_first || !next_s || !proc_first) {
		rc = oom(r);
		goto out;
	}
	for (uint32_t i = 0; i < nx; i++)
		after_first[i] = before_first[i] = NONE32;
	for (uint32_t q = 0; q < n_procs; q++)
		proc_first[q] = NONE32;
	/* Chains of added tasks, in the order they were added. */
	for (uint32_t k = na; k-- > 0;) {
		uint32_t at = r->anchor.v[k];
		uint32_t *head = at == NONE32  ? &proc_first[r->w.proc[nx + k]]
				 : at & BEFORE ? &before_first[at & ~BEFORE]
					       : &after_first[at];
		next_s[k] = *head;
		*head = k;
	}
	for (uint32_t q = 0, i0 = 0; q < n_procs; q++) {
		if (q < r->g->n_procs) {
			/* Copies of q are contiguous, in emission order (processor
			 * by processor): one pass over them all. */
			for (uint32_t i = i0; i < nx && r->w.proc[i] == q; i++, i0++) {
				for (uint32_t k = before_first[i]; k != NONE32; k = next_s[k])
					seq[n++] = nx + k;
				seq[n++] = i;
				for (uint32_t k = after_first[i]; k != NONE32; k = next_s[k])
					seq[n++] = nx + k;
			}
		} else {
			for (uint32_t k = proc_first[q]; k != NONE32; k = next_s[k])
				seq[n++] = nx + k;
		}
	}
	assert(n == nx + na); /* every task placed once */
out:
	free(after_first);
	free(before_first);
	free(next_s);
	free(proc_first);
	return rc;
}

/*
 * What the writer cannot know: copies' and added tasks' correlation ids
 * (distinct from every other task's), added tasks' traced starts (after
 * what precedes them on their processor; no task before the one before
 * it), the steps' spans moved with their threads.
 */
static int finish_columns(struct rs *r, const uint32_t *seq, int64_t corr_stride)
{
	const struct graph *g = r->g;
	struct gw *w = &r->w;
	uint32_t nx = n_copies(r);
	int64_t corr_max = corr_stride;

	for (uint32_t i = 0; i < nx; i++) {
		const struct origin *x = &r->o.v[i];
		if (!gw_is_dropped(w, i) && g->corr[x->u] >= 0 && (x->cm || x->cl)) {
			int64_t cc = copy_corr(g->corr[x->u], corr_stride, x);
			w->corr[i] = cc;
			corr_max = cc > corr_max ? cc : corr_max;
		}
	}
	for (size_t id = nx; id < w->n_nodes; id++)
		if (w->corr[id] < -1)
			w->corr[id] = corr_max - w->corr[id];
	for (size_t i = 0, prev = NONE32; i < w->n_nodes; i++) {
		if (gw_is_dropped(w, seq[i]))
			continue;
		if (prev != NONE32 && w->proc[prev] != w->proc[seq[i]])
			prev = NONE32;
		if (seq[i] >= nx)
			w->start_ns[seq[i]] =
			    prev != NONE32 ? prism_time_add(w->start_ns[prev], w->dur_ns[prev]) : 0;
		if (prev != NONE32 && w->start_ns[seq[i]] < w->start_ns[prev])
			w->start_ns[seq[i]] = w->start_ns[prev];
		prev = seq[i];
	}
	for (uint32_t i = 0; i < g->n_iters; i++) {
		struct graph_iter it = g->iters[i];
		int64_t a = it.start_ns, b = prism_time_add(a, it.dur_ns);
		if (it.proc != NONE32) {
			it.start_ns = move_time(r, it.proc, a);
			it.dur_ns = move_time(r, it.proc, b) - it.start_ns;
			if (it.dur_ns < 0)
				it.dur_ns = 0;
		}
		if (gw_iter(w, &it))
			return wfail(r);
	}
	return 0;
}

int reshape_apply(const struct graph *g, const struct reshape_plan *p, struct graph **out,
		  struct reshape_stats *st, struct prism_err *err)
{
	struct rs r;
	struct graph *n = NULL;
	uint32_t *seq = NULL;
	int64_t corr_stride = 1;
	int rc = 0;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	memset(&r, 0, sizeof(r));
	r.g = g;
	r.p = p;
	r.err = err;
	r.st = st;
	r.corr = -2;
	/* The candidate's strings start as the base's (added names go after). */
	if (gw_init_from(&r.w, g)) {
		rc = wfail(&r);
		goto out;
	}
	for (uint32_t q = 0; q < g->n_procs; q++)
		gw_proc(&r.w, &g->procs[q], NULL);
	for (uint32_t k = 0; k < g->n_ranks; k++)
		gw_rank(&r.w, &g->ranks[k]);
	if (r.w.rc || graph_in_edges(g, &r.in_off, &r.in_src)) {
		rc = wfail(&r);
		goto out;
	}
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
		r.lfirst = prism_malloc(((size_t)(p->n_layers > 0 ? p->n_layers : 0) + 1) *
					sizeof(*r.lfirst));
		r.mfirst =
		    prism_malloc(((size_t)(p->n_mbs > 0 ? p->n_mbs : 0) + 1) * sizeof(*r.mfirst));
		if (!r.lay || !r.mbv || !r.ph || !r.mg || !r.lg || !r.late_m || !r.late_l ||
		    !r.x0 || !r.sm || !r.sl || !r.lfirst || !r.mfirst) {
			rc = oom(&r);
			goto out;
		}
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
		for (uint32_t i = 0; i < n_copies(&r); i++) {
			int64_t k = 1 + (int64_t)r.o.v[i].cm * 65536 + r.o.v[i].cl;
			if ((r.o.v[i].cm || r.o.v[i].cl) && k > most)
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
	if (n_copies(&r) >= UINT32_MAX / 2) {
		rc = prism_err_set(err, PRISM_ELIMIT, "reshape: %u tasks: over 2^31", n_copies(&r));
		goto out;
	}
	if (p->strip_group > 0 && p->mb_copies && (rc = strip(&r)))
		goto out;
	times(&r);
	if ((rc = map_edges(&r)))
		goto out;
	if (p->add_dp && p->dp > 1 && (rc = add_dp(&r)))
		goto out;
	if (p->add_acc && p->acc_ns && p->mb_copies && (rc = add_acc(&r)))
		goto out;
	/* Order edges along each processor in the final order, over dropped
	 * tasks too (the writer contracts edges through them, each target
	 * once). */
	if (!(seq = prism_malloc((r.w.n_nodes + 1) * sizeof(*seq)))) {
		rc = oom(&r);
		goto out;
	}
	if ((rc = final_order(&r, seq)) || (rc = finish_columns(&r, seq, corr_stride)))
		goto out;
	VEC_FREE(r.o); /* before the writer's peak */
	if (gw_order(&r.w, seq) || gw_finish(&r.w, seq, GW_UNIQUE | GW_COLLS_BY_NODE, &n)) {
		rc = wfail(&r);
		goto out;
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
	gw_release(&r.w);
	free(seq);
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
	VEC_FREE(r.o);
	VEC_FREE(r.anchor);
	return rc;
}
