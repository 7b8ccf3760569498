/* pipeline.c - a one-stage run split into pipeline stages (pipeline.h). */
#include "pipeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imap.h"
#include "mem.h"
#include "vec.h"

#define NONE32 UINT32_MAX
#define ADDED  0x80000000u /* a ref to an added task */

enum { ST_SENDF, ST_RECVF, ST_SENDB, ST_RECVB, ST_N };
static const int64_t new_stream_tid[ST_N] = {21, 22, 23, 24};

/* An added task: a transfer's host calls or its kernel. */
struct an {
	uint32_t proc;
	uint8_t kind, rtclass, phase;
	int64_t dur, lag, corr;
	uint32_t name, op;
	int32_t iter, mb;
	int has_coll;
	struct graph_coll coll;
};

/* What a unit needs for its transfers on one stage. */
struct uinfo {
	uint32_t host;	      /* base proc launching its first compute kernel */
	uint32_t first, last; /* its first and last compute-stream kernels */
};

struct pe {
	uint32_t src, dst; /* refs: (base node, stage) packed, or ADDED | index */
	uint8_t kind;
};

struct ps {
	const struct graph *g;
	const struct pipeline_plan *p;
	struct prism_err *err;
	int pp, L;
	int8_t *a;    /* per base node: its stage, or -1: every stage */
	int32_t *mbv; /* microbatch, 0 for a trace without labels */
	uint8_t *ph;  /* phase; a microbatch's task without one takes the
			  * pass of the microbatch's task before it on its
			  * processor (or after it) */
	uint32_t *in_off, *in_src;
	uint32_t n_new_procs, procs_per_rank_base;
	uint32_t *rank_first_proc; /* per base rank: its first new processor */
	uint32_t *base_proc;	   /* per new processor: its base one, or NONE32 */
	uint32_t compute[1024];	   /* per base rank: its compute stream */
	struct imap units;	   /* (step, mb, pass, stage) -> uinfo index */
	VEC(struct uinfo) uis;
	uint32_t *rank_nprocs;
	uint32_t *proc_index; /* base proc -> index among its rank's procs */
	VEC(struct an) added;
	VEC(struct pe) edges;
	/* Per new processor: its refs in order. */
	VEC(uint32_t) * seq;
	uint32_t *seq_stage_u; /* unused */
	uint32_t n_cpu, n_launch, n_rec, n_wait, n_send, n_recv, n_dtype, n_empty, n_ranks2;
	int64_t corr;
	struct pipeline_stats *st;
};

/* A task of a step's units, keyed by the unit it follows: its
 * microbatch x 2 + (backward). */
struct byu {
	int64_t key;
	uint32_t w;
};

static int cmp_byu(const void *a, const void *b)
{
	const struct byu *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->w > y->w) - (x->w < y->w);
}

static int oom(struct ps *s)
{
	return prism_err_set(s->err, PRISM_ENOMEM, "pipeline: out of memory");
}

/* A copy of base node u on stage k, as a ref. */
static uint32_t ref_of(const struct ps *s, uint32_t u, int k)
{
	return u * (uint32_t)s->pp + (uint32_t)k;
}

static int in_stage(const struct ps *s, uint32_t u, int k)
{
	return s->a[u] < 0 || s->a[u] == k;
}

/* The first new processor of rank r's stage k: ranks in order, each
 * stage its copies of the rank's processors, then its four transfer
 * streams. */
static uint32_t stage_first(const struct ps *s, uint32_t r, int k)
{
	return s->rank_first_proc[r] + (uint32_t)k * (s->rank_nprocs[r] + ST_N);
}

/* The new processor of base processor q on stage k. */
static uint32_t new_proc(const struct ps *s, uint32_t q, int k)
{
	return stage_first(s, s->g->procs[q].rank, k) + s->proc_index[q];
}

static uint32_t new_stream(const struct ps *s, uint32_t r, int k, int which)
{
	return stage_first(s, r, k) + s->rank_nprocs[r] + (uint32_t)which;
}

static int is_unit(const struct ps *s, uint32_t u)
{
	const struct graph *g = s->g;
	return g->iter[u] >= 0 && s->mbv[u] >= 0 &&
	       (s->ph[u] == PH_FORWARD || s->ph[u] == PH_BACKWARD);
}

static int stage_of_layer(const struct ps *s, int32_t l)
{
	int k = (int)((int64_t)l * s->pp / s->L);
	return k < s->pp ? k : s->pp - 1;
}

static uint32_t launcher(const struct ps *s, uint32_t v)
{
	const struct graph *g = s->g;
	for (uint32_t e = s->in_off[v]; e < s->in_off[v + 1]; e++) {
		uint32_t w = s->in_src[e];
		for (uint32_t k = g->out_off[w]; k < g->out_off[w + 1]; k++)
			if (g->out_dst[k] == v && GE_KIND(g->out_kind[k]) == GE_LAUNCH)
				return w;
	}
	return NONE32;
}

