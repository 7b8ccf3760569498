/*
 * annotate.c - a rank's steps, phases, passes, microbatches and layers,
 * from prism's own ranges where the trace has them, else from PyTorch's
 * (ProfilerStep#N, autograd's backward ops and threads, nn.Module names)
 * and from repeated op blocks (infer.h).  The second part of the graph
 * builder (build_priv.h); build.c makes the nodes and edges.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_priv.h"
#include "infer.h"
#include "llm.h"
#include "layout.h"

static int64_t step_number(const char *s)
{
	const char *h = strchr(s, '#');
	return h ? strtoll(h + 1, NULL, 10) : -1;
}

/* The latest step (index into iters, from it_lo) starting at or before t,
 * or SIZE_MAX; whether t is inside it is the caller's to check. */
static size_t step_at(const struct builder *b, size_t it_lo, int64_t t)
{
	size_t lo = it_lo, hi = b->w.iters.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->w.iters.v[mid].start_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > it_lo ? lo - 1 : SIZE_MAX;
}

int build_iterations(struct builder *b, struct rank_ctx *rc)
{
	size_t first = b->w.iters.n;

	for (size_t k = 0; k < rc->nkeys; k++) {
		const struct kt_event *e = ev_at(rc, k);
		struct graph_iter it;
		if ((e->kind != KT_USER_ANN && e->kind != KT_CPU_OP) ||
		    strncmp(strtab_get(&b->w.st, e->name), "ProfilerStep#", 13) != 0)
			continue;
		it.rank = rc->rank_ix;
		it.proc = rc->proc_of[e->thread];
		it.step = step_number(strtab_get(&b->w.st, e->name));
		it.start_ns = e->ts_ns;
		it.dur_ns = e->dur_ns;
		if (VEC_PUSH(b->w.iters, it))
			return build_nomem(b);
	}
	/* Host nodes by start; GPU nodes by their launch (none for GPU work
	 * launched before the window: it belongs to an earlier step, whatever
	 * step's host range its start falls in). Steps are sorted. */
	for (uint32_t u = rc->node_base; u < b->w.n_nodes; u++) {
		int64_t t = b->w.start_ns[u];
		size_t i;
		if (b->w.kind[u] >= GN_KERNEL) {
			if (rc->lts[u - rc->node_base] == INT64_MIN) {
				b->w.iter[u] = -1;
				continue;
			}
			t = rc->lts[u - rc->node_base];
		}
		i = step_at(b, first, t);
		b->w.iter[u] =
		    i != SIZE_MAX && t < b->w.iters.v[i].start_ns + b->w.iters.v[i].dur_ns
			? (int32_t)i
			: -1;
	}
	return 0;
}

/* A prism:: range on a host thread. */
struct arange {
	uint32_t proc;
	int64_t start, end;
	int32_t value;
};

static int cmp_arange(const void *pa, const void *pb)
{
	const struct arange *a = pa, *b = pb;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	return (a->start > b->start) - (a->start < b->start);
}

/* The value of the range of r[0..n) (sorted) holding time t on proc, or -1
 * (ranges of one kind on one thread follow each other; the latest one
 * starting at or before t decides). */
static int32_t arange_at(const struct arange *r, size_t n, uint32_t proc, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r[mid].proc < proc || (r[mid].proc == proc && r[mid].start <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || r[lo - 1].proc != proc || t >= r[lo - 1].end)
		return -1;
	return r[lo - 1].value;
}

/* A host op, as layer inference sees it (infer.h). */
struct hop {
	int64_t start, end;
	int64_t seq, fwd; /* autograd sequence number; "Fwd thread id" (> 0: backward) */
	uint32_t proc, key;
	uint8_t top;	  /* not nested in another op of its thread */
	uint8_t launches; /* launched GPU work */
};

/* What two ops must share to count as the same op: name and input shapes. */
static uint32_t op_key(uint32_t name, uint32_t dims)
{
	return (uint32_t)((((uint64_t)name << 32 | dims) * 0x9E3779B97F4A7C15ull) >> 32);
}

/* The phase PyTorch's own names give a range: optimizer and zero_grad
 * record_functions, DDP's forward, the "## ... ##" markers of common
 * trainers; PH_NONE for any other. */
