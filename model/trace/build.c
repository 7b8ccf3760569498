/*
 * build.c - Kineto events into the execution graph.
 *
 * Work per rank, each step one pass or one sort (no quadratic passes):
 *   1. sort event ids by (thread, start, longest first);
 *   2. host threads: sweep runtime calls against a stack of open CPU ops
 *      (enclosing op, communication metadata), cut CPU work between calls,
 *      split blocking calls into call + wait;
 *   3. streams: GPU tasks in start order, launch edges by correlation;
 *   4. sync and event edges: exact from cuda_sync records, else device
 *      synchronise by definition, else inferred from timing;
 *   5. cross-thread edges from idle gaps;
 *   6. iterations (ProfilerStep#N), phases, passes and layers
 *      (annotate.c, through build_priv.h), and collectives.
 * The nodes, edges and tables are staged in the graph writer (gwrite.h),
 * which makes the graph: CSR rows sorted and de-duplicated.
 */
#include "build.h"
#include "build_priv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "imap.h"
#include "vec.h"

void build_opts_default(struct build_opts *o)
{
	o->infer_events = 1;
	o->infer_sync = 1;
	o->infer_threads = 1;
	o->infer_share = 1;
	o->infer_layers = 1;
	o->allow_dangling = 0;
	o->event_tol_ns = 10000;
	o->event_tol_auto = 1;
	o->share_tail_ns = 100000;
	o->sync_tol_ns = 20000;
	o->thread_gap_ns = 50000;
	o->thread_tol_ns = 50000;
	o->lag_cap_ns = 50000;
	o->wake_tol_ns = 1000000;
}

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->negdur != y->negdur)
		return x->negdur < y->negdur ? -1 : 1;
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

int build_nomem(struct builder *b)
{
	return prism_err_set(b->err, PRISM_ENOMEM, "out of memory while building the graph");
}

/* The writer's failure as the builder reports it. */
static int wfail(struct builder *b, int rc)
{
	return rc == PRISM_ELIMIT
		   ? prism_err_set(b->err, PRISM_ELIMIT, "more than 2^32 graph nodes")
		   : build_nomem(b);
}

static int add_edge(struct builder *b, uint32_t src, uint32_t dst, int kind)
{
	return gw_edge(&b->w, src, dst, (uint8_t)kind) ? build_nomem(b) : 0;
}

/* Node n, with its enclosing op's comm index (side data of the builder). */
static int add_node(struct builder *b, const struct gw_node *n, uint32_t hint, uint32_t *id)
{
	int rc = gw_node(&b->w, n, id);
	if (rc)
		return wfail(b, rc);
	if (VEC_PUSH(b->hint, hint) || VEC_PUSH(b->launched, 0))
		return build_nomem(b);
	return 0;
}

int build_rt_class(struct builder *b, uint32_t name)
{
	if (name >= b->rtclass_of.n) {
		size_t old = b->rtclass_of.n;
		if (VEC_RESERVE(b->rtclass_of, b->w.st.n))
			return -1;
		memset(b->rtclass_of.v + old, 0xff, b->w.st.n - old);
		b->rtclass_of.n = b->w.st.n;
	}
	if (b->rtclass_of.v[name] == 0xff)
		b->rtclass_of.v[name] = (uint8_t)graph_rt_classify(strtab_get(&b->w.st, name));
	return b->rtclass_of.v[name];
}

static int is_blocking_class(int c)
{
	return c == RT_STREAM_SYNC || c == RT_DEVICE_SYNC || c == RT_EVENT_SYNC ||
	       c == RT_MEMCPY_SYNC;
}

/* ---- per-rank state ----------------------------------------------------- */

/* Is this copy blocking for its host thread?  A copy to or from pageable
 * host memory is staged by the calling thread, which returns only when it
 * is done, whatever the API's name says. */
static int memcpy_blocks(const struct builder *b, const struct kt_event *g)
{
	return g->kind == KT_MEMCPY && strstr(strtab_get(&b->w.st, g->name), "Pageable");
}

int build_fail_ev(struct builder *b, const struct rank_ctx *rc, const struct kt_event *e,
		  const char *fmt, ...)
{
	char what[240];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return prism_err_set(b->err, PRISM_EFORMAT, "%s: event %" PRIu32 " '%.60s': %s",
			     rc->tr->path, e->index, strtab_get(&b->w.st, e->name), what);
}

/* CPU work on a host thread between runtime calls. */
static int add_cpu_work(struct builder *b, uint32_t proc, int64_t start, int64_t dur,
			uint32_t op_name, uint8_t flags)
{
	struct gw_node n;
	gw_node_init(&n);
	n.start_ns = start;
	n.dur_ns = dur;
	n.name = op_name;
	n.op = op_name;
	n.proc = proc;
	n.kind = GN_CPU;
	n.flags = flags;
	return add_node(b, &n, NONE32, NULL);
}

/*
 * CPU work [t, s) on a host thread (add_cpu_work), with the gradient
 * accumulations inside it that launched nothing -- autograd's
 * AccumulateGrad taking a parameter's first gradient -- as tasks of their
 * own, named for the op, with its shapes: a graph edit that repeats the
 * microbatch adds the accumulation those copies run (reshape.h).  acc[*ai
 * ..): such ops' events, by start.  An idle gap (flags) is split only
 * where what comes before the op is too short to hide a wait
 * (thread_gap_ns): the rest keeps the gap's flag for the call after it.
 */
static int add_gap(struct builder *b, struct rank_ctx *rc, uint32_t proc, int64_t t, int64_t s,
		   uint32_t op_name, uint8_t flags, const size_t *acc, size_t nacc, size_t *ai)
{
	int rc_;

	while (*ai < nacc && ev_at(rc, acc[*ai])->ts_ns < t)
		(*ai)++;
	for (; *ai < nacc; (*ai)++) {
		const struct kt_event *o = ev_at(rc, acc[*ai]);
		struct gw_node n;
		if (o->ts_ns >= s || (flags && o->ts_ns - t >= b->o->thread_gap_ns))
			break;
		if (o->ts_ns < t || o->ts_ns + o->dur_ns > s || o->dur_ns <= 0)
			continue; /* inside the last one, or it launched something
				   * (the call's op is its) */
		if (o->ts_ns > t && (rc_ = add_cpu_work(b, proc, t, o->ts_ns - t, op_name, 0)))
			return rc_;
		gw_node_init(&n);
		n.start_ns = o->ts_ns;
		n.dur_ns = o->dur_ns;
		n.name = n.op = o->name;
		n.op_dims = o->dims;
		n.op_types = o->types;
		n.proc = proc;
		n.kind = GN_CPU;
		if ((rc_ = add_node(b, &n, NONE32, NULL)))
			return rc_;
		t = o->ts_ns + o->dur_ns;
	}
	return s > t ? add_cpu_work(b, proc, t, s - t, op_name, flags) : 0;
}

