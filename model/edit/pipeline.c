/* pipeline.c - a one-stage run split into pipeline stages (pipeline.h). */
#include "pipeline.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "edit.h"
#include "gwrite.h"
#include "imap.h"
#include "mem.h"
#include "vec.h"

#define NONE32 UINT32_MAX

enum { ST_SENDF, ST_RECVF, ST_SENDB, ST_RECVB, ST_N };
static const int64_t new_stream_tid[ST_N] = {21, 22, 23, 24};

/* What a unit needs for its transfers on one stage. */
struct uinfo {
	uint32_t host;	      /* base proc launching its first compute kernel */
	uint32_t first, last; /* its first and last compute-stream kernels */
};

/* A task of a step's units, keyed by the unit it follows: its
 * microbatch x 2 + (backward). */
struct byu {
	int64_t key;
	uint32_t w;
};

/* The staged ids [a, b) of the statistics' all-reduces added before one
 * optimizer kernel on one stage (their host tasks and kernels). */
struct srange {
	uint32_t a, b;
};

/*
 * The stages are staged in a graph writer (gwrite.h): first each base
 * task's copy on each stage it runs on, by ref (base task x stages +
 * stage), then the added tasks as the emission makes them.  seq[q] is new
 * processor q's tasks in order (staged ids): the order given to the
 * writer.
 */
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
	struct gw w;
	uint32_t *id_of;      /* per ref: the copy's staged id, or NONE32 */
	VEC(uint32_t) ref_at; /* per copy (staged ids below it): its ref */
	VEC(uint32_t) * seq;
	uint32_t n_cpu, n_launch, n_rec, n_wait, n_send, n_recv, n_dtype, n_empty, n_ranks2;
	int64_t corr;
	struct pipeline_stats *st;
	uint32_t nprocs;	  /* new processors */
	uint32_t ncopy;		  /* staged ids below it are copies */
	uint32_t *order;	  /* the writer's order (staged ids) */
	int32_t *mbs;		  /* a step's units in a stage's order: */
	uint8_t *fwds;		  /*   microbatch and pass (schedule) */
	struct byu *byu;	  /* a step's tasks by unit (emit_units) */
	int64_t *iter_a, *iter_b; /* per new step: its span on its thread */
	struct imap stats;	  /* ref of an optimizer's first kernel, or of
				   * its launch -> index in sr */
	VEC(struct srange) sr;
	uint32_t n_ar, n_grp; /* the statistics' kernel and group names */
	uint8_t *own;	      /* per base rank and step: the trace's own
			       * statistics' all-reduces (is_stat) */
	uint32_t own_iters;
	/* The added all-reduces' dtypes: the statistics', the embedding's. */
	uint32_t n_f32, n_emb_dtype;
	/* rerec[q]: base processor q records an event that a task of another
	 * unit on its stage waits for (cross_unit_event); before[q]: then by
	 * unit_key, q's last staged task on the stage before that unit in the
	 * stage's order, + 1 (0: none).  NULL where no edge is such. */
	uint8_t *rerec;
	struct imap *before;
	/* ahead[u]: base task u is part of a gather issued ahead, moved to the
	 * stage of the layer it feeds (move_ahead); NULL where none is. */
	uint8_t *ahead;
	/* headc[u]: base task u is the output side's collective i that the
	 * last stage widens, + 1 (mark_heads); NULL where the plan widens
	 * none. */
	uint8_t *headc;
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

/* The writer's failure, as pipeline reports it. */
static int wfail(struct ps *s)
{
	return s->w.rc == PRISM_ELIMIT
		   ? prism_err_set(s->err, PRISM_ELIMIT, "pipeline: over 2^32 tasks or edges")
		   : oom(s);
}

/* A copy of base node u on stage k, as a ref. */
static uint32_t ref_of(const struct ps *s, uint32_t u, int k)
{
	return u * (uint32_t)s->pp + (uint32_t)k;
}

/* The staged copy of base node u on stage k (it runs there). */
static uint32_t copy_of(const struct ps *s, uint32_t u, int k)
{
	uint32_t id = s->id_of[ref_of(s, u, k)];
	assert(id != NONE32);
	return id;
}

/* s->a[u] besides a stage: every stage, or none (a gather's wait for
 * the compute of a layer on another stage, move_ahead). */
#define A_ALL  (-1)
#define A_NONE (-2)

static int in_stage(const struct ps *s, uint32_t u, int k)
{
	return s->a[u] == A_ALL || s->a[u] == k;
}

/* Base task u is the trace's own all-reduce of a gradient statistic (a
 * collective kernel of the optimizer's, of at most 8 bytes: the norm's square sum or
 * fp16's found-inf flag) that the cut widens to span the stages
 * (stats_widen). */
static int is_stat(const struct ps *s, uint32_t u)
{
	const struct graph *g = s->g;
	const struct graph_coll *c;
	if (!s->p->stats_widen || s->p->stats_group <= 1 || g->kind[u] != GN_COLL ||
	    g->phase[u] != PH_OPTIMIZER || g->coll[u] == NONE32)
		return 0;
	c = &g->colls[g->coll[u]];
	return c->kind == GC_ALL_REDUCE && c->bytes > 0 && c->bytes <= 8;
}

/* Base task u is the output side's all-gather (0), reduce-scatter (1) or
 * replicas' all-reduce (2) that the last stage widens (pipeline_plan's
 * head; mark_heads), or -1. */