static int pytorch_phase(const char *name)
{
	if (strncmp(name, "Optimizer.step#", 15) == 0 ||
	    strncmp(name, "Optimizer.zero_grad#", 20) == 0 ||
	    strcmp(name, "## optimizer ##") == 0 || strcmp(name, "## zero_grad ##") == 0)
		return PH_OPTIMIZER;
	if (strcmp(name, "## backward ##") == 0)
		return PH_BACKWARD;
	if (strcmp(name, "## forward ##") == 0 ||
	    strcmp(name, "DistributedDataParallel.forward") == 0)
		return PH_FORWARD;
	return PH_NONE;
}

static int is_backward_op(const struct builder *b, const struct hop *o, uint32_t name)
{
	return o->fwd > 0 ||
	       strncmp(strtab_get(&b->w.st, name), "autograd::engine::evaluate_function:", 36) == 0;
}

typedef VEC(struct arange) arange_vec;

static int push_range(struct builder *b, arange_vec *v, uint32_t proc, int64_t start, int64_t end,
		      int32_t value)
{
	struct arange x = {proc, start, end, value};
	if (proc != NONE32 && value >= 0 && end > start && VEC_PUSH(*v, x))
		return build_nomem(b);
	return 0;
}

/* The phase at time t on proc: optimizer over backward over forward. */
static int phase_at(arange_vec *ph, uint32_t proc, int64_t t)
{
	static const int prio[] = {PH_OPTIMIZER, PH_BACKWARD, PH_FORWARD};
	for (int i = 0; i < 3; i++)
		if (ph[prio[i]].n && arange_at(ph[prio[i]].v, ph[prio[i]].n, proc, t) >= 0)
			return prio[i];
	return PH_NONE;
}

static int cmp_arange_start(const void *pa, const void *pb)
{
	const struct arange *a = pa, *b = pb;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->proc > b->proc) - (a->proc < b->proc);
}

/*
 * Backward passes where a trace marks no phases.  ph[PH_BACKWARD] holds one
 * range per top-level backward op; a step's ops (on any thread), in start
 * order, open a new pass when forward work -- a top-level op on the step's
 * thread that launches GPU work and is not a backward op -- began since
 * the pass's ops ended.  A pass's ops on one thread become one backward
 * range (the CPU work between them is backward work too).  Where the trace
 * marks no forward, microbatch k's forward is the step's thread from the
 * step's start, or pass k-1's end, to pass k's first op.  A step with two
 * or more passes accumulates gradients: pass k and its forward are
 * microbatch k, into mb if it is not NULL.
 */