/* Host thread: runtime calls, CPU work between them, enclosing ops. */
static int build_host_thread(struct builder *b, struct rank_ctx *rc, size_t lo, size_t hi,
			     uint32_t proc)
{
	VEC(uint32_t) stack = {0};
	VEC(size_t) ops = {0};
	VEC(size_t) rts = {0};
	VEC(size_t) acc = {0};
	int64_t t, span_end = INT64_MIN, last_rt_end = INT64_MIN;
	uint32_t last_call = NONE32,
		 acc_name = strtab_find(&b->w.st, GRAPH_ACC_OP, strlen(GRAPH_ACC_OP));
	size_t ai = 0;
	int rc_ = 0;

	for (size_t k = lo; k < hi; k++) {
		const struct kt_event *e = ev_at(rc, k);
		if (e->ts_ns + e->dur_ns > span_end)
			span_end = e->ts_ns + e->dur_ns;
		if (e->kind == KT_CPU_OP || e->kind == KT_USER_ANN) {
			if (VEC_PUSH(ops, k))
				goto oom;
			if (e->kind == KT_CPU_OP && e->name == acc_name && e->dims &&
			    VEC_PUSH(acc, k))
				goto oom;
		} else if (e->kind == KT_RUNTIME) {
			if (VEC_PUSH(rts, k))
				goto oom;
		}
	}
	t = ev_at(rc, lo)->ts_ns;
	size_t oi = 0;
	for (size_t ri = 0; ri < rts.n; ri++) {
		const struct kt_event *e = ev_at(rc, rts.v[ri]);
		int64_t s = e->ts_ns, end = e->ts_ns + e->dur_ns;
		uint32_t op_name = 0, op_dims = 0, op_types = 0, hint = NONE32, id;
		int covered, cls;

		/* Open the ops that start before this call; close the ended ones. */
		while (oi < ops.n && ev_at(rc, ops.v[oi])->ts_ns <= s) {
			const struct kt_event *o = ev_at(rc, ops.v[oi]);
			while (stack.n && ev_at(rc, stack.v[stack.n - 1])->ts_ns +
						  ev_at(rc, stack.v[stack.n - 1])->dur_ns <=
					      o->ts_ns)
				stack.n--;
			if (VEC_PUSH(stack, (uint32_t)ops.v[oi]))
				goto oom;
			oi++;
		}
		while (stack.n && ev_at(rc, stack.v[stack.n - 1])->ts_ns +
					  ev_at(rc, stack.v[stack.n - 1])->dur_ns <=
				      s)
			stack.n--;
		if (stack.n) {
			const struct kt_event *top = ev_at(rc, stack.v[stack.n - 1]);
			op_name = top->name;
			/* Shapes from the innermost op that recorded any (a
			 * record_function range around an aten op has none). */
			for (size_t d = stack.n; d-- > 0;) {
				const struct kt_event *o = ev_at(rc, stack.v[d]);
				if (o->dims) {
					op_dims = o->dims;
					op_types = o->types;
					break;
				}
			}
			for (size_t d = stack.n; d-- > 0;) {
				const struct kt_event *o = ev_at(rc, stack.v[d]);
				if (o->comm != NONE32) {
					hint = o->comm;
					break;
				}
			}
		} else {
			b->w.stats.rt_no_op++;
		}

		cls = build_rt_class(b, e->name);
		if (cls < 0)
			goto oom;
		b->w.stats.rt_class[cls]++;
		if (s < last_rt_end) {
			if (end <= last_rt_end) {
				/* Nested in the previous call: that call owns its GPU work. */
				b->w.stats.nested_runtime++;
				if (e->corr != KT_NO_ID) {
					uint32_t old;
					if (imap_put(&rc->rt_by_corr, e->corr, last_call, &old))
						goto oom;
					if (old != IMAP_NONE) {
						rc_ = build_fail_ev(
						    b, rc, e, "duplicate correlation id %" PRId64,
						    e->corr);
						goto out;
					}
				}
				continue;
			}
			b->w.stats.clipped_runtime++;
			s = last_rt_end;
		}
		covered = stack.n && ev_at(rc, stack.v[0])->ts_ns <= t;
		/* An uncovered gap may be idle waiting: edges_from_threads decides. */
		if (s > t && (rc_ = add_gap(b, rc, proc, t, s, op_name, covered ? 0 : NF_IDLE_GAP,
					    acc.v, acc.n, &ai)))
			goto out;
		{
			struct gw_node call;
			uint32_t g =
			    e->corr != KT_NO_ID ? imap_get(&rc->gpu_by_corr, e->corr) : NONE32;
			int blocking = is_blocking_class(cls) ||
				       (g != NONE32 && memcpy_blocks(b, &rc->tr->events.v[g]));
			gw_node_init(&call);
			call.start_ns = s;
			call.dur_ns = blocking ? 0 : end - s;
			call.corr = e->corr != KT_NO_ID ? e->corr : -1;
			call.name = e->name;
			call.op = op_name;
			call.op_dims = op_dims;
			call.op_types = op_types;
			call.src = e->index;
			call.proc = proc;
			call.kind = GN_RUNTIME;
			call.rtclass = (uint8_t)cls;
			call.flags = blocking ? NF_BLOCKING : 0;
			if ((rc_ = add_node(b, &call, hint, &id)))
				goto out;
			if (e->corr != KT_NO_ID) {
				uint32_t old;
				if (imap_put(&rc->rt_by_corr, e->corr, id, &old))
					goto oom;
				if (old != IMAP_NONE) {
					rc_ = build_fail_ev(
					    b, rc, e, "duplicate correlation id %" PRId64, e->corr);
					goto out;
				}
				if (e->corr < rc->min_rt_corr)
					rc->min_rt_corr = e->corr;
			}
			if (blocking) {
				struct gw_node w = call;
				w.kind = GN_WAIT;
				w.dur_ns = end - s; /* own cost and waiting split later */
				w.flags = 0;
				if ((rc_ = add_node(b, &w, hint, NULL)))
					goto out;
			}
			last_call = id;
		}
		t = last_rt_end = end;
	}
	if (span_end > t && (rc_ = add_gap(b, rc, proc, t, span_end, 0, 0, acc.v, acc.n, &ai)))
		goto out;
	goto out;
oom:
	rc_ = build_nomem(b);
out:
	VEC_FREE(stack);
	VEC_FREE(ops);
	VEC_FREE(rts);
	VEC_FREE(acc);
	return rc_;
}