/* Each task's stage (pipeline.h). */
static void assign(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t q = 0; q < g->n_procs; q++) {
		const struct graph_proc *pr = &g->procs[q];
		int32_t cur_it = -2, cur_mb = -2;
		int cur_ph = -1, cur = -1;
		if (pr->gpu)
			continue;
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++) {
			if (!is_unit(s, u)) {
				s->a[u] = (int8_t)(g->phase[u] == PH_OPTIMIZER && g->layer[u] >= 0
						       ? stage_of_layer(s, g->layer[u])
						       : -1);
				continue;
			}
			if (g->iter[u] != cur_it || s->mbv[u] != cur_mb || s->ph[u] != cur_ph) {
				cur_it = g->iter[u];
				cur_mb = s->mbv[u];
				cur_ph = s->ph[u];
				cur = -1;
			}
			if (g->layer[u] >= 0)
				cur = stage_of_layer(s, g->layer[u]);
			s->a[u] = (int8_t)(cur >= 0 ? cur : s->ph[u] == PH_FORWARD ? 0 : s->pp - 1);
		}
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		uint32_t c;
		if (!g->procs[g->proc[u]].gpu)
			continue;
		c = launcher(s, u);
		if (c != NONE32)
			s->a[u] = s->a[c];
		else if (g->layer[u] >= 0 && (is_unit(s, u) || g->phase[u] == PH_OPTIMIZER))
			s->a[u] = (int8_t)stage_of_layer(s, g->layer[u]);
		else if (is_unit(s, u))
			s->a[u] = (int8_t)(s->ph[u] == PH_FORWARD ? 0 : s->pp - 1);
		else
			s->a[u] = -1;
	}
}

static int push_edge(struct ps *s, uint32_t src, uint32_t dst, uint8_t kind)
{
	struct pe e = {src, dst, kind};
	return VEC_PUSH(s->edges, e) ? oom(s) : 0;
}

static int add_task(struct ps *s, const struct an *a, uint32_t *ref)
{
	if (VEC_PUSH(s->added, *a))
		return oom(s);
	*ref = ADDED | (uint32_t)(s->added.n - 1);
	return VEC_PUSH(s->seq[a->proc], *ref) ? oom(s) : 0;
}

/* A unit: (step, microbatch, pass); its transfers on stage k. */
static int transfer(struct ps *s, uint32_t r, int k, int32_t it, int32_t mb, int fwd,
		    const struct uinfo *ui, int recv)
{
	const struct pipeline_plan *p = s->p;
	uint32_t host = new_proc(s, ui->host, k), call, kern, ref;
	int from = recv ? (fwd ? k - 1 : k + 1) : k;
	int which = fwd ? (recv ? ST_RECVF : ST_SENDF) : (recv ? ST_RECVB : ST_SENDB);
	struct an a;
	char pg[64];
	uint32_t pgid;
	int rc;

	snprintf(pg, sizeof(pg), "r%u.pp.%s.%d", r, fwd ? "f" : "b", from);
	if (strtab_intern((struct strtab *)&s->g->st, pg, strlen(pg), &pgid))
		return oom(s);
	memset(&a, 0, sizeof(a));
	a.proc = host;
	a.iter = it;
	a.mb = mb;
	a.phase = (uint8_t)(fwd ? PH_FORWARD : PH_BACKWARD);
	a.corr = -1;
	a.op = s->n_empty;
	if (!recv) {
		/* The transfer stream waits for the unit's last kernel. */
		a.kind = GN_RUNTIME;
		a.rtclass = RT_EVENT_RECORD;
		a.dur = p->event_ns;
		a.name = s->n_rec;
		if ((rc = add_task(s, &a, &ref)))
			return rc;
		a.rtclass = RT_STREAM_WAIT;
		a.name = s->n_wait;
		if ((rc = add_task(s, &a, &ref)))
			return rc;
	}
	a.kind = GN_CPU;
	a.rtclass = RT_OTHER;
	a.dur = p->cpu_op_ns;
	a.name = a.op = s->n_cpu;
	if (p->cpu_op_ns > 0 && (rc = add_task(s, &a, &ref)))
		return rc;
	a.op = s->n_empty;
	a.kind = GN_RUNTIME;
	a.rtclass = RT_LAUNCH;
	a.dur = p->launch_ns;
	a.name = s->n_launch;
	a.corr = --s->corr;
	if ((rc = add_task(s, &a, &call)))
		return rc;
	memset(&a.coll, 0, sizeof(a.coll));
	a.proc = new_stream(s, r, k, which);
	a.kind = GN_P2P;
	a.rtclass = RT_OTHER;
	a.dur = p->xfer_ns;
	a.lag = p->gpu_lag_ns;
	a.name = recv ? s->n_recv : s->n_send;
	a.has_coll = 1;
	a.coll.kind = recv ? GC_RECV : GC_SEND;
	a.coll.bytes = (int64_t)p->act_bytes;
	a.coll.group_size = 2;
	a.coll.pg = pgid;
	a.coll.ranks = s->n_ranks2;
	a.coll.dtype = s->n_dtype;
	if ((rc = add_task(s, &a, &kern)))
		return rc;
	s->st->transfers++;
	if ((rc = push_edge(s, call, kern, GE_LAUNCH)))
		return rc;
	if (!recv)
		return ui->last != NONE32 ? push_edge(s, ref_of(s, ui->last, k), kern, GE_EVENT)
					  : 0;
	/* The compute stream waits for the received activations. */
	a.proc = host;
	a.has_coll = 0;
	a.lag = 0;
	a.corr = -1;
	a.kind = GN_RUNTIME;
	a.rtclass = RT_EVENT_RECORD;
	a.dur = p->event_ns;
	a.name = s->n_rec;
	if ((rc = add_task(s, &a, &ref)))
		return rc;
	a.rtclass = RT_STREAM_WAIT;
	a.name = s->n_wait;
	if ((rc = add_task(s, &a, &ref)))
		return rc;
	return ui->first != NONE32 ? push_edge(s, kern, ref_of(s, ui->first, k), GE_EVENT) : 0;
}