static int find_passes(struct builder *b, size_t it_lo, const struct hop *ops, size_t nops,
		       const uint32_t *opname, arange_vec *ph, arange_vec *mb)
{
	struct pass {
		size_t step, lo, hi; /* hi - lo: its ranges in nb */
		int32_t k;
		int64_t start, end;
	};
	arange_vec *bw = &ph[PH_BACKWARD], nb = {0};
	VEC(struct pass) ps = {0};
	VEC(int64_t) fs = {0};
	int fwd_marked = ph[PH_FORWARD].n > 0, rc_ = 0;

	if (!bw->n)
		return 0;
	qsort(bw->v, bw->n, sizeof(*bw->v), cmp_arange_start);
	for (size_t k = 0; k < nops && !rc_; k++) {
		size_t i = step_at(b, it_lo, ops[k].start);
		if (ops[k].top && ops[k].launches && i != SIZE_MAX &&
		    ops[k].proc == b->w.iters.v[i].proc && !is_backward_op(b, &ops[k], opname[k]) &&
		    VEC_PUSH(fs, ops[k].start))
			rc_ = build_nomem(b);
	}
	if (fs.n)
		qsort(fs.v, fs.n, sizeof(*fs.v), prism_cmp_i64);
	for (size_t x = 0; x < bw->n && !rc_; x++) {
		const struct arange *o = &bw->v[x];
		struct pass *cur = ps.n ? &ps.v[ps.n - 1] : NULL;
		size_t i = step_at(b, it_lo, o->start), r, lo = 0, hi = fs.n;
		while (cur && lo < hi) { /* first forward start after the pass's end */
			size_t mid = lo + (hi - lo) / 2;
			if (fs.v[mid] <= cur->end)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!cur || i != cur->step || (lo < fs.n && fs.v[lo] < o->start)) {
			struct pass np = {i,	    nb.n,
					  nb.n,	    cur && cur->step == i ? cur->k + 1 : 0,
					  o->start, o->end};
			if (VEC_PUSH(ps, np)) {
				rc_ = build_nomem(b);
				break;
			}
			cur = &ps.v[ps.n - 1];
		}
		if (o->end > cur->end)
			cur->end = o->end;
		for (r = cur->lo; r < nb.n && nb.v[r].proc != o->proc; r++)
			;
		if (r < nb.n)
			nb.v[r].end = o->end > nb.v[r].end ? o->end : nb.v[r].end;
		else if (VEC_PUSH(nb, *o))
			rc_ = build_nomem(b);
		cur->hi = nb.n;
	}
	for (size_t q = 0; q < ps.n && !rc_; q++) {
		const struct pass *p = &ps.v[q];
		const struct graph_iter *it;
		int64_t from;
		int many;
		if (p->step == SIZE_MAX)
			continue;
		it = &b->w.iters.v[p->step];
		from = p->k == 0 ? it->start_ns : ps.v[q - 1].end;
		many = p->k > 0 || (q + 1 < ps.n && ps.v[q + 1].step == p->step);
		if (!fwd_marked &&
		    push_range(b, &ph[PH_FORWARD], it->proc, from, p->start, PH_FORWARD))
			rc_ = -1;
		if (!mb || !many)
			continue;
		if (push_range(b, mb, it->proc, from, p->start, p->k))
			rc_ = -1;
		for (size_t r = p->lo; r < p->hi && !rc_; r++)
			if (push_range(b, mb, nb.v[r].proc, nb.v[r].start, nb.v[r].end, p->k))
				rc_ = -1;
	}
	free(bw->v);
	*bw = nb;
	free(ps.v);
	free(fs.v);
	return rc_;
}

/* The blocks found among the ops at[0..n) (their keys in seq, names in
 * names): block l spans from its first op to the next block's, on the
 * ops' thread, into layers; every forward op inside it, nested ones
 * included, gives its autograd sequence number to layer l (by_seq). */
static int layers_of_run(struct builder *b, const struct hop *ops, size_t nops, const uint32_t *at,
			 const uint32_t *seq, const uint32_t *names, size_t n, arange_vec *layers,
			 struct imap *by_seq, int64_t *period)
{
	struct infer_repeat r;

	if (infer_repeat(seq, names, n, &r))
		return build_nomem(b);
	if (r.count < 2)
		return 0;
	*period = (int64_t)r.period;
	for (size_t l = 0; l < r.count; l++) {
		const struct hop *o = &ops[at[r.first + l * r.period]];
		int64_t end = l + 1 < r.count ? ops[at[r.first + (l + 1) * r.period]].start
					      : ops[at[r.first + r.count * r.period - 1]].end;
		if (push_range(b, layers, o->proc, o->start, end, (int32_t)l))
			return -1;
		for (size_t q = at[r.first + l * r.period]; q < nops; q++) {
			if (ops[q].proc != o->proc || ops[q].start >= end)
				break;
			if (ops[q].seq >= 0 && ops[q].fwd <= 0 &&
			    imap_put(by_seq, ops[q].seq, (uint32_t)l, NULL))
				return build_nomem(b);
		}
	}
	return 0;
}

/* Backward ops take the layer of the forward op with their autograd
 * sequence number (by_seq); consecutive backward ops of one layer on one
 * thread form one range, appended to layers. */
static int backward_layers(struct builder *b, const struct hop *ops, size_t nops,
			   const uint32_t *opname, const struct imap *by_seq, arange_vec *layers)
{
	arange_vec bw = {0};
	int rc_ = 0;

	for (size_t k = 0; k < nops && !rc_; k++) {
		const struct hop *o = &ops[k];
		uint32_t l;
		if (!o->top || o->seq < 0 || !is_backward_op(b, o, opname[k]) ||
		    (l = imap_get(by_seq, o->seq)) == IMAP_NONE)
			continue;
		if (bw.n && bw.v[bw.n - 1].proc == o->proc && bw.v[bw.n - 1].value == (int32_t)l &&
		    bw.v[bw.n - 1].end <= o->start) {
			bw.v[bw.n - 1].end = o->end;
			continue;
		}
		if (push_range(b, &bw, o->proc, o->start, o->end, (int32_t)l))
			rc_ = -1;
	}
	for (size_t k = 0; k < bw.n && !rc_; k++)
		if (VEC_PUSH(*layers, bw.v[k]))
			rc_ = build_nomem(b);
	free(bw.v);
	return rc_;
}