static int head_coll(const struct ps *s, uint32_t u)
{
	return s->headc ? s->headc[u] - 1 : -1;
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

/* Event edge u -> v joins two units of one step on one stage: v's stream
 * waited for what u's had run when the event was recorded, in v's unit,
 * and the stage runs its units in another order than the base (its
 * schedule's), so what was run by then is found again on the stage
 * (rerecorded).  FSDP's and ZeRO-3's first gather of a unit waits for the
 * compute stream's last task before it: the previous unit's. */
static int cross_unit_event(const struct ps *s, uint32_t u, uint32_t v, uint8_t kind)
{
	const struct graph *g = s->g;
	if (GE_KIND(kind) != GE_EVENT || s->a[u] < 0 || s->a[v] < 0 || !is_unit(s, u) ||
	    !is_unit(s, v) || g->iter[u] != g->iter[v])
		return 0;
	/* A gather moved ahead (move_ahead) waited for the compute of the
	 * layer before the one issuing it, on another stage: on its own, it
	 * waits for what its stage ran before its unit, as the unit's first
	 * gather does. */
	if (s->a[u] != s->a[v])
		return s->ahead && s->ahead[v];
	return s->mbv[u] != s->mbv[v] || s->ph[u] != s->ph[v];
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

/* The kind (GE_KIND) of an edge u -> v, or -1 if none. */
static int edge_kind(const struct ps *s, uint32_t u, uint32_t v)
{
	const struct graph *g = s->g;
	for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
		if (g->out_dst[e] == v && GE_KIND(g->out_kind[e]) != GE_ORDER)
			return GE_KIND(g->out_kind[e]);
	return -1;
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
			s->a[u] = A_ALL;
	}
}

static int same_unit(const struct ps *s, uint32_t u, uint32_t v)
{
	const struct graph *g = s->g;
	return is_unit(s, u) && is_unit(s, v) && g->iter[u] == g->iter[v] &&
	       s->mbv[u] == s->mbv[v] && s->ph[u] == s->ph[v];
}

static void move_to(struct ps *s, uint32_t u, int k)
{
	s->a[u] = (int8_t)k;
	s->ahead[u] = 1;
}

/* Base task u is an all-gather (a collective kernel that gathered). */
static int is_gather(const struct ps *s, uint32_t u)
{
	const struct graph *g = s->g;
	return g->kind[u] == GN_COLL && g->coll[u] != NONE32 &&
	       g->colls[g->coll[u]].kind == GC_ALL_GATHER;
}

/* Task v, or the next task on its stream in its unit, is an all-gather
 * that a compute-stream task of its unit waits for (a gather, or its
 * copy-in). */
static int awaited(const struct ps *s, uint32_t v)
{
	const struct graph *g = s->g;
	const struct graph_proc *pr = &g->procs[g->proc[v]];
	for (uint32_t x = v; x < v + 2 && x < pr->first + pr->n; x++) {
		if (!same_unit(s, x, v))
			break;
		if (!is_gather(s, x))
			continue;
		for (uint32_t e = g->out_off[x]; e < g->out_off[x + 1]; e++)
			if (GE_KIND(g->out_kind[e]) == GE_EVENT && g->out_dst[e] < g->n_nodes &&
			    g->proc[g->out_dst[e]] == s->compute[pr->rank] &&
			    same_unit(s, x, g->out_dst[e]))
				return 1;
	}
	return 0;
}

/* A gather left on its stage whose wait for the compute stream named a
 * layer on another stage (the one after a gather moved ahead: issued at
 * the stage's unit start, with the moved one, it waits for nothing
 * there, as the unit's second gather in prism synth's gather_before):
 * its record and stream wait go (A_NONE), and the edge with them
 * (copy_edges drops a unit's edge from another stage). */
static void drop_cross_waits(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t v = 0; v < g->n_nodes; v++) {
		const struct graph_proc *pr = &g->procs[g->proc[v]];
		uint32_t h;
		int cross = 0;
		if (!pr->gpu || s->ahead[v] || g->proc[v] == s->compute[pr->rank] || s->a[v] < 0 ||
		    !is_unit(s, v))
			continue;
		for (uint32_t e = s->in_off[v]; e < s->in_off[v + 1] && !cross; e++) {
			uint32_t u = s->in_src[e];
			cross = s->a[u] >= 0 && s->a[u] != s->a[v] &&
				g->proc[u] == s->compute[pr->rank] && same_unit(s, u, v) &&
				edge_kind(s, u, v) == GE_EVENT;
		}
		if (!cross || !awaited(s, v) || (h = launcher(s, v)) == NONE32)
			continue;
		pr = &g->procs[g->proc[h]];
		while (h > pr->first && g->kind[h - 1] == GN_CPU && same_unit(s, h - 1, v))
			h--;
		if (h >= pr->first + 2 && g->kind[h - 1] == GN_RUNTIME &&
		    g->rtclass[h - 1] == RT_STREAM_WAIT && g->kind[h - 2] == GN_RUNTIME &&
		    g->rtclass[h - 2] == RT_EVENT_RECORD && same_unit(s, h - 2, v))
			s->a[h - 1] = s->a[h - 2] = A_NONE;
	}
}

/*
 * Gathers issued ahead (ZeRO-3's and FSDP's prefetch): an all-gather off
 * the compute stream whose event a task of its own unit on another stage
 * waits for was launched in an earlier layer's forward (a later layer's
 * backward) for the layer it feeds, and goes to that layer's stage, as a stage gathers its own first layers at its unit's start
 * (prism synth's gather_before).  With it: the task before it on its
 * stream where launched right before it (FSDP's copy-in), their host
 * calls (CPU ops and launches), the record and stream wait just before
 * them (the gather waiting for the compute stream) and the record just
 * after (the gather's event, recorded as it is issued: FSDP2's
 * foreach_all_gather).  0, or PRISM_ENOMEM.
 */
static int move_ahead(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const struct graph_proc *pr = &g->procs[g->proc[u]];
		uint32_t lu, h, p;
		int k = -1;
		if (!pr->gpu || g->proc[u] == s->compute[pr->rank] || s->a[u] < 0 ||
		    !is_unit(s, u) || !is_gather(s, u))
			continue;
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1] && k < 0; e++) {
			uint32_t v = g->out_dst[e];
			if (GE_KIND(g->out_kind[e]) == GE_EVENT && s->a[v] >= 0 &&
			    s->a[v] != s->a[u] && same_unit(s, u, v))
				k = s->a[v];
		}
		if (k < 0 || (lu = launcher(s, u)) == NONE32)
			continue;
		if (!s->ahead && !(s->ahead = prism_calloc(g->n_nodes, 1)))
			return oom(s);
		move_to(s, u, k);
		move_to(s, lu, k);
		h = lu;
		/* The copy-in: launched right before, CPU ops between. */
		if (u > pr->first && same_unit(s, p = u - 1, u) &&
		    (lu = launcher(s, p)) != NONE32 && g->proc[lu] == g->proc[h] && lu < h) {
			uint32_t x = lu + 1;
			while (x < h && g->kind[x] == GN_CPU)
				x++;
			if (x == h) {
				move_to(s, p, k);
				for (x = lu; x < h; x++)
					move_to(s, x, k);
				h = lu;
			}
		}
		/* Back over CPU ops, then one record and stream wait. */
		pr = &g->procs[g->proc[h]];
		while (h > pr->first && g->kind[h - 1] == GN_CPU && same_unit(s, h - 1, u))
			move_to(s, --h, k);
		if (h >= pr->first + 2 && g->kind[h - 1] == GN_RUNTIME &&
		    g->rtclass[h - 1] == RT_STREAM_WAIT && g->kind[h - 2] == GN_RUNTIME &&
		    g->rtclass[h - 2] == RT_EVENT_RECORD && same_unit(s, h - 2, u)) {
			move_to(s, h - 1, k);
			move_to(s, h - 2, k);
		}
		/* Forward: the gather's own record. */
		h = launcher(s, u) + 1;
		if (h < pr->first + pr->n && g->kind[h] == GN_RUNTIME &&
		    g->rtclass[h] == RT_EVENT_RECORD && same_unit(s, h, u))
			move_to(s, h, k);
	}
	if (s->ahead)
		drop_cross_waits(s);
	return 0;
}

/* Base task u is collective kind `kind` of the plan's base bytes for the
 * output side's collective i. */
static int head_sized(const struct ps *s, uint32_t u, int i, uint8_t kind)
{
	const struct graph *g = s->g;
	const struct graph_coll *c;
	if (g->kind[u] != GN_COLL || g->coll[u] == NONE32 || s->p->head[i].base_bytes <= 0)
		return 0;
	c = &g->colls[g->coll[u]];
	return c->kind == kind && c->bytes == s->p->head[i].base_bytes;
}

/* Base task v is a kernel of the output side's compute on the last stage:
 * on its rank's compute stream, of a unit, outside the layers (the head,
 * the final norm, their copies), where assign put it: after the last
 * layer forward, before the first backward. */