static int64_t unit_key(int32_t it, int32_t mb, int fwd, int k)
{
	return ((int64_t)it << 26 | (int64_t)mb << 9 | (int64_t)fwd << 8) | k;
}

/* Per unit and stage: its first and last kernel on the rank's compute
 * stream, and the thread launching the first. */
static int unit_info(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		const struct graph_proc *pr;
		if (s->compute[r] == NONE32)
			continue;
		pr = &g->procs[s->compute[r]];
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++) {
			int64_t key;
			uint32_t ix;
			if (!is_unit(s, u) || g->kind[u] != GN_KERNEL || s->a[u] < 0 ||
			    s->mbv[u] >= (1 << 17))
				continue;
			key = unit_key(g->iter[u], s->mbv[u], s->ph[u] == PH_FORWARD, s->a[u]);
			if ((ix = imap_get(&s->units, key)) == IMAP_NONE) {
				struct uinfo ui = {NONE32, u, u};
				uint32_t c = launcher(s, u);
				ui.host = c != NONE32 ? g->proc[c] : NONE32;
				if (VEC_PUSH(s->uis, ui) ||
				    imap_put(&s->units, key, (uint32_t)(s->uis.n - 1), NULL))
					return oom(s);
				continue;
			}
			s->uis.v[ix].last = u;
		}
	}
	return 0;
}

/* The units of a step in stage k's order: (microbatch, forward?) pairs. */
static size_t schedule(const struct ps *s, int k, int m, int32_t *mb, uint8_t *fwd)
{
	size_t n = 0;
	int warm = s->p->schedule == LAYOUT_GPIPE ? m : s->pp - k - 1, kf = 0, kb = 0;
	if (warm > m)
		warm = m;
	for (int i = 0; i < warm; i++, kf++) {
		mb[n] = kf;
		fwd[n++] = 1;
	}
	while (kf < m) {
		mb[n] = kf++;
		fwd[n++] = 1;
		mb[n] = kb++;
		fwd[n++] = 0;
	}
	while (kb < m) {
		mb[n] = kb++;
		fwd[n++] = 0;
	}
	return n;
}

/* The last task on base processor q at or before u (same step or before)
 * that runs on stage k, or NONE32. */
static uint32_t project(const struct ps *s, uint32_t u, int k)
{
	const struct graph *g = s->g;
	uint32_t first = g->procs[g->proc[u]].first;
	for (uint32_t w = u + 1; w-- > first;) {
		if (g->iter[w] >= 0 && g->iter[u] >= 0 && g->iter[w] != g->iter[u])
			return NONE32;
		if (in_stage(s, w, k))
			return w;
	}
	return NONE32;
}