/*
 * Layers where a trace marks none (infer.h): per step and microbatch (mbs,
 * sorted; empty if none), the longest run of repeated blocks among the
 * forward phase's top-level ops that launch GPU work, on the step's
 * thread.  Backward ops take the layer of the forward op with their
 * autograd sequence number; consecutive backward ops of one layer on one
 * thread form one range.  ops[] is grouped by processor, in start order.
 */
static int find_layers(struct builder *b, size_t it_lo, const struct hop *ops, size_t nops,
		       const uint32_t *opname, arange_vec *ph, const arange_vec *mbs,
		       arange_vec *layers, int64_t *period)
{
	struct run {
		uint32_t proc;
		size_t lo, hi;
	} *runs = prism_malloc((nops ? nops : 1) * sizeof(*runs));
	size_t nruns = 0;
	VEC(uint32_t) seq = {0};
	VEC(uint32_t) names = {0};
	VEC(uint32_t) at = {0};
	struct imap by_seq = {0};
	int rc_ = 0;

	if (!runs)
		return build_nomem(b);
	/* ops[] holds each thread's ops together: one run per thread. */
	for (size_t k = 0; k < nops; k++) {
		if (nruns && runs[nruns - 1].proc == ops[k].proc) {
			runs[nruns - 1].hi = k + 1;
			continue;
		}
		runs[nruns].proc = ops[k].proc;
		runs[nruns].lo = k;
		runs[nruns++].hi = k + 1;
	}
	for (size_t i = it_lo; !rc_ && i < b->w.iters.n; i++) {
		const struct graph_iter *it = &b->w.iters.v[i];
		size_t k = 0, hi = 0;
		int32_t cur_mb = -1;
		seq.n = names.n = at.n = 0;
		/* The step's thread's ops (contiguous, by start) from its start. */
		for (size_t t = 0; t < nruns; t++)
			if (runs[t].proc == it->proc) {
				size_t lo = runs[t].lo;
				hi = runs[t].hi;
				while (lo < hi) {
					size_t mid = lo + (hi - lo) / 2;
					if (ops[mid].start < it->start_ns)
						lo = mid + 1;
					else
						hi = mid;
				}
				k = lo;
				hi = runs[t].hi;
				break;
			}
		for (; k <= hi && !rc_; k++) {
			const struct hop *o = k < hi ? &ops[k] : NULL;
			int32_t m;
			if (o && o->start >= it->start_ns + it->dur_ns)
				o = NULL;
			if (o && (!o->top || !o->launches ||
				  phase_at(ph, o->proc, o->start) != PH_FORWARD))
				continue;
			m = o && mbs->n ? arange_at(mbs->v, mbs->n, o->proc, o->start) : -1;
			if (seq.n && (!o || m != cur_mb)) { /* a microbatch's forward ends */
				rc_ = layers_of_run(b, ops, nops, at.v, seq.v, names.v, seq.n,
						    layers, &by_seq, period);
				seq.n = names.n = at.n = 0;
			}
			if (!o)
				break;
			cur_mb = m;
			if (!rc_ && (VEC_PUSH(seq, o->key) || VEC_PUSH(names, opname[k]) ||
				     VEC_PUSH(at, (uint32_t)k)))
				rc_ = build_nomem(b);
		}
	}
	if (!rc_)
		rc_ = backward_layers(b, ops, nops, opname, &by_seq, layers);
	free(runs);
	free(seq.v);
	free(names.v);
	free(at.v);
	imap_release(&by_seq);
	return rc_;
}

/* The module-name prefix of python_function events (with_modules=True). */
#define MODULE_PREFIX "nn.Module: "