static int head_compute(const struct ps *s, uint32_t v)
{
	const struct graph *g = s->g;
	return v < g->n_nodes && g->proc[v] == s->compute[g->procs[g->proc[v]].rank] &&
	       g->layer[v] < 0 && is_unit(s, v) && s->a[v] == s->pp - 1;
}

/* Base task v waits (an event edge) for the output side's compute of its
 * own unit. */
static int waits_head(const struct ps *s, uint32_t v)
{
	for (uint32_t e = s->in_off[v]; e < s->in_off[v + 1]; e++) {
		uint32_t w = s->in_src[e];
		if (head_compute(s, w) && same_unit(s, w, v) && edge_kind(s, w, v) == GE_EVENT)
			return 1;
	}
	return 0;
}

/*
 * The output side's collectives that the last stage widens (headc): the
 * plan's base bytes and kind, and where the output side runs them, so
 * that a collective of equal size elsewhere (a layer's, the embedding's)
 * keeps its own: an all-gather off the compute stream on the last stage
 * whose event the output side's forward waits for (its first kernel, or
 * FSDP2's copy-out); a reduce-scatter of a backward that waits, itself
 * or through the copy-in launched before it on its stream, for the
 * output side's backward (grad_reduce's wait for the compute stream
 * after the head's backward); the replicas' all-reduce right after such
 * a reduce-scatter on its stream.  0, or PRISM_ENOMEM.
 */
static int mark_heads(struct ps *s)
{
	const struct graph *g = s->g;
	const struct pipeline_plan *p = s->p;
	if (p->head[0].base_bytes + p->head[1].base_bytes + p->head[2].base_bytes <= 0)
		return 0;
	if (!(s->headc = prism_calloc(g->n_nodes ? g->n_nodes : 1, 1)))
		return oom(s);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const struct graph_proc *pr = &g->procs[g->proc[u]];
		if (!pr->gpu || g->proc[u] == s->compute[pr->rank] || s->a[u] != s->pp - 1 ||
		    !is_unit(s, u))
			continue;
		if (s->ph[u] == PH_FORWARD && head_sized(s, u, 0, GC_ALL_GATHER)) {
			for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
				if (GE_KIND(g->out_kind[e]) == GE_EVENT &&
				    head_compute(s, g->out_dst[e]) &&
				    same_unit(s, u, g->out_dst[e]))
					s->headc[u] = 1;
		} else if (s->ph[u] == PH_BACKWARD && head_sized(s, u, 1, GC_REDUCE_SCATTER)) {
			if (waits_head(s, u) ||
			    (u > pr->first && same_unit(s, u - 1, u) && waits_head(s, u - 1)))
				s->headc[u] = 2;
		} else if (s->ph[u] == PH_BACKWARD && head_sized(s, u, 2, GC_ALL_REDUCE) &&
			   u > pr->first && s->headc[u - 1] == 2 && same_unit(s, u - 1, u)) {
			s->headc[u] = 3;
		}
	}
	return 0;
}

/* The processors whose events are found again (cross_unit_event). */
static int mark_rerec(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++) {
			if (!cross_unit_event(s, u, g->out_dst[e], g->out_kind[e]))
				continue;
			if (!s->rerec &&
			    (!(s->rerec = prism_calloc(g->n_procs, 1)) ||
			     !(s->before = prism_calloc(g->n_procs, sizeof(*s->before)))))
				return oom(s);
			s->rerec[g->proc[u]] = 1;
		}
	return 0;
}

/* Staged tasks a .. b - 1 (added) go next on their processors. */
static int placed(struct ps *s, uint32_t a, uint32_t b)
{
	for (uint32_t id = a; id < b; id++)
		if (VEC_PUSH(s->seq[s->w.proc[id]], id))
			return oom(s);
	return 0;
}

/* An added launch's host side from labels h: its CPU op (where the plan
 * has one) written, and in *x the launch's template (a new correlation). */
static void host_launch(struct ps *s, const struct gw_node *h, struct gw_node *x)
{
	const struct pipeline_plan *p = s->p;
	*x = *h;
	x->kind = GN_CPU;
	x->dur_ns = p->cpu_op_ns;
	x->name = x->op = s->n_cpu;
	if (p->cpu_op_ns > 0)
		gw_node(&s->w, x, NULL);
	*x = *h;
	x->kind = GN_RUNTIME;
	x->rtclass = RT_LAUNCH;
	x->dur_ns = p->launch_ns;
	x->name = s->n_launch;
	x->corr = --s->corr;
}

/* A unit: (step, microbatch, pass); its transfers on stage k. */
static int transfer(struct ps *s, uint32_t r, int k, int32_t it, int32_t mb, int fwd,
		    const struct uinfo *ui, int recv)
{
	const struct pipeline_plan *p = s->p;
	struct gw *w = &s->w;
	uint32_t first = (uint32_t)w->n_nodes, kern = GW_NONE, pgid;
	int from = recv ? (fwd ? k - 1 : k + 1) : k;
	int which = fwd ? (recv ? ST_RECVF : ST_SENDF) : (recv ? ST_RECVB : ST_SENDB);
	struct gw_node h, x, t;
	struct graph_coll c;
	char pg[64];

	snprintf(pg, sizeof(pg), "r%u.pp.%s.%d", r, fwd ? "f" : "b", from);
	pgid = gw_intern(w, pg);
	/* The host's labels: added tasks of stage k carry its step index. */
	gw_node_init(&h);
	h.proc = new_proc(s, ui->host, k);
	h.iter = it >= 0 ? it * s->pp + k : -1;
	h.mb = mb;
	h.phase = (uint8_t)(fwd ? PH_FORWARD : PH_BACKWARD);
	h.op = s->n_empty;
	/* A send: the transfer stream waits for the unit's last kernel. */
	if (!recv)
		gw_event_wait(w, &h, s->n_rec, s->n_wait, p->event_ns, GW_NONE, GW_NONE, NULL,
			      NULL);
	host_launch(s, &h, &x);
	t = h;
	t.proc = new_stream(s, r, k, which);
	t.dur_ns = p->xfer_ns;
	t.lag_ns = p->gpu_lag_ns;
	t.name = recv ? s->n_recv : s->n_send;
	memset(&c, 0, sizeof(c));
	c.kind = recv ? GC_RECV : GC_SEND;
	c.bytes = (int64_t)p->act_bytes;
	c.group_size = 2;
	c.pg = pgid;
	c.ranks = s->n_ranks2;
	c.dtype = s->n_dtype;
	gw_collective(w, &x, &t, &c, NULL, &kern);
	if (!recv && ui->last != NONE32)
		gw_edge(w, copy_of(s, ui->last, k), kern, GE_EVENT);
	/* A receive: the compute stream waits for the received activations. */
	if (recv)
		gw_event_wait(w, &h, s->n_rec, s->n_wait, p->event_ns, kern,
			      ui->first != NONE32 ? copy_of(s, ui->first, k) : GW_NONE, NULL, NULL);
	if (w->rc)
		return wfail(s);
	s->st->transfers++;
	return placed(s, first, (uint32_t)w->n_nodes);
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

/* The first task on base processor q at or after u (same step) that runs
 * on stage k, or NONE32: where stage k's stream waited for an event, the
 * wait holds back the first work it has after that point. */
static uint32_t project_next(const struct ps *s, uint32_t u, int k)
{
	const struct graph *g = s->g;
	uint32_t end = g->procs[g->proc[u]].first + g->procs[g->proc[u]].n;
	for (uint32_t w = u; w < end; w++) {
		if (g->iter[w] != g->iter[u])
			return NONE32;
		if (in_stage(s, w, k))
			return w;
	}
	return NONE32;
}

/* The plan against what prism can split: 0, or the error. */
static int check_plan(struct ps *s)
{
	const struct graph *g = s->g;
	const struct pipeline_plan *p = s->p;
	if (p->pp < 2 || p->pp > 255 || (p->schedule != LAYOUT_GPIPE && p->schedule != LAYOUT_1F1B))
		return prism_err_set(s->err, PRISM_EARG,
				     "pipeline stages %d with schedule %d: 2..255 stages, GPipe or "
				     "1F1B",
				     p->pp, p->schedule);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->layer[u] + 1 > s->L)
			s->L = g->layer[u] + 1;
	if (s->L == 0)
		return prism_err_set(s->err, PRISM_EARG, "no layers found to split into stages");
	if (s->L < p->pp)
		return prism_err_set(s->err, PRISM_EARG, "%d layers cannot fill %d stages", s->L,
				     p->pp);
	/* Refs pack (task, stage) in 31 bits; step and processor ids are
	 * multiplied by the stages too. */
	if ((uint64_t)g->n_nodes * (uint64_t)p->pp >= 0x80000000u ||
	    (uint64_t)g->n_iters * (uint64_t)p->pp > INT32_MAX ||
	    ((uint64_t)g->n_procs + (uint64_t)ST_N * g->n_ranks) * (uint64_t)p->pp >
		GRAPH_MAX_TASKS)
		return prism_err_set(s->err, PRISM_ELIMIT,
				     "pipeline: %u tasks, %u steps and %u processors on %d stages: "
				     "more than prism simulates",
				     g->n_nodes, g->n_iters, g->n_procs, p->pp);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->iter[u] >= 0 && g->mb[u] >= (1 << 17))
			return prism_err_set(s->err, PRISM_ELIMIT,
					     "pipeline: microbatch %d: at most %d microbatches",
					     g->mb[u], 1 << 17);
	if (g->n_ranks > 1024)
		return prism_err_set(s->err, PRISM_ELIMIT, "pipeline: over 1024 ranks");
	return 0;
}

