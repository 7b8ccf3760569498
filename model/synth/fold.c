/*
 * fold.c - folded units (hierarchical simulation, synth.h).  The first
 * unit of each kind is built kernel by kernel (step.c) and folded into a
 * template: the host's time split at the launches it gates, every task off
 * the compute stream kept, each run of compute kernels between events
 * made its first kernel and one unit task for the rest (whose kernels the
 * marks list).  The unit's tasks are then taken back, and it and every
 * later unit of its kind are copies of the template.  A unit's kind is
 * its content, not its (stage, chunk): every unit of the same layers,
 * flags, peers and rank state, on any stage, repeats one template, its
 * processors, layers and process groups moved (keys, below).  Reads the
 * unit from the graph writer (c->em.w), takes it back and stages the
 * copies.  A template's map (synth.h synth_unit_map, umap.c) is made with
 * it (fold_map).
 */
#include "synth_int.h"

#include <stdlib.h>
#include <string.h>

/* Units differ by these flags besides their stage and chunk. */
#define FOLD_FWD    1
#define FOLD_BUCKET 2
#define FOLD_FIRST  4
#define FOLD_LAST   8
#define FOLD_W	    16 /* a zero-bubble schedule's W pass (its B: a backward's kind) */
#define FOLD_B	    32 /* its B pass (DualPipeV's whole backwards beside them) */
#define FOLD_PAIR   64 /* the 1F1B all-to-all overlap's merged forward and backward */
#define FOLD_KINDS  128
#define FOLD_NEVER  (NONE32 - 1) /* fbind.t: tried, cannot be folded */

/* The index of a unit's slot (ctx.fo.fbind), made on first use: stage
 * s, chunk ch, the chunk of a merged pair's backward plus one (chb1; 0:
 * not a pair), flags f. */
static size_t slot_of(struct ctx *c, const struct shape *z, int s, int ch, int chb1, int f)
{
	size_t v = (size_t)z->v, n = (size_t)z->p * v * (v + 1) * FOLD_KINDS;
	if (c->fo.fbind.n != n) {
		if (VEC_RESERVE(c->fo.fbind, n)) {
			c->oom = 1;
			return SIZE_MAX;
		}
		for (size_t i = 0; i < n; i++)
			c->fo.fbind.v[i].epoch = NONE32; /* met in no build */
		c->fo.fbind.n = n;
	}
	return (((size_t)s * v + (size_t)ch) * (v + 1) + (size_t)chb1) * FOLD_KINDS + (size_t)f;
}

int sf_bound(const struct ctx *c, size_t slot)
{
	return c->fo.fbind.v[slot].epoch == c->fo.epoch;
}

void sf_key_start(struct ctx *c, size_t slot)
{
	c->fo.ukey.n = 0;
	sf_key(c, (uint32_t)(slot % FOLD_KINDS)); /* its flags (a merged pair's among them) */
}

void sf_key(struct ctx *c, uint32_t w)
{
	if (VEC_PUSH(c->fo.ukey, w))
		c->oom = 1;
}

size_t sf_slot(struct ctx *c, const struct shape *z, int s, int ch, int mb, int fwd, int bucket,
	       int pass)
{
	int f = (fwd ? FOLD_FWD : 0) | (bucket ? FOLD_BUCKET : 0) | (mb == 0 ? FOLD_FIRST : 0) |
		(mb == z->m - 1 ? FOLD_LAST : 0) | (pass == SL_PASS_W ? FOLD_W : 0) |
		(pass == SL_PASS_B ? FOLD_B : 0);
	return slot_of(c, z, s, ch, 0, f);
}

size_t sf_slot_pair(struct ctx *c, const struct shape *z, int s, int chf, int mbf, int chb, int mbb,
		    int bucket)
{
	int f = FOLD_PAIR | (bucket ? FOLD_BUCKET : 0) | (mbf == 0 || mbb == 0 ? FOLD_FIRST : 0) |
		(mbf == z->m - 1 || mbb == z->m - 1 ? FOLD_LAST : 0);
	return slot_of(c, z, s, chf, chb + 1, f);
}

/* Repeat template t as the next unit of rank r, microbatch mb (a merged
 * pair's backward tasks: microbatch mbb), moved as binding b says (its
 * processors, layers, process groups and their sequence entries). */
static void fold_replay(struct ctx *c, const struct ufold *t, const struct fbind *b, int r,
			int32_t mb, int32_t mbb)
{
	/* (no maps made yet: none to read, and no offset from NULL) */
	const struct fbmap *map = VEC_AT(c->fo.fbmap, b->map0);
	struct gw *w = &c->em.w;
	uint32_t k0 = w->n_nodes;

	if (k0 + t->n_nodes >= GRAPH_MAX_TASKS) {
		c->oom = SYNTH_TOO_BIG;
		return;
	}
	if (VEC_RESERVE(c->fo.marks, c->fo.marks.n + t->n_marks) ||
	    VEC_RESERVE(c->sc.unit_first, c->sc.unit_first.n + 1) ||
	    VEC_RESERVE(c->sc.unit_last, c->sc.unit_last.n + 1)) {
		c->oom = 1;
		return;
	}
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		struct gw_node n = c->fo.fnodes.v[t->node0 + i];
		n.mb = n.phase == PH_BACKWARD ? mbb : mb;
		n.iter = se_iter(c, r);
		n.proc += b->dproc;
		if (n.layer >= 0)
			n.layer += n.phase == PH_BACKWARD ? b->dlb : b->dlf;
		gw_node(w, &n, NULL);
	}
	for (uint32_t i = 0; i < t->n_edges; i++) {
		const struct gw_edge *e = &c->fo.fedges.v[t->edge0 + i];
		gw_edge(w, k0 + e->src, k0 + e->dst, e->kind);
	}
	for (uint32_t i = 0; i < t->n_ext; i++) {
		const struct fext *x = &c->fo.fexts.v[t->ext0 + i];
		gw_edge(w, c->rk[r].last[x->stream], k0 + x->dst, GE_EVENT);
	}
	for (uint32_t i = 0; i < t->n_colls && !w->rc; i++) {
		struct graph_coll x = c->fo.fcolls.v[t->coll0 + i];
		const struct fbmap *g = &map[c->fo.fcpg.v[t->coll0 + i]];
		x.pg = g->pg;
		x.seq = c->em.seqs.v[g->seq].n++;
		gw_coll(w, k0 + x.node, &x);
	}
	if (se_failed(c))
		return;
	for (uint32_t i = 0; i < t->n_marks; i++) {
		const struct fmark *m = &c->fo.fmarks.v[t->mark0 + i];
		struct synth_fold_mark x = {m->node + k0, k0,	    m->kern0,
					    m->n_kern,	  m->kern2, m->n_kern2};
		c->fo.marks.v[c->fo.marks.n++] = x;
	}
	if (c->in->unit_log) {
		struct unit_rec x = {
		    (uint32_t)(t - c->fo.folds.v), (uint32_t)r, k0, (uint32_t)c->sc.step, {0}};
		memcpy(x.last, c->rk[r].last, sizeof(x.last));
		if (VEC_PUSH(c->fo.ulog, x))
			c->oom = 1;
	}
	for (int st = 0; st < S_N; st++)
		if (t->last[st] != NONE32)
			c->rk[r].last[st] = k0 + t->last[st];
	if (t->ufirst != NONE32) {
		c->sc.unit_first.v[c->sc.unit_first.n++] = k0 + t->ufirst;
		c->sc.unit_last.v[c->sc.unit_last.n++] = k0 + t->ulast;
	}
	c->rk[r].bucket = t->bucket1;
	c->tally.kernels += t->kernels;
	c->tally.flops += t->flops;
	for (int h = 0; h < 3; h++)
		c->tally.kdb_hits[h] += t->hits[h];
	c->fo.tasks_folded += t->tasks - t->n_nodes;
	c->fo.units_folded++;
}