/*
 * Layers from module names, where a trace has them (profile(with_stack=True,
 * with_modules=True) names each module call "nn.Module: Class_N", N the
 * class's instance in order of first call): the class ending in Layer or
 * Block with the most instances -- LlamaDecoderLayer, GPT2Block,
 * TransformerLayer (Megatron core), TransformerBlock (torchtitan),
 * DeepSpeedTransformerLayer, BertLayer -- is the layer; a call of instance
 * N is layer N (a recomputed forward inside the backward too), and
 * backward ops take the layer of their forward op's autograd sequence
 * number as with inferred layers.  mods: every such call, value = instance;
 * cls: its class name's string id, in step.  ops[] is grouped by processor.
 */
static int module_layers(struct builder *b, const struct hop *ops, size_t nops,
			 const uint32_t *opname, const struct arange *mods, const uint32_t *cls,
			 size_t nmods, arange_vec *layers)
{
	struct cls_n {
		uint32_t cls, n; /* instances: the largest N + 1 */
		int64_t ns;	 /* the calls' time: an outer class's is longer */
	} *cs = prism_malloc((nmods ? nmods : 1) * sizeof(*cs));
	struct imap by_seq = {0}, by_cls = {0};
	size_t ncs = 0;
	uint32_t best = NONE32, best_n = 0;
	int64_t best_ns = 0;
	int rc_ = 0;

	if (!cs)
		return build_nomem(b);
	/* The class with the most instances; of two, the one around the other.
	 * Classes found by a hash table, not a scan (a trace may name 10^6). */
	for (size_t k = 0; k < nmods; k++) {
		uint32_t c = imap_get(&by_cls, cls[k]);
		if (c == IMAP_NONE) {
			c = (uint32_t)ncs;
			if (imap_put(&by_cls, cls[k], c, NULL)) {
				imap_release(&by_cls);
				free(cs);
				return build_nomem(b);
			}
			cs[ncs++] = (struct cls_n){cls[k], 0, 0};
		}
		if ((uint32_t)mods[k].value + 1 > cs[c].n)
			cs[c].n = (uint32_t)mods[k].value + 1;
		cs[c].ns = prism_add_sat(cs[c].ns, mods[k].end - mods[k].start);
	}
	imap_release(&by_cls);
	for (size_t c = 0; c < ncs; c++)
		if (cs[c].n > best_n || (cs[c].n == best_n && cs[c].ns > best_ns)) {
			best = cs[c].cls;
			best_n = cs[c].n;
			best_ns = cs[c].ns;
		}
	free(cs);
	if (best_n < 2)
		return 0;
	for (size_t k = 0; k < nmods && !rc_; k++)
		if (cls[k] == best && VEC_PUSH(*layers, mods[k]))
			rc_ = build_nomem(b);
	if (rc_ || !layers->n)
		return rc_;
	qsort(layers->v, layers->n, sizeof(*layers->v), cmp_arange);
	for (size_t q = 0; q < nops && !rc_; q++) {
		int32_t l;
		if (ops[q].seq < 0 || ops[q].fwd > 0 || is_backward_op(b, &ops[q], opname[q]) ||
		    (l = arange_at(layers->v, layers->n, ops[q].proc, ops[q].start)) < 0)
			continue;
		if (imap_get(&by_seq, ops[q].seq) == IMAP_NONE &&
		    imap_put(&by_seq, ops[q].seq, (uint32_t)l, NULL))
			rc_ = build_nomem(b);
	}
	if (!rc_)
		rc_ = backward_layers(b, ops, nops, opname, &by_seq, layers);
	imap_release(&by_seq);
	return rc_;
}

/*
 * Layer, phase and microbatch of every node: from the trace's prism:: ranges
 * (graph.h) where it has them, else phases from PyTorch's own ranges and
 * backward ops, and layers by inference (find_layers).  Host tasks take
 * the value at their start, GPU work its launch call's.
 */
/* What build_annotations gathers from a rank's events before assigning
 * each node its layer, microbatch and phase. */
enum { A_LAYER, A_MB, A_N };
struct ann {
	arange_vec r[A_N];	   /* prism::layer# / prism::microbatch# ranges */
	arange_vec ph[PH_NPHASES]; /* prism::phase# ranges */
	arange_vec pt[PH_NPHASES]; /* PyTorch's (record_function, backward ops) */
	arange_vec mods;	   /* nn.Module ranges of *Layer / *Block classes */
	VEC(struct hop) ops;
	VEC(uint32_t) opname;
	VEC(uint32_t) mod_cls; /* each module range's class (FNV-1a of its name) */
	int have_ph;
};