/* The writer (the added tasks' names go after the base's) and the arrays
 * indexed by base task, rank and processor. */
static int alloc_work(struct ps *s)
{
	const struct graph *g = s->g;
	size_t nn = g->n_nodes ? g->n_nodes : 1;
	if (gw_init_from(&s->w, g) || graph_in_edges(g, &s->in_off, &s->in_src))
		return oom(s);
	s->a = prism_malloc(nn);
	s->mbv = prism_malloc(nn * sizeof(*s->mbv));
	s->ph = prism_malloc(nn);
	s->rank_first_proc = prism_calloc(g->n_ranks + 1, sizeof(*s->rank_first_proc));
	s->rank_nprocs = prism_calloc(g->n_ranks + 1, sizeof(*s->rank_nprocs));
	s->proc_index = prism_calloc(g->n_procs + 1, sizeof(*s->proc_index));
	s->mbs = prism_malloc(2 * (size_t)(1 << 17) * sizeof(*s->mbs));
	s->fwds = prism_malloc(2 * (size_t)(1 << 17));
	s->byu = prism_malloc(nn * sizeof(*s->byu));
	if (!s->a || !s->mbv || !s->ph || !s->rank_first_proc || !s->rank_nprocs ||
	    !s->proc_index || !s->mbs || !s->fwds || !s->byu)
		return oom(s);
	return 0;
}

/* Each task's microbatch (0 for a trace without labels) and pass: tasks
 * of a microbatch outside both passes (an edit made them part of it:
 * reshape.h's bridges) go with the pass beside them. */
static void label_passes(struct ps *s)
{
	const struct graph *g = s->g;
	int any = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		any |= g->mb[u] >= 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		s->mbv[u] =
		    any ? g->mb[u]
		    : g->iter[u] >= 0 && (g->phase[u] == PH_FORWARD || g->phase[u] == PH_BACKWARD)
			? 0
			: -1;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		s->ph[u] = g->phase[u];
	for (uint32_t q = 0; q < g->n_procs; q++) {
		const struct graph_proc *pr = &g->procs[q];
		for (int pass = 0; pass < 2; pass++) {
			int32_t mb = -1, it = -2;
			uint8_t last = PH_NONE;
			for (uint32_t i = 0; i < pr->n; i++) {
				uint32_t u = pass ? pr->first + pr->n - 1 - i : pr->first + i;
				if (s->mbv[u] != mb || g->iter[u] != it) {
					mb = s->mbv[u];
					it = g->iter[u];
					last = PH_NONE;
				}
				if (s->ph[u] == PH_FORWARD || s->ph[u] == PH_BACKWARD)
					last = s->ph[u];
				else if (mb >= 0 && it >= 0 && s->ph[u] == PH_NONE &&
					 last != PH_NONE)
					s->ph[u] = last;
			}
		}
	}
}

/* The new processors (per rank and stage: copies of the rank's
 * processors, then the four transfer streams), each rank's compute stream
 * (its GPU stream with most kernels) and the added tasks' names. */
static int lay_out_procs(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t q = 0; q < g->n_procs; q++)
		s->proc_index[q] = s->rank_nprocs[g->procs[q].rank]++;
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		s->rank_first_proc[r] = s->nprocs;
		s->nprocs += (s->rank_nprocs[r] + ST_N) * (uint32_t)s->pp;
	}
	if (!(s->seq = prism_calloc(s->nprocs + 1, sizeof(*s->seq))) ||
	    !(s->base_proc = prism_malloc((s->nprocs + 1) * sizeof(*s->base_proc))))
		return oom(s);
	for (uint32_t q = 0; q < s->nprocs; q++)
		s->base_proc[q] = NONE32;
	for (uint32_t q = 0; q < g->n_procs; q++)
		for (int k = 0; k < s->pp; k++)
			s->base_proc[new_proc(s, q, k)] = q;
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		uint32_t best = 0;
		s->compute[r] = NONE32;
		for (uint32_t q = 0; q < g->n_procs; q++) {
			uint32_t cnt = 0;
			if (g->procs[q].rank != r || !g->procs[q].gpu)
				continue;
			for (uint32_t u = g->procs[q].first; u < g->procs[q].first + g->procs[q].n;
			     u++)
				cnt += g->kind[u] == GN_KERNEL;
			if (cnt > best) {
				best = cnt;
				s->compute[r] = q;
			}
		}
	}
	s->n_cpu = gw_intern(&s->w, "aten::op");
	s->n_launch = gw_intern(&s->w, "cudaLaunchKernel");
	s->n_rec = gw_intern(&s->w, "cudaEventRecord");
	s->n_wait = gw_intern(&s->w, "cudaStreamWaitEvent");
	s->n_send = gw_intern(&s->w, "ncclDevKernel_SendRecv");
	/* The transfers' dtype: the activations' as the trace records them
	 * (edit_activation_type; act_bytes is of those), named by the one
	 * table as prism synth names its own (dtype.h). */
	{
		double el;
		int half;
		edit_activation_type(g, &el, &half);
		s->n_dtype = gw_intern(&s->w, dtype_coll_name(el, half));
		s->n_f32 = gw_intern(&s->w, dtype_coll_name(4, half));
		s->n_emb_dtype = gw_intern(
		    &s->w,
		    dtype_coll_name(s->p->emb_elem_bytes > 0 ? s->p->emb_elem_bytes : 4, half));
	}
	s->n_ranks2 = gw_intern(&s->w, "[2]");
	s->n_empty = gw_intern(&s->w, "");
	s->n_recv = s->n_send;
	s->n_ar = gw_intern(&s->w, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	s->n_grp = gw_intern(&s->w, "[]");
	return s->w.rc ? wfail(s) : 0;
}