/* Whether t's events from before its unit have their tasks on rank r. */
static int fold_ext_ok(const struct ctx *c, const struct ufold *t, int r)
{
	for (uint32_t i = 0; i < t->n_ext; i++)
		if (c->rk[r].last[c->fo.fexts.v[t->ext0 + i].stream] == NONE32)
			return 0;
	return 1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The host task of the template being made that starts at offset rel (a
 * gate): its index, host tasks coming first, one per gate in order. */
static uint32_t fold_gate(const struct ctx *c, int64_t rel)
{
	size_t lo = 0, hi = c->fo.fgates.n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->fo.fgates.v[mid] <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/* Append task n to the template being made; its index in the template. */
static uint32_t fold_push(struct ctx *c, const struct ufold *t, struct gw_node n)
{
	n.corr = -1;
	n.op = n.op_dims = n.op_types = 0;
	n.coll = GW_NONE;
	if (VEC_PUSH(c->fo.fnodes, n))
		c->oom = 1;
	return (uint32_t)(c->fo.fnodes.n - 1 - t->node0);
}

static void fold_edge(struct ctx *c, uint32_t src, uint32_t dst, uint8_t kind)
{
	struct gw_edge e = {src, dst, kind};
	if (VEC_PUSH(c->fo.fedges, e))
		c->oom = 1;
}

/* The unit being folded: its tasks 0 .. n from task k0 (their columns in
 * the writer, from k0: proc, dur, lag, kind, coll) and its edges from
 * e0, on rank r (host thread host, compute stream comp); each stream's
 * last task before it; the host's time h (fold_scan); per task x
 * (c->fo.fscr). */
struct built {
	const uint32_t *proc, *coll;
	const int64_t *dur, *lag;
	const uint8_t *kind;
	struct fscr *x;
	size_t k0, e0;
	const uint32_t *last0;
	int64_t h;
	uint32_t n, host, comp;
	/* The side stream whose tasks (the ring's transfers) fold as pairs'
	 * side lanes (fold_lanes), or NONE32. */
	uint32_t side;
	int r;
};

/* Whether the event a -> b of the unit (its tasks) joins a pair's lanes:
 * between the compute stream and the side stream. */
static int lane_event(const struct built *u, uint32_t a, uint32_t b)
{
	return u->side != NONE32 && ((u->proc[a] == u->comp && u->proc[b] == u->side) ||
				     (u->proc[a] == u->side && u->proc[b] == u->comp));
}

/* Task i of the unit being folded, as a row. */
static struct gw_node task_row(const struct ctx *c, const struct built *u, uint32_t i)
{
	struct gw_node n;
	gw_row(&c->em.w, (uint32_t)u->k0 + i, &n);
	return n;
}

/* Each host task's offset (and the host's time), each GPU task's launch
 * offset and events: 0 where the unit cannot be folded (a host task with
 * a lag; an edge into the host, from outside the unit but an event from a
 * stream's last task, or other than a launch or an event). */
static int fold_scan(const struct ctx *c, struct built *u)
{
	struct fscr *x = u->x;

	for (uint32_t i = 0; i < u->n; i++) {
		x[i] = (struct fscr){-1, NONE32, NONE32, 0, 0, 0, NONE32, NONE32, NONE32};
		if (u->proc[i] == u->host) {
			if (u->lag[i])
				return 0;
			x[i].rel = u->h;
			u->h = prism_time_add(u->h, u->dur[i]);
		}
	}
	for (size_t k = u->e0; k < c->em.w.edges.n; k++) {
		const struct gw_edge *e = &c->em.w.edges.v[k];
		uint32_t a = e->src - (uint32_t)u->k0, b = e->dst - (uint32_t)u->k0;
		if (e->dst < u->k0 || u->proc[b] == u->host)
			return 0;
		if (e->src < u->k0) {
			/* From a stream's last task before the unit: the same
			 * stream's last where the template is repeated. */
			int st;
			for (st = 0; st < S_N && u->last0[st] != e->src; st++)
				;
			if (st == S_N || e->kind != GE_EVENT)
				return 0;
			if (u->side != NONE32 && u->proc[b] == u->side)
				u->side = NONE32; /* a side task waits on an earlier unit */
			x[b].evin = 1;
			continue;
		}
		if (e->kind == GE_LAUNCH && u->proc[a] == u->host && !x[b].launched) {
			x[b].rel = x[a].rel;
			x[b].launched = 1;
		} else if (e->kind == GE_EVENT && u->proc[a] != u->host && lane_event(u, a, b)) {
			/* Inside a pair: the lanes' waits on each other. */
			if (x[b].xsrc != NONE32)
				u->side = NONE32; /* one a task (fold_build scans again) */
			x[b].xsrc = a;
		} else if (e->kind == GE_EVENT && u->proc[a] != u->host) {
			if (u->side != NONE32 && (u->proc[a] == u->side || u->proc[b] == u->side))
				u->side = NONE32; /* a side task and another stream */
			x[a].evout = 1;
			x[b].evin = 1;
		} else {
			return 0;
		}
	}
	return 1;
}

/* Runs of compute kernels (c->fo.fsegs), cut after an event source and
 * before an event target (each kernel's run and index past its first:
 * fscr.seg, lk), and the host offsets that gate a launch (c->fo.fgates,
 * sorted, each once; a pair's side lane has none): 1; 0 where the unit cannot be
 * folded (a GPU task the host did not launch, a gate after the host's
 * time); -1 when out of memory. */
static int fold_runs(struct ctx *c, const struct built *u)
{
	struct fscr *x = u->x;
	uint32_t prev = NONE32;
	size_t n = 0;

	c->fo.fsegs.n = 0;
	c->fo.fgates.n = 0;
	if (VEC_PUSH(c->fo.fgates, 0))
		return -1;
	for (uint32_t i = 0; i < u->n; i++) {
		struct fseg *sg;
		if (u->proc[i] == u->host)
			continue;
		if (!x[i].launched)
			return 0;
		if (u->proc[i] == u->side)
			continue; /* a pair's side lane: its launches are its pieces' */
		if (u->proc[i] != u->comp) {
			if (VEC_PUSH(c->fo.fgates, x[i].rel))
				return -1;
			continue;
		}
		if (prev == NONE32 || x[i].evin || x[prev].evout) {
			struct fseg z = {i, i, 1, 0};
			if (VEC_PUSH(c->fo.fsegs, z) || VEC_PUSH(c->fo.fgates, x[i].rel))
				return -1;
			x[i].seg = (uint32_t)c->fo.fsegs.n - 1;
		} else {
			sg = &c->fo.fsegs.v[c->fo.fsegs.n - 1];
			/* Held to PRISM_TIME_MAX: a run that long is the
			 * simulator's to refuse. */
			sg->rest_ns =
			    prism_time_add(sg->rest_ns, prism_time_add(u->lag[i], u->dur[i]));
			sg->last = i;
			x[i].lk = sg->n - 1; /* its index in the run's main lane */
			x[i].seg = (uint32_t)c->fo.fsegs.n - 1;
			sg->n++;
		}
		prev = i;
	}
	qsort(c->fo.fgates.v, c->fo.fgates.n, sizeof(*c->fo.fgates.v), cmp_i64);
	for (size_t k = 0; k < c->fo.fgates.n; k++)
		if (k == 0 || c->fo.fgates.v[k] != c->fo.fgates.v[n - 1])
			c->fo.fgates.v[n++] = c->fo.fgates.v[k];
	c->fo.fgates.n = n;
	return c->fo.fgates.v[c->fo.fgates.n - 1] > u->h ? 0 : 1;
}

/*
 * The pairs' side lanes (sim.h, pairs): where every task of the unit on
 * the side stream is a collective (a context-parallel ring's transfer,
 * sequence parallelism's backward re-gather or reduce-scatter beside the
 * weight gradient), each waiting by an event on one compute kernel of
 * the unit, and every
 * event between the two streams inside the unit (fold_scan left them
 * uncut), each transfer joins the run of the kernel it waits on, as a
 * piece of that run's unit task's side lane, in its order; a kernel that
 * waits on a transfer must be in the same run, past its first kernel
 * (kept as a task of its own).  The transfers' order on the side stream
 * is then their order in the lanes, and where the side stream goes on
 * after the unit, its next task waits on a kernel after the unit (the
 * side stream's uses all do, se_event_wait), so it waits for the unit
 * task's end no later than the kernel-level run makes it.  Fills
 * c->fo.fside and each transfer's run and index (fscr.seg, lk): 1; 0
 * where the unit does not fit (it is folded as before, fold_build), -1
 * when out of memory.
 */
static int fold_lanes(struct ctx *c, const struct built *u)
{
	struct fscr *x = u->x;
	uint32_t seg = 0, k = 0;

	c->fo.fside.n = 0;
	for (uint32_t i = 0; i < u->n; i++) {
		uint32_t a = x[i].xsrc;
		if (u->proc[i] != u->side)
			continue;
		if (u->kind[i] != GN_COLL || u->coll[i] == NONE32 || a == NONE32 ||
		    x[a].seg == NONE32 || c->fo.fsegs.v[x[a].seg].n < 2 ||
		    (c->fo.fside.n && x[a].seg < seg))
			return 0;
		if (!c->fo.fside.n || x[a].seg != seg)
			k = 0;
		seg = x[a].seg;
		x[i].seg = seg;
		x[i].lk = k++;
		if (VEC_PUSH(c->fo.fside, i))
			return -1;
	}
	if (!c->fo.fside.n)
		return 0;
	for (uint32_t i = 0; i < u->n; i++) {
		uint32_t a = x[i].xsrc;
		if (u->proc[i] == u->comp && a != NONE32 &&
		    (x[i].seg != x[a].seg || x[i].lk == NONE32))
			return 0;
	}
	return 1;
}

/* Task i, off the compute stream, into the template as it is (a
 * collective's entry keeps its (rank, pg) slot in c->em.seqs): 1, or -1
 * when out of memory. */
static int fold_other(struct ctx *c, const struct built *u, struct ufold *t, uint32_t i)
{
	uint32_t me = fold_push(c, t, task_row(c, u, i));

	u->x[i].start_of = u->x[i].end_of = me;
	fold_edge(c, fold_gate(c, u->x[i].rel), me, GE_LAUNCH);
	if (u->coll[i] != NONE32) {
		struct graph_coll cx = c->em.w.colls.v[u->coll[i]];
		cx.node = me;
		cx.seq = NONE32;
		for (size_t q = 0; q < c->em.seqs.n; q++)
			if (c->em.seqs.v[q].rank == (uint32_t)u->r && c->em.seqs.v[q].pg == cx.pg)
				cx.seq = (uint32_t)q;
		if (cx.seq == NONE32 || VEC_PUSH(c->fo.fcolls, cx))
			return -1;
	}
	return 1;
}

/* Run sg (the si-th) of compute kernels into the template: its first
 * kernel as it is, then (if there are more) one unit task as long as the
 * rest, whose kernels its mark lists, and, a pair, its side lane's
 * transfers (c->fo.fside from *side): 1, or -1 when out of memory. */
static int fold_run(struct ctx *c, const struct built *u, struct ufold *t, const struct fseg *sg,
		    uint32_t si, size_t *side)
{
	struct fscr *x = u->x;
	uint32_t i = sg->first, me;
	struct gw_node first = task_row(c, u, i);
	uint32_t m0 = fold_push(c, t, first);

	me = m0;

	fold_edge(c, fold_gate(c, x[i].rel), m0, GE_LAUNCH);
	if (sg->n > 1) {
		struct gw_node rest = first;
		struct fmark mk;
		rest.kind = GN_KERNEL;
		rest.name = c->fo.n_fold;
		rest.dur_ns = sg->rest_ns;
		rest.lag_ns = 0;
		me = fold_push(c, t, rest);
		/* Released by the unit's host start: the sim times its
		 * kernels from their launches (sim.h, folded tasks). */
		fold_edge(c, 0, me, GE_LAUNCH);
		mk.node = me;
		mk.kern0 = (uint32_t)c->fo.fkerns.n;
		for (uint32_t j = i + 1; j <= sg->last; j++) {
			struct synth_fold_kern kk = {x[j].rel, u->lag[j], u->dur[j],
						     u->kind[j] == GN_COLL  ? SYNTH_KERN_COLL
						     : u->kind[j] == GN_P2P ? SYNTH_KERN_P2P
									    : SYNTH_KERN_COMPUTE,
						     x[j].xsrc == NONE32 ? SYNTH_NO_XW
									 : x[x[j].xsrc].lk};
			if (u->proc[j] == u->comp && VEC_PUSH(c->fo.fkerns, kk))
				return -1;
		}
		mk.n_kern = (uint32_t)(c->fo.fkerns.n - mk.kern0);
		/* A pair's side lane: the transfers of this run (a transfer
		 * waiting on the run's first kernel waits on nothing inside). */
		mk.kern2 = (uint32_t)c->fo.fkerns.n;
		for (; *side < c->fo.fside.n && x[c->fo.fside.v[*side]].seg == si; (*side)++) {
			uint32_t q = c->fo.fside.v[*side];
			struct synth_fold_kern kk = {x[q].rel, u->lag[q], u->dur[q],
						     SYNTH_KERN_COLL, x[x[q].xsrc].lk};
			if (VEC_PUSH(c->fo.fkerns, kk))
				return -1;
			x[q].start_of = x[q].end_of = me;
		}
		mk.n_kern2 = (uint32_t)(c->fo.fkerns.n - mk.kern2);
		if (VEC_PUSH(c->fo.fmarks, mk))
			return -1;
	}
	x[i].start_of = m0;
	x[sg->last].end_of = me;
	if (t->ufirst == NONE32)
		t->ufirst = m0;
	t->ulast = me;
	return 1;
}

/* The template's tasks: the host's time split at the gates, then the GPU
 * tasks in their order: 1, or -1 when out of memory. */
static int fold_tasks(struct ctx *c, const struct built *u, struct ufold *t)
{
	uint32_t si = 0;
	size_t side = 0;

	t->node0 = (uint32_t)c->fo.fnodes.n;
	t->edge0 = (uint32_t)c->fo.fedges.n;
	t->coll0 = (uint32_t)c->fo.fcolls.n;
	t->mark0 = (uint32_t)c->fo.fmarks.n;
	for (size_t j = 0; j < c->fo.fgates.n; j++) {
		struct gw_node hn;
		gw_node_init(&hn);
		hn.dur_ns =
		    (j + 1 < c->fo.fgates.n ? c->fo.fgates.v[j + 1] : u->h) - c->fo.fgates.v[j];
		hn.proc = u->host;
		hn.name = c->em.n_cpu;
		hn.layer = -1;
		hn.mb = c->em.w.mb[u->k0];
		hn.iter = c->em.w.iter[u->k0];
		hn.phase = c->em.w.phase[u->k0];
		hn.kind = GN_CPU;
		fold_push(c, t, hn);
	}
	for (uint32_t i = 0; i < u->n; i++) {
		if (u->proc[i] == u->host)
			continue;
		if (u->proc[i] == u->side)
			continue; /* in its run's unit task (fold_run) */
		if (u->proc[i] != u->comp) {
			if (fold_other(c, u, t, i) < 0)
				return -1;
			continue;
		}
		if (si < c->fo.fsegs.n && i == c->fo.fsegs.v[si].first) {
			if (fold_run(c, u, t, &c->fo.fsegs.v[si], si, &side) < 0)
				return -1;
			si++;
		}
	}
	return 1;
}

/* The template's events: those from a stream's last task before the unit
 * (c->fo.fexts) and those between its tasks; then each stream's last
 * task: 1, 0 where an event's end is not a template task (cannot happen:
 * runs are cut at events), -1 when out of memory. */
static int fold_events(struct ctx *c, const struct built *u, struct ufold *t)
{
	const struct fscr *x = u->x;

	t->ext0 = (uint32_t)c->fo.fexts.n;
	for (size_t k = u->e0; k < c->em.w.edges.n; k++) {
		const struct gw_edge *e = &c->em.w.edges.v[k];
		uint32_t a = e->src - (uint32_t)u->k0, b = e->dst - (uint32_t)u->k0;
		if (e->kind != GE_EVENT)
			continue;
		if (e->src < u->k0) {
			struct fext z = {x[b].start_of, 0};
			while (u->last0[z.stream] != e->src)
				z.stream++;
			if (z.dst == NONE32 || VEC_PUSH(c->fo.fexts, z))
				return -1;
			continue;
		}
		if (lane_event(u, a, b))
			continue; /* inside a pair: its lanes' waits */
		if (x[a].end_of == NONE32 || x[b].start_of == NONE32)
			return 0;
		fold_edge(c, x[a].end_of, x[b].start_of, GE_EVENT);
	}
	for (int st = 0; st < S_N; st++) {
		uint32_t l = c->rk[u->r].last[st];
		t->last[st] = l != NONE32 && l >= u->k0 ? x[l - u->k0].end_of : NONE32;
	}
	return 1;
}

/* t's map (synth.h synth_unit_map; umap.c) into ctx.fo.fmaps: 0, or -1
 * when out of memory. */
static int fold_map(struct ctx *c, struct ufold *t)
{
	const struct fold_state *f = &c->fo;
	struct umap_view v = {VEC_AT(f->fnodes, t->node0),
			      t->n_nodes,
			      VEC_AT(f->fedges, t->edge0),
			      t->n_edges,
			      VEC_AT(f->fexts, t->ext0),
			      t->n_ext,
			      VEC_AT(f->fmarks, t->mark0),
			      t->n_marks,
			      f->fkerns.v,
			      &c->rk[t->rank],
			      t->last,
			      t->ufirst,
			      0};
	return um_make(c, &v, &c->fo.fmaps, &t->map);
}

/* Take the unit back: its tasks, edges and collectives, and its
 * collectives' sequence numbers (collectives from c0). */
static void fold_take_back(struct ctx *c, const struct built *u, size_t c0)
{
	for (size_t q = c0; q < c->em.w.colls.n; q++)
		for (size_t k = 0; k < c->em.seqs.n; k++)
			if (c->em.seqs.v[k].rank == (uint32_t)u->r &&
			    c->em.seqs.v[k].pg == c->em.w.colls.v[q].pg) {
				c->em.seqs.v[k].n--;
				break;
			}
	gw_truncate(&c->em.w, (uint32_t)u->k0, u->e0, c0);
}

/*
 * Fold the unit just built on rank r (tasks from k0, edges from e0,
 * collectives from c0; *t holds its counts so far) into a template
 * (synth.h): 1 when made (the unit's tasks are then taken back), 0 when
 * the unit cannot be folded (it stays as built; c->oom set when out of
 * memory).
 */
static int fold_build(struct ctx *c, int r, struct ufold *t, size_t k0, size_t e0, size_t c0,
		      const uint32_t *last0)
{
	const struct gw *w = &c->em.w;
	struct built u = {.proc = w->proc + k0,
			  .coll = w->coll + k0,
			  .dur = w->dur_ns + k0,
			  .lag = w->lag_ns + k0,
			  .kind = w->kind + k0,
			  .k0 = k0,
			  .e0 = e0,
			  .last0 = last0,
			  .n = (uint32_t)(c->em.w.n_nodes - k0),
			  .host = c->rk[r].host,
			  .comp = c->rk[r].stream[S_COMPUTE],
			  .r = r};
	size_t f_nodes = c->fo.fnodes.n, f_edges = c->fo.fedges.n, f_colls = c->fo.fcolls.n;
	size_t f_marks = c->fo.fmarks.n, f_kerns = c->fo.fkerns.n, f_exts = c->fo.fexts.n;
	int rc;

	if (c->em.pend.n || u.n == 0 || VEC_RESERVE(c->fo.fscr, u.n))
		return 0;
	u.x = c->fo.fscr.v;

	/* The ring's transfers as pairs' side lanes where the unit has any
	 * and fits (fold_lanes), else scanned again and folded as before. */
	u.side = NONE32;
	for (uint32_t i = 0; i < u.n && u.side == NONE32; i++)
		if (u.proc[i] == c->rk[r].stream[S_TP])
			u.side = u.proc[i];
	for (;;) {
		uint32_t side = u.side;
		u.h = 0;
		c->fo.fside.n = 0;
		if (!fold_scan(c, &u))
			return 0;
		if (u.side != side)
			continue;
		rc = fold_runs(c, &u);
		if (rc > 0 && u.side != NONE32 && (rc = fold_lanes(c, &u)) == 0) {
			u.side = NONE32;
			continue;
		}
		break;
	}
	if (rc > 0)
		rc = fold_tasks(c, &u, t);
	if (rc > 0)
		rc = fold_events(c, &u, t);
	if (rc > 0 && !c->oom) {
		t->n_nodes = (uint32_t)(c->fo.fnodes.n - t->node0);
		t->n_edges = (uint32_t)(c->fo.fedges.n - t->edge0);
		t->n_colls = (uint32_t)(c->fo.fcolls.n - t->coll0);
		t->n_marks = (uint32_t)(c->fo.fmarks.n - t->mark0);
		t->n_ext = (uint32_t)(c->fo.fexts.n - t->ext0);
		t->tasks = u.n;
		fold_take_back(c, &u, c0);
		return 1;
	}
	if (rc < 0)
		c->oom = 1;
	c->fo.fnodes.n = f_nodes;
	c->fo.fedges.n = f_edges;
	c->fo.fcolls.n = f_colls;
	c->fo.fmarks.n = f_marks;
	c->fo.fkerns.n = f_kerns;
	c->fo.fexts.n = f_exts;
	return 0;
}

/* A rank's state as a unit's build reads and leaves it. */
static struct fold_rank rank_now(const struct rankst *k)
{
	struct fold_rank f = {k->layer, k->mb, k->phase, k->mtp, k->ebucket, k->region};
	return f;
}

/* Adopt t, made by an earlier build, into this one at its first use on
 * rank r: 1 where this build stands where its unit was built (its rank's
 * state, the sequence entries, every string the unit interned found at
 * the id it had or, new, added at it), with what building the unit would
 * have left (the strings interned, the sequence entries added, the
 * correlation ids used, the rank's state); 0, nothing changed, where not
 * (the unit is then built, and folded, as in a build of its own). */
static int fold_adopt(struct ctx *c, struct ufold *t, int r)
{
	struct rankst *k = &c->rk[r];
	struct fold_rank now = rank_now(k);
	const struct strtab *st = &c->em.w.st;
	uint32_t fresh = st->n;

	if (c->em.seqs.n != t->seq_n0 || now.layer != t->before.layer ||
	    now.phase != t->before.phase || now.mtp != t->before.mtp ||
	    now.ebucket != t->before.ebucket || now.region != t->before.region ||
	    (t->after.mb != t->before.mb && now.mb != t->before.mb))
		return 0;
	for (uint32_t i = 0; i < t->n_str; i++) {
		const struct fstr *f = &c->fo.fstrs.v[t->str0 + i];
		const char *txt = c->fo.ftext.v + f->off;
		uint32_t id = strtab_find(st, txt, strlen(txt));
		if (id == STRTAB_NONE)
			id = fresh++;
		if (id != f->id)
			return 0;
	}
	if (VEC_RESERVE(c->em.seqs, c->em.seqs.n + t->n_seq))
		return c->oom = 1, 0;
	for (uint32_t i = 0; i < t->n_str; i++)
		gw_intern(&c->em.w, c->fo.ftext.v + c->fo.fstrs.v[t->str0 + i].off);
	if (se_failed(c))
		return 0;
	for (uint32_t i = 0; i < t->n_seq; i++)
		c->em.seqs.v[c->em.seqs.n++] = c->fo.fseqs.v[t->seq0 + i];
	c->em.next_corr += t->corr_d;
	k->layer = t->after.layer;
	k->phase = t->after.phase;
	k->mtp = t->after.mtp;
	k->ebucket = t->after.ebucket;
	k->region = t->after.region;
	if (t->after.mb != t->before.mb)
		k->mb = t->after.mb;
	t->epoch = c->fo.epoch;
	c->fo.kinds++;
	c->fo.carried++;
	return 1;
}

/*
 * Keys.  Units of the same content -- the same flags, and chunks that
 * read the same of the model and layout (step.c key_chunk: their layers'
 * kinds, the embedding or head, their transfers' peers relative to the
 * unit) -- built at the same rank state (its gradient buckets, which of
 * its streams have a task, no host region open, no event wait pending),
 * differ only by the rank (processors, process groups), the layers'
 * numbers and the chunks named in the pipeline's process groups; one
 * template serves them all, moved on replay (fold_replay, fbind).
 */

/* The rank's streams with a task so far, a bit each. */
static uint32_t last_mask(const uint32_t *last)
{
	uint32_t m = 0;
	for (int st = 0; st < S_N; st++)
		if (last[st] != NONE32)
			m |= 1u << st;
	return m;
}

static uint32_t key_hash(const uint32_t *w, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ w[i]) * 16777619u;
	return h ^ (h >> 15);
}

/* Template i into the key table (ctx.fo.fktab, chains through knext),
 * grown to twice the templates: 0, or -1 when out of memory. */
static int key_insert(struct ctx *c, uint32_t i)
{
	struct fold_state *f = &c->fo;
	if (!f->fktab.n || f->fktab.n < 2 * f->folds.n) {
		size_t n = 64;
		while (n < 4 * f->folds.n)
			n *= 2;
		if (VEC_RESERVE(f->fktab, n))
			return -1;
		f->fktab.n = n;
		memset(f->fktab.v, 0, n * sizeof(*f->fktab.v));
		for (uint32_t j = 0; j < f->folds.n; j++)
			if (j != i && f->folds.v[j].n_key) {
				uint32_t *h = &f->fktab.v[f->folds.v[j].khash & (n - 1)];
				f->folds.v[j].knext = *h;
				*h = j + 1;
			}
	}
	{
		uint32_t *h = &f->fktab.v[f->folds.v[i].khash & (f->fktab.n - 1)];
		f->folds.v[i].knext = *h;
		*h = i + 1;
	}
	return 0;
}

/* What a template's process group names (ctx.fo.fprole): the rank (its
 * name "<group>.<rank>", rank = stage), or, the pipeline's
 * ("pp.<f|b>.<stage>.<chunk>", f the forward side's transfers, b the
 * backward's), the unit's own chunk (the sender of what it sends), the
 * chunk before it or the one after (the sender of what it receives). */
enum { PG_RANK, PG_SELF, PG_PREV, PG_NEXT };

/* Process group name pg parsed: "<group>.<n0>" (*nn 1) or
 * "pp.<f|b>.<n0>.<n1>" (*nn 2), its text before the numbers *pre bytes.
 * 1, or 0 where of neither form. */
static int pg_parse(const char *pg, size_t *pre, long num[2], int *nn)
{
	size_t len = strlen(pg), i = len, j;

	while (i > 0 && pg[i - 1] >= '0' && pg[i - 1] <= '9')
		i--;
	if (i == len || i < 2 || pg[i - 1] != '.' || len - i > 9)
		return 0;
	num[0] = num[1] = 0;
	for (j = i; j < len; j++)
		num[0] = num[0] * 10 + (pg[j] - '0');
	*nn = 1;
	*pre = i;
	if (strncmp(pg, "pp.", 3) == 0 && (pg[3] == 'f' || pg[3] == 'b') && pg[4] == '.') {
		/* the stage between pg + 5 and the chunk's dot */
		if (i - 1 <= 5 || i - 1 - 5 > 9)
			return 0;
		num[1] = num[0];
		num[0] = 0;
		for (j = 5; j < i - 1; j++) {
			if (pg[j] < '0' || pg[j] > '9')
				return 0;
			num[0] = num[0] * 10 + (pg[j] - '0');
		}
		*nn = 2;
		*pre = 5;
	}
	return 1;
}

/* pg's text before its numbers (pre bytes), then the numbers num (nn of
 * them), into out (n bytes): 1, or 0 where a number is below 0. */
static int pg_put(const char *pg, size_t pre, const long num[2], int nn, char *out, size_t n)
{
	size_t k = pre;
	char t[24];
	if (pre + 2 * 12 > n)
		return 0;
	memcpy(out, pg, pre);
	for (int q = 0; q < nn; q++) {
		long v = num[q];
		size_t m = sizeof(t);
		if (v < 0)
			return 0;
		do
			t[--m] = (char)('0' + v % 10);
		while ((v /= 10) != 0);
		if (q)
			out[k++] = '.';
		memcpy(out + k, t + m, sizeof(t) - m);
		k += sizeof(t) - m;
	}
	out[k] = '\0';
	return 1;
}

/* What process group pg names for a unit of rank r at p (PG_*), or -1
 * where it names nothing a template can move. */
static int pg_role(const char *pg, int r, const struct sf_pos *p)
{
	size_t pre;
	long num[2];
	int nn, side;
	const int32_t *q;
	if (!pg_parse(pg, &pre, num, &nn))
		return -1;
	if (nn == 1)
		return PG_RANK;
	side = pg[3] == 'b';
	q = p->peer[side];
	if (num[0] == r && num[1] == (side ? p->chb : p->ch))
		return PG_SELF;
	if (num[0] == q[0] && num[1] == q[1])
		return PG_PREV;
	if (num[0] == q[2] && num[1] == q[3])
		return PG_NEXT;
	return -1;
}

/* The name of process group pg, of role role, for a unit of rank r at p
 * (its template's made ds ranks away) into out (n bytes): 1, or 0 where
 * there is none (a number below 0). */
static int pg_move(const char *pg, int role, int r, int ds, const struct sf_pos *p, char *out,
		   size_t n)
{
	size_t pre;
	long num[2];
	int nn, side;
	if (!pg_parse(pg, &pre, num, &nn))
		return 0;
	side = nn == 2 && pg[3] == 'b';
	if (role == PG_RANK) {
		num[0] += ds;
	} else if (role == PG_SELF) {
		num[0] = r;
		num[1] = side ? p->chb : p->ch;
	} else {
		num[0] = p->peer[side][role == PG_PREV ? 0 : 2];
		num[1] = p->peer[side][role == PG_PREV ? 1 : 3];
	}
	return pg_put(pg, pre, num, nn, out, n);
}

static uint32_t seq_hash(uint32_t r, uint32_t pg)
{
	uint32_t h = r * 0x9e3779b1u ^ pg * 0x85ebca6bu;
	return h ^ (h >> 16);
}

/* The (rank r, group pg) sequence entry, added (as se_collective adds
 * it) where there is none: its index, or NONE32 when out of memory.
 * Found through ctx.fo.seqtab, which hashes c->em.seqs as it grows. */
static uint32_t seq_entry(struct ctx *c, int r, uint32_t pg)
{
	struct fold_state *f = &c->fo;
	const struct pgseq *q;
	size_t mask;
	uint32_t h;

	if (f->seq_hashed > c->em.seqs.n || f->seqtab.n < 2 * (c->em.seqs.n + 1)) {
		size_t n = 64;
		while (n < 4 * (c->em.seqs.n + 1))
			n *= 2;
		if (VEC_RESERVE(f->seqtab, n))
			return NONE32;
		f->seqtab.n = n;
		memset(f->seqtab.v, 0, n * sizeof(*f->seqtab.v));
		f->seq_hashed = 0;
	}
	mask = f->seqtab.n - 1;
	for (; f->seq_hashed < c->em.seqs.n; f->seq_hashed++) {
		q = &c->em.seqs.v[f->seq_hashed];
		for (h = seq_hash(q->rank, q->pg) & mask; f->seqtab.v[h]; h = (h + 1) & mask)
			;
		f->seqtab.v[h] = (uint32_t)f->seq_hashed + 1;
	}
	for (h = seq_hash((uint32_t)r, pg) & mask; f->seqtab.v[h]; h = (h + 1) & mask) {
		q = &c->em.seqs.v[f->seqtab.v[h] - 1];
		if (q->rank == (uint32_t)r && q->pg == pg)
			return f->seqtab.v[h] - 1;
	}
	{
		struct pgseq e = {(uint32_t)r, pg, 0};
		if (VEC_PUSH(c->em.seqs, e))
			return NONE32;
	}
	f->seqtab.v[h] = (uint32_t)c->em.seqs.n; /* the new entry's index + 1 */
	f->seq_hashed = c->em.seqs.n;
	return (uint32_t)(c->em.seqs.n - 1);
}

/* Slot's binding to template ti in this build, on rank r at p: its moves
 * and its process groups' names and sequence entries here (moved: each
 * name interned and entry added in the order its unit's build would
 * have, as se_collective does).  0; 1, nothing changed, where a name
 * cannot move there; -1 (c->oom set) on failure. */
static int fold_bind(struct ctx *c, size_t slot, uint32_t ti, int r, const struct sf_pos *p)
{
	const struct ufold *t = &c->fo.folds.v[ti];
	struct fbind *b = &c->fo.fbind.v[slot];
	int moved = r != t->rank || p->ch != t->ch || p->chb != t->chb;
	char buf[96];

	for (uint32_t k = 0; moved && k < t->n_pg; k++)
		if (!pg_move(strtab_get(&c->em.w.st, c->fo.fpgs.v[t->pg0 + k]),
			     c->fo.fprole.v[t->pg0 + k], r, r - t->rank, p, buf, sizeof(buf)))
			return 1; /* (a name moved below 0: not this template's kind) */
	if (VEC_RESERVE(c->fo.fbmap, c->fo.fbmap.n + t->n_pg))
		return c->oom = 1, -1;
	b->epoch = c->fo.epoch;
	b->t = ti;
	b->map0 = (uint32_t)c->fo.fbmap.n;
	b->dproc = c->rk[r].host - c->rk[t->rank].host;
	b->dlf = p->l0 - t->l0;
	b->dlb = p->lb0 - t->lb0;
	for (uint32_t k = 0; k < t->n_pg; k++) {
		struct fbmap m;
		m.pg = c->fo.fpgs.v[t->pg0 + k];
		if (moved) {
			pg_move(strtab_get(&c->em.w.st, m.pg), c->fo.fprole.v[t->pg0 + k], r,
				r - t->rank, p, buf, sizeof(buf));
			m.pg = gw_intern(&c->em.w, buf);
			if (se_failed(c))
				return -1;
		}
		m.seq = seq_entry(c, r, m.pg);
		if (m.seq == NONE32)
			return c->oom = 1, -1;
		c->fo.fbmap.v[c->fo.fbmap.n++] = m;
	}
	return 0;
}

/* Whether template t, made elsewhere in this build, is the one a build of
 * the unit at hand would make on rank r: the same key, rank state and
 * none pending. */
static int fold_fits(const struct ctx *c, const struct ufold *t, int r)
{
	const struct rankst *k = &c->rk[r];
	return t->share && !c->em.pend.n && k->region == 0 && k->mtp == t->before.mtp &&
	       k->phase == t->before.phase && k->layer == t->before.layer &&
	       t->bucket0 == k->bucket && t->before.ebucket == k->ebucket &&
	       (t->mask0 & t->rmask) == (last_mask(k->last) & t->rmask);
}

/* The slot's first unit in this build, on rank r at p (key: c->fo.ukey):
 * bound to a template of its kind made in this build (as if built: its
 * names, sequence entries, correlation ids and the rank's state after
 * it), or adopted from an earlier build where made at this very slot;
 * the template, or NONE32 (the unit is then built, and folded into one). */
static uint32_t fold_first(struct ctx *c, size_t slot, int r, const struct sf_pos *p)
{
	struct fold_state *f = &c->fo;
	uint32_t h = key_hash(f->ukey.v, f->ukey.n), i, old = NONE32;

	for (i = f->fktab.n ? f->fktab.v[h & (f->fktab.n - 1)] : 0; i;
	     i = f->folds.v[i - 1].knext) {
		struct ufold *t = &f->folds.v[i - 1];
		int here = t->rank == r && t->ch == p->ch && t->chb == p->chb;
		if (t->khash != h || t->n_key != f->ukey.n ||
		    memcmp(f->fkeys.v + t->key0, f->ukey.v, f->ukey.n * sizeof(*f->ukey.v)) != 0)
			continue;
		if (t->epoch == f->epoch && !here && !c->in->units_by_slot && fold_fits(c, t, r))
			break;
		if (t->epoch != f->epoch && here && old == NONE32 &&
		    t->bucket0 == c->rk[r].bucket && fold_ext_ok(c, t, r))
			old = i - 1;
	}
	if (i) {
		struct ufold *t = &f->folds.v[i - 1];
		struct rankst *k = &c->rk[r];
		if (fold_bind(c, slot, i - 1, r, p))
			return NONE32; /* (c->oom, or built here) */
		c->em.next_corr += t->corr_d;
		k->layer = t->after.layer;
		k->phase = t->after.phase;
		k->mtp = t->after.mtp;
		k->ebucket = t->after.ebucket;
		k->region = t->after.region; /* 0 (share) */
		return i - 1;
	}
	if (old != NONE32 && !c->em.pend.n && fold_adopt(c, &f->folds.v[old], r) &&
	    !fold_bind(c, slot, old, r, p))
		return old;
	return NONE32;
}

int sf_reuse(struct ctx *c, size_t slot, const struct sf_pos *p, int r, int32_t mb, int32_t mbb)
{
	struct fbind *b = &c->fo.fbind.v[slot];
	struct ufold *t;
	if (b->epoch != c->fo.epoch) {
		uint32_t i = fold_first(c, slot, r, p);
		if (i == NONE32) {
			b->epoch = c->fo.epoch;
			b->t = NONE32;
			return 0;
		}
		t = &c->fo.folds.v[i];
		/* The pair's backward microbatch as its build would leave it. */
		if (t->after.mb != t->before.mb)
			c->rk[r].mb = mbb;
		fold_replay(c, t, b, r, mb, mbb);
		return 1;
	}
	if (b->t >= c->fo.folds.n || c->em.pend.n)
		return 0;
	t = &c->fo.folds.v[b->t];
	if (t->bucket0 != c->rk[r].bucket || !fold_ext_ok(c, t, r))
		return 0;
	fold_replay(c, t, b, r, mb, mbb);
	return 1;
}

/* What t's unit interned (c->fo.rec_ids), each string once in order, its
 * sequence entries from t->seq_n0: kept beside t for a later build.  0,
 * or -1 when out of memory. */
static int fold_keep(struct ctx *c, struct ufold *t)
{
	uint32_t top = 0;
	t->str0 = (uint32_t)c->fo.fstrs.n;
	t->seq0 = (uint32_t)c->fo.fseqs.n;
	for (size_t i = 0; i < c->fo.rec_ids.n; i++)
		if (c->fo.rec_ids.v[i] >= top)
			top = c->fo.rec_ids.v[i] + 1;
	if (VEC_RESERVE(c->fo.seen, top))
		return -1;
	memset(c->fo.seen.v, 0, top);
	for (size_t i = 0; i < c->fo.rec_ids.n; i++) {
		uint32_t id = c->fo.rec_ids.v[i];
		const char *txt = strtab_get(&c->em.w.st, id);
		size_t len = strlen(txt) + 1;
		struct fstr f = {(uint32_t)c->fo.ftext.n, id};
		if (c->fo.seen.v[id])
			continue;
		c->fo.seen.v[id] = 1;
		if (VEC_RESERVE(c->fo.ftext, c->fo.ftext.n + len) || VEC_PUSH(c->fo.fstrs, f))
			return -1;
		memcpy(c->fo.ftext.v + c->fo.ftext.n, txt, len);
		c->fo.ftext.n += len;
	}
	for (size_t q = t->seq_n0; q < c->em.seqs.n; q++) {
		struct pgseq e = c->em.seqs.v[q];
		e.n = 0;
		if (VEC_PUSH(c->fo.fseqs, e))
			return -1;
	}
	t->n_str = (uint32_t)(c->fo.fstrs.n - t->str0);
	t->n_seq = (uint32_t)(c->fo.fseqs.n - t->seq0);
	return 0;
}

void sf_begin(struct ctx *c, int r, struct sf_start *u)
{
	u->k0 = c->em.w.n_nodes;
	u->e0 = c->em.w.edges.n;
	u->c0 = c->em.w.colls.n;
	u->w0 = c->em.waits.n;
	u->pend0 = c->em.pend.n;
	memcpy(u->last0, c->rk[r].last, sizeof(u->last0));
	memset(&u->t, 0, sizeof(u->t));
	u->t.ufirst = u->t.ulast = NONE32;
	u->t.bucket0 = c->rk[r].bucket;
	u->t.flops = c->tally.flops;
	u->t.kernels = c->tally.kernels;
	memcpy(u->t.hits, c->tally.kdb_hits, sizeof(u->t.hits));
	u->t.before = rank_now(&c->rk[r]);
	u->t.seq_n0 = (uint32_t)c->em.seqs.n;
	u->t.corr_d = c->em.next_corr;
	u->t.epoch = c->fo.epoch;
	c->fo.rec = c->fo.fold;
	c->fo.rec_ids.n = 0;
	c->fo.rec_pgs.n = 0;
	c->fo.rec_written = c->fo.rec_read = 0;
}

/* Template t (made from the unit just built on rank r at p, its key in
 * c->fo.ukey; before its unit, u) found by its content: its key, where it
 * was made, the process groups its unit used in order (each collective's
 * index among them) and whether it may move.  0, or -1 when out of
 * memory. */
static int fold_key(struct ctx *c, struct ufold *t, int r, const struct sf_pos *p,
		    const struct sf_start *u)
{
	struct fold_state *f = &c->fo;
	char buf[96];

	t->rank = r;
	t->ch = p->ch;
	t->chb = p->chb;
	t->l0 = p->l0;
	t->lb0 = p->lb0;
	t->mask0 = last_mask(u->last0);
	t->rmask = c->fo.rec_read;
	t->key0 = (uint32_t)f->fkeys.n;
	t->n_key = (uint32_t)f->ukey.n;
	t->khash = key_hash(f->ukey.v, f->ukey.n);
	if (VEC_RESERVE(f->fkeys, f->fkeys.n + f->ukey.n))
		return -1;
	memcpy(f->fkeys.v + f->fkeys.n, f->ukey.v, f->ukey.n * sizeof(*f->ukey.v));
	f->fkeys.n += f->ukey.n;
	t->share = t->n_key > 0 && u->pend0 == 0 && t->before.region == 0 && t->after.region == 0;
	t->pg0 = (uint32_t)f->fpgs.n;
	for (size_t i = 0; i < f->rec_pgs.n; i++) {
		uint32_t pg = f->rec_pgs.v[i], k;
		for (k = t->pg0; k < f->fpgs.n && f->fpgs.v[k] != pg; k++)
			;
		if (k < f->fpgs.n)
			continue;
		/* A name that does not parse back to itself, or names none of
		 * the unit's peers, stays where made. */
		{
			const char *txt = strtab_get(&c->em.w.st, pg);
			int role = pg_role(txt, r, p);
			if (role < 0 || !pg_move(txt, role, r, 0, p, buf, sizeof(buf)) ||
			    strcmp(buf, txt) != 0) {
				t->share = 0;
				role = PG_RANK;
			}
			if (VEC_PUSH(f->fpgs, pg) || VEC_PUSH(f->fprole, (uint8_t)role))
				return -1;
		}
	}
	t->n_pg = (uint32_t)(f->fpgs.n - t->pg0);
	if (VEC_RESERVE(f->fcpg, t->coll0 + t->n_colls))
		return -1;
	f->fcpg.n = t->coll0 + t->n_colls;
	for (uint32_t i = 0; i < t->n_colls; i++) {
		uint32_t k = 0;
		while (k < t->n_pg && f->fpgs.v[t->pg0 + k] != f->fcolls.v[t->coll0 + i].pg)
			k++;
		if (k == t->n_pg) /* a collective not seen by se_collective */
			return -1;
		f->fcpg.v[t->coll0 + i] = k;
	}
	return 0;
}

int sf_end(struct ctx *c, int r, int32_t mb, int32_t mbb, size_t slot, const struct sf_pos *p,
	   const struct sf_start *u)
{
	c->fo.rec = 0;
	if (slot != SIZE_MAX && !c->oom && c->fo.fbind.v[slot].epoch == c->fo.epoch &&
	    c->fo.fbind.v[slot].t == NONE32) {
		struct ufold t = u->t;
		t.after = rank_now(&c->rk[r]);
		t.corr_d = c->em.next_corr - t.corr_d;
		t.flops = c->tally.flops - t.flops;
		t.kernels = c->tally.kernels - t.kernels;
		for (int h = 0; h < 3; h++)
			t.hits[h] = c->tally.kdb_hits[h] - t.hits[h];
		t.bucket1 = c->rk[r].bucket;
		if (fold_build(c, r, &t, u->k0, u->e0, u->c0, u->last0)) {
			uint32_t ti = (uint32_t)c->fo.folds.n;
			/* The replay adds the unit's counts again. */
			c->tally.flops -= t.flops;
			c->tally.kernels -= t.kernels;
			for (int h = 0; h < 3; h++)
				c->tally.kdb_hits[h] -= t.hits[h];
			c->em.waits.n = u->w0;
			if (fold_keep(c, &t) || fold_key(c, &t, r, p, u) || fold_map(c, &t) ||
			    VEC_PUSH(c->fo.folds, t) || key_insert(c, ti) ||
			    fold_bind(c, slot, ti, r, p)) {
				c->oom = 1;
				return 1;
			}
			c->fo.kinds++;
			/* The streams as before the unit: its events from
			 * before it are replayed from them. */
			memcpy(c->rk[r].last, u->last0, sizeof(u->last0));
			fold_replay(c, &c->fo.folds.v[ti], &c->fo.fbind.v[slot], r, mb, mbb);
			return 1;
		}
		c->fo.fbind.v[slot].t = FOLD_NEVER;
	}
	if (c->fo.fold)
		c->fo.units_kept++;
	return 0;
}

void sf_release(struct ctx *c)
{
	VEC_FREE(c->fo.folds);
	VEC_FREE(c->fo.fnodes);
	VEC_FREE(c->fo.fedges);
	VEC_FREE(c->fo.fcolls);
	VEC_FREE(c->fo.fmarks);
	VEC_FREE(c->fo.fexts);
	VEC_FREE(c->fo.marks);
	VEC_FREE(c->fo.fkerns);
	VEC_FREE(c->fo.fscr);
	VEC_FREE(c->fo.fsegs);
	VEC_FREE(c->fo.fgates);
	VEC_FREE(c->fo.fside);
	VEC_FREE(c->fo.fbind);
	VEC_FREE(c->fo.fbmap);
	VEC_FREE(c->fo.fkeys);
	VEC_FREE(c->fo.fktab);
	VEC_FREE(c->fo.fpgs);
	VEC_FREE(c->fo.fprole);
	VEC_FREE(c->fo.fcpg);
	VEC_FREE(c->fo.ukey);
	VEC_FREE(c->fo.rec_pgs);
	VEC_FREE(c->fo.seqtab);
	VEC_FREE(c->fo.rec_ids);
	VEC_FREE(c->fo.seen);
	VEC_FREE(c->fo.ftext);
	VEC_FREE(c->fo.fstrs);
	VEC_FREE(c->fo.fseqs);
	um_store_free(&c->fo.fmaps);
	um_store_free(&c->fo.tmaps);
	VEC_FREE(c->fo.mscr);
	VEC_FREE(c->fo.pscr);
	VEC_FREE(c->fo.mrows);
	VEC_FREE(c->fo.mexts);
	VEC_FREE(c->fo.medges);
	VEC_FREE(c->fo.ulog);
	VEC_FREE(c->fo.tails);
}

int sf_carry_in(struct ctx *c, struct synth_tpl *tpl)
{
	struct synth_in key = *c->in;
	uint32_t n_fold = c->fo.n_fold;
	int fold = c->fo.fold;

	key.lay.microbatches = 0;
	c->fo = tpl->fo;
	memset(&tpl->fo, 0, sizeof(tpl->fo));
	if (!tpl->have || tpl->n_fold != n_fold || tpl->n_cpu != c->em.n_cpu ||
	    memcmp(&key, &tpl->key, sizeof(key)) != 0) {
		/* Another input's, or none: start empty, the memory kept. */
		c->fo.folds.n = c->fo.fnodes.n = c->fo.fedges.n = c->fo.fcolls.n = 0;
		c->fo.fmarks.n = c->fo.fexts.n = c->fo.fkerns.n = 0;
		c->fo.ftext.n = c->fo.fstrs.n = c->fo.fseqs.n = 0;
		c->fo.fkeys.n = c->fo.fktab.n = c->fo.fpgs.n = c->fo.fcpg.n = 0;
		c->fo.fprole.n = 0;
		um_store_empty(&c->fo.fmaps);
	}
	tpl->key = key;
	tpl->have = 0;
	/* Every slot met anew (epoch), its binding made again (fbmap); the
	 * build's sequence entries hashed anew. */
	c->fo.fbmap.n = 0;
	c->fo.seqtab.n = 0;
	c->fo.seq_hashed = 0;
	c->fo.n_fold = n_fold;
	c->fo.fold = fold;
	c->fo.epoch++;
	c->fo.kinds = c->fo.carried = 0;
	c->fo.rec = 0;
	c->fo.marks.n = 0;
	c->fo.ulog.n = 0;
	c->fo.tails.n = 0;
	um_store_empty(&c->fo.tmaps);
	c->fo.tasks_folded = 0;
	c->fo.units_folded = c->fo.units_kept = 0;
	c->fo.carry = 1;
	return 0;
}

void sf_carry_out(struct ctx *c, struct synth_tpl *tpl, int ok)
{
	tpl->fo = c->fo;
	memset(&c->fo, 0, sizeof(c->fo));
	tpl->n_fold = tpl->fo.n_fold;
	tpl->n_cpu = c->em.n_cpu;
	tpl->have = ok;
}

int synth_tpl_unit_map(const struct synth_tpl *tpl, uint32_t t, struct synth_unit_map *map)
{
	const struct fold_state *f = &tpl->fo;
	const struct ufold *u;
	if (t >= f->folds.n)
		return -1;
	u = &f->folds.v[t];
	um_get(&f->fmaps, &u->map, u->n_nodes, map);
	return 0;
}

int synth_tpl_tail_map(const struct synth_tpl *tpl, uint32_t i, struct synth_unit_map *map)
{
	const struct fold_state *f = &tpl->fo;
	if (i >= f->tails.n)
		return -1;
	um_get(&f->tmaps, &f->tails.v[i].map, f->tails.v[i].n, map);
	return 0;
}