static void ann_free(struct ann *a)
{
	for (int k = 0; k < A_N; k++)
		free(a->r[k].v);
	for (int p = 0; p < PH_NPHASES; p++) {
		free(a->ph[p].v);
		free(a->pt[p].v);
	}
	free(a->ops.v);
	free(a->opname.v);
	free(a->mods.v);
	free(a->mod_cls.v);
}

/* A Python function event: an "nn.Module: Class_N" range whose Class ends
 * in Layer or Block is kept as module N of its class. */
static int ann_module(struct builder *b, struct ann *a, const struct kt_event *e, uint32_t proc)
{
	const char *name = strtab_get(&b->w.st, e->name), *c, *u;
	size_t cl;
	uint32_t id = 2166136261u; /* the class name's FNV-1a hash */
	if (strncmp(name, MODULE_PREFIX, sizeof(MODULE_PREFIX) - 1) != 0)
		return 0;
	c = name + sizeof(MODULE_PREFIX) - 1;
	u = strrchr(c, '_');
	cl = u ? (size_t)(u - c) : 0;
	if (!u || !u[1] || strlen(u + 1) > 6 || strspn(u + 1, "0123456789") != strlen(u + 1) ||
	    !((cl >= 5 && memcmp(u - 5, "Layer", 5) == 0) ||
	      (cl >= 5 && memcmp(u - 5, "Block", 5) == 0)))
		return 0;
	for (size_t i = 0; i < cl; i++)
		id = (id ^ (uint8_t)c[i]) * 16777619u;
	if (push_range(b, &a->mods, proc, e->ts_ns, e->ts_ns + e->dur_ns,
		       (int32_t)strtol(u + 1, NULL, 10)))
		return -1;
	if (a->mods.n > a->mod_cls.n && VEC_PUSH(a->mod_cls, id))
		return build_nomem(b);
	return 0;
}

/* One of prism's own ranges (name "prism::..."): the model's meta, a
 * phase, a layer or a microbatch. */
static int ann_prism(struct builder *b, struct rank_ctx *rc, struct ann *a,
		     const struct kt_event *e, uint32_t proc, const char *name)
{
	static const char *const prefix[A_N] = {"prism::layer#", "prism::microbatch#"};
	static const long ann_max[A_N] = {LLM_MAX_LAYERS, LAYOUT_MAX_MICRO};
	if (strncmp(name, "prism::model#", 13) == 0 && !b->w.meta)
		b->w.meta = e->name;
	if (strncmp(name, "prism::phase#", 13) == 0) {
		int p = graph_phase_parse(name + 13);
		a->have_ph = 1;
		if (p != PH_NONE &&
		    push_range(b, &a->ph[p], proc, e->ts_ns, e->ts_ns + e->dur_ns, p))
			return -1;
	}
	for (int k = 0; k < A_N; k++) {
		size_t pl = strlen(prefix[k]);
		long v;
		if (strncmp(name, prefix[k], pl) != 0)
			continue;
		/* Layers and microbatches are counted in int: held to the limits
		 * every model and layout has. */
		v = strtol(name + pl, NULL, 10);
		if (v < 0 || v >= ann_max[k])
			return build_fail_ev(b, rc, e, "%s %ld out of range 0..%ld",
					     k == A_LAYER ? "layer" : "microbatch", v,
					     ann_max[k] - 1);
		if (push_range(b, &a->r[k], proc, e->ts_ns, e->ts_ns + e->dur_ns, (int32_t)v))
			return -1;
	}
	return 0;
}

/* One pass over the rank's events: ranges of every kind and the host ops
 * (top-level ones marked, and whether they launched GPU work). */