/* Base kernel u's duration ratio as a copy around the output side's
 * collectives (pipeline_plan's head): the kernel before one on its stream
 * (in same unit), the reduce-scatter's next, the compute-stream kernel
 * a gather's event releases (its copy-out); 0: none. */
static double head_copy_ratio(const struct ps *s, uint32_t u)
{
	const struct graph *g = s->g;
	const struct graph_proc *pr = &g->procs[g->proc[u]];
	int hc;
	if (g->kind[u] != GN_KERNEL || !pr->gpu)
		return 0;
	if (u + 1 < pr->first + pr->n && (hc = head_coll(s, u + 1)) >= 0 && same_unit(s, u, u + 1))
		return s->p->head[hc].in_ratio;
	if (u > pr->first && head_coll(s, u - 1) >= 1 && same_unit(s, u - 1, u))
		return s->p->head[1].out_ratio;
	for (uint32_t e = s->in_off[u]; e < s->in_off[u + 1]; e++) {
		uint32_t v = s->in_src[e];
		if (head_coll(s, v) == 0 && same_unit(s, v, u) && edge_kind(s, v, u) == GE_EVENT)
			return s->p->head[0].out_ratio;
	}
	return 0;
}

/* Every base task's copy on each stage it runs on (assign), staged by ref
 * so that its id is known before the emission puts it in order; the
 * units' transfers get room too. */
static int stage_copies(struct ps *s)
{
	const struct graph *g = s->g;
	const struct pipeline_plan *p = s->p;
	uint64_t total = 0;
	int rc;
	/* Those on every stage count pp times. */
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (s->a[u] == A_ALL)
			s->st->replicated++;
		total += s->a[u] == A_ALL ? (uint64_t)p->pp : s->a[u] == A_NONE ? 0 : 1;
	}
	if (total > GRAPH_MAX_TASKS)
		return prism_err_set(s->err, PRISM_ELIMIT,
				     "pipeline: %" PRIu64 " tasks on %d stages, more than "
				     "the %u prism simulates",
				     total, p->pp, GRAPH_MAX_TASKS);
	if ((rc = unit_info(s)))
		return rc;
	/* At most two transfers of five tasks per unit and stage. */
	if (gw_reserve(&s->w, total + 10 * (uint64_t)s->uis.n +
				  3 * ((uint64_t)p->stats_n + 1) * g->n_iters * g->n_ranks * p->pp))
		return wfail(s);
	if (!(s->id_of =
		  prism_malloc(((size_t)g->n_nodes * (size_t)p->pp + 1) * sizeof(*s->id_of))))
		return oom(s);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (int k = 0; k < p->pp; k++) {
			struct gw_node x;
			uint32_t ref = ref_of(s, u, k), id;
			int hc = -1;
			s->id_of[ref] = NONE32;
			if (!in_stage(s, u, k))
				continue;
			gw_node_from(&x, g, u);
			x.proc = new_proc(s, g->proc[u], k);
			x.iter = g->iter[u] >= 0 ? g->iter[u] * p->pp + k : -1;
			if (g->flags[u] & NF_IDLE_GAP)
				x.dur_ns = 0;
			/* A statistic's all-reduce widened: what the trace holds
			 * beyond the base group's modelled time (waiting) kept, plus
			 * the wider group's time. */
			if (is_stat(s, u))
				x.dur_ns =
				    (x.dur_ns > p->stats_base_ns ? x.dur_ns - p->stats_base_ns
								 : 0) +
				    p->stats_ns;
			/* The last stage's output side widened: its modelled
			 * time swapped, what the trace holds beyond it kept. */
			if (k == p->pp - 1 &&
			    p->head[0].base_bytes + p->head[1].base_bytes + p->head[2].base_bytes >
				0) {
				double ratio = head_copy_ratio(s, u);
				if ((hc = head_coll(s, u)) >= 0)
					x.dur_ns = (x.dur_ns > p->head[hc].base_ns
							? x.dur_ns - p->head[hc].base_ns
							: 0) +
						   p->head[hc].ns;
				else if (ratio > 0)
					x.dur_ns = prism_ns_round((double)x.dur_ns * ratio);
			}
			if (gw_node(&s->w, &x, &id) ||
			    (g->coll[u] != NONE32 && gw_coll(&s->w, id, &g->colls[g->coll[u]])))
				return wfail(s);
			if (is_stat(s, u))
				s->w.colls.v[s->w.coll[id]].group_size = p->stats_group;
			if (hc >= 0)
				s->w.colls.v[s->w.coll[id]].bytes = p->head[hc].bytes;
			if (VEC_PUSH(s->ref_at, ref))
				return oom(s);
			s->id_of[ref] = id;
		}
	return 0;
}

/* Stage k's all-reduces of the gradient statistics before each step's
 * optimizer (pipeline.h): per rank, step and stage, before the first
 * optimizer kernel on the compute stream that runs on the stage, a CPU op,
 * a launch and the kernel per all-reduce (a tied embedding's first, on the
 * end stages), the kernels waiting for what that
 * kernel waits for on other streams; placed by push_copy. */