static int coll_kind_of(const char *s)
{
	char buf[64];
	size_t n = 0;
	/* Lower-case, underscores dropped: "all_to_all" == "AllToAll". */
	for (; *s && *s != '(' && n < sizeof(buf) - 1; s++)
		if (*s != '_' && *s != ':')
			buf[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
	buf[n] = '\0';
	if (strstr(buf, "alltoall"))
		return GC_ALL_TO_ALL;
	if (strstr(buf, "allreduce"))
		return GC_ALL_REDUCE;
	if (strstr(buf, "allgather"))
		return GC_ALL_GATHER;
	if (strstr(buf, "reducescatter"))
		return GC_REDUCE_SCATTER;
	if (strstr(buf, "broadcast"))
		return GC_BROADCAST;
	if (strstr(buf, "sendrecv"))
		return GC_SEND_RECV;
	if (strstr(buf, "send"))
		return GC_SEND;
	if (strstr(buf, "recv"))
		return GC_RECV;
	if (strstr(buf, "reduce"))
		return GC_REDUCE;
	return GC_UNKNOWN;
}

/* NCCL's kernels, and RCCL's: ROCm's NCCL keeps NCCL's names, its one
 * kernel for every collective "ncclDevKernel_Generic_4" (rccl
 * src/device/common.h), whose kind the op's record_param_comms gives. */
static int is_nccl_kernel(const char *s)
{
	return strncmp(s, "ncclKernel_", 11) == 0 || strncmp(s, "ncclDevKernel_", 14) == 0 ||
	       (strncmp(s, "nccl", 4) == 0 && strstr(s, "Kernel") != NULL);
}

/* Communication done by kernels of other libraries: DeepEP's dispatch,
 * combine and notify (all-to-all within and across nodes), symmetric-
 * memory and custom all-reduces (PyTorch's multimem / one- and two-shot,
 * vLLM's cross-device reduce), NVSHMEM.  The kind, or -1 for any other
 * kernel. */
static int custom_comm_kind(const char *s)
{
	if (strstr(s, "ep::internode::") || strstr(s, "ep::intranode::") || strstr(s, "deep_ep::"))
		return GC_ALL_TO_ALL;
	if (strstr(s, "multimem_all_reduce") || strstr(s, "one_shot_all_reduce") ||
	    strstr(s, "two_shot_all_reduce") || strstr(s, "cross_device_reduce") ||
	    strstr(s, "custom_all_reduce"))
		return GC_ALL_REDUCE;
	if (strstr(s, "nvshmem"))
		return GC_ALL_TO_ALL;
	return -1;
}

/* The collective a communication kernel does, from its name. */
static int kernel_coll_kind(const char *s)
{
	int k = custom_comm_kind(s);
	return k >= 0 ? k : coll_kind_of(strncmp(s, "nccl", 4) == 0 ? s + 4 : s);
}

/* Streams: GPU tasks, launch edges, collectives. */
static int build_stream(struct builder *b, struct rank_ctx *rc, size_t lo, size_t hi, uint32_t proc)
{
	for (size_t k = lo; k < hi; k++) {
		const struct kt_event *e = ev_at(rc, k);
		struct gw_node n;
		uint32_t id, call, hint = e->comm;
		const char *name = strtab_get(&b->w.st, e->name);

		if (e->kind != KT_KERNEL && e->kind != KT_MEMCPY && e->kind != KT_MEMSET)
			continue;
		gw_node_init(&n);
		n.start_ns = e->ts_ns;
		n.dur_ns = e->dur_ns;
		n.corr = e->corr;
		n.name = e->name;
		n.src = e->index;
		n.proc = proc;
		n.kind = e->kind == KT_MEMCPY	? GN_MEMCPY
			 : e->kind == KT_MEMSET ? GN_MEMSET
						: GN_KERNEL;
		call = imap_get(&rc->rt_by_corr, e->corr);
		if (call != IMAP_NONE) {
			n.op = b->w.op[call];
			n.op_dims = b->w.op_dims[call];
			n.op_types = b->w.op_types[call];
			if (hint == NONE32)
				hint = b->hint.v[call];
		}
		if (n.kind == GN_KERNEL && (is_nccl_kernel(name) || custom_comm_kind(name) >= 0)) {
			int kind = kernel_coll_kind(name);
			n.kind = (kind == GC_SEND_RECV || kind == GC_SEND || kind == GC_RECV)
				     ? GN_P2P
				     : GN_COLL;
		}
		if (add_node(b, &n, hint, &id) || imap_put(&rc->gpunode_by_corr, e->corr, id, NULL))
			return build_nomem(b);
		if (call != IMAP_NONE) {
			b->launched.v[call] = 1;
			if (b->w.rtclass[call] == RT_GRAPH_LAUNCH)
				b->w.flags[id] |= NF_GRAPH;
			/* A host-to-device copy from pageable memory is staged
			 * by the thread before its DMA (docs/MODEL.md); one to
			 * pageable memory DMAs first and stages after. */
			if (memcpy_blocks(b, e) && strstr(name, "HtoD") &&
			    (b->w.flags[call] & NF_BLOCKING))
				b->w.flags[id] |= NF_STAGED;
			if (add_edge(b, call, id, GE_LAUNCH))
				return PRISM_ENOMEM;
		} else if (e->corr < rc->min_rt_corr || b->o->allow_dangling) {
			b->w.stats.gpu_no_launch++;
			b->w.flags[id] |= NF_ANCHORED;
		} else {
			return build_fail_ev(b, rc, e,
					     "dangling correlation id %" PRId64
					     ": GPU work inside the window without its launch call "
					     "(--allow-dangling places it anyway)",
					     e->corr);
		}
	}
	return 0;
}

/* Last node of stream range s launched before time t, or NONE32. */
static uint32_t last_launched_before(const struct builder *b, const struct rank_ctx *rc,
				     const struct graph_proc *s, int64_t t)
{
	uint32_t lo = 0, hi = s->n; /* first index with lts >= t */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (rc->lts[s->first + mid - rc->node_base] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	(void)b;
	return lo == 0 ? NONE32 : s->first + lo - 1;
}

static uint32_t first_launched_after(const struct rank_ctx *rc, const struct graph_proc *s,
				     int64_t t)
{
	uint32_t lo = 0, hi = s->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (rc->lts[s->first + mid - rc->node_base] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == s->n ? NONE32 : s->first + lo;
}

/* The task on a stream other than processor `not` (NONE32: on any stream)
 * launched last before time t (by its launch call's start), or NONE32. */
static uint32_t last_launched_other(const struct builder *b, const struct rank_ctx *rc,
				    uint32_t not, int64_t t)
{
	uint32_t best = NONE32;
	for (size_t i = 0; i < rc->gpu_procs.n; i++) {
		const struct graph_proc *q = &b->w.procs.v[rc->gpu_procs.v[i]];
		uint32_t c;
		if (rc->gpu_procs.v[i] == not || !q->n)
			continue;
		c = last_launched_before(b, rc, q, t);
		if (c != NONE32 &&
		    (best == NONE32 || rc->lts[c - rc->node_base] > rc->lts[best - rc->node_base]))
			best = c;
	}
	return best;
}

static const struct graph_proc *stream_proc(const struct builder *b, const struct rank_ctx *rc,
					    int64_t stream)
{
	for (size_t i = 0; i < rc->gpu_procs.n; i++) {
		const struct graph_proc *p = &b->w.procs.v[rc->gpu_procs.v[i]];
		if (p->tid == stream)
			return p;
	}
	return NULL;
}

/* Last node (by end) of range p ending at or before t, or NONE32. */
static uint32_t last_ending_by(const struct builder *b, const struct graph_proc *p, int64_t t)
{
	uint32_t lo = 0, hi = p->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (node_end(b, p->first + mid) <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? NONE32 : p->first + lo - 1;
}

/* A blocking call cannot return before what it waited for finished: a
 * source that ends after the call returned (beyond the tolerance) is not
 * what it waited for, whatever the record says.  Dropped and counted. */
static int sync_edge(struct builder *b, uint32_t src, uint32_t call, int inferred)
{
	if (node_end(b, src) > node_end(b, call + 1) + b->o->sync_tol_ns) {
		b->w.stats.dropped_edges++;
		return 0;
	}
	return add_edge(b, src, call + 1, GE_SYNC | (inferred ? GE_INFERRED : 0));
}

/* Sync and event edges from cuda_sync records. Marks resolved calls. */
static int exact_syncs(struct builder *b, struct rank_ctx *rc, uint8_t *resolved)
{
	const struct kineto_trace *tr = rc->tr;

	for (size_t k = 0; k < tr->events.n; k++) {
		const struct kt_event *e = &tr->events.v[k];
		uint32_t call, rec;
		int used = 0;

		if (e->kind != KT_CUDA_SYNC)
			continue;
		call = e->corr != KT_NO_ID ? imap_get(&rc->rt_by_corr, e->corr) : NONE32;
		rec = e->c != KT_NO_ID && e->c >= 0 ? imap_get(&rc->rt_by_corr, e->c) : NONE32;
		if (call == NONE32)
			goto next;
		switch (e->sync) {
		case KT_SYNC_STREAM_WAIT_EVENT: {
			const struct graph_proc *ws = stream_proc(b, rc, e->a);
			const struct graph_proc *ss = stream_proc(b, rc, e->b);
			uint32_t src, dst;
			if (!ws || !ss || rec == NONE32)
				break;
			src = last_launched_before(b, rc, ss, b->w.start_ns[rec]);
			dst = first_launched_after(rc, ws, b->w.start_ns[call]);
			if (src != NONE32 && dst != NONE32) {
				/* The waiting task cannot start before the recorded one ends. */
				if (node_end(b, src) > b->w.start_ns[dst] + rc->event_tol)
					b->w.stats.dropped_edges++;
				else if (add_edge(b, src, dst, GE_EVENT))
					return PRISM_ENOMEM;
				b->w.stats.waits_exact++;
				used = 1;
			}
			resolved[call - rc->node_base] = 1;
			break;
		}
		case KT_SYNC_EVENT:
		case KT_SYNC_STREAM: {
			int64_t sid = e->sync == KT_SYNC_EVENT ? e->b : (e->b >= 0 ? e->b : e->a);
			const struct graph_proc *ss = stream_proc(b, rc, sid);
			int64_t t = e->sync == KT_SYNC_EVENT && rec != NONE32 ? b->w.start_ns[rec]
									      : b->w.start_ns[call];
			uint32_t src;
			if (!(b->w.flags[call] & NF_BLOCKING) || !ss)
				break;
			if (e->sync == KT_SYNC_EVENT && rec == NONE32)
				break;
			src = last_launched_before(b, rc, ss, t);
			if (src != NONE32 && sync_edge(b, src, call, 0))
				return PRISM_ENOMEM;
			used = 1;
			resolved[call - rc->node_base] = 1;
			break;
		}
		case KT_SYNC_CONTEXT:
			if (!(b->w.flags[call] & NF_BLOCKING))
				break;
			for (size_t i = 0; i < rc->gpu_procs.n; i++) {
				uint32_t src = last_launched_before(
				    b, rc, &b->w.procs.v[rc->gpu_procs.v[i]], b->w.start_ns[call]);
				if (src != NONE32 && sync_edge(b, src, call, 0))
					return PRISM_ENOMEM;
			}
			used = 1;
			resolved[call - rc->node_base] = 1;
			break;
		default:
			break;
		}
	next:
		if (used)
			b->w.stats.cuda_sync_used++;
		else
			b->w.stats.cuda_sync_unused++;
	}
	return 0;
}

/* Blocking calls without a cuda_sync record.  A cudaEventSynchronize
 * after a cudaEventRecord on its thread waits, by the host's call order,
 * for the task launched last before that record (on any stream: the
 * record's stream is not traced) -- not for what its stream ran after the
 * record; where that task did not end by the call's return, or no record
 * is traced, as a stream synchronise. */
static int other_syncs(struct builder *b, struct rank_ctx *rc, const uint8_t *resolved)
{
	uint32_t end = (uint32_t)b->w.n_nodes, proc = NONE32;
	int64_t rec_t = INT64_MIN;

	for (uint32_t u = rc->node_base; u < end; u++) {
		if (b->w.proc[u] != proc) {
			proc = b->w.proc[u];
			rec_t = INT64_MIN;
		}
		if (b->w.kind[u] == GN_RUNTIME && b->w.rtclass[u] == RT_EVENT_RECORD)
			rec_t = b->w.start_ns[u];
		if (b->w.kind[u] != GN_RUNTIME || !(b->w.flags[u] & NF_BLOCKING) ||
		    resolved[u - rc->node_base])
			continue;
		if (b->w.rtclass[u] == RT_EVENT_SYNC && b->o->infer_sync && rec_t != INT64_MIN) {
			uint32_t src = last_launched_other(b, rc, NONE32, rec_t);
			int64_t call_end = b->w.start_ns[u + 1] + b->w.dur_ns[u + 1];
			if (src != NONE32 && node_end(b, src) <= call_end + b->o->sync_tol_ns) {
				if (sync_edge(b, src, u, 1))
					return PRISM_ENOMEM;
				continue;
			}
		}
		if (b->w.rtclass[u] == RT_DEVICE_SYNC) {
			for (size_t i = 0; i < rc->gpu_procs.n; i++) {
				uint32_t src = last_launched_before(
				    b, rc, &b->w.procs.v[rc->gpu_procs.v[i]], b->w.start_ns[u]);
				if (src != NONE32 && sync_edge(b, src, u, 0))
					return PRISM_ENOMEM;
			}
		} else if (b->w.rtclass[u] == RT_STREAM_SYNC || b->w.rtclass[u] == RT_EVENT_SYNC) {
			/* Which stream?  The one whose last launched task finished
			 * while the call was blocked, closest to its return. */
			int64_t call_end = b->w.start_ns[u + 1] + b->w.dur_ns[u + 1];
			uint32_t best = NONE32;
			if (!b->o->infer_sync)
				continue;
			for (size_t i = 0; i < rc->gpu_procs.n; i++) {
				uint32_t c = last_launched_before(
				    b, rc, &b->w.procs.v[rc->gpu_procs.v[i]], b->w.start_ns[u]);
				int64_t ce;
				if (c == NONE32)
					continue;
				ce = node_end(b, c);
				if (ce > b->w.start_ns[u] && ce <= call_end + b->o->sync_tol_ns &&
				    (best == NONE32 || ce > node_end(b, best)))
					best = c;
			}
			if (best != NONE32) {
				if (sync_edge(b, best, u, 1))
					return PRISM_ENOMEM;
			} else {
				b->w.stats.sync_no_wait++;
			}
		} else {
			/* A blocking copy waits for its own GPU copy. */
			uint32_t g = b->w.corr[u] >= 0
					 ? imap_get(&rc->gpunode_by_corr, b->w.corr[u])
					 : NONE32;
			if (g != NONE32) {
				if (sync_edge(b, g, u, 0))
					return PRISM_ENOMEM;
			} else {
				b->w.stats.sync_no_wait++;
			}
		}
	}
	return 0;
}

/* The task on another stream of the rank's device that a task on stream p,
 * ready at `ready` and begun at xs, evidently waited for: one ending in
 * [xs + lo, xs + hi] and after `ready`, that began before xs (before
 * `ready` if held: it was already holding the GPU when the task became
 * ready).  The one ending nearest xs, or NONE32. */
static uint32_t cross_source(const struct builder *b, const struct rank_ctx *rc,
			     const struct graph_proc *p, int64_t ready, int64_t xs, int64_t lo,
			     int64_t hi, int held)
{
	uint32_t best = NONE32;
	int64_t best_d = 0;
	for (size_t j = 0; j < rc->gpu_procs.n; j++) {
		const struct graph_proc *q = &b->w.procs.v[rc->gpu_procs.v[j]];
		uint32_t c0, cand[2];
		if (q == p || !q->n)
			continue;
		/* ends within a stream are ordered: the last ending by xs and
		 * the one after it are the nearest on either side */
		c0 = last_ending_by(b, q, xs);
		cand[0] = c0;
		cand[1] = c0 == NONE32 ? q->first : c0 + 1;
		for (int k = 0; k < 2; k++) {
			uint32_t c = cand[k];
			int64_t ce, d;
			if (c == NONE32 || c >= q->first + q->n)
				continue;
			ce = node_end(b, c);
			d = ce > xs ? ce - xs : xs - ce;
			if (ce < xs + lo || ce > xs + hi || ce <= ready ||
			    b->w.start_ns[c] >= (held ? ready : xs))
				continue;
			if (best == NONE32 || d < best_d)
				best = c, best_d = d;
		}
	}
	return best;
}

/* When GPU task u of stream p could have started as far as its own stream
 * shows: its launch call's end, its stream's previous task's end; INT64_MIN
 * if it was launched before the window (nothing to explain). */
static int64_t stream_ready(const struct builder *b, const struct rank_ctx *rc,
			    const struct graph_proc *p, uint32_t u)
{
	int64_t ready;
	if (rc->lts[u - rc->node_base] == INT64_MIN)
		return INT64_MIN;
	ready = node_end(b, imap_get(&rc->rt_by_corr, b->w.corr[u]));
	if (u > p->first && node_end(b, u - 1) > ready)
		ready = node_end(b, u - 1);
	return ready;
}

/* A cross-stream wait found by the host's call order (call_waits). */
struct call_wait {
	uint32_t call; /* the cudaStreamWaitEvent node */
	uint32_t src;  /* the task the event recorded */
	uint32_t dst;  /* the first task launched after the wait */
};
typedef VEC(struct call_wait) call_wait_vec;

/*
 * Cross-stream waits from the host's call order.  A cudaStreamWaitEvent
 * makes the stream of the next task its thread launches wait for the
 * event, and the event stands for the work launched before its
 * cudaEventRecord: the task on another stream launched last before the
 * thread's latest cudaEventRecord since its previous wait (before the
 * wait itself where no record is traced -- five of the shared traces have
 * none).  The pair does not depend on when the awaited task ended, so a
 * wait that a full GPU delayed (the waiting task starting 120-135 us
 * after its source, behind a GEMM holding every SM) is found like any
 * other.  Up to CALL_WAITS_MAX waits before one launch each get their
 * pair.  0, or PRISM_ENOMEM.
 */
#define CALL_WAITS_MAX 8
static int call_waits(struct builder *b, struct rank_ctx *rc, call_wait_vec *out)
{
	for (size_t i = 0; i < rc->cpu_procs.n; i++) {
		const struct graph_proc *p = &b->w.procs.v[rc->cpu_procs.v[i]];
		int64_t rec_t = INT64_MIN, pend_t[CALL_WAITS_MAX];
		uint32_t pend[CALL_WAITS_MAX];
		size_t np = 0;
		for (uint32_t u = p->first; u < p->first + p->n; u++) {
			uint32_t dst;
			if (b->w.kind[u] != GN_RUNTIME)
				continue;
			if (b->w.rtclass[u] == RT_EVENT_RECORD) {
				rec_t = b->w.start_ns[u];
				continue;
			}
			if (b->w.rtclass[u] == RT_STREAM_WAIT) {
				if (np < CALL_WAITS_MAX) {
					pend[np] = u;
					pend_t[np++] =
					    rec_t != INT64_MIN ? rec_t : b->w.start_ns[u];
				}
				rec_t = INT64_MIN;
				continue;
			}
			if (!np || b->w.corr[u] < 0 ||
			    (dst = imap_get(&rc->gpunode_by_corr, b->w.corr[u])) == IMAP_NONE)
				continue;
			for (size_t k = 0; k < np; k++) {
				struct call_wait w = {pend[k], NONE32, dst};
				w.src = last_launched_other(b, rc, b->w.proc[dst], pend_t[k]);
				if (w.src != NONE32 && VEC_PUSH(*out, w))
					return build_nomem(b);
			}
			np = 0;
		}
	}
	return 0;
}

/* The call-order waits whose cudaStreamWaitEvent no cuda_sync record
 * resolved, as inferred event edges; a pair the timing contradicts (the
 * source ending more than the event tolerance after the waiting task
 * began) is a wrong guess and left out.  Both counted: `prism ingest`
 * says how many waits were paired by position.  0, or PRISM_ENOMEM. */
static int call_wait_edges(struct builder *b, const struct rank_ctx *rc, const call_wait_vec *waits,
			   const uint8_t *resolved)
{
	for (size_t k = 0; k < waits->n; k++) {
		const struct call_wait *w = &waits->v[k];
		if (resolved[w->call - rc->node_base])
			continue;
		if (node_end(b, w->src) > b->w.start_ns[w->dst] + rc->event_tol) {
			b->w.stats.waits_position_contradicted++;
			continue;
		}
		b->w.stats.waits_by_position++;
		if (add_edge(b, w->src, w->dst, GE_EVENT | GE_INFERRED))
			return PRISM_ENOMEM;
	}
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/*
 * The rank's event tolerance: o->event_tol_ns (10 us, set on A100
 * traces), or where the trace's own latency from a finished task to the
 * task that waited for it is longer, 1.5 x its median, at most 3 x
 * event_tol_ns.  Measured, first, on the waits the host's call order
 * shows (call_waits) whose waiting task was held back by its source
 * alone (its launch and its stream's previous task done before the
 * source ended): the delay from the source's end to its start.  A GPU
 * that runs steps behind its host launches nothing onto an idle stream,
 * so this does not depend on idle launches.  Where a rank has fewer than
 * 16 such waits, on the GPU tasks launched onto an idle stream (the
 * launch latency: V100 and MI300X traces start kernels 15-20 us after
 * their launch), as before.  The median, because some waits were also
 * held by a full GPU.  0, or PRISM_ENOMEM.
 */
#define EVENT_TOL_SAMPLES 16
static int event_tol_measured(struct builder *b, struct rank_ctx *rc, const call_wait_vec *waits)
{
	int64_t base = b->o->event_tol_ns, *lag;
	size_t n = 0, cap = b->w.n_nodes - rc->node_base;

	rc->event_tol = base;
	if (!b->o->event_tol_auto || !cap)
		return 0;
	if (!(lag = prism_malloc((cap > waits->n ? cap : waits->n) * sizeof(*lag))))
		return build_nomem(b);
	for (size_t k = 0; k < waits->n; k++) {
		const struct call_wait *w = &waits->v[k];
		const struct graph_proc *p = &b->w.procs.v[b->w.proc[w->dst]];
		int64_t se = node_end(b, w->src), ready = stream_ready(b, rc, p, w->dst);
		if (ready != INT64_MIN && ready < se && b->w.start_ns[w->dst] >= se)
			lag[n++] = b->w.start_ns[w->dst] - se;
	}
	if (n < EVENT_TOL_SAMPLES) {
		n = 0;
		for (size_t i = 0; i < rc->gpu_procs.n; i++) {
			const struct graph_proc *p = &b->w.procs.v[rc->gpu_procs.v[i]];
			for (uint32_t u = p->first; u < p->first + p->n; u++) {
				int64_t launch = rc->lts[u - rc->node_base], xs = b->w.start_ns[u];
				if (launch == INT64_MIN || xs < launch ||
				    (u > p->first && node_end(b, u - 1) > launch))
					continue;
				lag[n++] = xs - launch;
			}
		}
	}
	if (n >= EVENT_TOL_SAMPLES) {
		int64_t t;
		qsort(lag, n, sizeof(*lag), cmp_i64);
		t = lag[n / 2] + lag[n / 2] / 2;
		if (t > base)
			rc->event_tol = t < 3 * base ? t : 3 * base;
	}
	free(lag);
	return 0;
}

/* Per task of the rank, the latest end of its event sources from edges
 * edge_lo on (INT64_MIN: none); NULL when out of memory. */
static int64_t *event_ready(const struct builder *b, const struct rank_ctx *rc, size_t edge_lo)
{
	size_t n = b->w.n_nodes - rc->node_base;
	int64_t *r = prism_malloc((n ? n : 1) * sizeof(*r));
	if (!r)
		return NULL;
	for (size_t i = 0; i < n; i++)
		r[i] = INT64_MIN;
	for (size_t k = edge_lo; k < b->w.edges.n; k++) {
		const struct gw_edge *e = &b->w.edges.v[k];
		if (GE_KIND(e->kind) == GE_EVENT && node_end(b, e->src) > r[e->dst - rc->node_base])
			r[e->dst - rc->node_base] = node_end(b, e->src);
	}
	return r;
}

/* Cross-stream edges inferred from unexplained GPU start delays: a GPU
 * task that began more than event_tol after its launch call, its stream's
 * previous task and every event source it has so far (edges from edge_lo
 * on) gets an edge of kind `kind` from the task cross_source finds on
 * another stream ending in [start + lo, start + hi] (`held`: one
 * running since before the task was ready). Two uses, below. */
static int edges_from_delays(struct builder *b, struct rank_ctx *rc, size_t edge_lo, int64_t lo,
			     int64_t hi, int held, int kind)
{
	int64_t tol = rc->event_tol, *ev_ready = event_ready(b, rc, edge_lo);

	if (!ev_ready)
		return build_nomem(b);
	for (size_t i = 0; i < rc->gpu_procs.n; i++) {
		const struct graph_proc *p = &b->w.procs.v[rc->gpu_procs.v[i]];
		for (uint32_t u = p->first; u < p->first + p->n; u++) {
			int64_t ready = stream_ready(b, rc, p, u), xs = b->w.start_ns[u];
			uint32_t src;
			if (ready == INT64_MIN)
				continue;
			if (ev_ready[u - rc->node_base] > ready)
				ready = ev_ready[u - rc->node_base];
			if (xs - ready <= tol)
				continue;
			src = cross_source(b, rc, p, ready, xs, lo, hi, held);
			if (src != NONE32 && add_edge(b, src, u, kind | GE_INFERRED)) {
				free(ev_ready);
				return PRISM_ENOMEM;
			}
		}
	}
	free(ev_ready);
	return 0;
}

/* Event edges: the awaited task ended within event_tol of the start,
 * either side (tasks often begin a few us before the kernel they
 * evidently waited for ends). */
static int edges_from_events(struct builder *b, struct rank_ctx *rc, size_t edge_lo)
{
	return edges_from_delays(b, rc, edge_lo, -rc->event_tol, rc->event_tol, 0, GE_EVENT);
}

/* Shared-GPU edges: the task waited for the GPU if a task on another
 * stream, running since before it was ready, ended at most share_tail
 * after it began: a kernel that fills the GPU drains its last blocks while
 * the next kernel's first ones start. */
static int edges_from_shares(struct builder *b, struct rank_ctx *rc, size_t edge_lo)
{
	return edges_from_delays(b, rc, edge_lo, 0, b->o->share_tail_ns, 1, GE_SHARE);
}

/* Latest-ending node on another host thread of the rank that ends at most
 * thread_tol before time s (but not after it), or NONE32. */
static uint32_t thread_source(const struct builder *b, const struct rank_ctx *rc,
			      const struct graph_proc *p, int64_t s)
{
	uint32_t best = NONE32;
	for (size_t j = 0; j < rc->cpu_procs.n; j++) {
		const struct graph_proc *q = &b->w.procs.v[rc->cpu_procs.v[j]];
		uint32_t c;
		if (q == p)
			continue;
		c = last_ending_by(b, q, s);
		if (c != NONE32 && node_end(b, c) >= s - b->o->thread_tol_ns &&
		    (best == NONE32 || node_end(b, c) > node_end(b, best)))
			best = c;
	}
	return best;
}

/* Where no thread finished anything just before s: a thread of the rank
 * that was then inside a long CPU task begun at most wake_tol before s,
 * having ended its previous task after p went idle (at idle_from), woke p
 * (a forward thread in backward() wakes the autograd thread: the engine
 * takes its time to start); its last task that ended by s, or NONE32. */
static uint32_t thread_waker(const struct builder *b, const struct rank_ctx *rc,
			     const struct graph_proc *p, int64_t idle_from, int64_t s)
{
	uint32_t best = NONE32;
	for (size_t j = 0; j < rc->cpu_procs.n; j++) {
		const struct graph_proc *q = &b->w.procs.v[rc->cpu_procs.v[j]];
		uint32_t c;
		if (q == p)
			continue;
		c = last_ending_by(b, q, s);
		if (c == NONE32 || c + 1 >= q->first + q->n)
			continue;
		/* p idled from before c ended: c's thread woke it, not p's
		 * own work. */
		if (b->w.kind[c + 1] != GN_CPU || b->w.start_ns[c + 1] > s ||
		    node_end(b, c + 1) <= s || b->w.start_ns[c + 1] < s - b->o->wake_tol_ns ||
		    node_end(b, c) < idle_from)
			continue;
		if (best == NONE32 || node_end(b, c) > node_end(b, best))
			best = c;
	}
	return best;
}

/* A woken task: v on thread p, woken by task c of another thread, which
 * then ran the long CPU task c + 1 (thread_waker). */
struct wake {
	uint32_t v, c;
	const struct graph_proc *p;
};

/* Cross-thread edges: a thread that starts late, or resumes after an idle
 * gap no CPU op of its own covers, starts when another thread of the rank
 * finished something just before, or when another thread woke it
 * (thread_waker: the task keeps its whole wake-up lag, NF_WAKE).  The
 * waker's long task is then waiting for the woken thread (backward()
 * returns when the autograd thread is done): it becomes an idle gap, and
 * the waker's next task depends on the woken thread's last task that
 * ended before it (a join, also NF_WAKE). */
static int edges_from_threads(struct builder *b, struct rank_ctx *rc)
{
	int64_t rank_start = INT64_MAX;
	VEC(struct wake) wakes = {0};
	int rc_ = 0;

	for (size_t i = 0; i < rc->cpu_procs.n; i++) {
		const struct graph_proc *p = &b->w.procs.v[rc->cpu_procs.v[i]];
		if (p->n && b->w.start_ns[p->first] < rank_start)
			rank_start = b->w.start_ns[p->first];
	}
	for (size_t i = 0; i < rc->cpu_procs.n && !rc_; i++) {
		const struct graph_proc *p = &b->w.procs.v[rc->cpu_procs.v[i]];
		if (!p->n)
			continue;
		if (b->o->infer_threads &&
		    b->w.start_ns[p->first] - rank_start >= b->o->thread_gap_ns) {
			uint32_t src = thread_source(b, rc, p, b->w.start_ns[p->first]);
			if (src == NONE32 &&
			    (src = thread_waker(b, rc, p, INT64_MIN, b->w.start_ns[p->first])) !=
				NONE32) {
				struct wake w = {p->first, src, p};
				b->w.flags[p->first] |= NF_WAKE;
				if (VEC_PUSH(wakes, w))
					rc_ = PRISM_ENOMEM;
			}
			if (src != NONE32 && add_edge(b, src, p->first, GE_THREAD | GE_INFERRED))
				rc_ = PRISM_ENOMEM;
		}
		for (uint32_t u = p->first; u + 1 < p->first + p->n && !rc_; u++) {
			uint32_t src;
			if (!(b->w.flags[u] & NF_IDLE_GAP))
				continue;
			b->w.flags[u] &= (uint8_t)~NF_IDLE_GAP;
			if (b->w.dur_ns[u] < b->o->thread_gap_ns || !b->o->infer_threads)
				continue;
			src = thread_source(b, rc, p, b->w.start_ns[u + 1]);
			if (src == NONE32 && (src = thread_waker(b, rc, p, b->w.start_ns[u],
								 b->w.start_ns[u + 1])) != NONE32) {
				struct wake w = {u + 1, src, p};
				b->w.flags[u + 1] |= NF_WAKE;
				if (VEC_PUSH(wakes, w))
					rc_ = PRISM_ENOMEM;
			}
			if (src != NONE32) {
				b->w.flags[u] |= NF_IDLE_GAP;
				if (add_edge(b, src, u + 1, GE_THREAD | GE_INFERRED))
					rc_ = PRISM_ENOMEM;
			}
		}
	}
	/* Joins, once every thread's gaps are decided. */
	for (size_t k = 0; k < wakes.n && !rc_; k++) {
		const struct wake *w = &wakes.v[k];
		uint32_t x = w->c + 1, j;
		const struct graph_proc *q = &b->w.procs.v[b->w.proc[x]];
		if (x + 1 >= q->first + q->n || (b->w.flags[x] & NF_IDLE_GAP))
			continue;
		j = last_ending_by(b, w->p, node_end(b, x));
		if (j == NONE32 || j < w->v)
			continue;
		b->w.flags[x] |= NF_IDLE_GAP;
		b->w.flags[x + 1] |= NF_WAKE;
		if (add_edge(b, j, x + 1, GE_THREAD | GE_INFERRED))
			rc_ = PRISM_ENOMEM;
	}
	VEC_FREE(wakes);
	return rc_;
}

/* Split each blocking call's traced time into waiting and own cost. */
static void split_waits(struct builder *b, struct rank_ctx *rc, size_t edge_lo)
{
	for (size_t k = edge_lo; k < b->w.edges.n; k++) {
		const struct gw_edge *e = &b->w.edges.v[k];
		uint32_t v = e->dst; /* the wait node */
		int64_t f, wait, total;
		if (GE_KIND(e->kind) != GE_SYNC)
			continue;
		total = b->w.dur_ns[v] + b->w.wait_ns[v];
		f = node_end(b, e->src);
		wait = f - b->w.start_ns[v] + b->w.wait_ns[v]; /* measured from the call's start */
		(void)rc;
		if (wait < 0)
			wait = 0;
		if (wait > total)
			wait = total;
		if (wait > b->w.wait_ns[v]) {
			b->w.start_ns[v] += wait - b->w.wait_ns[v];
			b->w.wait_ns[v] = wait;
			b->w.dur_ns[v] = total - wait;
		}
	}
}

static int collectives(struct builder *b, struct rank_ctx *rc)
{
	const struct kineto_trace *tr = rc->tr;
	size_t first = b->w.colls.n;

	for (uint32_t u = rc->node_base; u < b->w.n_nodes; u++) {
		struct graph_coll c;
		const struct kt_comm *m;
		int kind;
		if (b->w.kind[u] != GN_COLL && b->w.kind[u] != GN_P2P)
			continue;
		memset(&c, 0, sizeof(c));
		c.bytes = -1;
		c.group_size = -1;
		kind = kernel_coll_kind(strtab_get(&b->w.st, b->w.name[u]));
		b->w.stats.coll_kernels[kind]++;
		m = b->hint.v[u] != NONE32 ? &tr->comms.v[b->hint.v[u]] : NULL;
		if (m) {
			int mk = m->coll ? coll_kind_of(strtab_get(&b->w.st, m->coll)) : GC_UNKNOWN;
			int64_t es =
			    m->dtype ? dtype_bytes(strtab_get(&b->w.st, m->dtype), DTYPE_COLL) : 0;
			int64_t ne = m->in_nelems >= 0 ? m->in_nelems : m->dims_nelems;
			if (mk != GC_UNKNOWN)
				kind = mk;
			if (es > 0 && ne >= 0 && ne <= INT64_MAX / es)
				c.bytes = ne * es;
			c.group_size = m->group_size;
			c.pg = m->pg_name;
			c.ranks = m->pg_ranks;
			c.dtype = m->dtype;
		}
		if (c.group_size < 0) {
			for (size_t i = 0; i < tr->pgs.n; i++)
				if (c.pg && tr->pgs.v[i].name == c.pg)
					c.group_size = tr->pgs.v[i].size;
		}
		if (c.group_size < 0 && tr->has_world)
			c.group_size = tr->world_size;
		c.kind = (uint8_t)kind;
		b->w.stats.colls[kind]++;
		if (gw_coll(&b->w, u, &c))
			return build_nomem(b);
	}
	/* Sequence numbers per process group, in launch order. */
	{
		size_t nc = b->w.colls.n - first;
		int64_t *t;
		int rc_;
		/* No collectives: colls.v may still be NULL (NULL + 0 is undefined). */
		if (nc == 0)
			return 0;
		t = prism_malloc(nc * sizeof(*t));
		if (!t)
			return build_nomem(b);
		for (size_t i = 0; i < nc; i++)
			t[i] = rc->lts[b->w.colls.v[first + i].node - rc->node_base];
		rc_ = graph_number_colls(b->w.colls.v + first, nc, t, NULL);
		free(t);
		if (rc_)
			return build_nomem(b);
	}
	return 0;
}

/* Pair the job's collectives across ranks by kind, size and group
 * (graph_pair_colls), their sequence numbers so far each rank's launch
 * order.  0, or PRISM_ENOMEM. */
static int pair_collectives(struct builder *b)
{
	size_t n = b->w.colls.n;
	uint32_t *rank;
	int rc;

	if (b->w.ranks.n < 2 || n == 0)
		return 0;
	if (!(rank = prism_malloc(n * sizeof(*rank))))
		return build_nomem(b);
	for (size_t i = 0; i < n; i++)
		rank[i] = b->w.procs.v[b->w.proc[b->w.colls.v[i].node]].rank;
	rc = graph_pair_colls(b->w.colls.v, n, rank);
	free(rank);
	return rc ? build_nomem(b) : 0;
}

static int cmp_thread(const void *a, const void *b, const struct kineto_trace *tr)
{
	const struct kt_thread *x = &tr->threads.v[*(const uint32_t *)a];
	const struct kt_thread *y = &tr->threads.v[*(const uint32_t *)b];
	if (x->gpu != y->gpu)
		return x->gpu < y->gpu ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

static int build_rank(struct builder *b, const struct kineto_trace *tr, uint32_t rank_ix)
{
	struct rank_ctx rc;
	uint32_t *order = NULL;
	size_t proc_base = b->w.procs.n;
	size_t *lo_of = NULL, *hi_of = NULL;
	uint32_t *proc_of = NULL; /* thread -> processor, or UINT32_MAX */
	uint8_t *resolved = NULL;
	call_wait_vec waits = {0};
	size_t edge_lo, it_lo;
	int rc_ = 0;

	memset(&rc, 0, sizeof(rc));
	rc.tr = tr;
	rc.rank_ix = rank_ix;
	rc.min_rt_corr = INT64_MAX;
	rc.node_base = (uint32_t)b->w.n_nodes;
	rc.nkeys = tr->events.n;
	rc.keys = prism_malloc((rc.nkeys ? rc.nkeys : 1) * sizeof(*rc.keys));
	order = prism_malloc((tr->threads.n ? tr->threads.n : 1) * sizeof(*order));
	proc_of = prism_malloc((tr->threads.n ? tr->threads.n : 1) * sizeof(*proc_of));
	lo_of = prism_calloc(tr->threads.n + 1, sizeof(*lo_of));
	hi_of = prism_calloc(tr->threads.n + 1, sizeof(*hi_of));
	if (!rc.keys || !order || !lo_of || !hi_of || !proc_of)
		goto oom;
	for (size_t t = 0; t < tr->threads.n; t++)
		proc_of[t] = NONE32;
	rc.proc_of = proc_of;
	for (size_t k = 0; k < rc.nkeys; k++) {
		const struct kt_event *e = &tr->events.v[k];
		rc.keys[k].thread = e->thread;
		rc.keys[k].ev = (uint32_t)k;
		rc.keys[k].ts = e->ts_ns;
		rc.keys[k].negdur = -e->dur_ns;
		if ((e->kind == KT_KERNEL || e->kind == KT_MEMCPY || e->kind == KT_MEMSET) &&
		    imap_put(&rc.gpu_by_corr, e->corr, (uint32_t)k, NULL))
			goto oom;
	}
	/* Bucket by thread (counting sort), then sort each thread's events. */
	{
		struct key *tmp = prism_malloc((rc.nkeys ? rc.nkeys : 1) * sizeof(*tmp));
		if (!tmp)
			goto oom;
		for (size_t k = 0; k < rc.nkeys; k++)
			hi_of[rc.keys[k].thread + 1]++;
		for (size_t t = 0; t < tr->threads.n; t++)
			hi_of[t + 1] += hi_of[t];
		for (size_t t = 0; t <= tr->threads.n; t++)
			lo_of[t] = hi_of[t];
		for (size_t k = 0; k < rc.nkeys; k++)
			tmp[hi_of[rc.keys[k].thread]++] = rc.keys[k];
		free(rc.keys);
		rc.keys = tmp;
		for (size_t t = 0; t < tr->threads.n; t++)
			qsort(rc.keys + lo_of[t], hi_of[t] - lo_of[t], sizeof(*rc.keys), cmp_key);
	}
	/* Processors in a stable order: host threads, then streams, by id. */
	for (uint32_t i = 0; i < tr->threads.n; i++)
		order[i] = i;
	for (size_t i = 1; i < tr->threads.n; i++) /* insertion sort: few threads */
		for (size_t j = i; j > 0 && cmp_thread(&order[j - 1], &order[j], tr) > 0; j--) {
			uint32_t x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	for (size_t oi = 0; oi < tr->threads.n; oi++) {
		uint32_t t = order[oi];
		const struct kt_thread *th = &tr->threads.v[t];
		struct graph_proc p = {rank_ix, th->gpu, th->pid, th->tid, (uint32_t)b->w.n_nodes,
				       0};
		size_t lo = lo_of[t], hi = hi_of[t];
		int has_work = 0;
		for (size_t k = lo; k < hi && !has_work; k++) {
			int kd = ev_at(&rc, k)->kind;
			has_work = th->gpu ? (kd == KT_KERNEL || kd == KT_MEMCPY || kd == KT_MEMSET)
					   : kd == KT_RUNTIME;
		}
		if (!has_work) {
			if (!th->gpu)
				b->w.stats.idle_threads++;
			continue;
		}
		if (VEC_PUSH(b->w.procs, p))
			goto oom;
		proc_of[t] = (uint32_t)(b->w.procs.n - 1);
		if (th->gpu) {
			/* Streams after all host threads: launches must be known. */
			continue;
		}
		if ((rc_ = build_host_thread(b, &rc, lo, hi, (uint32_t)(b->w.procs.n - 1))))
			goto out;
		b->w.procs.v[b->w.procs.n - 1].n =
		    (uint32_t)(b->w.n_nodes - b->w.procs.v[b->w.procs.n - 1].first);
		if (VEC_PUSH(rc.cpu_procs, (uint32_t)(b->w.procs.n - 1)))
			goto oom;
	}
	for (size_t pi = proc_base; pi < b->w.procs.n; pi++) {
		struct graph_proc *p = &b->w.procs.v[pi];
		uint32_t t = NONE32;
		if (!p->gpu)
			continue;
		for (uint32_t i = 0; i < tr->threads.n; i++)
			if (tr->threads.v[i].gpu && tr->threads.v[i].pid == p->pid &&
			    tr->threads.v[i].tid == p->tid)
				t = i;
		p->first = (uint32_t)b->w.n_nodes;
		if ((rc_ = build_stream(b, &rc, lo_of[t], hi_of[t], (uint32_t)pi)))
			goto out;
		p->n = (uint32_t)(b->w.n_nodes - p->first);
		if (VEC_PUSH(rc.gpu_procs, (uint32_t)pi))
			goto oom;
	}
	/* Launch start of every GPU node of this rank. */
	rc.lts = prism_malloc(((b->w.n_nodes - rc.node_base) ? (b->w.n_nodes - rc.node_base) : 1) *
			      sizeof(*rc.lts));
	resolved = prism_calloc((b->w.n_nodes - rc.node_base) + 1, 1);
	if (!rc.lts || !resolved)
		goto oom;
	for (uint32_t u = rc.node_base; u < b->w.n_nodes; u++) {
		uint32_t call =
		    b->w.kind[u] >= GN_KERNEL ? imap_get(&rc.rt_by_corr, b->w.corr[u]) : NONE32;
		rc.lts[u - rc.node_base] = call != NONE32 ? b->w.start_ns[call] : INT64_MIN;
	}
	for (uint32_t u = rc.node_base; u < b->w.n_nodes; u++) {
		if (b->w.kind[u] == GN_RUNTIME && !b->launched.v[u] &&
		    (b->w.rtclass[u] == RT_LAUNCH || b->w.rtclass[u] == RT_GRAPH_LAUNCH ||
		     b->w.rtclass[u] == RT_MEMCPY || b->w.rtclass[u] == RT_MEMCPY_SYNC ||
		     b->w.rtclass[u] == RT_MEMSET))
			b->w.stats.launch_no_gpu++;
	}
	if ((b->o->infer_events && (rc_ = call_waits(b, &rc, &waits))) ||
	    (rc_ = event_tol_measured(b, &rc, &waits)))
		goto out;
	edge_lo = b->w.edges.n;
	rc.nsync = tr->kind_counts[KT_CUDA_SYNC];
	if ((rc_ = exact_syncs(b, &rc, resolved)) || (rc_ = other_syncs(b, &rc, resolved)))
		goto out;
	split_waits(b, &rc, edge_lo);
	if ((rc_ = call_wait_edges(b, &rc, &waits, resolved)))
		goto out;
	if (rc.nsync == 0 && b->o->infer_events && (rc_ = edges_from_events(b, &rc, edge_lo)))
		goto out;
	if (b->o->infer_share && (rc_ = edges_from_shares(b, &rc, edge_lo)))
		goto out;
	it_lo = b->w.iters.n;
	if ((rc_ = edges_from_threads(b, &rc)) || (rc_ = build_iterations(b, &rc)) ||
	    (rc_ = build_annotations(b, &rc, it_lo)) || (rc_ = collectives(b, &rc)))
		goto out;
	b->w.stats.annotations += tr->kind_counts[KT_CPU_OP] + tr->kind_counts[KT_USER_ANN] +
				  tr->kind_counts[KT_PY_FUNC] + tr->kind_counts[KT_GPU_ANN];
	b->w.stats.other_events += tr->counts[KT_N_EVENTS] - tr->counts[KT_N_KEPT];
	goto out;
oom:
	rc_ = build_nomem(b);
out:
	free(rc.keys);
	free(order);
	free(lo_of);
	free(hi_of);
	free(proc_of);
	free(resolved);
	free(rc.lts);
	imap_release(&rc.rt_by_corr);
	imap_release(&rc.gpu_by_corr);
	imap_release(&rc.gpunode_by_corr);
	VEC_FREE(rc.cpu_procs);
	VEC_FREE(rc.gpu_procs);
	VEC_FREE(waits);
	return rc_;
}

/*
 * The graph: order edges along each processor, time 0 at the job's
 * earliest event, rows sorted and de-duplicated (the writer); then from
 * the finished edges the counts and each task's start lag.
 */
static int finish(struct builder *b, struct graph **out)
{
	struct gw *w = &b->w;
	struct graph *g;
	int64_t t0 = INT64_MAX, *ready;
	int rc;

	if (gw_order(w, NULL))
		return build_nomem(b);
	for (size_t u = 0; u < w->n_nodes; u++)
		if (w->start_ns[u] < t0)
			t0 = w->start_ns[u];
	for (size_t i = 0; i < w->iters.n; i++)
		if (w->iters.v[i].start_ns < t0)
			t0 = w->iters.v[i].start_ns;
	if (t0 == INT64_MAX)
		t0 = 0;
	/* Every event lies within +-PRISM_TIME_MAX, so these differences fit;
	 * the graph's times must also end within PRISM_TIME_MAX of t0. */
	for (size_t u = 0; u < w->n_nodes; u++) {
		int64_t rel = w->start_ns[u] - t0;
		if (w->dur_ns[u] > PRISM_TIME_MAX - rel ||
		    w->wait_ns[u] > PRISM_TIME_MAX - rel - w->dur_ns[u])
			return prism_err_set(
			    b->err, PRISM_ELIMIT,
			    "the trace spans more than %" PRId64
			    " ns (146 years): it starts at %" PRId64
			    " ns and '%.60s' starting at %" PRId64 " ns ends later",
			    PRISM_TIME_MAX, t0, strtab_get(&w->st, w->name[u]), w->start_ns[u]);
	}
	for (size_t i = 0; i < w->iters.n; i++)
		if (w->iters.v[i].dur_ns > PRISM_TIME_MAX - (w->iters.v[i].start_ns - t0))
			return prism_err_set(b->err, PRISM_ELIMIT,
					     "the trace spans more than %" PRId64
					     " ns (from %" PRId64 " ns to step %" PRId64 ")",
					     PRISM_TIME_MAX, t0, w->iters.v[i].step);
	for (size_t u = 0; u < w->n_nodes; u++)
		w->start_ns[u] -= t0;
	for (size_t i = 0; i < w->iters.n; i++)
		w->iters.v[i].start_ns -= t0;
	w->t0_ns = t0;
	/* Rows sorted by target; of equal edges the first (exact) kept. */
	if ((rc = gw_finish(w, NULL, GW_SORT, &g)))
		return rc == PRISM_ELIMIT
			   ? prism_err_set(b->err, PRISM_ELIMIT, "more than 2^32 graph edges")
			   : build_nomem(b);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		g->stats.nodes[g->kind[u]]++;
	for (uint32_t e = 0; e < g->n_edges; e++)
		if (g->out_kind[e] & GE_INFERRED)
			g->stats.inferred[GE_KIND(g->out_kind[e])]++;
		else
			g->stats.edges[GE_KIND(g->out_kind[e])]++;
	/* Start lag: how long after its last dependency finished a task began
	 * in the trace.  Up to the cap it is latency the simulator keeps
	 * (launch, wake-up); beyond, waiting on something the trace does not
	 * show, which is left to show up as replay error. */
	if (!(ready = prism_malloc(((size_t)g->n_nodes + 1) * sizeof(*ready)))) {
		graph_free(g);
		return build_nomem(b);
	}
	/* A woken task's lag runs from what woke it, not from the idle gap
	 * before it (edits shorten that gap to nothing). */
	graph_ready(g, GRAPH_READY_WAKE, ready, NULL);
	g->stats.lag_cap_ns = b->o->lag_cap_ns;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		int64_t lag = ready[u] == INT64_MIN ? 0 : g->start_ns[u] - ready[u];
		if (g->kind[u] == GN_WAIT || (g->flags[u] & NF_ANCHORED) || lag < 0)
			lag = 0; /* a wait node starts where its waiting ended; an
				  * anchored task at its traced start */
		if (lag > b->o->lag_cap_ns && (g->flags[u] & NF_WAKE)) {
			/* Woken by another thread: the wake-up (the autograd
			 * engine starting) is kept whole. */
		} else if (lag > b->o->lag_cap_ns && (g->flags[u] & NF_STAGED)) {
			/* A pageable copy: the calling thread staged its data
			 * before the DMA began; it starts where it ran. */
		} else if (lag > b->o->lag_cap_ns && (g->flags[u] & NF_GRAPH)) {
			/* A CUDA graph's task: what ran before it inside the
			 * graph (host, event-wait or unreported kernel nodes) is
			 * the graph's own work, kept whole. */
			g->stats.graph_gaps++;
			g->stats.graph_gap_ns = prism_add_sat(g->stats.graph_gap_ns, lag);
		} else if (lag > b->o->lag_cap_ns) {
			g->stats.lag_capped++;
			g->stats.lag_capped_ns =
			    prism_add_sat(g->stats.lag_capped_ns, lag - b->o->lag_cap_ns);
			lag = b->o->lag_cap_ns;
		}
		g->lag_ns[u] = lag;
	}
	/* The idle gap before a woken task is its wait, which the task's lag
	 * from its waker now carries: the gap takes no time. */
	for (uint32_t u = 1; u < g->n_nodes; u++)
		if ((g->flags[u] & NF_WAKE) && g->proc[u - 1] == g->proc[u] &&
		    (g->flags[u - 1] & NF_IDLE_GAP))
			g->dur_ns[u - 1] = 0;
	free(ready);
	{
		/* Recorded dependencies that contradict each other (GPU work that
		 * ran before its launch, a stream out of launch order) can close a
		 * cycle: such input cannot be simulated. */
		struct prism_err why;
		prism_err_clear(&why);
		if (graph_acyclic(g, &why) != 0) {
			graph_free(g);
			return prism_err_set(b->err, PRISM_EFORMAT,
					     "inconsistent trace: its recorded dependencies "
					     "contradict its timing (%s)",
					     why.msg);
		}
	}
	*out = g;
	return 0;
}

static int cmp_rank(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

int build_graph(const struct kineto_trace *traces, size_t n, struct strtab *st,
		const struct build_opts *o, struct graph **out, struct prism_err *err)
{
	struct builder b;
	int64_t(*order)[2] = NULL;
	int rc = 0;

	*out = NULL;
	memset(&b, 0, sizeof(b));
	b.o = o;
	b.err = err;
	order = prism_malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	gw_init_move(&b.w, st);
	{
		/* Room for every task at once, at most: per rank three per
		 * runtime call (the CPU work before it, the call, its wait),
		 * two per CPU op (an AccumulateGrad split out of the work
		 * around it, and what came before), one per GPU task and per
		 * thread (the work after its last call).  Columns grown by
		 * doubling would leave their old copies in the heap; what is
		 * never written costs no memory; without the room the writer
		 * grows as it goes. */
		uint64_t most = 0;
		for (size_t i = 0; i < n; i++) {
			const uint64_t *k = traces[i].kind_counts;
			most += 3 * k[KT_RUNTIME] + 2 * k[KT_CPU_OP] + k[KT_KERNEL] + k[KT_MEMCPY] +
				k[KT_MEMSET] + traces[i].threads.n;
		}
		if (most < b.w.max_nodes)
			gw_reserve(&b.w, (size_t)most);
	}
	/* Files that name no rank take the lowest ranks no file claims, in
	 * command-line order. */
	for (size_t i = 0, next = 0; i < n; i++) {
		int taken = 1;
		order[i][1] = (int64_t)i;
		if (traces[i].has_rank) {
			order[i][0] = traces[i].rank;
			continue;
		}
		while (taken) {
			taken = 0;
			for (size_t j = 0; j < n; j++)
				if (traces[j].has_rank && traces[j].rank == (int64_t)next)
					taken = 1;
			if (taken)
				next++;
		}
		order[i][0] = (int64_t)next++;
	}
	qsort(order, n, sizeof(*order), cmp_rank);
	for (size_t i = 0; i < n; i++) {
		const struct kineto_trace *tr = &traces[order[i][1]];
		struct graph_rank r;
		memset(&r, 0, sizeof(r));
		r.rank = order[i][0];
		r.world_size = tr->has_world ? tr->world_size : 0;
		r.device = tr->device_name;
		r.device_mem = tr->device_mem;
		r.json_bytes = tr->json_bytes;
		r.n_events = tr->counts[KT_N_EVENTS];
		r.n_complete = tr->counts[KT_N_X];
		r.n_instant = tr->counts[KT_N_INSTANT];
		r.n_flow = tr->counts[KT_N_FLOW_S] + tr->counts[KT_N_FLOW_F];
		r.n_meta = tr->counts[KT_N_META];
		r.n_cuda_sync = tr->kind_counts[KT_CUDA_SYNC];
		if (i > 0 && order[i][0] == order[i - 1][0]) {
			rc = prism_err_set(err, PRISM_EFORMAT,
					   "%s: rank %" PRId64 " is also the rank of %s "
					   "(give each file its rank with --rank)",
					   tr->path, order[i][0], traces[order[i - 1][1]].path);
			goto out;
		}
		if (strtab_intern(&b.w.st, tr->path, strlen(tr->path), &r.path) ||
		    gw_rank(&b.w, &r)) {
			rc = build_nomem(&b);
			goto out;
		}
		if ((rc = build_rank(&b, tr, (uint32_t)i)))
			goto out;
	}
	/* CPU ops alone (a CPU-only run, or an accelerator whose work Kineto
	 * records as something else) leave nothing to simulate: say so
	 * rather than predict 0 ms. */
	if (b.w.n_nodes == 0) {
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s: no GPU kernels, copies or runtime calls (cuda_runtime, "
				   "kernel, gpu_memcpy events): nothing to simulate -- a CPU-only "
				   "trace, or another accelerator's",
				   n ? traces[order[0][1]].path : "the job");
		goto out;
	}
	if ((rc = pair_collectives(&b)))
		goto out;
	rc = finish(&b, out);
out:
	free(order);
	gw_release(&b.w);
	VEC_FREE(b.hint);
	VEC_FREE(b.launched);
	VEC_FREE(b.rtclass_of);
	return rc;
}