static int ann_collect(struct builder *b, struct rank_ctx *rc, struct ann *a)
{
	uint32_t cur_thread = NONE32;
	size_t cur_top = SIZE_MAX;
	int64_t top_end = INT64_MIN;
	int rc_ = 0;

	for (size_t k = 0; k < rc->nkeys && !rc_; k++) {
		const struct kt_event *e = ev_at(rc, k);
		uint32_t proc = rc->proc_of[e->thread];
		const char *name;
		struct hop o;
		if (e->thread != cur_thread) {
			cur_thread = e->thread;
			cur_top = SIZE_MAX;
			top_end = INT64_MIN;
		}
		if (e->kind == KT_RUNTIME) {
			int c = build_rt_class(b, e->name);
			if (cur_top != SIZE_MAX && e->ts_ns < top_end &&
			    (c == RT_LAUNCH || c == RT_GRAPH_LAUNCH || c == RT_MEMCPY ||
			     c == RT_MEMCPY_SYNC || c == RT_MEMSET))
				a->ops.v[cur_top].launches = 1;
			continue;
		}
		if (e->kind == KT_PY_FUNC) {
			rc_ = ann_module(b, a, e, proc);
			continue;
		}
		if (e->kind != KT_USER_ANN && e->kind != KT_CPU_OP)
			continue;
		name = strtab_get(&b->w.st, e->name);
		if (strncmp(name, "prism::", 7) == 0) {
			rc_ = ann_prism(b, rc, a, e, proc, name);
			continue;
		}
		if (e->kind == KT_USER_ANN || strchr(name, '#')) {
			/* record_function ranges (ProfilerStep#N, Optimizer.step#...). */
			int p = pytorch_phase(name);
			if (p != PH_NONE &&
			    push_range(b, &a->pt[p], proc, e->ts_ns, e->ts_ns + e->dur_ns, p))
				rc_ = -1;
			continue;
		}
		o.start = e->ts_ns;
		o.end = e->ts_ns + e->dur_ns;
		o.seq = e->a;
		o.fwd = e->b;
		o.proc = proc;
		o.key = op_key(e->name, e->dims);
		o.top = e->ts_ns >= top_end;
		o.launches = 0;
		if (o.top) {
			top_end = o.end;
			cur_top = a->ops.n;
			if (is_backward_op(b, &o, e->name) &&
			    push_range(b, &a->pt[PH_BACKWARD], proc, o.start, o.end, PH_BACKWARD))
				rc_ = -1;
		}
		if (proc != NONE32 && (VEC_PUSH(a->ops, o) || VEC_PUSH(a->opname, e->name)))
			rc_ = build_nomem(b);
		if (proc == NONE32 && o.top)
			cur_top = SIZE_MAX;
	}
	return rc_;
}

/* Phases and layers the trace does not mark, inferred: phases from
 * PyTorch's ranges and backward passes (find_passes), layers from module
 * ranges (module_layers) or repeated op blocks (find_layers); the ranges
 * sorted for arange_at.  have_mb: the trace marked its microbatches. */
static int ann_infer(struct builder *b, size_t it_lo, struct ann *a, int have_mb)
{
	int64_t period = 0;
	int rc_ = 0;
	if (!a->have_ph) {
		/* No prism:: phases: PyTorch's, backward passes and the forward
		 * (if unmarked) and microbatches (if unmarked) from backward ops. */
		for (int p = 0; p < PH_NPHASES; p++) {
			arange_vec t = a->ph[p];
			a->ph[p] = a->pt[p];
			a->pt[p] = t;
		}
		rc_ = find_passes(b, it_lo, a->ops.v, a->ops.n, a->opname.v, a->ph,
				  a->r[A_MB].n ? NULL : &a->r[A_MB]);
		for (int p = 0; p < PH_NPHASES; p++)
			if (a->ph[p].n)
				b->w.stats.ann_found[GRAPH_ANN_PHASE] |= GRAPH_ANN_INFERRED;
		if (!rc_ && !have_mb && a->r[A_MB].n)
			b->w.stats.ann_found[GRAPH_ANN_MB] |= GRAPH_ANN_INFERRED;
	} else {
		b->w.stats.ann_found[GRAPH_ANN_PHASE] |= GRAPH_ANN_RANGES;
	}
	for (int p = 0; p < PH_NPHASES && !rc_; p++)
		if (a->ph[p].n)
			qsort(a->ph[p].v, a->ph[p].n, sizeof(*a->ph[p].v), cmp_arange);
	if (!rc_ && a->r[A_LAYER].n)
		b->w.stats.ann_found[GRAPH_ANN_LAYER] |= GRAPH_ANN_RANGES;
	else if (!rc_ && b->o->infer_layers && a->mods.n &&
		 !(rc_ = module_layers(b, a->ops.v, a->ops.n, a->opname.v, a->mods.v, a->mod_cls.v,
				       a->mods.n, &a->r[A_LAYER])) &&
		 a->r[A_LAYER].n)
		b->w.stats.ann_found[GRAPH_ANN_LAYER] |= GRAPH_ANN_INFERRED | GRAPH_ANN_MODULES;
	else if (!rc_ && b->o->infer_layers) {
		if (a->r[A_MB].n)
			qsort(a->r[A_MB].v, a->r[A_MB].n, sizeof(*a->r[A_MB].v), cmp_arange);
		rc_ = find_layers(b, it_lo, a->ops.v, a->ops.n, a->opname.v, a->ph, &a->r[A_MB],
				  &a->r[A_LAYER], &period);
		if (!rc_ && a->r[A_LAYER].n) {
			b->w.stats.ann_found[GRAPH_ANN_LAYER] |= GRAPH_ANN_INFERRED;
			b->w.stats.layer_ops = (uint64_t)period;
		}
	}
	if (!rc_ && have_mb)
		b->w.stats.ann_found[GRAPH_ANN_MB] |= GRAPH_ANN_RANGES;
	for (int k = 0; k < A_N && !rc_; k++)
		if (a->r[k].n)
			qsort(a->r[k].v, a->r[k].n, sizeof(*a->r[k].v), cmp_arange);
	return rc_;
}