int pipeline_split(const struct graph *g, const struct pipeline_plan *p, struct graph **out,
		   struct pipeline_stats *st, struct prism_err *err)
{
	struct ps s;
	struct graph *n = NULL;
	uint32_t nprocs = 0, *newid = NULL, *fill = NULL, ncoll = 0;
	uint64_t nnodes = 0;
	int rc = 0;
	int32_t *mbs = NULL;
	uint8_t *fwds = NULL;
	struct byu *byu = NULL;
	int64_t *iter_a = NULL, *iter_b = NULL;
	struct strtab names;
	int have_names = 0;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	memset(&s, 0, sizeof(s));
	s.g = g;
	s.p = p;
	s.err = err;
	s.st = st;
	s.pp = p->pp;
	if (p->pp < 2 || p->pp > 255 || (p->schedule != LAYOUT_GPIPE && p->schedule != LAYOUT_1F1B))
		return prism_err_set(err, PRISM_EARG,
				     "pipeline stages %d with schedule %d: 2..255 stages, GPipe or "
				     "1F1B",
				     p->pp, p->schedule);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->layer[u] + 1 > s.L)
			s.L = g->layer[u] + 1;
	if (s.L == 0)
		return prism_err_set(err, PRISM_EARG, "no layers found to split into stages");
	if (s.L < p->pp)
		return prism_err_set(err, PRISM_EARG, "%d layers cannot fill %d stages", s.L,
				     p->pp);
	/* Refs pack (task, stage) in 31 bits; step and processor ids are
	 * multiplied by the stages too. */
	if ((uint64_t)g->n_nodes * (uint64_t)p->pp >= ADDED ||
	    (uint64_t)g->n_iters * (uint64_t)p->pp > INT32_MAX ||
	    ((uint64_t)g->n_procs + (uint64_t)ST_N * g->n_ranks) * (uint64_t)p->pp >
		GRAPH_MAX_TASKS)
		return prism_err_set(err, PRISM_ELIMIT,
				     "pipeline: %u tasks, %u steps and %u processors on %d stages: "
				     "more than prism simulates",
				     g->n_nodes, g->n_iters, g->n_procs, p->pp);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->iter[u] >= 0 && g->mb[u] >= (1 << 17))
			return prism_err_set(err, PRISM_ELIMIT,
					     "pipeline: microbatch %d: at most %d microbatches",
					     g->mb[u], 1 << 17);
	/* The names of the added tasks live in the new graph's table: work
	 * on a copy of the base's. */
	if (strtab_copy(&names, &g->st))
		return prism_err_set(err, PRISM_ENOMEM, "pipeline: out of memory");
	have_names = 1;
	{
	    /* s.g is the base, but added names go into `names`: a graph
		 * shell that shares the base's arrays and owns the copy. */
	} {
		size_t nn = g->n_nodes ? g->n_nodes : 1;
		s.a = prism_malloc(nn);
		s.mbv = prism_malloc(nn * sizeof(*s.mbv));
		s.ph = prism_malloc(nn);
		s.in_off = prism_calloc(nn + 1, sizeof(*s.in_off));
		s.in_src = prism_malloc((g->n_edges ? g->n_edges : 1) * sizeof(*s.in_src));
		s.rank_first_proc = prism_calloc(g->n_ranks + 1, sizeof(*s.rank_first_proc));
		s.rank_nprocs = prism_calloc(g->n_ranks + 1, sizeof(*s.rank_nprocs));
		s.proc_index = prism_calloc(g->n_procs + 1, sizeof(*s.proc_index));
		mbs = prism_malloc(2 * (size_t)(1 << 17) * sizeof(*mbs));
		fwds = prism_malloc(2 * (size_t)(1 << 17));
		byu = prism_malloc(nn * sizeof(*byu));
		if (!s.a || !s.mbv || !s.ph || !s.in_off || !s.in_src || !s.rank_first_proc ||
		    !s.rank_nprocs || !s.proc_index || !mbs || !fwds || !byu) {
			rc = oom(&s);
			goto out;
		}
	}
	for (uint32_t e = 0; e < g->n_edges; e++)
		s.in_off[g->out_dst[e] + 1]++;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		s.in_off[u + 1] += s.in_off[u];
	{
		uint32_t *f = prism_calloc(g->n_nodes + 1, sizeof(*f));
		if (!f) {
			rc = oom(&s);
			goto out;
		}
		for (uint32_t u = 0; u < g->n_nodes; u++)
			for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
				s.in_src[s.in_off[g->out_dst[e]] + f[g->out_dst[e]]++] = u;
		free(f);
	}
	{
		int any = 0;
		for (uint32_t u = 0; u < g->n_nodes; u++)
			any |= g->mb[u] >= 0;
		for (uint32_t u = 0; u < g->n_nodes; u++)
			s.mbv[u] = any ? g->mb[u]
				   : g->iter[u] >= 0 &&
					   (g->phase[u] == PH_FORWARD || g->phase[u] == PH_BACKWARD)
				       ? 0
				       : -1;
	}
	if (g->n_ranks > 1024) {
		rc = prism_err_set(err, PRISM_ELIMIT, "pipeline: over 1024 ranks");
		goto out;
	}
	/* Tasks of a microbatch outside both passes (an edit made them part
	 * of it: reshape.h's bridges) go with the pass beside them. */
	for (uint32_t u = 0; u < g->n_nodes; u++)
		s.ph[u] = g->phase[u];
	for (uint32_t q = 0; q < g->n_procs; q++) {
		const struct graph_proc *pr = &g->procs[q];
		for (int pass = 0; pass < 2; pass++) {
			int32_t mb = -1, it = -2;
			uint8_t last = PH_NONE;
			for (uint32_t i = 0; i < pr->n; i++) {
				uint32_t u = pass ? pr->first + pr->n - 1 - i : pr->first + i;
				if (s.mbv[u] != mb || g->iter[u] != it) {
					mb = s.mbv[u];
					it = g->iter[u];
					last = PH_NONE;
				}
				if (s.ph[u] == PH_FORWARD || s.ph[u] == PH_BACKWARD)
					last = s.ph[u];
				else if (mb >= 0 && it >= 0 && s.ph[u] == PH_NONE &&
					 last != PH_NONE)
					s.ph[u] = last;
			}
		}
	}
	for (uint32_t q = 0; q < g->n_procs; q++)
		s.proc_index[q] = s.rank_nprocs[g->procs[q].rank]++;
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		s.rank_first_proc[r] = nprocs;
		nprocs += (s.rank_nprocs[r] + ST_N) * (uint32_t)p->pp;
	}
	if (!(s.seq = prism_calloc(nprocs + 1, sizeof(*s.seq))) ||
	    !(s.base_proc = prism_malloc((nprocs + 1) * sizeof(*s.base_proc)))) {
		rc = oom(&s);
		goto out;
	}
	for (uint32_t q = 0; q < nprocs; q++)
		s.base_proc[q] = NONE32;
	for (uint32_t q = 0; q < g->n_procs; q++)
		for (int k = 0; k < p->pp; k++)
			s.base_proc[new_proc(&s, q, k)] = q;
	/* Each rank's compute stream: the one with most kernels. */
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		uint32_t best = 0;
		s.compute[r] = NONE32;
		for (uint32_t q = 0; q < g->n_procs; q++) {
			uint32_t cnt = 0;
			if (g->procs[q].rank != r || !g->procs[q].gpu)
				continue;
			for (uint32_t u = g->procs[q].first; u < g->procs[q].first + g->procs[q].n;
			     u++)
				cnt += g->kind[u] == GN_KERNEL;
			if (cnt > best) {
				best = cnt;
				s.compute[r] = q;
			}
		}
	}
	if (strtab_intern(&names, "aten::op", 8, &s.n_cpu) ||
	    strtab_intern(&names, "cudaLaunchKernel", 16, &s.n_launch) ||
	    strtab_intern(&names, "cudaEventRecord", 15, &s.n_rec) ||
	    strtab_intern(&names, "cudaStreamWaitEvent", 19, &s.n_wait) ||
	    strtab_intern(&names, "ncclDevKernel_SendRecv", 22, &s.n_send) ||
	    strtab_intern(&names, "BFloat16", 8, &s.n_dtype) ||
	    strtab_intern(&names, "[2]", 3, &s.n_ranks2) ||
	    strtab_intern(&names, "", 0, &s.n_empty)) {
		rc = oom(&s);
		goto out;
	}
	s.n_recv = s.n_send;
	/* transfer() interns process-group names into s.g->st: point it at
	 * the copy for the duration. */
	{
		struct graph shell = *g;
		shell.st = names;
		s.g = &shell;
		assign(&s);
		{
			/* The tasks the stages will have, before making them:
			 * those on every stage count pp times. */
			uint64_t total = 0;
			for (uint32_t u = 0; u < g->n_nodes; u++) {
				if (s.a[u] < 0)
					st->replicated++;
				total += s.a[u] < 0 ? (uint64_t)p->pp : 1;
			}
			if (total > GRAPH_MAX_TASKS)
				rc = prism_err_set(err, PRISM_ELIMIT,
						   "pipeline: %" PRIu64
						   " tasks on %d stages, more than "
						   "the %u prism simulates",
						   total, p->pp, GRAPH_MAX_TASKS);
		}
		if (!rc)
			rc = unit_info(&s);
		/* Emit every new processor, step by step: the step's tasks before
		 * its units, its units in the stage's order with their transfers,
		 * and the rest. */
		for (uint32_t q = 0; q < g->n_procs && !rc; q++) {
			const struct graph_proc *pr = &g->procs[q];
			uint32_t r = pr->rank;
			for (int k = 0; k < p->pp && !rc; k++) {
				uint32_t np = new_proc(&s, q, k);
				uint32_t u = pr->first, end = pr->first + pr->n;
				while (u < end && !rc) {
					int32_t it = g->iter[u];
					uint32_t j = u, first_unit = NONE32, last_unit = NONE32;
					int m = 0;
					while (j < end && g->iter[j] == it)
						j++;
					/* [u, j): one step's tasks (or outside steps). */
					for (uint32_t w = u; w < j; w++)
						if (it >= 0 && is_unit(&s, w)) {
							if (first_unit == NONE32)
								first_unit = w;
							last_unit = w;
							if (s.mbv[w] + 1 > m)
								m = s.mbv[w] + 1;
						}
					if (first_unit == NONE32) {
						for (uint32_t w = u; w < j && !rc; w++)
							if (in_stage(&s, w, k) &&
							    VEC_PUSH(s.seq[np], ref_of(&s, w, k)))
								rc = oom(&s);
						u = j;
						continue;
					}
					for (uint32_t w = u; w < first_unit && !rc; w++)
						if (in_stage(&s, w, k) &&
						    VEC_PUSH(s.seq[np], ref_of(&s, w, k)))
							rc = oom(&s);
					{
						size_t nu = schedule(&s, k, m, mbs, fwds), nw = 0;
						/* The step's tasks of stage k from its first
						 * unit to its last, keyed by the unit each
						 * follows: a unit's tasks below are found by
						 * a search, not a scan of the step (it may
						 * have 10^5 microbatches of 10^6 tasks). */
						{
							int64_t key = -1;
							for (uint32_t w = first_unit;
							     w <= last_unit; w++) {
								if (is_unit(&s, w))
									key =
									    (int64_t)s.mbv[w] * 2 +
									    (s.ph[w] ==
									     PH_BACKWARD);
								if (in_stage(&s, w, k))
									byu[nw++] =
									    (struct byu){key, w};
							}
							if (nw)
								qsort(byu, nw, sizeof(*byu),
								      cmp_byu);
						}
						for (size_t x = 0; x < nu && !rc; x++) {
							int32_t mb = mbs[x];
							int fw = fwds[x];
							struct uinfo ui = {NONE32, NONE32, NONE32};
							uint32_t ix = imap_get(
							    &s.units, unit_key(it, mb, fw, k));
							if (ix != IMAP_NONE)
								ui = s.uis.v[ix];
							if (ui.host == q &&
							    ((fw && k > 0) ||
							     (!fw && k < p->pp - 1)) &&
							    (rc = transfer(&s, r, k, it, mb, fw,
									   &ui, 1)))
								break;
							/* The unit's tasks, with what follows them
							 * outside every unit. */
							{
								int64_t key = (int64_t)mb * 2 + !fw;
								size_t lo = 0, hi = nw;
								while (lo < hi) {
									size_t mid =
									    lo + (hi - lo) / 2;
									if (byu[mid].key < key)
										lo = mid + 1;
									else
										hi = mid;
								}
								for (; lo < nw &&
								       byu[lo].key == key && !rc;
								     lo++)
									if (VEC_PUSH(
										s.seq[np],
										ref_of(&s,
										       byu[lo].w,
										       k)))
										rc = oom(&s);
							}
							if (!rc && ui.host == q &&
							    ((fw && k < p->pp - 1) ||
							     (!fw && k > 0)))
								rc = transfer(&s, r, k, it, mb, fw,
									      &ui, 0);
							if (!rc)
								st->units += k == 0 && q == ui.host;
						}
					}
					for (uint32_t w = last_unit + 1; w < j && !rc; w++)
						if (in_stage(&s, w, k) &&
						    VEC_PUSH(s.seq[np], ref_of(&s, w, k)))
							rc = oom(&s);
					u = j;
				}
			}
		}
		names = shell.st;
		s.g = g;
	}
	if (rc)
		goto out;
	/* Edges: the base's within each stage; a stage-wide task waiting on
	 * another stage's waits on its own stage's last at or before that. */
	for (uint32_t u = 0; u < g->n_nodes && !rc; u++)
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1] && !rc; e++) {
			uint32_t v = g->out_dst[e];
			uint8_t kind = g->out_kind[e];
			if (GE_KIND(kind) == GE_ORDER)
				continue;
			/* The closing synchronise is derived again below. */
			if (g->kind[v] == GN_WAIT && g->rtclass[v] == RT_DEVICE_SYNC &&
			    GE_KIND(kind) == GE_SYNC)
				continue;
			for (int k = 0; k < p->pp && !rc; k++) {
				uint32_t w = u;
				if (!in_stage(&s, v, k))
					continue;
				if (!in_stage(&s, u, k)) {
					if (s.a[v] >= 0 || GE_KIND(kind) == GE_LAUNCH ||
					    (w = project(&s, u, k)) == NONE32)
						continue;
				}
				rc = push_edge(&s, ref_of(&s, w, k), ref_of(&s, v, k), kind);
			}
		}
	if (rc)
		goto out;
	/* Final ids: processors in order, each its sequence. */
	{
		size_t nrefs = (size_t)g->n_nodes * (size_t)p->pp + s.added.n + 1;
		newid = prism_malloc(nrefs * sizeof(*newid));
		if (!newid) {
			rc = oom(&s);
			goto out;
		}
		for (size_t i = 0; i < nrefs; i++)
			newid[i] = NONE32;
		for (uint32_t q = 0; q < nprocs; q++)
			for (size_t i = 0; i < s.seq[q].n; i++) {
				uint32_t ref = s.seq[q].v[i];
				size_t at =
				    ref & ADDED ? (size_t)g->n_nodes * p->pp + (ref & ~ADDED) : ref;
				newid[at] = (uint32_t)nnodes++;
			}
	}