static int make_stats(struct ps *s)
{
	const struct graph *g = s->g;
	const struct pipeline_plan *p = s->p;
	struct gw *w = &s->w;
	int n_all = p->stats_group > 1 && p->stats_n > 0 ? p->stats_n : 0;
	uint8_t *own;
	if (n_all == 0 && p->emb_ns <= 0)
		return 0;
	own = NULL;
	if (p->stats_widen && n_all > 0) {
		/* Steps numbered from the tasks (a graph need not list them). */
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->iter[u] >= 0 && (uint32_t)g->iter[u] >= s->own_iters)
				s->own_iters = (uint32_t)g->iter[u] + 1;
		if (!(own = s->own = prism_calloc((size_t)g->n_ranks * s->own_iters + 1, 1)))
			return oom(s);
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->iter[u] >= 0 && is_stat(s, u)) {
				uint8_t *o = &own[(size_t)g->procs[g->proc[u]].rank * s->own_iters +
						  (uint32_t)g->iter[u]];
				*o += *o < UINT8_MAX;
			}
	}
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		const struct graph_proc *pr;
		char pg[64];
		uint32_t pgid, epg;
		if (s->compute[r] == NONE32)
			continue;
		pr = &g->procs[s->compute[r]];
		snprintf(pg, sizeof(pg), "r%u.gstats", r);
		pgid = gw_intern(w, pg);
		snprintf(pg, sizeof(pg), "r%u.emb", r);
		epg = gw_intern(w, pg);
		for (int k = 0; k < s->pp; k++) {
			/* The embedding's on the end stages, then the statistics'. */
			int emb = p->emb_ns > 0 && (k == 0 || k == s->pp - 1);
			int32_t done = INT32_MIN; /* the last step given its all-reduces */
			for (uint32_t u = pr->first; u < pr->first + pr->n; u++) {
				uint32_t c, a = w->n_nodes;
				struct srange x;
				int n_new;
				if (g->iter[u] < 0 || g->iter[u] == done ||
				    g->kind[u] != GN_KERNEL || g->phase[u] != PH_OPTIMIZER ||
				    !in_stage(s, u, k) || (c = launcher(s, u)) == NONE32 ||
				    !in_stage(s, c, k))
					continue;
				done = g->iter[u];
				/* Those the trace runs already are widened instead
				 * (stage_copies). */
				n_new = n_all;
				if (own)
					n_new -=
					    own[(size_t)r * s->own_iters + (uint32_t)g->iter[u]];
				if (n_new < 0)
					n_new = 0;
				for (int i = !emb; i < 1 + n_new; i++) {
					struct gw_node h, t;
					struct graph_coll cl;
					uint32_t kern = GW_NONE;
					gw_node_init(&h);
					h.proc = new_proc(s, g->proc[c], k);
					h.iter = g->iter[u] * s->pp + k;
					h.phase = PH_OPTIMIZER;
					h.op = s->n_empty;
					t = h;
					host_launch(s, &t, &h);
					t.proc = new_proc(s, s->compute[r], k);
					t.dur_ns = i ? p->stats_ns : p->emb_ns;
					t.lag_ns = p->gpu_lag_ns;
					t.name = s->n_ar;
					memset(&cl, 0, sizeof(cl));
					cl.kind = GC_ALL_REDUCE;
					cl.bytes = i ? 4 : (int64_t)p->emb_bytes;
					cl.group_size = i ? p->stats_group : 2;
					cl.pg = i ? pgid : epg;
					cl.ranks = s->n_grp;
					cl.dtype = i ? s->n_f32 : s->n_emb_dtype;
					gw_collective(w, &h, &t, &cl, NULL, &kern);
					for (uint32_t e = s->in_off[u]; e < s->in_off[u + 1]; e++) {
						uint32_t v = s->in_src[e];
						for (uint32_t j = g->out_off[v];
						     j < g->out_off[v + 1]; j++)
							if (g->out_dst[j] == u &&
							    GE_KIND(g->out_kind[j]) == GE_EVENT &&
							    in_stage(s, v, k))
								gw_edge(w, copy_of(s, v, k), kern,
									g->out_kind[j]);
					}
				}
				x = (struct srange){a, w->n_nodes};
				if (x.a == x.b)
					continue;
				if (w->rc)
					return wfail(s);
				if (VEC_PUSH(s->sr, x) ||
				    imap_put(&s->stats, ref_of(s, u, k), (uint32_t)(s->sr.n - 1),
					     NULL) ||
				    imap_put(&s->stats, ref_of(s, c, k), (uint32_t)(s->sr.n - 1),
					     NULL))
					return oom(s);
			}
		}
	}
	return 0;
}

/* Base task w's copy on stage k next on new processor np, after the
 * statistics' all-reduces (their tasks on np) it is the anchor of. */
static int push_copy(struct ps *s, uint32_t np, uint32_t w, int k)
{
	uint32_t ix = s->sr.n ? imap_get(&s->stats, ref_of(s, w, k)) : IMAP_NONE;
	if (ix != IMAP_NONE)
		for (uint32_t id = s->sr.v[ix].a; id < s->sr.v[ix].b; id++)
			if (s->w.proc[id] == np && VEC_PUSH(s->seq[np], id))
				return oom(s);
	return VEC_PUSH(s->seq[np], copy_of(s, w, k)) ? oom(s) : 0;
}

/* Stage k's copies of base tasks [a, b) of processor q, in order, on new
 * processor np. */
static int emit_range(struct ps *s, uint32_t np, int k, uint32_t a, uint32_t b)
{
	for (uint32_t w = a; w < b; w++)
		if (in_stage(s, w, k) && push_copy(s, np, w, k))
			return PRISM_ENOMEM;
	return 0;
}

/* Step it's units on stage k of processor q (its tasks from first_unit
 * to last_unit, m microbatches) in the stage's order, each with the tasks
 * that follow it outside every unit and, where q launches it, its
 * transfers. */
static int emit_units(struct ps *s, uint32_t q, int k, int32_t it, int m, uint32_t first_unit,
		      uint32_t last_unit)
{
	const struct pipeline_plan *p = s->p;
	uint32_t r = s->g->procs[q].rank, np = new_proc(s, q, k);
	size_t nu = schedule(s, k, m, s->mbs, s->fwds), nw = 0;
	int64_t key = -1;
	int rc = 0;
	/* The tasks keyed by the unit each follows: a unit's tasks below are
	 * found by a search, not a scan of the step (it may have 10^5
	 * microbatches of 10^6 tasks). */
	for (uint32_t w = first_unit; w <= last_unit; w++) {
		if (is_unit(s, w))
			key = (int64_t)s->mbv[w] * 2 + (s->ph[w] == PH_BACKWARD);
		if (in_stage(s, w, k))
			s->byu[nw++] = (struct byu){key, w};
	}
	if (nw)
		qsort(s->byu, nw, sizeof(*s->byu), cmp_byu);
	for (size_t x = 0; x < nu && !rc; x++) {
		int32_t mb = s->mbs[x];
		int fw = s->fwds[x];
		struct uinfo ui = {NONE32, NONE32, NONE32};
		uint32_t ix = imap_get(&s->units, unit_key(it, mb, fw, k));
		size_t lo = 0, hi = nw;
		if (ix != IMAP_NONE)
			ui = s->uis.v[ix];
		/* What an event recorded in this unit finds run on q. */
		if (s->rerec && s->rerec[q] &&
		    imap_put(&s->before[q], unit_key(it, mb, fw, k),
			     s->seq[np].n ? s->seq[np].v[s->seq[np].n - 1] + 1 : 0, NULL))
			return oom(s);
		if (ui.host == q && ((fw && k > 0) || (!fw && k < p->pp - 1)) &&
		    (rc = transfer(s, r, k, it, mb, fw, &ui, 1)))
			break;
		key = (int64_t)mb * 2 + !fw;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (s->byu[mid].key < key)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < nw && s->byu[lo].key == key && !rc; lo++)
			rc = push_copy(s, np, s->byu[lo].w, k);
		if (!rc && ui.host == q && ((fw && k < p->pp - 1) || (!fw && k > 0)))
			rc = transfer(s, r, k, it, mb, fw, &ui, 0);
		if (!rc)
			s->st->units += k == 0 && q == ui.host;
	}
	return rc;
}

/* Stage k's copy of base processor q, step by step: a step's tasks before
 * its units, its units (emit_units), and the rest. */