/* Each host task its layer, microbatch and phase from the ranges at its
 * start; each GPU task its launching call's. */
static void ann_assign(struct builder *b, struct rank_ctx *rc, struct ann *a)
{
	const arange_vec *ly = &a->r[A_LAYER], *mb = &a->r[A_MB];
	for (uint32_t u = rc->node_base; u < b->w.n_nodes; u++) {
		if (b->w.kind[u] >= GN_KERNEL)
			continue;
		b->w.layer[u] =
		    ly->n ? arange_at(ly->v, ly->n, b->w.proc[u], b->w.start_ns[u]) : -1;
		b->w.mb[u] = mb->n ? arange_at(mb->v, mb->n, b->w.proc[u], b->w.start_ns[u]) : -1;
		b->w.phase[u] = (uint8_t)phase_at(a->ph, b->w.proc[u], b->w.start_ns[u]);
		/* A thread without ranges of its own at that time (the autograd
		 * thread, when the ranges are on the training loop's thread)
		 * works for the step's thread: its phase and microbatch. */
		if (b->w.iter[u] >= 0 && b->w.iters.v[b->w.iter[u]].proc != NONE32 &&
		    b->w.iters.v[b->w.iter[u]].proc != b->w.proc[u]) {
			uint32_t sp = b->w.iters.v[b->w.iter[u]].proc;
			if (b->w.phase[u] == PH_NONE)
				b->w.phase[u] = (uint8_t)phase_at(a->ph, sp, b->w.start_ns[u]);
			if (b->w.mb[u] < 0 && mb->n)
				b->w.mb[u] = arange_at(mb->v, mb->n, sp, b->w.start_ns[u]);
		}
	}
	for (uint32_t u = rc->node_base; u < b->w.n_nodes; u++) {
		uint32_t call;
		if (b->w.kind[u] < GN_KERNEL)
			continue;
		call = b->w.corr[u] >= 0 ? imap_get(&rc->rt_by_corr, b->w.corr[u]) : NONE32;
		b->w.layer[u] = call != NONE32 ? b->w.layer[call] : -1;
		b->w.phase[u] = call != NONE32 ? b->w.phase[call] : PH_NONE;
		b->w.mb[u] = call != NONE32 ? b->w.mb[call] : -1;
	}
}

int build_annotations(struct builder *b, struct rank_ctx *rc, size_t it_lo)
{
	struct ann a;
	int rc_, have_mb;

	memset(&a, 0, sizeof(a));
	rc_ = ann_collect(b, rc, &a);
	have_mb = a.r[A_MB].n > 0;
	if (!rc_)
		rc_ = ann_infer(b, it_lo, &a, have_mb);
	if (!rc_)
		ann_assign(b, rc, &a);
	ann_free(&a);
	return rc_ < 0 ? b->err->code : rc_;
}