#define NEWID(ref) (newid[(ref)&ADDED ? (size_t)g->n_nodes * p->pp + ((ref) & ~ADDED) : (ref)])
	/* Order edges, and the closing synchronise of each stage: the last
	 * task of each of its streams in the step or before. */
	for (uint32_t q = 0; q < nprocs && !rc; q++)
		for (size_t i = 1; i < s.seq[q].n && !rc; i++)
			rc = push_edge(&s, s.seq[q].v[i - 1], s.seq[q].v[i], GE_ORDER);
	for (uint32_t q = 0; q < nprocs && !rc; q++)
		for (size_t i = 0; i < s.seq[q].n && !rc; i++) {
			uint32_t ref = s.seq[q].v[i], u, rk, per, k;
			if (ref & ADDED)
				continue;
			u = ref / (uint32_t)p->pp;
			k = ref % (uint32_t)p->pp;
			if (g->kind[u] != GN_WAIT || g->rtclass[u] != RT_DEVICE_SYNC)
				continue;
			rk = g->procs[g->proc[u]].rank;
			per = s.rank_nprocs[rk] + ST_N;
			for (uint32_t o = 0; o < per && !rc; o++) {
				uint32_t sp = stage_first(&s, rk, (int)k) + o, last = NONE32;
				int gpu =
				    s.base_proc[sp] == NONE32 || g->procs[s.base_proc[sp]].gpu;
				if (!gpu)
					continue;
				for (size_t x = 0; x < s.seq[sp].n; x++) {
					uint32_t rr = s.seq[sp].v[x];
					int32_t it = rr & ADDED ? s.added.v[rr & ~ADDED].iter
								: g->iter[rr / (uint32_t)p->pp];
					if (it > g->iter[u])
						break;
					last = rr;
				}
				if (last != NONE32)
					rc = push_edge(&s, last, ref, GE_SYNC);
			}
		}
	if (rc)
		goto out;
	for (size_t i = 0; i < s.added.n; i++)
		ncoll += s.added.v[i].has_coll;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->coll[u] != NONE32)
			ncoll += s.a[u] < 0 ? (uint32_t)p->pp : 1;
	if (nnodes >= UINT32_MAX || s.edges.n >= UINT32_MAX) {
		rc = prism_err_set(err, PRISM_ELIMIT, "pipeline: %" PRIu64 " tasks: over 2^32",
				   nnodes);
		goto out;
	}
	n = graph_alloc((uint32_t)nnodes, (uint32_t)s.edges.n, nprocs, g->n_ranks * (uint32_t)p->pp,
			g->n_iters * (uint32_t)p->pp, ncoll);
	if (!n) {
		rc = oom(&s);
		goto out;
	}
	strtab_release(&n->st);
	n->st = names;
	have_names = 0;
	n->t0_ns = g->t0_ns;
	n->meta = g->meta;
	n->stats = g->stats;
	for (uint32_t r = 0; r < g->n_ranks; r++)
		for (int k = 0; k < p->pp; k++) {
			struct graph_rank *x = &n->ranks[r * (uint32_t)p->pp + (uint32_t)k];
			*x = g->ranks[r];
			x->rank = g->ranks[r].rank * p->pp + k;
			x->world_size =
			    g->ranks[r].world_size > 0 ? g->ranks[r].world_size * p->pp : p->pp;
		}
	{
		uint32_t next = 0;
		for (uint32_t r = 0; r < g->n_ranks; r++)
			for (int k = 0; k < p->pp; k++) {
				for (uint32_t q = 0; q < g->n_procs; q++) {
					struct graph_proc *x;
					if (g->procs[q].rank != r)
						continue;
					x = &n->procs[new_proc(&s, q, k)];
					*x = g->procs[q];
					x->rank = r * (uint32_t)p->pp + (uint32_t)k;
				}
				for (int w = 0; w < ST_N; w++) {
					struct graph_proc *x = &n->procs[new_stream(&s, r, k, w)];
					memset(x, 0, sizeof(*x));
					x->rank = r * (uint32_t)p->pp + (uint32_t)k;
					x->gpu = 1;
					x->tid = new_stream_tid[w];
					for (uint32_t q = 0; q < g->n_procs; q++)
						if (g->procs[q].rank == r && g->procs[q].gpu) {
							x->pid = g->procs[q].pid;
							break;
						}
				}
			}
		for (uint32_t q = 0; q < nprocs; q++) {
			n->procs[q].first = next;
			n->procs[q].n = (uint32_t)s.seq[q].n;
			next += (uint32_t)s.seq[q].n;
		}
	}
	/* Columns, times packed per processor, collectives. */
	{
		int64_t corr_stride = 1;
		uint32_t ci = 0;
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->corr[u] >= corr_stride)
				corr_stride = g->corr[u] < INT64_MAX ? g->corr[u] + 1 : INT64_MAX;
		/* Stage k's copies are corr + k x corr_stride, the added tasks'
		 * above pp x corr_stride: all must fit in 64 bits. */
		if (corr_stride > (INT64_MAX - (int64_t)s.added.n - 1) / (p->pp + 1)) {
			rc = prism_err_set(err, PRISM_ELIMIT,
					   "pipeline: correlation ids up to %" PRId64
					   " leave no room to number the stages' copies",
					   corr_stride - 1);
			goto out;
		}
		for (uint32_t q = 0; q < nprocs; q++) {
			int64_t clock = INT64_MIN;
			for (size_t i = 0; i < s.seq[q].n; i++) {
				uint32_t ref = s.seq[q].v[i], id = NEWID(ref);
				if (ref & ADDED) {
					const struct an *a = &s.added.v[ref & ~ADDED];
					n->dur_ns[id] = a->dur;
					n->lag_ns[id] = a->lag;
					n->corr[id] =
					    a->corr < -1 ? corr_stride * (p->pp + 1) - a->corr : -1;
					n->name[id] = a->name;
					n->op[id] = a->op;
					n->src[id] = NONE32;
					n->coll[id] = NONE32;
					n->iter[id] = a->iter >= 0 ? a->iter * p->pp + 0 : -1;
					n->layer[id] = -1;
					n->mb[id] = a->mb;
					n->phase[id] = a->phase;
					n->kind[id] = a->kind;
					n->rtclass[id] = a->rtclass;
					if (a->has_coll) {
						n->colls[ci] = a->coll;
						n->colls[ci].node = id;
						n->coll[id] = ci++;
					}
					if (clock == INT64_MIN)
						clock = 0;
				} else {
					uint32_t u = ref / (uint32_t)p->pp,
						 k = ref % (uint32_t)p->pp;
					graph_copy_nodes(n, id, g, u, 1);
					if (g->corr[u] >= 0 && k)
						n->corr[id] = g->corr[u] + corr_stride * k;
					n->iter[id] =
					    g->iter[u] >= 0 ? g->iter[u] * p->pp + (int32_t)k : -1;
					n->coll[id] = NONE32;
					if (g->flags[u] & NF_IDLE_GAP)
						n->dur_ns[id] = 0;
					if (g->coll[u] != NONE32) {
						const struct graph_coll *c = &g->colls[g->coll[u]];
						char pg[160];
						uint32_t pgid;
						n->colls[ci] = *c;
						snprintf(pg, sizeof(pg), "%s.s%u",
							 strtab_get(&n->st, c->pg), k);
						if (strtab_intern(&n->st, pg, strlen(pg), &pgid)) {
							rc = oom(&s);
							goto out;
						}
						n->colls[ci].pg = pgid;
						n->colls[ci].node = id;
						n->coll[id] = ci++;
					}
					if (clock == INT64_MIN)
						clock = g->start_ns[u];
				}
				n->proc[id] = q;
				n->start_ns[id] = clock;
				clock = prism_time_add(clock, n->dur_ns[id]);
			}
		}
		/* Added tasks of stage k carry the step index of stage k. */
		for (uint32_t q = 0; q < nprocs; q++) {
			uint32_t k = n->procs[q].rank % (uint32_t)p->pp;
			for (size_t i = 0; i < s.seq[q].n; i++) {
				uint32_t ref = s.seq[q].v[i], id = NEWID(ref);
				if ((ref & ADDED) && n->iter[id] >= 0)
					n->iter[id] += (int32_t)k;
			}
		}
	}
	/* Edges by source. */
	for (size_t i = 0; i < s.edges.n; i++)
		n->out_off[NEWID(s.edges.v[i].src) + 1]++;
	for (uint32_t u = 0; u < n->n_nodes; u++)
		n->out_off[u + 1] += n->out_off[u];
	if (!(fill = prism_calloc((size_t)n->n_nodes + 1, sizeof(*fill)))) {
		rc = oom(&s);
		goto out;
	}
	for (size_t i = 0; i < s.edges.n; i++) {
		uint32_t a = NEWID(s.edges.v[i].src);
		uint32_t at = n->out_off[a] + fill[a]++;
		n->out_dst[at] = NEWID(s.edges.v[i].dst);
		n->out_kind[at] = s.edges.v[i].kind;
	}
	/* Steps: per stage, the base's on the step thread's copy, spanning
	 * its tasks there (one pass over the tasks, not one per step). */
	if (!(iter_a = prism_malloc(((size_t)n->n_iters + 1) * sizeof(*iter_a))) ||
	    !(iter_b = prism_malloc(((size_t)n->n_iters + 1) * sizeof(*iter_b)))) {
		rc = oom(&s);
		goto out;
	}
	for (uint32_t i = 0; i < g->n_iters; i++)
		for (int k = 0; k < p->pp; k++) {
			uint32_t j = i * (uint32_t)p->pp + (uint32_t)k;
			struct graph_iter *x = &n->iters[j];
			*x = g->iters[i];
			x->rank = g->iters[i].rank * (uint32_t)p->pp + (uint32_t)k;
			iter_a[j] = INT64_MAX;
			iter_b[j] = INT64_MIN;
			if (g->iters[i].proc != NONE32)
				x->proc = new_proc(&s, g->iters[i].proc, k);
		}
	for (uint32_t id = 0; id < n->n_nodes; id++) {
		int32_t j = n->iter[id];
		int64_t e;
		if (j < 0 || (uint32_t)j >= n->n_iters || n->iters[j].proc == NONE32 ||
		    n->proc[id] != n->iters[j].proc)
			continue;
		e = prism_time_add(n->start_ns[id], n->dur_ns[id]);
		iter_a[j] = n->start_ns[id] < iter_a[j] ? n->start_ns[id] : iter_a[j];
		iter_b[j] = e > iter_b[j] ? e : iter_b[j];
	}
	for (uint32_t j = 0; j < n->n_iters; j++)
		if (n->iters[j].proc != NONE32 && iter_a[j] != INT64_MAX) {
			n->iters[j].start_ns = iter_a[j];
			n->iters[j].dur_ns = iter_b[j] - iter_a[j];
		}
	/* Sequence numbers in each rank's launch order: processor order
	 * would misplace them, so use the node's position on its stream,
	 * which follows the stage's schedule. */
	if (graph_renumber_colls(n, 0)) {
		rc = oom(&s);
		goto out;
	}
	graph_count(n);
	if ((rc = graph_acyclic(n, err))) {
		if (rc == PRISM_EINTERNAL)
			prism_err_prefix(err, "the stages wait on each other");
		goto out;
	}
	*out = n;
	n = NULL;
#undef NEWID
out:
	if (have_names)
		strtab_release(&names);
	graph_free(n);
	free(s.a);
	free(s.mbv);
	free(s.ph);
	free(s.in_off);
	free(s.in_src);
	free(s.rank_first_proc);
	free(s.base_proc);
	imap_release(&s.units);
	VEC_FREE(s.uis);
	free(s.rank_nprocs);
	free(s.proc_index);
	if (s.seq)
		for (uint32_t q = 0; q < nprocs; q++)
			VEC_FREE(s.seq[q]);
	free(s.seq);
	VEC_FREE(s.added);
	VEC_FREE(s.edges);
	free(newid);
	free(fill);
	free(mbs);
	free(fwds);
	free(byu);
	free(iter_a);
	free(iter_b);
	return rc;
}