static int emit_proc(struct ps *s, uint32_t q, int k)
{
	const struct graph *g = s->g;
	const struct graph_proc *pr = &g->procs[q];
	uint32_t np = new_proc(s, q, k), u = pr->first, end = pr->first + pr->n;
	int rc = 0;
	while (u < end && !rc) {
		int32_t it = g->iter[u];
		uint32_t j = u, first_unit = NONE32, last_unit = NONE32;
		int m = 0;
		while (j < end && g->iter[j] == it)
			j++;
		/* [u, j): one step's tasks (or outside steps). */
		for (uint32_t w = u; w < j; w++)
			if (it >= 0 && is_unit(s, w)) {
				if (first_unit == NONE32)
					first_unit = w;
				last_unit = w;
				if (s->mbv[w] + 1 > m)
					m = s->mbv[w] + 1;
			}
		if (first_unit == NONE32)
			rc = emit_range(s, np, k, u, j);
		else if (!(rc = emit_range(s, np, k, u, first_unit)) &&
			 !(rc = emit_units(s, q, k, it, m, first_unit, last_unit)))
			rc = emit_range(s, np, k, last_unit + 1, j);
		u = j;
	}
	return rc;
}

/* The base's edges within each stage; a stage-wide task waiting on another
 * stage's waits on its own stage's last at or before that. */
static int copy_edges(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++) {
			uint32_t v = g->out_dst[e];
			uint8_t kind = g->out_kind[e];
			if (GE_KIND(kind) == GE_ORDER)
				continue;
			/* The closing synchronise is derived again (sync_edges). */
			if (g->kind[v] == GN_WAIT && g->rtclass[v] == RT_DEVICE_SYNC &&
			    GE_KIND(kind) == GE_SYNC)
				continue;
			if (cross_unit_event(s, u, v, kind)) {
				/* What the stage had run on u's stream by v's unit. */
				int k = s->a[v];
				uint32_t b = imap_get(
				    &s->before[g->proc[u]],
				    unit_key(g->iter[v], s->mbv[v], s->ph[v] == PH_FORWARD, k));
				if (b == IMAP_NONE)
					b = s->a[u] == k ? copy_of(s, u, k) + 1 : 0;
				if (b && gw_edge(&s->w, b - 1, copy_of(s, v, k), kind))
					return wfail(s);
				continue;
			}
			for (int k = 0; k < s->pp; k++) {
				uint32_t w = u;
				if (!in_stage(s, v, k)) {
					/* A wait outside the units (the optimizer's:
					 * ZeRO's gathers of the updated weights wait
					 * for the update) holds back the stage's own
					 * next task on v's stream. */
					if (GE_KIND(kind) == GE_EVENT && in_stage(s, u, k) &&
					    !is_unit(s, u) && !is_unit(s, v) && g->iter[v] >= 0 &&
					    (w = project_next(s, v, k)) != NONE32 &&
					    gw_edge(&s->w, copy_of(s, u, k), copy_of(s, w, k),
						    kind))
						return wfail(s);
					continue;
				}
				if (!in_stage(s, u, k)) {
					if (s->a[v] >= 0 || GE_KIND(kind) == GE_LAUNCH ||
					    (w = project(s, u, k)) == NONE32)
						continue;
				}
				if (gw_edge(&s->w, copy_of(s, w, k), copy_of(s, v, k), kind))
					return wfail(s);
			}
		}
	return 0;
}

/* The writer's order (processors in order, each its sequence), its order
 * edges, and the closing synchronise of each stage: the last task of each
 * of its streams in the step or before. */
static int order_and_syncs(struct ps *s)
{
	const struct graph *g = s->g;
	uint32_t pp = (uint32_t)s->pp;
	size_t at = 0;
	s->ncopy = (uint32_t)s->ref_at.n;
	if (!(s->order = prism_malloc((s->w.n_nodes + 1) * sizeof(*s->order))) ||
	    !(s->iter_a = prism_malloc(((size_t)g->n_iters * pp + 1) * sizeof(*s->iter_a))) ||
	    !(s->iter_b = prism_malloc(((size_t)g->n_iters * pp + 1) * sizeof(*s->iter_b))))
		return oom(s);
	for (uint32_t q = 0; q < s->nprocs; q++)
		for (size_t i = 0; i < s->seq[q].n; i++)
			s->order[at++] = s->seq[q].v[i];
	assert(at == s->w.n_nodes); /* every copy emitted once */
	gw_order(&s->w, s->order);
	for (uint32_t q = 0; q < s->nprocs && !s->w.rc; q++)
		for (size_t i = 0; i < s->seq[q].n && !s->w.rc; i++) {
			uint32_t id = s->seq[q].v[i], u, rk, per, k;
			if (id >= s->ncopy)
				continue;
			u = s->ref_at.v[id] / pp;
			k = s->ref_at.v[id] % pp;
			if (g->kind[u] != GN_WAIT || g->rtclass[u] != RT_DEVICE_SYNC)
				continue;
			rk = g->procs[g->proc[u]].rank;
			per = s->rank_nprocs[rk] + ST_N;
			for (uint32_t o = 0; o < per; o++) {
				uint32_t sp = stage_first(s, rk, (int)k) + o, last = NONE32;
				int gpu =
				    s->base_proc[sp] == NONE32 || g->procs[s->base_proc[sp]].gpu;
				if (!gpu)
					continue;
				for (size_t x = 0; x < s->seq[sp].n; x++) {
					/* the base's step (stage k's is step x stages + k) */
					int32_t it = s->w.iter[s->seq[sp].v[x]];
					if ((it >= 0 ? it / s->pp : -1) > g->iter[u])
						break;
					last = s->seq[sp].v[x];
				}
				if (last != NONE32)
					gw_edge(&s->w, last, id, GE_SYNC);
			}
		}
	return 0;
}

/* Ranks (stage k of rank r is rank r x stages + k), and processors in
 * index order (stage_first): per rank and stage, its copies of the rank's
 * processors, then the four transfer streams. */
static int write_ranks_procs(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t r = 0; r < g->n_ranks; r++)
		for (int k = 0; k < s->pp; k++) {
			struct graph_rank x = g->ranks[r];
			x.rank = g->ranks[r].rank * s->pp + k;
			x.world_size =
			    g->ranks[r].world_size > 0 ? g->ranks[r].world_size * s->pp : s->pp;
			gw_rank(&s->w, &x);
		}
	for (uint32_t r = 0; r < g->n_ranks; r++)
		for (int k = 0; k < s->pp; k++) {
			for (uint32_t q = 0; q < g->n_procs; q++) {
				struct graph_proc x = g->procs[q];
				if (x.rank != r)
					continue;
				assert(s->w.rc || new_proc(s, q, k) == s->w.procs.n);
				x.rank = r * (uint32_t)s->pp + (uint32_t)k;
				gw_proc(&s->w, &x, NULL);
			}
			for (int w = 0; w < ST_N; w++) {
				struct graph_proc x;
				memset(&x, 0, sizeof(x));
				x.rank = r * (uint32_t)s->pp + (uint32_t)k;
				x.gpu = 1;
				x.tid = new_stream_tid[w];
				for (uint32_t q = 0; q < g->n_procs; q++)
					if (g->procs[q].rank == r && g->procs[q].gpu) {
						x.pid = g->procs[q].pid;
						break;
					}
				assert(s->w.rc || new_stream(s, r, k, w) == s->w.procs.n);
				gw_proc(&s->w, &x, NULL);
			}
		}
	return s->w.rc ? wfail(s) : 0;
}

/* Correlation ids (stage k's copies at corr + k x stride, the added
 * tasks' above pp x stride), times packed per processor, and the stages'
 * own process groups. */
static int number_columns(struct ps *s)
{
	const struct graph *g = s->g;
	uint32_t pp = (uint32_t)s->pp;
	int64_t corr_stride = 1;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->corr[u] >= corr_stride)
			corr_stride = g->corr[u] < INT64_MAX ? g->corr[u] + 1 : INT64_MAX;
	if (corr_stride > (INT64_MAX - (int64_t)(s->w.n_nodes - s->ncopy) - 1) / (s->pp + 1))
		return prism_err_set(s->err, PRISM_ELIMIT,
				     "pipeline: correlation ids up to %" PRId64
				     " leave no room to number the stages' copies",
				     corr_stride - 1);
	for (uint32_t q = 0; q < s->nprocs; q++) {
		int64_t clock = INT64_MIN;
		for (size_t i = 0; i < s->seq[q].n; i++) {
			uint32_t id = s->seq[q].v[i];
			if (id >= s->ncopy) {
				s->w.corr[id] = s->w.corr[id] < -1
						    ? corr_stride * (s->pp + 1) - s->w.corr[id]
						    : -1;
				if (clock == INT64_MIN)
					clock = 0;
			} else {
				uint32_t u = s->ref_at.v[id] / pp, k = s->ref_at.v[id] % pp;
				if (g->corr[u] >= 0 && k)
					s->w.corr[id] = g->corr[u] + corr_stride * k;
				/* A widened statistic's group spans the stages. */
				if (g->coll[u] != NONE32 && !is_stat(s, u)) {
					const struct graph_coll *c = &g->colls[g->coll[u]];
					char pg[160];
					snprintf(pg, sizeof(pg), "%s.s%u",
						 strtab_get(&s->w.st, c->pg), k);
					s->w.colls.v[s->w.coll[id]].pg = gw_intern(&s->w, pg);
				}
				if (clock == INT64_MIN)
					clock = g->start_ns[u];
			}
			s->w.start_ns[id] = clock;
			clock = prism_time_add(clock, s->w.dur_ns[id]);
		}
	}
	return s->w.rc ? wfail(s) : 0;
}

/* Steps: per stage, the base's on the step thread's copy, spanning its
 * tasks there (one pass over the tasks, not one per step). */
static int span_steps(struct ps *s)
{
	const struct graph *g = s->g;
	for (uint32_t i = 0; i < g->n_iters; i++)
		for (int k = 0; k < s->pp; k++) {
			uint32_t j = i * (uint32_t)s->pp + (uint32_t)k;
			struct graph_iter x = g->iters[i];
			x.rank = g->iters[i].rank * (uint32_t)s->pp + (uint32_t)k;
			s->iter_a[j] = INT64_MAX;
			s->iter_b[j] = INT64_MIN;
			if (g->iters[i].proc != NONE32)
				x.proc = new_proc(s, g->iters[i].proc, k);
			if (gw_iter(&s->w, &x))
				return wfail(s);
		}
	for (size_t id = 0; id < s->w.n_nodes; id++) {
		int32_t j = s->w.iter[id];
		int64_t e;
		if (j < 0 || (size_t)j >= s->w.iters.n || s->w.iters.v[j].proc == NONE32 ||
		    s->w.proc[id] != s->w.iters.v[j].proc)
			continue;
		e = prism_time_add(s->w.start_ns[id], s->w.dur_ns[id]);
		s->iter_a[j] = s->w.start_ns[id] < s->iter_a[j] ? s->w.start_ns[id] : s->iter_a[j];
		s->iter_b[j] = e > s->iter_b[j] ? e : s->iter_b[j];
	}
	for (size_t j = 0; j < s->w.iters.n; j++)
		if (s->w.iters.v[j].proc != NONE32 && s->iter_a[j] != INT64_MAX) {
			s->w.iters.v[j].start_ns = s->iter_a[j];
			s->w.iters.v[j].dur_ns = s->iter_b[j] - s->iter_a[j];
		}
	return 0;
}

/* The graph: what the stages were made from freed before the writer's
 * peak; collectives' sequence numbers in each rank's launch order (the
 * node's position on its stream, which follows the stage's schedule, not
 * processor order); checked acyclic. */
static int finish(struct ps *s, struct graph **n)
{
	int rc;
	free(s->id_of);
	s->id_of = NULL;
	VEC_FREE(s->ref_at);
	if (gw_finish(&s->w, s->order, GW_COLLS_BY_NODE, n))
		return wfail(s);
	if (graph_renumber_colls(*n, 0))
		return oom(s);
	graph_count(*n);
	if ((rc = graph_acyclic(*n, s->err)) == PRISM_EINTERNAL)
		prism_err_prefix(s->err, "the stages wait on each other");
	return rc;
}

static void release(struct ps *s)
{
	gw_release(&s->w);
	free(s->id_of);
	VEC_FREE(s->ref_at);
	free(s->order);
	free(s->a);
	free(s->mbv);
	free(s->ph);
	free(s->in_off);
	free(s->in_src);
	free(s->rank_first_proc);
	free(s->base_proc);
	imap_release(&s->units);
	VEC_FREE(s->uis);
	imap_release(&s->stats);
	VEC_FREE(s->sr);
	free(s->own);
	if (s->before)
		for (uint32_t q = 0; q < s->g->n_procs; q++)
			imap_release(&s->before[q]);
	free(s->before);
	free(s->rerec);
	free(s->ahead);
	free(s->headc);
	free(s->rank_nprocs);
	free(s->proc_index);
	if (s->seq)
		for (uint32_t q = 0; q < s->nprocs; q++)
			VEC_FREE(s->seq[q]);
	free(s->seq);
	free(s->mbs);
	free(s->fwds);
	free(s->byu);
	free(s->iter_a);
	free(s->iter_b);
}

int pipeline_split(const struct graph *g, const struct pipeline_plan *p, struct graph **out,
		   struct pipeline_stats *st, struct prism_err *err)
{
	struct ps s;
	struct graph *n = NULL;
	int rc;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	memset(&s, 0, sizeof(s));
	s.g = g;
	s.p = p;
	s.err = err;
	s.st = st;
	s.pp = p->pp;
	if ((rc = check_plan(&s)))
		return rc;
	if (!(rc = alloc_work(&s))) {
		label_passes(&s);
		rc = lay_out_procs(&s);
	}
	if (!rc) {
		assign(&s);
		if (!(rc = move_ahead(&s)) && !(rc = mark_rerec(&s)) && !(rc = mark_heads(&s)) &&
		    !(rc = stage_copies(&s)))
			rc = make_stats(&s);
	}
	for (uint32_t q = 0; q < g->n_procs && !rc; q++)
		for (int k = 0; k < p->pp && !rc; k++)
			rc = emit_proc(&s, q, k);
	if (!rc && !(rc = copy_edges(&s)) && !(rc = order_and_syncs(&s)) &&
	    !(rc = write_ranks_procs(&s)) && !(rc = number_columns(&s)) && !(rc = span_steps(&s)) &&
	    !(rc = finish(&s, &n))) {
		*out = n;
		n = NULL;
	}
	graph_free(n);
	release(&s);
	return rc;
}
