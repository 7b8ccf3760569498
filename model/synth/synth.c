/* synth.c - a GPT training run's execution graph from its shape and layout. */
#include "synth.h"
#include "synth_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "desc.h"
#include "kperf.h"
#include "vec.h"

static const int64_t stream_id[S_N] = {7, 13, 21, 22, 23, 24, 25};

void synth_in_default(struct synth_in *in)
{
	memset(in, 0, sizeof(*in));
	layout_default(&in->lay);
	in->steps = 2;
	/* The kernel model (kperf.h) times every kernel; each class's line
	 * starts as the identity and calibration fits it. */
	for (int c = 0; c < KC_NCLASSES; c++) {
		in->cost[c].by_flops = cost_compute_bound(c);
		in->cost[c].eff = 1;
		in->cost[c].overhead_s = 0;
		in->scale[c] = 1;
	}
	in->comm_eff = 1.0;
	in->cpu_op_s = 10e-6;
	in->launch_s = 5e-6;
	in->gpu_lag_s = 1e-6;
	in->event_s = 2e-6;
}

static int64_t ns(double s)
{
	/* Held to 0..PRISM_TIME_MAX: a cost model's 1e30 s becomes a time the
	 * simulator refuses, not a wrapped negative one. */
	return prism_ns_round(s * 1e9);
}

uint32_t se_intern(struct ctx *c, const char *s)
{
	uint32_t id = 0;
	if (strtab_intern(&c->em.st, s, strlen(s), &id))
		c->oom = 1;
	return id;
}

static uint32_t add_node(struct ctx *c, int r, uint32_t proc, uint8_t kind, uint32_t name,
			 double seconds)
{
	struct snode n;
	memset(&n, 0, sizeof(n));
	n.dur = ns(seconds);
	n.corr = -1;
	n.proc = proc;
	n.name = name;
	n.coll = NONE32;
	n.layer = c->rk[r].layer;
	n.mb = c->rk[r].mb;
	n.phase = c->rk[r].phase;
	n.iter = c->sc.step;
	n.kind = kind;
	/* synth_check's estimate is a lower bound: this holds the rest. */
	if (c->em.nodes.n >= GRAPH_MAX_TASKS)
		c->oom = SYNTH_TOO_BIG;
	else if (VEC_PUSH(c->em.nodes, n))
		c->oom = 1;
	return c->em.nodes.n ? (uint32_t)(c->em.nodes.n - 1) : 0;
}

static void add_edge(struct ctx *c, uint32_t src, uint32_t dst, uint8_t kind)
{
	struct sedge e = {src, dst, kind};
	if (VEC_PUSH(c->em.edges, e))
		c->oom = 1;
}

static uint32_t host_call(struct ctx *c, int r, uint32_t name, int rtclass, double seconds)
{
	uint32_t u = add_node(c, r, c->rk[r].host, GN_RUNTIME, name, seconds);
	if (c->oom)
		return u;
	c->em.nodes.v[u].rtclass = (uint8_t)rtclass;
	c->em.nodes.v[u].corr = c->em.next_corr++;
	return u;
}

/* Node u was launched by the op se_record_op() set. */
static void set_op(struct ctx *c, uint32_t u)
{
	c->em.nodes.v[u].op = c->em.op;
}

/*
 * The op that launches the next kernel, with the shapes a profiler records
 * for it (record_shapes=True: "Input Dims", "Input type"), so that an edit
 * of the written trace can re-time the kernel from its shape (edit.h):
 * key (its kind and numbers) names it, fmt() writes its name, dims and
 * types (JSON arrays as Kineto writes them) the first time it is seen.
 * se_launch() gives it to the kernel and its launch call (whose CPU work the
 * trace writer names after it, timeline.h).
 * A build has a few dozen distinct ops and a million kernels: each is
 * formatted and interned once.
 */
void se_record_op(struct ctx *c, const double key[OPKEY], se_op_fmt fmt)
{
	uint64_t h = 1469598103934665603u;
	uint32_t slot;
	struct oprec rec;
	const char *op;
	char dims[320], types[160];

	if (c->dry || c->in->no_shapes)
		return;
	for (int i = 0; i < OPKEY; i++) {
		uint64_t bits;
		memcpy(&bits, &key[i], sizeof(bits));
		h = (h ^ bits) * 1099511628211u;
	}
	/* Integral doubles have zero low bits: the slot from the high ones. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdu;
	slot = (uint32_t)(h >> 56) % OPMEMO;
	for (int probe = 0; probe < OPMEMO; probe++, slot = (slot + 1) % OPMEMO) {
		struct opmemo *m = &c->em.memo[slot];
		if (m->rec && memcmp(m->key, key, sizeof(m->key)) == 0) {
			c->em.op = m->rec;
			return;
		}
		if (!m->rec)
			break;
	}
	fmt(key, &op, dims, sizeof(dims), types, sizeof(types));
	if (!c->em.ops.n) {
		struct oprec none = {0, 0, 0};
		if (VEC_PUSH(c->em.ops, none))
			c->oom = 1;
	}
	rec.op = se_intern(c, op);
	rec.dims = se_intern(c, dims);
	rec.types = se_intern(c, types);
	if (c->oom || VEC_PUSH(c->em.ops, rec)) {
		c->oom = 1;
		return;
	}
	c->em.op = (uint32_t)(c->em.ops.n - 1);
	if (!c->em.memo[slot].rec) { /* a full memo formats again: still right */
		memcpy(c->em.memo[slot].key, key, sizeof(c->em.memo[slot].key));
		c->em.memo[slot].rec = c->em.op;
	}
}

/* A profiler's name for an element of dtype (cost_dtype reads it back). */
static const char *torch_type(int dtype)
{
	switch (dtype) {
	case HW_FP32:
	case HW_TF32:
		return "float";
	case HW_FP16:
		return "c10::Half";
	case HW_FP8:
	case HW_FP4:
		return "c10::Float8_e4m3fn";
	default:
		return "c10::BFloat16";
	}
}

/* Launch GPU task `name` of `seconds` on stream st; coll: a collective
 * entry to attach, or NULL. */
uint32_t se_launch(struct ctx *c, int r, int st, uint8_t kind, const char *name, double seconds,
		   const struct graph_coll *coll)
{
	const struct synth_in *in = c->in;
	struct rankst *k = &c->rk[r];
	uint32_t call, u, proc = k->stream[st];

	if (c->dry) {
		if (kind == GN_KERNEL)
			c->dry_s += seconds;
		return 0;
	}
	if (in->cpu_op_s > 0)
		add_node(c, r, k->host, GN_CPU, c->em.n_cpu, in->cpu_op_s);
	call = host_call(c, r, c->em.n_launch, RT_LAUNCH, in->launch_s);
	u = add_node(c, r, proc, kind, se_intern(c, name), seconds);
	if (c->oom)
		return u;
	if (c->em.op) {
		set_op(c, call);
		set_op(c, u);
		c->em.op = 0;
	}
	c->em.nodes.v[u].corr = c->em.nodes.v[call].corr;
	c->em.nodes.v[u].lag = ns(in->gpu_lag_s);
	add_edge(c, call, u, GE_LAUNCH);
	/* Event waits issued on this stream since its last task. */
	for (size_t i = 0; i < c->em.pend.n;) {
		if (c->em.pend.v[i].proc == proc) {
			add_edge(c, c->em.pend.v[i].src, u, GE_EVENT);
			c->em.pend.v[i] = c->em.pend.v[--c->em.pend.n];
		} else {
			i++;
		}
	}
	if (coll) {
		struct graph_coll x = *coll;
		x.node = u;
		c->em.nodes.v[u].coll = (uint32_t)c->em.colls.n;
		if (VEC_PUSH(c->em.colls, x))
			c->oom = 1;
	}
	k->last[st] = u;
	c->tally.kernels++;
	return u;
}

/* Stream `to` waits for what stream `from` has done so far. */
void se_event_wait(struct ctx *c, int r, int from, int to)
{
	struct rankst *k = &c->rk[r];
	struct pending p;
	uint32_t rec, w;

	if (c->dry)
		return;
	rec = host_call(c, r, c->em.n_record, RT_EVENT_RECORD, c->in->event_s);
	w = host_call(c, r, c->em.n_wait, RT_STREAM_WAIT, c->in->event_s);
	if (k->last[from] == NONE32)
		return;
	p.proc = k->stream[to];
	p.src = k->last[from];
	p.wait = w;
	p.record = rec;
	p.on_proc = k->stream[from];
	if (VEC_PUSH(c->em.pend, p) || VEC_PUSH(c->em.waits, p))
		c->oom = 1;
}

/* Stream `to` waits for task `src` of stream `from` (launched earlier). */
void se_event_wait_task(struct ctx *c, int r, uint32_t src, int from, int to)
{
	struct rankst *k = &c->rk[r];
	struct pending p;
	uint32_t rec, w;

	if (c->dry || src == NONE32)
		return;
	rec = host_call(c, r, c->em.n_record, RT_EVENT_RECORD, c->in->event_s);
	w = host_call(c, r, c->em.n_wait, RT_STREAM_WAIT, c->in->event_s);
	p.proc = k->stream[to];
	p.src = src;
	p.wait = w;
	p.record = rec;
	p.on_proc = k->stream[from];
	if (VEC_PUSH(c->em.pend, p) || VEC_PUSH(c->em.waits, p))
		c->oom = 1;
}

/* The memory-bound kind of a memory-bound kernel's class (cost_mem_kind;
 * elementwise for any other class passed here). */
static int membound_kind(int cls)
{
	int k = cost_mem_kind(cls);
	return k >= 0 ? k : HW_MEM_ELEMENTWISE;
}

/*
 * Time of a kernel of class cls doing `flops` and moving `bytes`, whose
 * kernel-model time is `model_s` (kperf.h): the kernel database's where it
 * has the kernel, else the class's line over the model's time; times the
 * class's scale.  dtype: the kernel's (for the database).
 */
static double ktime(struct ctx *c, int cls, int dtype, double flops, double bytes, double model_s)
{
	const struct synth_in *in = c->in;
	const struct calib_class *k = &in->cost[cls];
	double e = k->eff > 0 ? k->eff : 1, t;
	int how = KDB_NONE;
	if (c->dry)
		return (k->overhead_s + model_s / e) * in->scale[cls];
	if (cls == KC_GEMM || cls == KC_ATTENTION)
		c->tally.flops += flops;
	if (c->kdb_gpu >= 0)
		how = kdb_time(in->kdb, c->kdb_gpu, cls, dtype, k->by_flops ? flops : bytes, &t);
	c->tally.kdb_hits[how]++;
	if (how != KDB_NONE)
		return t * in->scale[cls];
	return (k->overhead_s + model_s / e) * in->scale[cls];
}

/* A memory-bound kernel's op: one bf16 tensor of bytes / 4 values (key:
 * 1, bytes). */
static void mem_op_fmt(const double *key, const char **op, char *dims, size_t nd, char *types,
		       size_t nt)
{
	*op = "aten::op";
	snprintf(dims, nd, "[[%.0f]]", key[1] / 4);
	snprintf(types, nt, "[\"c10::BFloat16\"]");
}

/* A memory-bound kernel of class cls moving `bytes`.  Its op records one
 * bf16 tensor of bytes / 4 values: read and written, as cost_work()
 * counts an op's traffic (its inputs and an output the size of the
 * first), that is the kernel's bytes (for a kernel reading one tensor and
 * writing one, that tensor). */
void sl_kernel(struct ctx *c, int r, int cls, const char *name, double bytes)
{
	double t = ktime(c, cls, -1, 0, bytes, kperf_mem_s(c->in->hw, membound_kind(cls), bytes));
	double key[OPKEY] = {1, bytes};

	se_record_op(c, key, mem_op_fmt);
	se_launch(c, r, S_COMPUTE, GN_KERNEL, name, t, NULL);
}

/* A GEMM's op, C = A B as aten::mm [M, K] x [K, N], or aten::bmm with the
 * batch (key: 2, dtype, b, m, n, k). */
static void gemm_op_fmt(const double *key, const char **op, char *dims, size_t nd, char *types,
			size_t nt)
{
	const char *ty = torch_type((int)key[1]);
	double b = key[2], m = key[3], n = key[4], k = key[5];
	*op = b == 1 ? "aten::mm" : "aten::bmm";
	if (b == 1)
		snprintf(dims, nd, "[[%.0f, %.0f], [%.0f, %.0f]]", m, k, k, n);
	else
		snprintf(dims, nd, "[[%.0f, %.0f, %.0f], [%.0f, %.0f, %.0f]]", b, m, k, b, k, n);
	snprintf(types, nt, "[\"%s\", \"%s\"]", ty, ty);
}

/* A GEMM of batch b, m x k times k x n, in dtype. */
static void bgemm(struct ctx *c, int r, const char *name, int dtype, double b, double m, double n,
		  double k)
{
	double es = kperf_elem_bytes(dtype);
	double t = ktime(c, KC_GEMM, dtype, b * llm_gemm_flops(m, n, k),
			 b * (es * (m * k + k * n) + 2 * m * n),
			 kperf_gemm_s(c->in->hw, dtype, b, m, n, k));
	double key[OPKEY] = {2, dtype, b, m, n, k};

	se_record_op(c, key, gemm_op_fmt);
	se_launch(c, r, S_COMPUTE, GN_KERNEL, name, t, NULL);
}

static void gemm(struct ctx *c, int r, const char *name, double m, double n, double k)
{
	bgemm(c, r, name, c->in->lay.dtype, 1, m, n, k);
}

/* A collective of kind on bytes over group g, on stream st, in process
 * group pg (its sequence numbered per rank and group). */
void se_collective(struct ctx *c, int r, int st, int kind, const char *kname, double bytes,
		   struct comm_group g, const char *pg)
{
	struct graph_coll x;
	struct comm_est e;
	double t = 0;
	char buf[64];
	uint32_t pgid;

	if (c->dry)
		return;
	memset(&x, 0, sizeof(x));
	if (!c->in->bare &&
	    comm_time(c->in->hw, kind, bytes, g, c->in->comm_eff, COMM_AUTO, &e) == 0)
		t = e.time_s;
	pgid = se_intern(c, pg);
	x.kind = (uint8_t)kind;
	x.bytes = bytes < 9e18 ? (int64_t)bytes : INT64_MAX;
	x.group_size = g.n;
	x.pg = pgid;
	x.dtype = se_intern(c, "BFloat16");
	snprintf(buf, sizeof(buf), "[%d]", g.n);
	x.ranks = se_intern(c, buf);
	x.seq = 0;
	for (size_t i = 0; i < c->em.seqs.n; i++)
		if (c->em.seqs.v[i].rank == (uint32_t)r && c->em.seqs.v[i].pg == pgid) {
			x.seq = c->em.seqs.v[i].n++;
			goto found;
		}
	{
		struct pgseq q = {(uint32_t)r, pgid, 1};
		if (VEC_PUSH(c->em.seqs, q))
			c->oom = 1;
	}
found:
	se_launch(c, r, st, kind == GC_SEND || kind == GC_RECV ? GN_P2P : GN_COLL, kname, t, &x);
}

int se_init(struct ctx *c)
{
	if (strtab_init(&c->em.st))
		return PRISM_ENOMEM;
	c->em.n_cpu = se_intern(c, "aten::op");
	c->em.n_launch = se_intern(c, "cudaLaunchKernel");
	c->em.n_record = se_intern(c, "cudaEventRecord");
	c->em.n_wait = se_intern(c, "cudaStreamWaitEvent");
	c->em.n_sync = se_intern(c, "cudaDeviceSynchronize");
	c->em.next_corr = 1;
	return 0;
}

int se_procs(struct ctx *c)
{
	/* Processors: per rank its host thread, then its streams. */
	for (int r = 0; r < c->in->lay.pp; r++) {
		struct graph_proc p;
		memset(&p, 0, sizeof(p));
		p.rank = (uint32_t)r;
		p.pid = 1000 + r;
		p.tid = 1000 + r;
		c->rk[r].host = (uint32_t)c->em.procs.n;
		if (VEC_PUSH(c->em.procs, p))
			return PRISM_ENOMEM;
		for (int st = 0; st < S_N; st++) {
			p.gpu = 1;
			p.pid = r;
			p.tid = stream_id[st];
			c->rk[r].stream[st] = (uint32_t)c->em.procs.n;
			c->rk[r].last[st] = NONE32;
			if (VEC_PUSH(c->em.procs, p))
				return PRISM_ENOMEM;
		}
	}
	return 0;
}

uint32_t se_sync(struct ctx *c, int r)
{
	uint32_t call = host_call(c, r, c->em.n_sync, RT_DEVICE_SYNC, 0);
	uint32_t w = add_node(c, r, c->rk[r].host, GN_WAIT, c->em.n_sync, 2e-6);
	if (c->oom)
		return w;
	c->em.nodes.v[call].flags = NF_BLOCKING;
	c->em.nodes.v[w].rtclass = RT_DEVICE_SYNC;
	for (int st = 0; st < S_N; st++)
		if (c->rk[r].last[st] != NONE32)
			add_edge(c, c->rk[r].last[st], w, GE_SYNC);
	return w;
}

void se_release(struct ctx *c)
{
	strtab_release(&c->em.st);
	VEC_FREE(c->em.nodes);
	VEC_FREE(c->em.edges);
	VEC_FREE(c->em.procs);
	VEC_FREE(c->em.colls);
	VEC_FREE(c->em.pend);
	VEC_FREE(c->em.waits);
	VEC_FREE(c->em.seqs);
	VEC_FREE(c->em.ops);
}

/* One tensor-parallel collective of the b s h activations on stream st:
 * kind GC_ALL_REDUCE, or with sequence parallelism GC_REDUCE_SCATTER or
 * GC_ALL_GATHER. */
static void tp_coll(struct ctx *c, int r, const struct shape *z, int st, int kind)
{
	struct comm_group g = {(int)z->t, z->tp_per_node};
	char pg[32];
	snprintf(pg, sizeof(pg), "tp.%d", r);
	if (kind == GC_REDUCE_SCATTER)
		se_collective(c, r, st, kind, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
			      z->b * z->s * z->h * 2, g, pg);
	else if (kind == GC_ALL_GATHER)
		se_collective(c, r, st, kind, "ncclDevKernel_AllGather_RING_LL",
			      z->b * z->s * z->h * 2, g, pg);
	else
		se_collective(c, r, st, kind, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
			      z->b * z->s * z->h * 2, g, pg);
}

static void tp_allreduce(struct ctx *c, int r, const struct shape *z)
{
	if (z->t <= 1)
		return;
	if (c->in->lay.sp) {
		tp_coll(c, r, z, S_COMPUTE, GC_REDUCE_SCATTER);
		tp_coll(c, r, z, S_COMPUTE, GC_ALL_GATHER);
	} else {
		tp_coll(c, r, z, S_COMPUTE, GC_ALL_REDUCE);
	}
}

/* Tensor-parallel communication overlapped with GEMMs (Megatron-LM's
 * --tp-comm-overlap, Transformer Engine's userbuffers; sequence parallel):
 * the collective runs on its own stream beside the GEMMs launched between
 * tp_side_begin and tp_side_end, both after what preceded them, and what
 * follows waits for both.  The pipelining of the collective and the GEMM
 * in chunks is taken as perfect (the fill of one chunk is left out);
 * contention slows both where they overlap (sim.h). */
static int tp_overlapped(const struct ctx *c, const struct shape *z)
{
	return z->t > 1 && c->in->lay.sp && c->in->lay.tp_overlap;
}

static void tp_side_begin(struct ctx *c, int r, const struct shape *z, int k1, int k2)
{
	se_event_wait(c, r, S_COMPUTE, S_TP);
	tp_coll(c, r, z, S_TP, k1);
	if (k2 >= 0)
		tp_coll(c, r, z, S_TP, k2);
}

static void tp_side_end(struct ctx *c, int r)
{
	se_event_wait(c, r, S_TP, S_COMPUTE);
}

/* Bytes of an elementwise pass over n bf16 values reading `in` tensors. */
static double ew(double n, double in)
{
	return n * 2 * (in + 1);
}

/* The flash-attention op as PyTorch records it, [b, s, heads, d] per
 * tensor: forward the query, key and value, backward the output's
 * gradient first (cost_attn_shape reads them back).  key: 3, dtype,
 * backward, b, s, query heads, key-value heads, d. */
static void attn_op_fmt(const double *key, const char **op, char *dims, size_t nd, char *types,
			size_t nt)
{
	const char *ty = torch_type((int)key[1]);
	char q[64], kv[64];

	snprintf(q, sizeof(q), "[%.0f, %.0f, %.0f, %.0f]", key[3], key[4], key[5], key[7]);
	snprintf(kv, sizeof(kv), "[%.0f, %.0f, %.0f, %.0f]", key[3], key[4], key[6], key[7]);
	if (key[2] != 0) {
		*op = "aten::_flash_attention_backward";
		snprintf(dims, nd, "[%s, %s, %s, %s]", q, q, kv, kv);
		snprintf(types, nt, "[\"%s\", \"%s\", \"%s\", \"%s\"]", ty, ty, ty, ty);
	} else {
		*op = "aten::_flash_attention_forward";
		snprintf(dims, nd, "[%s, %s, %s]", q, kv, kv);
		snprintf(types, nt, "[\"%s\", \"%s\", \"%s\"]", ty, ty, ty);
	}
}

static void attn_op(struct ctx *c, const struct shape *z, int dtype, int bwd)
{
	/* Megatron-LM replicates key-value heads when fewer than the ranks. */
	double kv = z->kv < z->t ? 1 : z->kv / z->t;
	double key[OPKEY] = {3, dtype, bwd, z->b, z->s, z->a / z->t, kv, z->h / z->a};

	se_record_op(c, key, attn_op_fmt);
}

/*
 * Context parallelism: ring attention as Transformer Engine runs it
 * (AttnFuncWithCPAndKVP2P, Megatron-LM's --context-parallel-size with the
 * p2p communication type).  Each rank holds s / cp tokens of every
 * sequence, as two chunks of the 2 cp into which the sequence is cut (rank
 * i the i-th and the (2 cp - 1 - i)-th: the causal load balance), so that
 * every rank's share of the causal attention is the same.  cp steps: step
 * 0 the rank's own block (causal, s/cp x s/cp), each later step a block of
 * half the work (half the queries against the whole received key-value
 * block, or the whole queries against half of it: s/(2cp) x s/cp, no
 * mask).  The key-value block for step i + 1 is sent to the next rank and
 * received from the previous one while step i computes (double buffered:
 * the transfer waits for step i - 1's kernel, step i + 1 for the transfer).
 * Each later step's output is merged into the running one by its
 * log-sum-exp (a memory-bound correction).  Backward: the same ring, each
 * transfer carrying the key-value block and its accumulated gradient
 * (twice the bytes).  The transfers ride the side stream that TP overlap
 * uses (S_TP; they never run at once within a layer).
 */
static double cp_kv_bytes(const struct shape *z)
{
	double kv = z->kv < z->t ? 1 : z->kv / z->t;
	return 2 * z->b * z->s * kv * (z->h / z->a) * 2;
}

static void cp_transfer(struct ctx *c, int r, const struct shape *z, double bytes)
{
	char pg[32];
	snprintf(pg, sizeof(pg), "cp.%d", r);
	se_event_wait(c, r, S_COMPUTE, S_TP);
	se_collective(c, r, S_TP, GC_SEND_RECV, "ncclDevKernel_SendRecv", bytes,
		      (struct comm_group){2, z->cp_per_node}, pg);
}

/*
 * Llama 3's all-gather context parallelism (Dubey et al. 2024, section
 * 3.3.2): the rank's K and V are all-gathered over the cp ranks (cp x its
 * key-value block, on the compute stream: the latency is exposed, as the
 * paper says; GQA keeps it small), then one attention kernel of the
 * rank's queries (its two load-balanced chunks, s tokens) against the
 * keys before them: on average half the sequence, timed as s queries
 * over s_full / 2 keys without a mask.  Backward: the attention's
 * backward, then the gathered K and V gradients reduce-scattered.
 */
static void allgather_attn(struct ctx *c, int r, const struct shape *z, int bwd)
{
	int dt = layout_attn_dtype(&c->in->lay), pass = bwd ? 1 : 0;
	double heads = z->a / z->t, d = z->h / z->a, t;
	double f = (bwd ? 8 : 4) * z->b * z->s_full * z->s_full * z->h / z->t / z->cp;
	double gathered = cp_kv_bytes(z) * z->cp;
	int cap = c->in->hw ? hw_domain(c->in->hw) / (int)z->t : 1;
	struct comm_group g = {z->cp, comm_per_domain(z->cp, cap)};
	char pg[32];
	snprintf(pg, sizeof(pg), "cp.%d", r);
	if (!bwd)
		se_collective(c, r, S_COMPUTE, GC_ALL_GATHER, "ncclDevKernel_AllGather_RING_LL",
			      gathered, g, pg);
	t = ktime(c, KC_ATTENTION, dt, f, ew((bwd ? 4 : 3) * z->b * z->s * z->h / z->t, 1),
		  kperf_attn_s(c->in->hw, dt, pass, z->b, heads, z->s, z->s_full / 2, d, 0));
	se_launch(c, r, S_COMPUTE, GN_KERNEL,
		  bwd ? "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel" : "flash_fwd_kernel", t,
		  NULL);
	if (bwd)
		se_collective(c, r, S_COMPUTE, GC_REDUCE_SCATTER,
			      "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", gathered, g, pg);
}

static void ring_attn(struct ctx *c, int r, const struct shape *z, int bwd)
{
	if (c->in->lay.cp_allgather) {
		allgather_attn(c, r, z, bwd);
		return;
	}
	{
		int dt = layout_attn_dtype(&c->in->lay), pass = bwd ? 1 : 0;
		double heads = z->a / z->t, d = z->h / z->a;
		/* The model FLOPs of the rank's share (4 b s^2 h / (t cp) forward,
	 * twice that backward), spread evenly over the steps. */
		double f =
		    (bwd ? 8 : 4) * z->b * z->s_full * z->s_full * z->h / z->t / z->cp / z->cp;
		double bytes = cp_kv_bytes(z) * (bwd ? 2 : 1), out = z->b * z->s * z->h / z->t;
		for (int i = 0; i < z->cp; i++) {
			double sq = i ? z->s / 2 : z->s, t;
			if (i > 0) /* step i's key-value block has arrived */
				se_event_wait(c, r, S_TP, S_COMPUTE);
			if (i < z->cp - 1 && !c->dry)
				cp_transfer(c, r, z, bytes);
			t = ktime(
			    c, KC_ATTENTION, dt, f, ew(3 * z->b * sq * z->h / z->t, 1),
			    kperf_attn_s(c->in->hw, dt, pass, z->b, heads, sq, z->s, d, i == 0));
			se_launch(c, r, S_COMPUTE, GN_KERNEL,
				  bwd ? "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"
				      : "flash_fwd_kernel",
				  t, NULL);
			if (i > 0 && !bwd) /* merge by log-sum-exp: out, lse, step out in */
				sl_kernel(c, r, KC_ELEMENTWISE, "flash_attn_fwd_out_correction",
					  ew(out, 2) + 8 * z->b * z->s * heads);
		}
	}
}

/*
 * Attention core of one layer on one tensor-parallel rank (causal, as GPT
 * trains).  Flash attention is one kernel each way, timed by the kernel
 * model by sequence, heads and head dim (kperf_attn_s); its FLOPs are
 * counted as 4 b s^2 h / t forward and twice that backward (the model
 * FLOPs, llm.h).  Without it (Megatron before FlashAttention) the
 * b a s^2 / t scores are materialised: two batched GEMMs around a fused
 * scale-mask-softmax and a dropout forward, four GEMMs, the dropout and
 * the softmax gradients backward, each pass over the scores memory-bound;
 * llm_score_bytes() counts the same traffic.  The core runs in bf16 unless
 * fp8_attention (layout_attn_dtype).
 */
void sl_attn_fwd(struct ctx *c, int r, const struct shape *z)
{
	int dt = layout_attn_dtype(&c->in->lay);
	if (z->cp > 1) {
		ring_attn(c, r, z, 0);
		return;
	}
	double heads = z->a / z->t, d = z->h / z->a, n = z->b * z->a * z->s * z->s / z->t;
	double f = 2 * z->b * z->s * z->s * z->h / z->t;
	if (c->in->lay.flash) {
		double t = ktime(c, KC_ATTENTION, dt, 2 * f, ew(3 * z->b * z->s * z->h / z->t, 1),
				 kperf_attn_s(c->in->hw, dt, 0, z->b, heads, z->s, z->s, d, 1));
		attn_op(c, z, dt, 0);
		se_launch(c, r, S_COMPUTE, GN_KERNEL, "flash_fwd_kernel", t, NULL);
		return;
	}
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_bmm_scores", dt, z->b * heads, z->s,
	      z->s, d);
	sl_kernel(c, r, KC_SOFTMAX, "scaled_masked_softmax_warp_forward", LLM_SCORE_SOFTMAX * n);
	sl_kernel(c, r, KC_ELEMENTWISE, "fused_dropout_kernel", LLM_SCORE_DROPOUT * n);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_bmm_context", dt, z->b * heads, z->s,
	      d, z->s);
}

static void attn_bwd(struct ctx *c, int r, const struct shape *z)
{
	int dt = layout_attn_dtype(&c->in->lay);
	if (z->cp > 1) {
		ring_attn(c, r, z, 1);
		return;
	}
	double heads = z->a / z->t, d = z->h / z->a, n = z->b * z->a * z->s * z->s / z->t;
	double f = 2 * z->b * z->s * z->s * z->h / z->t;
	if (c->in->lay.flash) {
		double t = ktime(c, KC_ATTENTION, dt, 4 * f, ew(4 * z->b * z->s * z->h / z->t, 1),
				 kperf_attn_s(c->in->hw, dt, 1, z->b, heads, z->s, z->s, d, 1));
		attn_op(c, z, dt, 1);
		se_launch(c, r, S_COMPUTE, GN_KERNEL,
			  "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", t, NULL);
		return;
	}
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_bmm_dprobs", dt, z->b * heads, z->s,
	      z->s, d);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_bmm_dv", dt, z->b * heads, z->s, d,
	      z->s);
	sl_kernel(c, r, KC_ELEMENTWISE, "masked_scale_kernel_dropout_backward",
		  LLM_SCORE_DROPOUT * n);
	sl_kernel(c, r, KC_SOFTMAX, "scaled_masked_softmax_warp_backward",
		  LLM_SCORE_SOFTMAX_BWD * n);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_bmm_dq", dt, z->b * heads, z->s, d,
	      z->s);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_bmm_dk", dt, z->b * heads, z->s, d,
	      z->s);
}

/*
 * A linear layer's forward GEMM, C[m,n] = A[m,k] W[k,n].  In fp8 (or fp4)
 * Transformer Engine first quantises its input with one fused kernel that
 * also writes the transpose the weight gradient needs (reads 2 m k bytes,
 * writes twice m k at one byte: cast_transpose), and the weight once per
 * step, on the step's first microbatch (its fp8 copy and transpose are
 * kept for the others and for the backward).
 */
static void linear_fwd(struct ctx *c, int r, const char *name, double m, double n, double k)
{
	if (sl_low_precision(c->in->lay.dtype)) {
		sl_kernel(c, r, KC_ELEMENTWISE, "te_cast_transpose_fp8_input", 4 * m * k);
		if (c->rk[r].mb == 0 && c->rk[r].phase == PH_FORWARD)
			sl_kernel(c, r, KC_ELEMENTWISE, "te_cast_transpose_fp8_weight", 4 * k * n);
	}
	gemm(c, r, name, m, n, k);
}

static void gemm_bwd(struct ctx *c, int r, const char *what, double m, double n, double k);

/* A parameter's gradient (elems values) added into the accumulated one, in
 * every microbatch but the first where the framework accumulates so
 * (synth_in.acc_elem_bytes): both read, one written. */
static void acc_add(struct ctx *c, int r, double elems)
{
	if (c->in->acc_elem_bytes > 0 && c->rk[r].mb > 0)
		sl_kernel(c, r, KC_ELEMENTWISE, GRAPH_ACC_KERNEL,
			  3 * elems * c->in->acc_elem_bytes);
}

/* A layer norm's weight and bias, each h values (replicated over tp). */
static void acc_norm(struct ctx *c, int r, const struct shape *z)
{
	acc_add(c, r, z->h);
	acc_add(c, r, z->h);
}

/*
 * Mixture-of-experts (Megatron-LM's MoELayer with the all-to-all token
 * dispatcher, megatron/core/transformer/moe/): on each rank the router
 * scores its n = b s / t tokens (sequence parallel) against the experts
 * (a GEMM, then the top-k of a softmax or a sigmoid, memory-bound), the
 * tokens are permuted into expert order (top_k copies of each), sent to
 * the ranks holding their experts by an all-to-all over the expert-
 * parallel group, all-gathered over the expert tensor-parallel group
 * (etp > 1), run through the rank's experts as grouped GEMMs (one batched
 * GEMM per FFN matrix over the local experts, M / eloc tokens each),
 * reduce-scattered over etp, sent back by a second all-to-all and
 * unpermuted (weighted by their gate values).  The shared experts run as
 * a dense FFN split by tp.  M (mem_moe_tokens) is the busiest rank's
 * load, imbalance and capacity factor included: the collectives and the
 * GEMMs wait for it.  Backward mirrors it with two GEMMs per forward GEMM.
 */
static void moe_coll(struct ctx *c, int r, const struct shape *z, int kind, double bytes)
{
	char pg[32];
	if (kind == GC_ALL_TO_ALL) {
		struct comm_group g = {(int)z->ep, z->ep_per_node};
		if (z->ep <= 1)
			return;
		snprintf(pg, sizeof(pg), "ep.%d", r);
		se_collective(c, r, S_COMPUTE, kind, "ncclDevKernel_SendRecv_alltoall", bytes, g,
			      pg);
		return;
	}
	if (z->etp <= 1)
		return;
	snprintf(pg, sizeof(pg), "etp.%d", r);
	se_collective(c, r, S_COMPUTE, kind,
		      kind == GC_ALL_GATHER ? "ncclDevKernel_AllGather_RING_LL"
					    : "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
		      bytes, (struct comm_group){(int)z->etp, z->etp_per_node}, pg);
}

/* The bytes one all-to-all of one MoE layer sends from the busiest rank:
 * its routed tokens, M / etp rows of h bf16 values. */
double sl_moe_a2a_bytes(const struct shape *z)
{
	return z->M / z->etp * z->h * 2;
}

/* A grouped GEMM over the rank's experts: eloc GEMMs of m x k by k x n
 * (CUTLASS grouped GEMM, Transformer Engine's GroupedLinear), timed as one
 * batched GEMM. */
static void grouped(struct ctx *c, int r, const struct shape *z, const char *name, double m,
		    double n, double k)
{
	bgemm(c, r, name, c->in->lay.dtype, z->eloc, m, n, k);
}

static void grouped_bwd(struct ctx *c, int r, const struct shape *z, const char *what, double m,
			double n, double k)
{
	char name[96];
	if (sl_low_precision(c->in->lay.dtype))
		sl_kernel(c, r, KC_ELEMENTWISE, "te_cast_transpose_fp8_grad", 4 * m * n * z->eloc);
	snprintf(name, sizeof(name), "cutlass_grouped_gemm_bf16_%s_dx", what);
	grouped(c, r, z, name, m, k, n);
	snprintf(name, sizeof(name), "cutlass_grouped_gemm_bf16_%s_dw", what);
	grouped(c, r, z, name, k, n, m);
	acc_add(c, r, z->eloc * k * n);
}

/* The router: its GEMM (in bf16 under fp8, as Transformer Engine leaves
 * it), then the scores' top-k (fp32 scores read and written, the top_k
 * indices and gate values written). */
static void router_fwd(struct ctx *c, int r, const struct shape *z)
{
	int dt = sl_low_precision(c->in->lay.dtype) ? HW_BF16 : c->in->lay.dtype;
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_router", dt, 1, z->n_tok, z->E, z->h);
	sl_kernel(c, r, KC_SOFTMAX,
		  c->in->m.router == LLM_ROUTER_SIGMOID ? "moe_topk_sigmoid_kernel"
							: "moe_topk_softmax_kernel",
		  8 * z->n_tok * z->E + 8 * z->n_tok * z->k);
}

static void moe_fwd(struct ctx *c, int r, const struct shape *z)
{
	double mloc = z->M / z->eloc, x = z->M / z->etp, ph = 2 * z->n_tok * z->h;
	router_fwd(c, r, z);
	/* Permute: read the tokens, write top_k copies in expert order. */
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_permute_kernel", ph + ph * z->k);
	moe_coll(c, r, z, GC_ALL_TO_ALL, sl_moe_a2a_bytes(z));
	moe_coll(c, r, z, GC_ALL_GATHER, x * z->etp * z->h * 2);
	if (sl_low_precision(c->in->lay.dtype)) {
		sl_kernel(c, r, KC_ELEMENTWISE, "te_cast_transpose_fp8_input", 4 * z->M * z->h);
		if (c->rk[r].mb == 0 && c->rk[r].phase == PH_FORWARD)
			sl_kernel(c, r, KC_ELEMENTWISE, "te_cast_transpose_fp8_weight",
				  4 * z->eloc * z->h * (z->fe_in + z->fe) / z->etp);
	}
	grouped(c, r, z, "cutlass_grouped_gemm_bf16_fc1", mloc, z->fe_in / z->etp, z->h);
	if (z->gated)
		sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_fwd_kernel", ew(z->M * z->fe / z->etp, 2));
	else
		sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<GeluCUDAKernelImpl>",
			  ew(z->M * z->fe / z->etp, 1));
	grouped(c, r, z, "cutlass_grouped_gemm_bf16_fc2", mloc, z->h, z->fe / z->etp);
	moe_coll(c, r, z, GC_REDUCE_SCATTER, x * z->etp * z->h * 2);
	moe_coll(c, r, z, GC_ALL_TO_ALL, sl_moe_a2a_bytes(z));
	/* Unpermute: read the top_k copies and gates, write the sum. */
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_unpermute_kernel", ph * z->k + ph);
	if (z->shared > 0) {
		double bs = z->b * z->s, t = z->t, sf = z->shared * z->fe;
		if (t > 1)
			tp_coll(c, r, z, S_COMPUTE, GC_ALL_GATHER);
		linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_shared_fc1", bs,
			   z->shared * z->fe_in / t, z->h);
		sl_kernel(c, r, KC_ELEMENTWISE, z->gated ? "swiglu_fwd_kernel" : "gelu_fwd_kernel",
			  ew(bs * sf / t, z->gated ? 2 : 1));
		linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_shared_fc2", bs, z->h,
			   sf / t);
		if (t > 1)
			tp_coll(c, r, z, S_COMPUTE, GC_REDUCE_SCATTER);
		sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<add>",
			  ew(ph / 2, 2));
	}
}

static void moe_bwd(struct ctx *c, int r, const struct shape *z)
{
	double mloc = z->M / z->eloc, x = z->M / z->etp, ph = 2 * z->n_tok * z->h;
	int dt = sl_low_precision(c->in->lay.dtype) ? HW_BF16 : c->in->lay.dtype;
	if (z->shared > 0) {
		double bs = z->b * z->s, t = z->t, sf = z->shared * z->fe;
		if (t > 1)
			tp_coll(c, r, z, S_COMPUTE, GC_ALL_GATHER);
		gemm_bwd(c, r, "shared_fc2", bs, z->h, sf / t);
		sl_kernel(c, r, KC_ELEMENTWISE, z->gated ? "swiglu_bwd_kernel" : "gelu_bwd_kernel",
			  z->gated ? bs * sf / t * 2 * 5 : ew(bs * sf / t, 2));
		gemm_bwd(c, r, "shared_fc1", bs, z->shared * z->fe_in / t, z->h);
		if (t > 1)
			tp_coll(c, r, z, S_COMPUTE, GC_REDUCE_SCATTER);
	}
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_unpermute_bwd_kernel", ph + ph * z->k);
	moe_coll(c, r, z, GC_ALL_TO_ALL, sl_moe_a2a_bytes(z));
	moe_coll(c, r, z, GC_ALL_GATHER, x * z->etp * z->h * 2);
	grouped_bwd(c, r, z, "fc2", mloc, z->h, z->fe / z->etp);
	if (z->gated)
		sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_bwd_kernel", z->M * z->fe / z->etp * 2 * 5);
	else
		sl_kernel(c, r, KC_ELEMENTWISE, "elementwise_kernel<GeluBackwardCUDAKernelImpl>",
			  ew(z->M * z->fe / z->etp, 2));
	grouped_bwd(c, r, z, "fc1", mloc, z->fe_in / z->etp, z->h);
	moe_coll(c, r, z, GC_REDUCE_SCATTER, x * z->etp * z->h * 2);
	moe_coll(c, r, z, GC_ALL_TO_ALL, sl_moe_a2a_bytes(z));
	sl_kernel(c, r, KC_ELEMENTWISE, "moe_permute_bwd_kernel", ph * z->k + ph);
	sl_kernel(c, r, KC_SOFTMAX, "moe_topk_softmax_bwd_kernel",
		  8 * z->n_tok * z->E + 8 * z->n_tok * z->k);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_router_dx", dt, 1, z->n_tok, z->h,
	      z->E);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_router_dw", dt, 1, z->h, z->E,
	      z->n_tok);
}

/* 1 when rank r's current layer is a mixture-of-experts layer. */
static int moe_now(const struct ctx *c, int r, const struct shape *z)
{
	return z->moe && llm_is_moe_layer(&c->in->m, c->rk[r].layer);
}

/* Layer norm, QKV, attention, projection, [TP all-reduce], fused bias +
 * dropout + residual add (Megatron's bias_dropout_add: reads the branch and
 * the residual, writes the sum and a one-byte dropout mask), layer norm,
 * FC1, GeLU (bias fused) or SwiGLU, FC2, [TP all-reduce], bias + dropout +
 * residual add. */
void sl_layer_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	int ov = tp_overlapped(c, z);
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(nh, 1));
	if (ov) /* the all-gather of the normed input beside the QKV GEMM */
		tp_side_begin(c, r, z, GC_ALL_GATHER, -1);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_qkv", bs, z->qkv_r, z->h);
	if (ov)
		tp_side_end(c, r);
	sl_attn_fwd(c, r, z);
	if (ov) /* the projection's reduce-scatter beside its GEMM */
		tp_side_begin(c, r, z, GC_REDUCE_SCATTER, -1);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_proj", bs, z->h, z->h / t);
	if (ov)
		tp_side_end(c, r);
	else
		tp_allreduce(c, r, z);
	sl_kernel(c, r, KC_ELEMENTWISE, "fused_bias_dropout_add_kernel", ew(nh, 2) + nh);
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(nh, 1));
	if (moe_now(c, r, z)) {
		moe_fwd(c, r, z);
		sl_kernel(c, r, KC_ELEMENTWISE, "fused_bias_dropout_add_kernel", ew(nh, 2) + nh);
		return;
	}
	if (ov)
		tp_side_begin(c, r, z, GC_ALL_GATHER, -1);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_fc1", bs, z->f_in / t, z->h);
	if (ov)
		tp_side_end(c, r);
	if (z->gated) /* silu(gate) x up: two inputs, one output */
		sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_fwd_kernel", ew(bs * z->f / t, 2));
	else
		sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<GeluCUDAKernelImpl>",
			  ew(bs * z->f / t, 1));
	if (ov)
		tp_side_begin(c, r, z, GC_REDUCE_SCATTER, -1);
	linear_fwd(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_fc2", bs, z->h, z->f / t);
	if (ov)
		tp_side_end(c, r);
	else
		tp_allreduce(c, r, z);
	sl_kernel(c, r, KC_ELEMENTWISE, "fused_bias_dropout_add_kernel", ew(nh, 2) + nh);
}

/* Input and weight gradients of C[m,n] = A[m,k] B[k,n]; in fp8 the output
 * gradient is first cast and transposed (reads 2 m n bytes, writes 2 m n
 * at one byte). */
static void gemm_bwd(struct ctx *c, int r, const char *what, double m, double n, double k)
{
	char name[96];
	if (sl_low_precision(c->in->lay.dtype))
		sl_kernel(c, r, KC_ELEMENTWISE, "te_cast_transpose_fp8_grad", 4 * m * n);
	snprintf(name, sizeof(name), "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_%s_dx", what);
	gemm(c, r, name, m, k, n);
	snprintf(name, sizeof(name), "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_%s_dw", what);
	gemm(c, r, name, k, n, m);
	acc_add(c, r, k * n);
	acc_add(c, r, n); /* its bias: llm_layer_params gives every linear one */
}

/* Backward of one layer: full recomputation runs its forward first;
 * selective recomputation (Korthikanti et al. 2022) re-runs the attention
 * core's forward just before its backward.  Each bias-dropout-add's
 * dropout has a backward pass over its branch's gradient (reads it and the
 * mask, writes the gradient). */
void sl_layer_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s, t = z->t, sp = c->in->lay.sp ? t : 1, nh = bs * z->h / sp;
	int ov = tp_overlapped(c, z);
	if (c->in->lay.recompute == LAYOUT_RECOMPUTE_FULL)
		sl_layer_fwd(c, r, z);
	sl_kernel(c, r, KC_ELEMENTWISE, "masked_scale_kernel_dropout_backward", ew(nh, 1) + nh);
	if (moe_now(c, r, z)) {
		moe_bwd(c, r, z);
	} else {
		if (ov) /* the gradient's gather beside FC2's gradient GEMMs */
			tp_side_begin(c, r, z, GC_REDUCE_SCATTER, GC_ALL_GATHER);
		else
			tp_allreduce(c, r, z);
		gemm_bwd(c, r, "fc2", bs, z->h, z->f / t);
		if (ov)
			tp_side_end(c, r);
		if (z->gated) /* the gradient and both inputs in, both gradients out */
			sl_kernel(c, r, KC_ELEMENTWISE, "swiglu_bwd_kernel", bs * z->f / t * 2 * 5);
		else
			sl_kernel(c, r, KC_ELEMENTWISE,
				  "elementwise_kernel<GeluBackwardCUDAKernelImpl>",
				  ew(bs * z->f / t, 2));
		gemm_bwd(c, r, "fc1", bs, z->f_in / t, z->h);
	}
	sl_kernel(c, r, KC_NORM, "layer_norm_grad_input_kernel", ew(nh, 3));
	acc_norm(c, r, z);
	sl_kernel(c, r, KC_ELEMENTWISE, "masked_scale_kernel_dropout_backward", ew(nh, 1) + nh);
	if (ov)
		tp_side_begin(c, r, z, GC_REDUCE_SCATTER, GC_ALL_GATHER);
	else
		tp_allreduce(c, r, z);
	gemm_bwd(c, r, "proj", bs, z->h, z->h / t);
	if (ov)
		tp_side_end(c, r);
	if (c->in->lay.recompute == LAYOUT_RECOMPUTE_SELECTIVE)
		sl_attn_fwd(c, r, z);
	attn_bwd(c, r, z);
	gemm_bwd(c, r, "qkv", bs, z->qkv_r, z->h);
	sl_kernel(c, r, KC_NORM, "layer_norm_grad_input_kernel", ew(nh, 3));
	acc_norm(c, r, z);
}

/* The output layer's dtype: bf16 under fp8 and fp4. */
int sl_logit_dtype(const struct synth_in *in)
{
	return sl_low_precision(in->lay.dtype) ? HW_BF16 : in->lay.dtype;
}

static void logits_bwd(struct ctx *c, int r, double m, double n, double k)
{
	int dt = sl_logit_dtype(c->in);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_logits_dx", dt, 1, m, k, n);
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_logits_dw", dt, 1, k, n, m);
	acc_add(c, r, k * n);
}

/* Parameters of one layer on one tensor-parallel rank. */
static double layer_params(const struct shape *z)
{
	return z->params;
}

static void pp_transfer(struct ctx *c, int r, int st, int kind, int from_s, int from_c,
			const struct shape *z, int fwd)
{
	struct comm_group g = {2, z->pp_per_node};
	char pg[48];
	snprintf(pg, sizeof(pg), "pp.%s.%d.%d", fwd ? "f" : "b", from_s, from_c);
	se_collective(c, r, st, kind, "ncclDevKernel_SendRecv", z->b * z->s * z->h * 2 / z->t, g,
		      pg);
}

/* The embedding's lookup forward and its gradient (stage 0). */
void sl_embed_fwd(struct ctx *c, int r, const struct shape *z)
{
	sl_kernel(c, r, KC_EMBEDDING, "indexSelectLargeIndex", ew(z->b * z->s * z->h, 1));
}

void sl_embed_bwd(struct ctx *c, int r, const struct shape *z)
{
	sl_kernel(c, r, KC_EMBEDDING, "embedding_backward_feature_kernel",
		  ew(z->b * z->s * z->h, 2));
	/* Tied on one stage: one gradient, added with the head's. */
	if (c->in->m.untied || c->in->lay.pp > 1)
		acc_add(c, r, z->V / z->t * z->h);
	if (!c->in->m.rope) /* learned positions */
		acc_add(c, r, z->s * z->h);
}

/* The final norm, the logits and the loss (the last stage).  The output
 * layer stays in bf16 under fp8 (Transformer Engine quantises the
 * transformer layers' GEMMs).  The vocabulary-parallel cross-entropy as
 * Megatron-LM runs it (tensor_parallel/cross_entropy.py), in fp32 passes
 * over the logits: the max and the sum of exponentials read them (4 + 4
 * bytes a value); the cast to fp32 (2 + 4), the subtraction, the
 * exponential and the division in place (8 each) read and write them. */
void sl_head_fwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s;
	sl_kernel(c, r, KC_NORM, "vectorized_layer_norm_kernel", ew(bs * z->h, 1));
	bgemm(c, r, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_logits", sl_logit_dtype(c->in), 1, bs,
	      z->V / z->t, z->h);
	sl_kernel(c, r, KC_ELEMENTWISE, "cross_entropy_elementwise_fwd", 30 * bs * z->V / z->t);
	sl_kernel(c, r, KC_SOFTMAX, "cross_entropy_softmax_fwd", 8 * bs * z->V / z->t);
}

/* (softmax - one-hot) x the loss gradient from the saved fp32 softmax
 * (read 4, write 4), cast to bf16 (read 4, write 2); the logits' two
 * gradients; the final norm's. */
void sl_head_bwd(struct ctx *c, int r, const struct shape *z)
{
	double bs = z->b * z->s;
	sl_kernel(c, r, KC_ELEMENTWISE, "cross_entropy_elementwise_bwd", 14 * bs * z->V / z->t);
	logits_bwd(c, r, bs, z->V / z->t, z->h);
	sl_kernel(c, r, KC_NORM, "layer_norm_grad_input_kernel", ew(bs * z->h, 3));
	acc_norm(c, r, z);
}

/* Parameters of the embedding on stage r's GPU: the word embedding
 * (vocabulary-parallel) and learned positions on stage 0. */
static double embed_params(const struct ctx *c, int r)
{
	double first, last;
	synth_extra_params(c->in, r, &first, &last);
	return last;
}

/* Parameters of the output side on stage r's GPU: the final norm, and the
 * head -- its own matrix when untied, a copy of the word embedding (tied)
 * on a last stage that is not the first. */
static double head_params(const struct ctx *c, int r)
{
	double first, last;
	synth_extra_params(c->in, r, &first, &last);
	return first;
}

void synth_extra_params(const struct synth_in *in, int stage, double *first, double *last)
{
	const struct llm *m = &in->m;
	*first =
	    stage != in->lay.pp - 1
		? 0
		: 2.0 * m->hidden +
		      (m->untied || in->lay.pp > 1 ? (double)m->vocab * m->hidden / in->lay.tp : 0);
	*last = stage != 0 ? 0
			   : (double)m->vocab * m->hidden / in->lay.tp +
				 (m->rope ? 0 : (double)m->seq * m->hidden);
}

/* Bytes of a gradient as it is reduced: the main gradients' (fp32 for
 * bf16 weights: Megatron-LM's accumulate_allreduce_grads_in_fp32 default
 * for bf16, FSDP2's reduce_dtype in torchtitan; fp16 for fp16). */
static double grad_bytes(const struct ctx *c)
{
	return synth_grad_bytes(c->in);
}

double synth_grad_bytes(const struct synth_in *in)
{
	double w, g, o;
	mem_bytes_per_param(mem_prec(in->lay.dtype), &w, &g, &o);
	return g;
}

/* The data-parallel groups of a stage (ranks tp apart, consecutive in DP:
 * Megatron's order): the sharding group of ZeRO (layout_shard_group) and,
 * with hybrid sharding, the dp / shard replicas of each shard. */
static struct comm_group shard_group(const struct ctx *c)
{
	int G = layout_shard_group(&c->lay), cap = hw_domain(c->in->hw) / c->in->lay.tp;
	return (struct comm_group){G, comm_per_domain(G, cap)};
}

static struct comm_group replica_group(const struct ctx *c)
{
	int G = layout_shard_group(&c->lay), R = layout_dpc(&c->lay) / G;
	int cap = hw_domain(c->in->hw) / (c->in->lay.tp * G);
	return (struct comm_group){R, comm_per_domain(R, cap > 0 ? cap : 1)};
}

static int sharded(const struct ctx *c)
{
	return c->in->lay.zero >= 1 && layout_shard_group(&c->lay) > 1;
}

static void dp_pg(const struct ctx *c, int r, char *pg, size_t n)
{
	snprintf(pg, n, layout_shard_group(&c->lay) < layout_dpc(&c->lay) ? "dps.%d" : "dp.%d", r);
}

/* Reduce the gradients of `params` parameters (a bucket, or a ZeRO-3
 * unit) of stage r on the DP stream: all-reduced over the data-parallel
 * group, or under ZeRO >= 1 reduce-scattered over the sharding group and,
 * with hybrid sharding, the shard all-reduced over the replicas (FSDP
 * HYBRID_SHARD).  In the main gradients' precision (grad_bytes). */
static void grad_reduce(struct ctx *c, int r, const struct shape *z, double params)
{
	const struct synth_in *in = c->in;
	double gb = grad_bytes(c);
	char pg[32];
	(void)z;
	int dpc = layout_dpc(&c->lay);
	if (dpc <= 1 || params <= 0)
		return;
	se_event_wait(c, r, S_COMPUTE, S_DP);
	if (!sharded(c)) {
		/* Over the dp x cp ranks (tp apart: Megatron-LM's order). */
		struct comm_group g = {dpc, comm_per_domain(dpc, hw_domain(in->hw) / in->lay.tp)};
		snprintf(pg, sizeof(pg), "dp.%d", r);
		se_collective(c, r, S_DP, GC_ALL_REDUCE, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
			      params * gb, g, pg);
		return;
	}
	dp_pg(c, r, pg, sizeof(pg));
	se_collective(c, r, S_DP, GC_REDUCE_SCATTER, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
		      params * gb, shard_group(c), pg);
	if (replica_group(c).n > 1) {
		snprintf(pg, sizeof(pg), "dpr.%d", r);
		se_collective(c, r, S_DP, GC_ALL_REDUCE, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
			      params * gb / layout_shard_group(&c->lay), replica_group(c), pg);
	}
}

/* A bucket's size in parameters: bucket_mb of main gradients, or
 * Megatron-LM's default, max(40M, 1M x dp) parameters
 * (distributed_data_parallel.py). */
static double bucket_cap(const struct ctx *c)
{
	return synth_bucket_params(c->in);
}

double synth_bucket_params(const struct synth_in *in)
{
	double dp = (double)in->lay.dp * layout_cp(&in->lay);
	if (in->lay.bucket_mb > 0)
		return in->lay.bucket_mb * 1e6 / synth_grad_bytes(in);
	return 40e6 > 1e6 * dp ? 40e6 : 1e6 * dp;
}

/* The gradients of `params` parameters are complete on stage r.  Buckets
 * (DDP, Megatron-LM's grad buffer, DeepSpeed's reduce buckets) fill in the
 * order the backward produces gradients and are reduced when full, during
 * the backward (overlap_grad); ZeRO-3 reduces each unit (a layer: FSDP's
 * wrapping) as it completes. */
static void grad_ready(struct ctx *c, int r, const struct shape *z, double params)
{
	struct rankst *k = &c->rk[r];
	if (layout_dpc(&c->lay) <= 1 || params <= 0)
		return;
	k->bucket += params;
	if (!c->in->lay.overlap_grad)
		return;
	if (c->in->lay.zero >= 3 || k->bucket >= bucket_cap(c)) {
		grad_reduce(c, r, z, k->bucket);
		k->bucket = 0;
	}
}

/* The routed experts' gradients of `params` parameters, reduced over the
 * expert data-parallel group (ranks ep x etp apart: Megatron-LM's
 * expert_data_parallel group, its own gradient buffer): all-reduced, or
 * reduce-scattered under ZeRO-1/2 (the expert distributed optimizer). */
static void expert_reduce(struct ctx *c, int r, const struct shape *z, double params)
{
	char pg[32];
	if (z->edp <= 1 || params <= 0)
		return;
	se_event_wait(c, r, S_COMPUTE, S_DP);
	snprintf(pg, sizeof(pg), "edp.%d", r);
	if (c->in->lay.zero >= 1)
		se_collective(c, r, S_DP, GC_REDUCE_SCATTER,
			      "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", params * grad_bytes(c),
			      (struct comm_group){z->edp, z->edp_per_node}, pg);
	else
		se_collective(c, r, S_DP, GC_ALL_REDUCE, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
			      params * grad_bytes(c), (struct comm_group){z->edp, z->edp_per_node},
			      pg);
}

/* Layer `layer`'s gradients are complete on stage r: a dense layer's into
 * the bucket; a mixture-of-experts layer's non-expert part likewise, its
 * routed experts' into their own bucket. */
static void layer_grads(struct ctx *c, int r, const struct shape *z, int layer)
{
	struct rankst *k = &c->rk[r];
	if (!z->moe || !llm_is_moe_layer(&c->in->m, layer)) {
		grad_ready(c, r, z, layer_params(z));
		return;
	}
	grad_ready(c, r, z, z->md);
	if (z->edp <= 1)
		return;
	k->ebucket += z->me;
	if (c->in->lay.overlap_grad && k->ebucket >= bucket_cap(c)) {
		expert_reduce(c, r, z, k->ebucket);
		k->ebucket = 0;
	}
}

static void grad_flush(struct ctx *c, int r, const struct shape *z)
{
	if (c->rk[r].bucket > 0)
		grad_reduce(c, r, z, c->rk[r].bucket);
	c->rk[r].bucket = 0;
	if (c->rk[r].ebucket > 0)
		expert_reduce(c, r, z, c->rk[r].ebucket);
	c->rk[r].ebucket = 0;
}

/* Parameters of layer `layer` on one GPU that the data-parallel sharding
 * group holds (all of a dense layer's; an MoE layer's non-expert part). */
static double dense_params(const struct ctx *c, const struct shape *z, int layer)
{
	return z->moe && llm_is_moe_layer(&c->in->m, layer) ? z->md : layer_params(z);
}

/* All-gather `params` parameters' bf16 weights over the sharding group on
 * the DP stream, after the compute stream's last task when wait_compute;
 * the gather's task. */
static uint32_t gather(struct ctx *c, int r, double params, int wait_compute)
{
	double w, g, o;
	char pg[32];
	if (c->dry)
		return NONE32;
	mem_bytes_per_param(mem_prec(c->lay.dtype), &w, &g, &o);
	if (wait_compute)
		se_event_wait(c, r, S_COMPUTE, S_DP);
	dp_pg(c, r, pg, sizeof(pg));
	se_collective(c, r, S_DP, GC_ALL_GATHER, "ncclDevKernel_AllGather_RING_LL", params * w,
		      shard_group(c), pg);
	return c->rk[r].last[S_DP];
}

/* Layers gathered ahead in a unit: ZeRO-3 (FSDP FULL_SHARD) gathers every
 * layer's weights before its forward and again before its backward;
 * ZeRO-1/2 with overlap_param gather the step's updated weights before the
 * first microbatch's forward (Megatron-LM's --overlap-param-gather).
 * Position i of the unit's n layers (in the order it runs them) is
 * gathered once the compute of position i - depth - 1 is done -- so that
 * depth + 1 layers at most are gathered at once -- and its compute waits
 * for its gather.  -1: no gathers in this unit. */
static int gather_depth(const struct ctx *c, int fwd, int mb)
{
	const struct layout *l = &c->lay;
	if (!sharded(c) || c->in->bare)
		return -1;
	if (l->zero >= 3)
		return l->prefetch;
	if (fwd && mb == 0 && l->overlap_param)
		return 1;
	return -1;
}

/* Before position i of a unit of n layers: issue the gathers due and wait
 * for position i's.  ids[] holds the gathers' tasks. */
static void gather_before(struct ctx *c, int r, const struct shape *z, int depth, int i, int n,
			  uint32_t *ids, int l0)
{
	/* Position j's layer is l0 + j forward (ZeRO-3, which gathers
	 * backward too, has no MoE layers: synth_check). */
	if (depth < 0)
		return;
	if (i == 0)
		for (int j = 0; j <= depth && j < n; j++)
			ids[j] = gather(c, r, dense_params(c, z, l0 + j), j == 0);
	else if (i + depth < n)
		ids[i + depth] = gather(c, r, dense_params(c, z, l0 + i + depth), 1);
	se_event_wait_task(c, r, ids[i], S_DP, S_COMPUTE);
}

/* The stage and chunk a forward unit of (s, ch) gets its input from (0
 * if any, with *ps and *pc set), and sends its output to. */
static int fwd_prev(const struct shape *z, int s, int ch, int *ps, int *pc)
{
	if (s > 0) {
		*ps = s - 1;
		*pc = ch;
		return 1;
	}
	if (ch > 0) {
		*ps = z->p - 1;
		*pc = ch - 1;
		return 1;
	}
	return 0;
}

static int fwd_next(const struct shape *z, int s, int ch, int *ns_, int *nc)
{
	if (s < z->p - 1) {
		*ns_ = s + 1;
		*nc = ch;
		return 1;
	}
	if (ch < z->v - 1) {
		*ns_ = 0;
		*nc = ch + 1;
		return 1;
	}
	return 0;
}

static void set_ann(struct ctx *c, int r, int32_t layer, int phase, int32_t mb)
{
	c->rk[r].layer = layer;
	c->rk[r].phase = (uint8_t)phase;
	c->rk[r].mb = mb;
}

/* ---- folded units (hierarchical simulation, synth.h) ------------------- */

/* Units differ by these flags besides their stage and chunk. */
#define FOLD_FWD    1
#define FOLD_BUCKET 2
#define FOLD_FIRST  4
#define FOLD_LAST   8
#define FOLD_KINDS  16
#define FOLD_NEVER  (NONE32 - 1) /* ctx.findex: tried, cannot be folded */

/* The index of the template of a unit (ctx.findex), made on first use. */
size_t sf_slot(struct ctx *c, const struct shape *z, int s, int ch, int mb, int fwd, int bucket)
{
	size_t n = (size_t)z->p * (size_t)z->v * FOLD_KINDS;
	int f = (fwd ? FOLD_FWD : 0) | (bucket ? FOLD_BUCKET : 0) | (mb == 0 ? FOLD_FIRST : 0) |
		(mb == z->m - 1 ? FOLD_LAST : 0);
	if (c->fo.findex.n != n) {
		if (VEC_RESERVE(c->fo.findex, n)) {
			c->oom = 1;
			return SIZE_MAX;
		}
		for (size_t i = 0; i < n; i++)
			c->fo.findex.v[i] = NONE32;
		c->fo.findex.n = n;
	}
	return ((size_t)s * (size_t)z->v + (size_t)ch) * FOLD_KINDS + (size_t)f;
}

/* Repeat template t as the next unit of rank r, microbatch mb. */
static void fold_replay(struct ctx *c, const struct ufold *t, int r, int32_t mb)
{
	uint32_t k0 = (uint32_t)c->em.nodes.n;

	if (c->em.nodes.n + t->n_nodes >= GRAPH_MAX_TASKS) {
		c->oom = SYNTH_TOO_BIG;
		return;
	}
	if (VEC_RESERVE(c->em.nodes, c->em.nodes.n + t->n_nodes) ||
	    VEC_RESERVE(c->em.edges, c->em.edges.n + t->n_edges) ||
	    VEC_RESERVE(c->em.colls, c->em.colls.n + t->n_colls) ||
	    VEC_RESERVE(c->fo.marks, c->fo.marks.n + t->n_marks) ||
	    VEC_RESERVE(c->sc.unit_first, c->sc.unit_first.n + 1) ||
	    VEC_RESERVE(c->sc.unit_last, c->sc.unit_last.n + 1)) {
		c->oom = 1;
		return;
	}
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		struct snode n = c->fo.fnodes.v[t->node0 + i];
		n.mb = mb;
		n.iter = c->sc.step;
		c->em.nodes.v[c->em.nodes.n++] = n;
	}
	for (uint32_t i = 0; i < t->n_edges; i++) {
		struct sedge e = c->fo.fedges.v[t->edge0 + i];
		e.src += k0;
		e.dst += k0;
		c->em.edges.v[c->em.edges.n++] = e;
	}
	for (uint32_t i = 0; i < t->n_ext; i++) {
		const struct fext *x = &c->fo.fexts.v[t->ext0 + i];
		struct sedge e = {c->rk[r].last[x->stream], k0 + x->dst, GE_EVENT};
		if (VEC_PUSH(c->em.edges, e)) {
			c->oom = 1;
			return;
		}
	}
	for (uint32_t i = 0; i < t->n_colls; i++) {
		struct graph_coll x = c->fo.fcolls.v[t->coll0 + i];
		x.node += k0;
		x.seq = c->em.seqs.v[x.seq].n++; /* the template keeps its (rank, pg) slot */
		c->em.nodes.v[x.node].coll = (uint32_t)c->em.colls.n;
		c->em.colls.v[c->em.colls.n++] = x;
	}
	for (uint32_t i = 0; i < t->n_marks; i++) {
		const struct fmark *m = &c->fo.fmarks.v[t->mark0 + i];
		struct synth_fold_mark x = {m->node + k0, k0, m->kern0, m->n_kern};
		c->fo.marks.v[c->fo.marks.n++] = x;
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
static uint32_t fold_push(struct ctx *c, const struct ufold *t, struct snode n)
{
	n.corr = -1;
	n.op = 0;
	n.coll = NONE32;
	if (VEC_PUSH(c->fo.fnodes, n))
		c->oom = 1;
	return (uint32_t)(c->fo.fnodes.n - 1 - t->node0);
}

static void fold_edge(struct ctx *c, uint32_t src, uint32_t dst, uint8_t kind)
{
	struct sedge e = {src, dst, kind};
	if (VEC_PUSH(c->fo.fedges, e))
		c->oom = 1;
}

/*
 * Fold the unit just built on rank r (tasks from k0, edges from e0,
 * collectives from c0; *t holds its counts so far) into a template
 * (synth.h): 1 when made (the unit's tasks are then taken back), 0 when
 * the unit cannot be folded (it stays as built).
 */
static int fold_build(struct ctx *c, int r, struct ufold *t, size_t k0, size_t e0, size_t c0,
		      const uint32_t *last0)
{
	uint32_t n = (uint32_t)(c->em.nodes.n - k0), host = c->rk[r].host;
	uint32_t comp = c->rk[r].stream[S_COMPUTE];
	const struct snode *v = c->em.nodes.v + k0;
	struct fscr *x;
	int64_t h = 0;
	uint32_t prev = NONE32, si;

	size_t f_nodes = c->fo.fnodes.n, f_edges = c->fo.fedges.n, f_colls = c->fo.fcolls.n;
	size_t f_marks = c->fo.fmarks.n, f_kerns = c->fo.fkerns.n, f_exts = c->fo.fexts.n;

	if (c->em.pend.n || n == 0 || VEC_RESERVE(c->fo.fscr, n))
		return 0;
	x = c->fo.fscr.v;
	for (uint32_t i = 0; i < n; i++) {
		x[i] = (struct fscr){-1, NONE32, NONE32, 0, 0, 0};
		if (v[i].proc == host) {
			if (v[i].lag)
				return 0;
			x[i].rel = h;
			h = prism_time_add(h, v[i].dur);
		}
	}
	for (size_t k = e0; k < c->em.edges.n; k++) {
		const struct sedge *e = &c->em.edges.v[k];
		uint32_t a = e->src - (uint32_t)k0, b = e->dst - (uint32_t)k0;
		if (e->dst < k0 || v[b].proc == host)
			return 0;
		if (e->src < k0) {
			/* From a stream's last task before the unit: the same
			 * stream's last where the template is repeated. */
			int st;
			for (st = 0; st < S_N && last0[st] != e->src; st++)
				;
			if (st == S_N || e->kind != GE_EVENT)
				return 0;
			x[b].evin = 1;
			continue;
		}
		if (e->kind == GE_LAUNCH && v[a].proc == host && !x[b].launched) {
			x[b].rel = x[a].rel;
			x[b].launched = 1;
		} else if (e->kind == GE_EVENT && v[a].proc != host) {
			x[a].evout = 1;
			x[b].evin = 1;
		} else {
			return 0;
		}
	}
	/* Runs of compute kernels, cut after an event source and before an
	 * event target. */
	c->fo.fsegs.n = 0;
	c->fo.fgates.n = 0;
	if (VEC_PUSH(c->fo.fgates, 0))
		goto oom;
	for (uint32_t i = 0; i < n; i++) {
		struct fseg *sg;
		if (v[i].proc == host)
			continue;
		if (!x[i].launched)
			return 0;
		if (v[i].proc != comp) {
			if (VEC_PUSH(c->fo.fgates, x[i].rel))
				goto oom;
			continue;
		}
		if (prev == NONE32 || x[i].evin || x[prev].evout) {
			struct fseg z = {i, i, 1, 0};
			if (VEC_PUSH(c->fo.fsegs, z) || VEC_PUSH(c->fo.fgates, x[i].rel))
				goto oom;
		} else {
			sg = &c->fo.fsegs.v[c->fo.fsegs.n - 1];
			/* Held to PRISM_TIME_MAX: a run that long is the
			 * simulator's to refuse. */
			sg->rest_ns =
			    prism_time_add(sg->rest_ns, prism_time_add(v[i].lag, v[i].dur));
			sg->last = i;
			sg->n++;
		}
		prev = i;
	}
	qsort(c->fo.fgates.v, c->fo.fgates.n, sizeof(*c->fo.fgates.v), cmp_i64);
	{
		size_t u = 0;
		for (size_t k = 0; k < c->fo.fgates.n; k++)
			if (k == 0 || c->fo.fgates.v[k] != c->fo.fgates.v[u - 1])
				c->fo.fgates.v[u++] = c->fo.fgates.v[k];
		c->fo.fgates.n = u;
	}
	if (c->fo.fgates.v[c->fo.fgates.n - 1] > h)
		return 0;
	/* The template: the host's time split at the gates, then the GPU
	 * tasks in their order. */
	t->node0 = (uint32_t)c->fo.fnodes.n;
	t->edge0 = (uint32_t)c->fo.fedges.n;
	t->coll0 = (uint32_t)c->fo.fcolls.n;
	t->mark0 = (uint32_t)c->fo.fmarks.n;
	for (size_t j = 0; j < c->fo.fgates.n; j++) {
		struct snode hn;
		memset(&hn, 0, sizeof(hn));
		hn.dur = (j + 1 < c->fo.fgates.n ? c->fo.fgates.v[j + 1] : h) - c->fo.fgates.v[j];
		hn.proc = host;
		hn.name = c->em.n_cpu;
		hn.layer = -1;
		hn.mb = v[0].mb;
		hn.iter = v[0].iter;
		hn.phase = v[0].phase;
		hn.kind = GN_CPU;
		fold_push(c, t, hn);
	}
	si = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (v[i].proc == host)
			continue;
		if (v[i].proc != comp) {
			uint32_t me = fold_push(c, t, v[i]);
			x[i].start_of = x[i].end_of = me;
			fold_edge(c, fold_gate(c, x[i].rel), me, GE_LAUNCH);
			if (v[i].coll != NONE32) {
				struct graph_coll cx = c->em.colls.v[v[i].coll];
				cx.node = me;
				cx.seq = NONE32;
				for (size_t q = 0; q < c->em.seqs.n; q++)
					if (c->em.seqs.v[q].rank == (uint32_t)r &&
					    c->em.seqs.v[q].pg == cx.pg)
						cx.seq = (uint32_t)q;
				if (cx.seq == NONE32 || VEC_PUSH(c->fo.fcolls, cx))
					goto oom;
			}
			continue;
		}
		if (si < c->fo.fsegs.n && i == c->fo.fsegs.v[si].first) {
			const struct fseg *sg = &c->fo.fsegs.v[si];
			uint32_t m0 = fold_push(c, t, v[i]), me = m0;
			fold_edge(c, fold_gate(c, x[i].rel), m0, GE_LAUNCH);
			if (sg->n > 1) {
				struct snode rest = v[i];
				struct fmark mk;
				rest.kind = GN_KERNEL;
				rest.name = c->fo.n_fold;
				rest.dur = sg->rest_ns;
				rest.lag = 0;
				me = fold_push(c, t, rest);
				/* Released by the unit's host start: the sim
				 * times its kernels from their launches
				 * (sim.h, folded tasks). */
				fold_edge(c, 0, me, GE_LAUNCH);
				mk.node = me;
				mk.kern0 = (uint32_t)c->fo.fkerns.n;
				for (uint32_t j = i + 1; j <= sg->last; j++) {
					struct synth_fold_kern kk = {
					    x[j].rel, v[j].lag, v[j].dur,
					    v[j].kind == GN_COLL  ? SYNTH_KERN_COLL
					    : v[j].kind == GN_P2P ? SYNTH_KERN_P2P
								  : SYNTH_KERN_COMPUTE};
					if (v[j].proc == comp && VEC_PUSH(c->fo.fkerns, kk))
						goto oom;
				}
				mk.n_kern = (uint32_t)(c->fo.fkerns.n - mk.kern0);
				if (VEC_PUSH(c->fo.fmarks, mk))
					goto oom;
			}
			x[i].start_of = m0;
			x[sg->last].end_of = me;
			if (t->ufirst == NONE32)
				t->ufirst = m0;
			t->ulast = me;
			si++;
		}
	}
	t->ext0 = (uint32_t)c->fo.fexts.n;
	for (size_t k = e0; k < c->em.edges.n; k++) {
		const struct sedge *e = &c->em.edges.v[k];
		uint32_t a = e->src - (uint32_t)k0, b = e->dst - (uint32_t)k0;
		if (e->kind != GE_EVENT)
			continue;
		if (e->src < k0) {
			struct fext z = {x[b].start_of, 0};
			while (last0[z.stream] != e->src)
				z.stream++;
			if (z.dst == NONE32 || VEC_PUSH(c->fo.fexts, z))
				goto oom;
			continue;
		}
		if (x[a].end_of == NONE32 || x[b].start_of == NONE32)
			goto fail; /* cannot happen: runs are cut at events */
		fold_edge(c, x[a].end_of, x[b].start_of, GE_EVENT);
	}
	for (int st = 0; st < S_N; st++) {
		uint32_t l = c->rk[r].last[st];
		t->last[st] = l != NONE32 && l >= k0 ? x[l - k0].end_of : NONE32;
	}
	if (c->oom)
		goto fail;
	t->n_nodes = (uint32_t)(c->fo.fnodes.n - t->node0);
	t->n_edges = (uint32_t)(c->fo.fedges.n - t->edge0);
	t->n_colls = (uint32_t)(c->fo.fcolls.n - t->coll0);
	t->n_marks = (uint32_t)(c->fo.fmarks.n - t->mark0);
	t->n_ext = (uint32_t)(c->fo.fexts.n - t->ext0);
	t->tasks = n;
	/* Take the unit back: its collectives' sequence numbers too. */
	for (size_t q = c0; q < c->em.colls.n; q++)
		for (size_t k = 0; k < c->em.seqs.n; k++)
			if (c->em.seqs.v[k].rank == (uint32_t)r &&
			    c->em.seqs.v[k].pg == c->em.colls.v[q].pg) {
				c->em.seqs.v[k].n--;
				break;
			}
	c->em.nodes.n = k0;
	c->em.edges.n = e0;
	c->em.colls.n = c0;
	return 1;
oom:
	c->oom = 1;
fail:
	c->fo.fnodes.n = f_nodes;
	c->fo.fedges.n = f_edges;
	c->fo.fcolls.n = f_colls;
	c->fo.fmarks.n = f_marks;
	c->fo.fkerns.n = f_kerns;
	c->fo.fexts.n = f_exts;
	return 0;
}

int sf_reuse(struct ctx *c, size_t slot, int r, int32_t mb)
{
	const struct ufold *t;
	if (c->fo.findex.v[slot] >= c->fo.folds.n || c->em.pend.n)
		return 0;
	t = &c->fo.folds.v[c->fo.findex.v[slot]];
	if (t->bucket0 != c->rk[r].bucket || !fold_ext_ok(c, t, r))
		return 0;
	fold_replay(c, t, r, mb);
	return 1;
}

void sf_begin(const struct ctx *c, int r, struct sf_start *u)
{
	u->k0 = c->em.nodes.n;
	u->e0 = c->em.edges.n;
	u->c0 = c->em.colls.n;
	u->w0 = c->em.waits.n;
	memcpy(u->last0, c->rk[r].last, sizeof(u->last0));
	memset(&u->t, 0, sizeof(u->t));
	u->t.ufirst = u->t.ulast = NONE32;
	u->t.bucket0 = c->rk[r].bucket;
	u->t.flops = c->tally.flops;
	u->t.kernels = c->tally.kernels;
	memcpy(u->t.hits, c->tally.kdb_hits, sizeof(u->t.hits));
}

int sf_end(struct ctx *c, int r, int32_t mb, size_t slot, const struct sf_start *u)
{
	if (slot != SIZE_MAX && !c->oom && c->fo.findex.v[slot] == NONE32) {
		struct ufold t = u->t;
		t.flops = c->tally.flops - t.flops;
		t.kernels = c->tally.kernels - t.kernels;
		for (int h = 0; h < 3; h++)
			t.hits[h] = c->tally.kdb_hits[h] - t.hits[h];
		t.bucket1 = c->rk[r].bucket;
		if (fold_build(c, r, &t, u->k0, u->e0, u->c0, u->last0)) {
			/* The replay adds the unit's counts again. */
			c->tally.flops -= t.flops;
			c->tally.kernels -= t.kernels;
			for (int h = 0; h < 3; h++)
				c->tally.kdb_hits[h] -= t.hits[h];
			c->em.waits.n = u->w0;
			if (VEC_PUSH(c->fo.folds, t)) {
				c->oom = 1;
				return 1;
			}
			c->fo.findex.v[slot] = (uint32_t)(c->fo.folds.n - 1);
			/* The streams as before the unit: its events from
			 * before it are replayed from them. */
			memcpy(c->rk[r].last, u->last0, sizeof(u->last0));
			fold_replay(c, &c->fo.folds.v[c->fo.folds.n - 1], r, mb);
			return 1;
		}
		c->fo.findex.v[slot] = FOLD_NEVER;
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
	VEC_FREE(c->fo.findex);
}

/* A forward unit of chunk ch of stage s: the activations received from
 * the stage before, the embedding (first chunk), the chunk's layers, each
 * after its gathers (gather_before: depth, ids), the head (last chunk),
 * the activations sent on. */
static void unit_fwd(struct ctx *c, int s, int ch, const struct shape *z, int depth, uint32_t *ids)
{
	const struct synth_in *in = c->in;
	int r = s, os, oc;
	int first_chunk = s == 0 && ch == 0, last_chunk = s == z->p - 1 && ch == z->v - 1;
	int l0 = layout_chunk_first(&in->m, &c->lay, s, ch);
	int nl = layout_chunk_layers(&in->m, &c->lay, s, ch);

	if (fwd_prev(z, s, ch, &os, &oc)) {
		pp_transfer(c, r, S_RECVF, GC_RECV, os, oc, z, 1);
		se_event_wait(c, r, S_RECVF, S_COMPUTE);
	}
	if (first_chunk && !in->bare) {
		if (depth >= 0) /* the embedding's weights, sharded too */
			se_event_wait_task(c, r, gather(c, r, embed_params(c, r), 1), S_DP,
					   S_COMPUTE);
		sl_embed_fwd(c, r, z);
	}
	for (int l = 0; l < nl; l++) {
		c->rk[r].layer = l0 + l;
		gather_before(c, r, z, depth, l, nl, ids, l0);
		sl_layer_fwd(c, r, z);
	}
	c->rk[r].layer = -1;
	if (last_chunk && !in->bare) {
		/* The head's weights stay gathered for its backward (as
		 * torchtitan leaves the output layer unsharded). */
		if (depth >= 0)
			se_event_wait_task(c, r, gather(c, r, head_params(c, r), 1), S_DP,
					   S_COMPUTE);
		sl_head_fwd(c, r, z);
	}
	if (fwd_next(z, s, ch, &os, &oc)) {
		se_event_wait(c, r, S_COMPUTE, S_SENDF);
		pp_transfer(c, r, S_SENDF, GC_SEND, s, ch, z, 1);
		if (!in->lay.pp_overlap)
			se_event_wait(c, r, S_SENDF, S_COMPUTE);
	}
}

/* A backward unit: the gradient received from the stage after, the head
 * (last chunk), the chunk's layers in reverse, the embedding (first
 * chunk), the gradient sent back.  dp_bucket: the chunk's last
 * microbatch, whose gradients are reduced (under ZeRO-2/3 every
 * microbatch's are). */
static void unit_bwd(struct ctx *c, int s, int ch, const struct shape *z, int depth, uint32_t *ids,
		     int dp_bucket)
{
	const struct synth_in *in = c->in;
	int r = s, os, oc;
	int first_chunk = s == 0 && ch == 0, last_chunk = s == z->p - 1 && ch == z->v - 1;
	int l0 = layout_chunk_first(&in->m, &c->lay, s, ch);
	int nl = layout_chunk_layers(&in->m, &c->lay, s, ch);
	/* Gradients are reduced in the last microbatch's backward of each
	 * chunk, under ZeRO-2/3 in every backward (the gradients are sharded:
	 * DeepSpeed's stage 2 and FSDP reduce each micro-step). */
	int reduce = dp_bucket || c->lay.zero >= 2;

	if (fwd_next(z, s, ch, &os, &oc)) {
		pp_transfer(c, r, S_RECVB, GC_RECV, os, oc, z, 0);
		se_event_wait(c, r, S_RECVB, S_COMPUTE);
	}
	if (last_chunk && !in->bare) {
		sl_head_bwd(c, r, z);
		if (reduce)
			grad_ready(c, r, z, head_params(c, r));
	}
	for (int l = nl - 1; l >= 0; l--) {
		c->rk[r].layer = l0 + l;
		gather_before(c, r, z, depth, nl - 1 - l, nl, ids, l0);
		sl_layer_bwd(c, r, z);
		if (reduce)
			layer_grads(c, r, z, l0 + l);
	}
	c->rk[r].layer = -1;
	if (first_chunk && !in->bare) {
		sl_embed_bwd(c, r, z);
		if (reduce)
			grad_ready(c, r, z, embed_params(c, r));
	}
	/* The chunk's last bucket (its first layers) once its backward
	 * is done; without overlap, ZeRO-2/3 still reduce each
	 * microbatch's, the others wait for the stage's last backward. */
	if (reduce && (in->lay.overlap_grad || c->lay.zero >= 2))
		grad_flush(c, r, z);
	if (fwd_prev(z, s, ch, &os, &oc)) {
		se_event_wait(c, r, S_COMPUTE, S_SENDB);
		pp_transfer(c, r, S_SENDB, GC_SEND, s, ch, z, 0);
		if (!in->lay.pp_overlap)
			se_event_wait(c, r, S_SENDB, S_COMPUTE);
	}
}

/* The first and last compute task of rank r's unit that began at task
 * k0, for the bubble. */
static void unit_marks(struct ctx *c, int r, size_t k0)
{
	uint32_t first_task = NONE32, last_task = NONE32;
	for (size_t u = k0; u < c->em.nodes.n; u++)
		if (c->em.nodes.v[u].proc == c->rk[r].stream[S_COMPUTE]) {
			if (first_task == NONE32)
				first_task = (uint32_t)u;
			last_task = (uint32_t)u;
		}
	if (first_task != NONE32 &&
	    (VEC_PUSH(c->sc.unit_first, first_task) || VEC_PUSH(c->sc.unit_last, last_task)))
		c->oom = 1;
}

/* One forward (fwd = 1) or backward unit of microbatch mb on chunk ch of
 * stage s; dp_bucket: issue the chunk's gradient collectives.  Folding
 * (in->units): a unit whose template is made repeats it, the first of its
 * kind is built and folded into one (fold.c). */
static void unit(struct ctx *c, int s, int ch, int mb, int fwd, int dp_bucket,
		 const struct shape *z)
{
	int r = s;
	int nl = layout_chunk_layers(&c->in->m, &c->lay, s, ch);
	int depth = gather_depth(c, fwd, mb);
	uint32_t *ids = NULL;
	size_t slot = c->fo.fold ? sf_slot(c, z, s, ch, mb, fwd, dp_bucket) : SIZE_MAX;
	struct sf_start u;

	set_ann(c, r, -1, fwd ? PH_FORWARD : PH_BACKWARD, mb);
	if (slot != SIZE_MAX && sf_reuse(c, slot, r, mb)) {
		c->rk[r].layer = -1;
		return;
	}
	if (depth >= 0 && !c->dry &&
	    !(ids = prism_malloc((size_t)(nl > 0 ? nl : 1) * sizeof(*ids)))) {
		c->oom = 1;
		return;
	}
	sf_begin(c, r, &u);
	if (fwd)
		unit_fwd(c, s, ch, z, depth, ids);
	else
		unit_bwd(c, s, ch, z, depth, ids, dp_bucket);
	if (sf_end(c, r, mb, slot, &u)) {
		free(ids);
		return;
	}
	free(ids);
	unit_marks(c, r, u.k0);
}

/* Unit k of stage s's schedule order: forward or backward number k. */
static void unit_of(const struct shape *z, int k, int fwd, int *mb, int *ch)
{
	int pv = z->p * z->v;
	*mb = (k / pv) * z->p + k % z->p;
	*ch = (k % pv) / z->p;
	if (!fwd)
		*ch = z->v - 1 - *ch;
}

static void stage_step(struct ctx *c, int s, const struct shape *z)
{
	const struct synth_in *in = c->in;
	int total = z->m * z->v, warm;
	int *last_b = prism_calloc((size_t)z->v, sizeof(int)); /* last backward unit per chunk */
	int kb = 0, kf = 0;

	if (!last_b) {
		c->oom = 1;
		return;
	}
	for (int k = 0; k < total; k++) {
		int mb, ch;
		unit_of(z, k, 0, &mb, &ch);
		last_b[ch] = k;
	}
	if (in->lay.schedule == LAYOUT_GPIPE)
		warm = total;
	else if (in->lay.schedule == LAYOUT_1F1B)
		warm = z->p - s - 1;
	else
		warm = z->m == z->p ? total : (z->p - s - 1) * 2 + (z->v - 1) * z->p;
	if (warm > total)
		warm = total;
#define F_UNIT()                                                                                   \
	do {                                                                                       \
		int mb_, ch_;                                                                      \
		unit_of(z, kf, 1, &mb_, &ch_);                                                     \
		unit(c, s, ch_, mb_, 1, 0, z);                                                     \
		kf++;                                                                              \
	} while (0)
#define B_UNIT()                                                                                   \
	do {                                                                                       \
		int mb_, ch_;                                                                      \
		unit_of(z, kb, 0, &mb_, &ch_);                                                     \
		unit(c, s, ch_, mb_, 0, last_b[ch_] == kb, z);                                     \
		kb++;                                                                              \
	} while (0)
	for (int i = 0; i < warm; i++)
		F_UNIT();
	for (int i = 0; i < total - warm; i++) {
		F_UNIT();
		B_UNIT();
	}
	while (kb < total)
		B_UNIT();
#undef F_UNIT
#undef B_UNIT
	/* Without overlap the gradients wait for the stage's last backward. */
	grad_flush(c, s, z);
	free(last_b);
}

/* The optimizer's kernels for np_ local parameters (of one layer, or of
 * the embedding or head). */
static void adam(struct ctx *c, int r, double np_, int amax)
{
	const struct synth_in *in = c->in;
	/* FP16: unscale the gradients and check them for inf/NaN (dynamic
	 * loss scaling; fp32 main gradients read and written). */
	if (in->lay.dtype == HW_FP16)
		sl_kernel(c, r, KC_OPTIMIZER,
			  "multi_tensor_apply_kernel<UnscaleFunctor_non_finite_check>", 8 * np_);
	/* Gradient clipping: the norm of the fp32 main gradients, then their
	 * scaling by the clip coefficient. */
	sl_kernel(c, r, KC_OPTIMIZER, "multi_tensor_apply_kernel<L2NormFunctor>", 4 * np_);
	sl_kernel(c, r, KC_OPTIMIZER, "multi_tensor_apply_kernel<ScaleFunctor>", 8 * np_);
	sl_kernel(c, r, KC_OPTIMIZER, "multi_tensor_apply_kernel<FusedAdam>", np_ * 30);
	/* FP8: the amax history and scale update of the layer's tensors, one
	 * small kernel (Transformer Engine's delayed scaling). */
	if (amax && sl_low_precision(in->lay.dtype))
		sl_kernel(c, r, KC_ELEMENTWISE, "te_delayed_scaling_amax_and_scale_update",
			  3 * 8 * 1024 * 4.0);
}

static void optimizer(struct ctx *c, int r, const struct shape *z)
{
	const struct synth_in *in = c->in;
	int zero = sharded(c);
	double share = zero ? 1.0 / layout_shard_group(&c->lay) : 1.0;
	/* The experts' optimizer state is sharded over their own group. */
	double eshare = in->lay.zero >= 1 && z->edp > 1 ? 1.0 / z->edp : 1.0;
	const struct llm *m = &in->m;
	int tied = !m->untied && z->p > 1 && (r == 0 || r == z->p - 1);

	set_ann(c, r, -1, PH_OPTIMIZER, -1);
	/* Tied embeddings on two stages: the word embedding's gradient is
	 * all-reduced between the first and the last stage once the
	 * data-parallel reduction is done (Megatron-LM's
	 * _allreduce_word_embedding_grads, in finalize_model_grads). */
	if (tied) {
		struct comm_group g = {2, z->emb_per_node};
		se_event_wait(c, r, S_COMPUTE, S_DP);
		se_collective(c, r, S_DP, GC_ALL_REDUCE, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
			      (double)m->vocab * m->hidden / z->t * grad_bytes(c), g, "emb");
	}
	if (layout_dpc(&c->lay) > 1 || tied || (z->moe && z->edp > 1))
		se_event_wait(c, r, S_DP, S_COMPUTE);
	/* Adam over fp32 master weights, moments and the gradient, one kernel
	 * per layer (marked with it, so that layer edits on the written trace
	 * repeat the layer's optimizer work too); the embedding and the head
	 * on their stages. */
	for (int ch = 0; ch < z->v; ch++) {
		int l0 = layout_chunk_first(m, &c->lay, r, ch),
		    nl = layout_chunk_layers(m, &c->lay, r, ch);
		for (int i = 0; i < nl; i++) {
			set_ann(c, r, l0 + i, PH_OPTIMIZER, -1);
			if (z->moe && llm_is_moe_layer(m, l0 + i))
				adam(c, r, z->md * share + z->me * eshare, 1);
			else
				adam(c, r, layer_params(z) * share, 1);
		}
	}
	set_ann(c, r, -1, PH_OPTIMIZER, -1);
	if (embed_params(c, r) > 0)
		adam(c, r, embed_params(c, r) * share, 0);
	if (head_params(c, r) > 0)
		adam(c, r, head_params(c, r) * share, 0);
	/* ZeRO-1/2: the updated weights all-gathered, here or (overlap_param)
	 * before the next step's first forward; ZeRO-3 keeps them sharded. */
	if (zero && in->lay.zero <= 2 && !in->lay.overlap_param) {
		se_event_wait(c, r, S_COMPUTE, S_DP);
		for (int ch = 0; ch < z->v; ch++) {
			int l0 = layout_chunk_first(m, &c->lay, r, ch);
			int nl = layout_chunk_layers(m, &c->lay, r, ch);
			for (int i = 0; i < nl; i++) {
				set_ann(c, r, l0 + i, PH_OPTIMIZER, -1);
				gather(c, r, dense_params(c, z, l0 + i), 0);
			}
		}
		set_ann(c, r, -1, PH_OPTIMIZER, -1);
		if (embed_params(c, r) + head_params(c, r) > 0)
			gather(c, r, embed_params(c, r) + head_params(c, r), 0);
	}
	/* The experts' updated weights, all-gathered over their group after
	 * the step (not overlapped with the next forward). */
	if (z->moe && z->edp > 1 && in->lay.zero >= 1 && in->lay.zero <= 2) {
		char pg[32];
		double w, g, o;
		mem_bytes_per_param(mem_prec(c->lay.dtype), &w, &g, &o);
		snprintf(pg, sizeof(pg), "edp.%d", r);
		se_event_wait(c, r, S_COMPUTE, S_DP);
		for (int ch = 0; ch < z->v; ch++) {
			int l0 = layout_chunk_first(m, &c->lay, r, ch);
			int nl = layout_chunk_layers(m, &c->lay, r, ch);
			for (int i = 0; i < nl; i++) {
				if (!llm_is_moe_layer(m, l0 + i))
					continue;
				set_ann(c, r, l0 + i, PH_OPTIMIZER, -1);
				se_collective(c, r, S_DP, GC_ALL_GATHER,
					      "ncclDevKernel_AllGather_RING_LL", z->me * w,
					      (struct comm_group){z->edp, z->edp_per_node}, pg);
			}
		}
		set_ann(c, r, -1, PH_OPTIMIZER, -1);
	}
}

void ss_steps(struct ctx *c, const struct shape *z)
{
	const struct synth_in *in = c->in;
	for (c->sc.step = 0; c->sc.step < (in->steps > 0 ? in->steps : 1); c->sc.step++) {
		for (int r = 0; r < in->lay.pp; r++) {
			uint32_t first = (uint32_t)c->em.nodes.n, w;
			set_ann(c, r, -1, PH_NONE, -1);
			stage_step(c, r, z);
			if (!in->bare)
				optimizer(c, r, z);
			set_ann(c, r, -1, PH_NONE, -1);
			w = se_sync(c, r);
			if (c->oom)
				return;
			if (VEC_PUSH(c->sc.step_first, first) || VEC_PUSH(c->sc.step_last, w)) {
				c->oom = 1;
				return;
			}
		}
	}
}

void synth_mem_layout(const struct synth_in *in, struct layout *l)
{
	*l = in->lay;
	if (in->lay.partition != LAYOUT_PART_GIVEN && synth_partition(in, l->part, NULL))
		l->part[0] = 0;
}

/* The kernel model's time of the embedding's forward and backward (*emb)
 * and of the head's and loss's (*head), one microbatch. */
/* A context that only adds up the kernel model's times (dry_s) of one
 * rank, rk, building nothing. */
static void dry_ctx(struct ctx *c, struct rankst *rk, const struct synth_in *in)
{
	memset(c, 0, sizeof(*c));
	memset(rk, 0, sizeof(*rk));
	c->in = in;
	c->dry = 1;
	c->kdb_gpu = -1;
	c->rk = rk;
}

void synth_extra_times(const struct synth_in *in, double *emb, double *head)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_ctx(&c, &rk, in);
	sl_shape(in, &z);
	sl_embed_fwd(&c, 0, &z);
	sl_embed_bwd(&c, 0, &z);
	*emb = c.dry_s;
	c.dry_s = 0;
	sl_head_fwd(&c, 0, &z);
	sl_head_bwd(&c, 0, &z);
	*head = c.dry_s;
}

int synth_partition(const struct synth_in *in, uint16_t *part, struct prism_err *err)
{
	int p = in->lay.pp, v = in->lay.vp > 0 ? in->lay.vp : 1, L = in->m.layers, rc;

	if (in->lay.partition == LAYOUT_PART_GIVEN || p < 2) {
		if (part != in->lay.part)
			memcpy(part, in->lay.part, sizeof(in->lay.part));
		if (p < 2)
			part[0] = 0;
		return 0;
	}
	memset(part, 0, sizeof(in->lay.part));
	if ((rc = layout_check_partition(&in->m, &in->lay, err)))
		return rc;
	if (in->lay.partition == LAYOUT_PART_EMBED_LOSS) {
		int n = (L + 2) / p;
		for (int s = 0; s < p; s++)
			part[s] = (uint16_t)(s == 0 || s == p - 1 ? n - 1 : n);
	} else {
		/* Balanced: each stage gets v layers (one a chunk), then each
		 * further v layers go where the stage's time after them is the
		 * least -- the first stage's embedding and the last's head count
		 * in -- the later stage on ties (the earlier ones hold more
		 * activations).  With identical increments this greedy choice
		 * minimises the largest stage time. */
		double f, b, a, emb, head, load[LAYOUT_MAX_STAGES];
		synth_layer_times(in, &f, &b, &a);
		synth_extra_times(in, &emb, &head);
		for (int s = 0; s < p; s++) {
			part[s] = (uint16_t)v;
			load[s] = v * (f + b) + (s == 0 ? emb : 0) + (s == p - 1 ? head : 0);
		}
		for (int left = L - p * v; left > 0; left -= v) {
			int best = p - 1;
			for (int s = p - 2; s >= 0; s--)
				if (load[s] + v * (f + b) < load[best] + v * (f + b) - 1e-15)
					best = s;
			part[best] = (uint16_t)(part[best] + v);
			load[best] += v * (f + b);
		}
		{
			int even = L % p == 0;
			for (int s = 0; even && s < p; s++)
				even = part[s] == L / p;
			if (even)
				part[0] = 0;
		}
	}
	return 0;
}

void synth_mem(const struct synth_in *in, struct mem_est *out)
{
	struct layout l;
	synth_mem_layout(in, &l);
	mem_estimate(&in->m, &l, in->hw, out);
}

/* The layout as the kernels of one layer need it (synth_build's). */
void sl_shape(const struct synth_in *in, struct shape *z)
{
	memset(z, 0, sizeof(*z));
	z->b = in->lay.mbs;
	z->cp = layout_cp(&in->lay);
	z->s_full = in->m.seq;
	z->s = (double)in->m.seq / z->cp;
	z->h = in->m.hidden;
	z->f = in->m.ffn;
	z->V = in->m.vocab;
	z->t = in->lay.tp;
	z->a = in->m.heads;
	z->kv = llm_kv_heads(&in->m);
	z->qkv = llm_qkv_width(&in->m);
	z->qkv_r = llm_qkv_width_rank(&in->m, in->lay.tp);
	z->f_in = llm_ffn_in(&in->m);
	z->params = llm_layer_params_rank(&in->m, in->lay.tp);
	z->gated = in->m.gated;
	z->p = in->lay.pp;
	z->v = in->lay.vp;
	z->m = in->lay.microbatches;
	z->L = in->m.layers / (in->lay.pp * in->lay.vp);
	/* A ring's neighbours share an NVLink domain when the cp x tp ranks
	 * fit one (Megatron-LM's order: tp, then cp). */
	z->cp_per_node = in->hw && (int64_t)z->cp * in->lay.tp <= hw_domain(in->hw) ? 2 : 1;
	if (llm_moe_layers(&in->m) > 0) {
		const struct llm *m = &in->m;
		const struct layout *l = &in->lay;
		int node = in->hw ? hw_domain(in->hw) : 1; /* the NVLink domain */
		z->moe = 1;
		z->E = m->experts;
		z->k = m->top_k;
		z->fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn;
		z->fe_in = (m->gated ? 2.0 : 1.0) * z->fe;
		z->shared = m->shared_experts;
		z->ep = layout_ep(l);
		z->etp = layout_etp(l);
		z->eloc = z->E / z->ep;
		z->n_tok = z->b * z->s / z->t;
		z->M = mem_moe_tokens(m, l);
		mem_moe_layer_params(m, l, &z->md, &z->me);
		z->edp = layout_edp(l);
		/* Megatron-LM's expert rank order: etp fastest, then ep, then the
		 * expert data-parallel replicas. */
		z->etp_per_node = comm_per_domain((int)z->etp, node);
		z->ep_per_node =
		    comm_per_domain((int)z->ep, node / (int)z->etp > 0 ? node / (int)z->etp : 1);
		z->edp_per_node = comm_per_domain(
		    z->edp, node / (int)(z->ep * z->etp) > 0 ? node / (int)(z->ep * z->etp) : 1);
	}
}

static void layer_times(const struct synth_in *in, int moe, double *fwd_s, double *bwd_s,
			double *attn_fwd_s)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_ctx(&c, &rk, in);
	rk.mb = 1; /* a steady microbatch: fp8 weights already cast */
	rk.phase = PH_FORWARD;
	rk.layer = moe ? in->m.layers - 1 : -1; /* a dense layer, or an MoE one */
	sl_shape(in, &z);
	sl_layer_fwd(&c, 0, &z);
	*fwd_s = c.dry_s;
	c.dry_s = 0;
	rk.phase = PH_BACKWARD;
	sl_layer_bwd(&c, 0, &z);
	*bwd_s = c.dry_s;
	c.dry_s = 0;
	sl_attn_fwd(&c, 0, &z);
	*attn_fwd_s = c.dry_s;
}

void synth_layer_times(const struct synth_in *in, double *fwd_s, double *bwd_s, double *attn_fwd_s)
{
	layer_times(in, 0, fwd_s, bwd_s, attn_fwd_s);
}

void synth_moe_layer_times(const struct synth_in *in, double *fwd_s, double *bwd_s,
			   double *attn_fwd_s)
{
	layer_times(in, llm_moe_layers(&in->m) > 0, fwd_s, bwd_s, attn_fwd_s);
}

double synth_moe_a2a_s(const struct synth_in *in)
{
	struct shape z;
	struct comm_est e;
	sl_shape(in, &z);
	if (!z.moe || z.ep <= 1 ||
	    comm_time(in->hw, GC_ALL_TO_ALL, sl_moe_a2a_bytes(&z),
		      (struct comm_group){(int)z.ep, z.ep_per_node}, in->comm_eff, COMM_AUTO, &e))
		return 0;
	return e.time_s;
}

double synth_moe_a2a_bytes(const struct synth_in *in)
{
	struct shape z;
	sl_shape(in, &z);
	return z.moe && z.ep > 1 ? sl_moe_a2a_bytes(&z) : 0;
}

/* What a kernel of class cls whose kernel-model time is at least min_s
 * takes at least, through the class's line and scale; 0 where the line
 * makes no bound (a negative fitted overhead: a fitted line may). */
static double line_bound(const struct synth_in *in, int cls, double min_s)
{
	const struct calib_class *k = &in->cost[cls];
	double e = k->eff > 0 ? k->eff : 1;
	if (k->overhead_s < 0 || in->scale[cls] <= 0)
		return 0;
	return min_s / e * in->scale[cls];
}

/* The least time of one layer's GEMMs and attention core on one
 * tensor-parallel rank, forward (*f) and backward (*b, without
 * recomputation): every GEMM at least its FLOPs at the achievable peak of
 * its dtype (kperf_gemm_min_s), the attention kernels at least their block
 * work at the pass's achievable peak (kperf_attn_min_s). */
static void layer_bound(const struct synth_in *in, double *f, double *b, double *attn_f)
{
	const struct llm *m = &in->m;
	double bt = in->lay.mbs, t = in->lay.tp, gemm, attn, af, ab;
	int dt = layout_attn_dtype(&in->lay), cp = layout_cp(&in->lay);

	llm_layer_flops(m, bt, &gemm, &attn);
	gemm = line_bound(in, KC_GEMM, kperf_gemm_min_s(in->hw, in->lay.dtype, gemm / t / cp));
	if (cp > 1) {
		/* The ring's steps (ring_attn): the rank's own causal block and
		 * cp - 1 half blocks, each at least its work at the peak. */
		double heads = m->heads / t, d = (double)m->hidden / m->heads, sl = m->seq / cp;
		af = line_bound(in, KC_ATTENTION,
				kperf_attn_min_s(in->hw, dt, 0, bt, heads, sl, sl, d, 1)) +
		     (cp - 1) *
			 line_bound(in, KC_ATTENTION,
				    kperf_attn_min_s(in->hw, dt, 0, bt, heads, sl / 2, sl, d, 0));
		ab = line_bound(in, KC_ATTENTION,
				kperf_attn_min_s(in->hw, dt, 1, bt, heads, sl, sl, d, 1)) +
		     (cp - 1) *
			 line_bound(in, KC_ATTENTION,
				    kperf_attn_min_s(in->hw, dt, 1, bt, heads, sl / 2, sl, d, 0));
	} else if (in->lay.flash) {
		double heads = m->heads / t, d = (double)m->hidden / m->heads;
		af = line_bound(in, KC_ATTENTION,
				kperf_attn_min_s(in->hw, dt, 0, bt, heads, m->seq, m->seq, d, 1));
		ab = line_bound(in, KC_ATTENTION,
				kperf_attn_min_s(in->hw, dt, 1, bt, heads, m->seq, m->seq, d, 1));
	} else {
		af = line_bound(in, KC_GEMM, kperf_gemm_min_s(in->hw, dt, attn / t));
		ab = 2 * af;
	}
	*f = gemm + af;
	*b = 2 * gemm + ab;
	*attn_f = af;
}

/* The same for a mixture-of-experts layer on the busiest rank: its
 * attention, projection, router, shared and routed experts' FLOPs
 * (llm_moe_layer_flops' terms on the rank's tokens) at the peak. */
static void moe_layer_bound(const struct synth_in *in, double *f, double *b, double *attn_f)
{
	struct shape z;
	double T, fl, g, fd, bd, ab;
	layer_bound(in, &fd, &bd, attn_f);
	ab = bd - 2 * (fd - *attn_f); /* the attention core's backward */
	sl_shape(in, &z);
	T = z.b * z.s;
	fl = llm_gemm_flops(T, z.qkv_r, z.h) + llm_gemm_flops(T, z.h, z.h) / z.t +
	     llm_gemm_flops(z.n_tok, z.E, z.h) +
	     z.shared * (llm_gemm_flops(T, z.fe_in, z.h) + llm_gemm_flops(T, z.h, z.fe)) / z.t +
	     llm_gemm_flops(z.M, z.fe_in / z.etp, z.h) + llm_gemm_flops(z.M, z.h, z.fe / z.etp);
	g = line_bound(in, KC_GEMM, kperf_gemm_min_s(in->hw, in->lay.dtype, fl));
	*f = g + *attn_f;
	*b = 2 * g + ab;
}

double synth_lower_bound(const struct synth_in *in)
{
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	double b = l->mbs, h = m->hidden, t = l->tp, bs = b * m->seq / layout_cp(l);
	double tp_s = 0, f, bw, af, lb, mfw = 0, mbw = 0;
	struct comm_est e;

	if (in->hw->peak_flops[in->lay.dtype] <= 0 || l->pp < 1 || l->vp < 1 || in->kdb)
		return 0;
	/* One layer's forward on one tensor-parallel rank: its GEMMs, its
	 * attention, and the tensor-parallel collectives (on the compute
	 * stream: two rounds, each an all-reduce or reduce-scatter +
	 * all-gather). */
	layer_bound(in, &f, &lb, &af);
	/* Overlapped with the GEMMs (tp_overlap), the collectives leave the
	 * compute stream: the bound keeps the GEMMs alone. */
	if (t > 1 && !in->bare && !(l->tp_overlap && l->sp)) {
		struct comm_group g = {l->tp, l->tp};
		double round = 0;
		if (l->sp) {
			if (comm_time(in->hw, GC_REDUCE_SCATTER, bs * h * 2, g, in->comm_eff,
				      COMM_AUTO, &e) == 0)
				round += e.time_s;
			if (comm_time(in->hw, GC_ALL_GATHER, bs * h * 2, g, in->comm_eff, COMM_AUTO,
				      &e) == 0)
				round += e.time_s;
		} else if (comm_time(in->hw, GC_ALL_REDUCE, bs * h * 2, g, in->comm_eff, COMM_AUTO,
				     &e) == 0) {
			round = e.time_s;
		}
		tp_s = 2 * round;
	}
	/* Backward: its GEMMs and attention, the same collectives, and the
	 * forward again under full recomputation or the attention core's
	 * forward under selective recomputation. */
	bw = lb + tp_s + (l->recompute == LAYOUT_RECOMPUTE_FULL ? f + tp_s : 0) +
	     (l->recompute == LAYOUT_RECOMPUTE_SELECTIVE ? af : 0);
	/* Mixture-of-experts layers: their GEMMs (moe_layer_bound) and the
	 * tensor-parallel collectives they keep: the attention's round, and
	 * the shared experts' (the routed experts' all-to-alls and expert
	 * tensor-parallel collectives are left out: a weaker bound). */
	if (llm_moe_layers(m) > 0) {
		double mf, mb, maf, mtp = m->shared_experts > 0 ? tp_s : tp_s / 2;
		moe_layer_bound(in, &mf, &mb, &maf);
		mbw = mb + mtp + (l->recompute == LAYOUT_RECOMPUTE_FULL ? mf + mtp : 0) +
		      (l->recompute == LAYOUT_RECOMPUTE_SELECTIVE ? maf : 0);
		mfw = mf + mtp;
	}
	f += tp_s;
	/* Stage k's compute stream runs all of its units one after another,
	 * the last stage's with the logits (forward and both gradients) in
	 * each of its last-chunk units; none can start before the first
	 * microbatch's forward has crossed the first chunks of the k stages
	 * before it, and after its last unit (its first chunk's backward) the
	 * gradient crosses them back: the step holds those chunks' forwards
	 * and backwards and stage k's work, one after another.  The largest
	 * over k bounds the step (with even stages, the last stage's:
	 * (p - 1) chunks + m v chunks + the logits). */
	{
		struct layout r;
		double fill = 0, best = 0, logits = 0;
		synth_mem_layout(in, &r);
		if (!in->bare)
			logits = (double)l->microbatches * 3 *
				 line_bound(in, KC_GEMM,
					    kperf_gemm_min_s(in->hw, sl_logit_dtype(in),
							     llm_gemm_flops(bs, m->vocab, h) / t));
		for (int k = 0; k < l->pp; k++) {
			double w = 0, wm = 0;
			for (int c = 0; c < l->vp; c++) {
				w += layout_chunk_layers(m, &r, k, c);
				wm += layout_chunk_moe(m, &r, k, c);
			}
			if (wm > 0)
				w = (double)l->microbatches *
				    ((w - wm) * (f + bw) + wm * (mfw + mbw));
			else
				w *= (double)l->microbatches * (f + bw);
			if (k == l->pp - 1)
				w += logits;
			if (fill + w > best)
				best = fill + w;
			if (layout_chunk_moe(m, &r, k, 0) > 0)
				fill += (layout_chunk_layers(m, &r, k, 0) -
					 layout_chunk_moe(m, &r, k, 0)) *
					    (f + bw) +
					layout_chunk_moe(m, &r, k, 0) * (mfw + mbw);
			else
				fill += layout_chunk_layers(m, &r, k, 0) * (f + bw);
		}
		return best;
	}
}

/* The mixture-of-experts rules (synth_check), after the dense ones'
 * ranges. */
int synth_check(const struct synth_in *in, struct prism_err *err)
{
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	int rc;

	if ((rc = layout_check(m, l, in->hw, err)))
		return rc;
	{
		/* The graph's size, before anything is built (each at most 2^16,
		 * steps 100: the product fits 64 bits). */
		int64_t steps = in->steps > 0 ? in->steps : 1;
		int64_t least = steps * m->layers * l->microbatches * SYNTH_MIN_TASKS_PER_LAYER;
		if (in->units) {
			/* Folded: a few tasks per unit, and the largest unit
			 * (a chunk's layers) built once. */
			int64_t units = steps * l->pp * l->vp * l->microbatches * 2;
			if (units * SYNTH_MIN_TASKS_PER_UNIT > GRAPH_MAX_TASKS)
				return prism_err_set(
				    err, PRISM_ELIMIT,
				    "layout: %" PRId64 " steps x %d stages x %d chunks x %d "
				    "microbatches make %" PRId64 " pipeline units, more than "
				    "the %u tasks prism simulates can hold",
				    steps, l->pp, l->vp, l->microbatches, units, GRAPH_MAX_TASKS);
			least = (int64_t)m->layers / (l->pp * l->vp) * SYNTH_MIN_TASKS_PER_LAYER;
		}
		if (least > GRAPH_MAX_TASKS)
			return prism_err_set(
			    err, PRISM_ELIMIT,
			    "layout: %" PRId64 " steps x %d layers x %d microbatches "
			    "make at least %" PRId64 " tasks, more than the %u "
			    "prism simulates",
			    steps, m->layers, l->microbatches, least, GRAPH_MAX_TASKS);
	}
	return 0;
}

/* Nodes grouped by processor (stable), CSR with order edges added. */
struct graph *se_finish(struct ctx *c, uint32_t **newid_out)
{
	uint32_t nn = (uint32_t)c->em.nodes.n, np = (uint32_t)c->em.procs.n;
	uint32_t *newid = prism_malloc((nn ? nn : 1) * sizeof(*newid));
	uint32_t *cnt = prism_calloc((size_t)np + 1, sizeof(*cnt));
	uint32_t ne, *fill = NULL;
	struct graph *g = NULL;
	struct sedge *e = NULL;
	size_t n_e = 0;

	if (!newid || !cnt)
		goto out;
	for (uint32_t u = 0; u < nn; u++)
		cnt[c->em.nodes.v[u].proc + 1]++;
	for (uint32_t p = 0; p < np; p++) {
		c->em.procs.v[p].first = cnt[p];
		c->em.procs.v[p].n = cnt[p + 1];
		cnt[p + 1] += cnt[p];
	}
	for (uint32_t u = 0; u < nn; u++)
		newid[u] = cnt[c->em.nodes.v[u].proc]++;
	/* Edges: the built ones plus order edges along each processor. */
	e = prism_malloc((c->em.edges.n + nn + 1) * sizeof(*e));
	if (!e)
		goto out;
	for (size_t k = 0; k < c->em.edges.n; k++) {
		e[n_e] = c->em.edges.v[k];
		e[n_e].src = newid[e[n_e].src];
		e[n_e].dst = newid[e[n_e].dst];
		n_e++;
	}
	for (uint32_t p = 0; p < np; p++)
		for (uint32_t i = 1; i < c->em.procs.v[p].n; i++) {
			uint32_t u = c->em.procs.v[p].first + i;
			e[n_e].src = u - 1;
			e[n_e].dst = u;
			e[n_e].kind = GE_ORDER;
			n_e++;
		}
	ne = (uint32_t)n_e;
	g = graph_alloc(nn, ne, np, (uint32_t)c->in->lay.pp, 0, (uint32_t)c->em.colls.n);
	if (!g)
		goto out;
	for (uint32_t u = 0; u < nn; u++) {
		const struct snode *s = &c->em.nodes.v[u];
		uint32_t v = newid[u];
		g->dur_ns[v] = s->dur;
		g->lag_ns[v] = s->lag;
		g->corr[v] = s->corr;
		g->proc[v] = s->proc;
		g->name[v] = s->name;
		if (s->op) {
			g->op[v] = c->em.ops.v[s->op].op;
			g->op_dims[v] = c->em.ops.v[s->op].dims;
			g->op_types[v] = c->em.ops.v[s->op].types;
		}
		g->src[v] = NONE32;
		g->coll[v] = s->coll;
		g->iter[v] = -1;
		g->layer[v] = s->layer;
		g->mb[v] = s->mb;
		g->phase[v] = s->phase;
		g->kind[v] = s->kind;
		g->flags[v] = s->flags;
		g->rtclass[v] = s->rtclass;
		g->stats.nodes[s->kind]++;
	}
	fill = prism_calloc((size_t)nn + 1, sizeof(*fill));
	if (!fill) {
		graph_free(g);
		g = NULL;
		goto out;
	}
	for (uint32_t k = 0; k < ne; k++)
		g->out_off[e[k].src + 1]++;
	for (uint32_t u = 0; u < nn; u++)
		g->out_off[u + 1] += g->out_off[u];
	for (uint32_t k = 0; k < ne; k++) {
		uint32_t at = g->out_off[e[k].src] + fill[e[k].src]++;
		g->out_dst[at] = e[k].dst;
		g->out_kind[at] = e[k].kind;
		g->stats.edges[GE_KIND(e[k].kind)]++;
	}
	memcpy(g->procs, c->em.procs.v, np * sizeof(*g->procs));
	for (uint32_t i = 0; i < c->em.colls.n; i++) {
		g->colls[i] = c->em.colls.v[i];
		g->colls[i].node = newid[g->colls[i].node];
		g->stats.colls[g->colls[i].kind]++;
	}
	for (int r = 0; r < c->in->lay.pp; r++) {
		g->ranks[r].rank = r;
		g->ranks[r].world_size = c->in->lay.pp;
	}
	strtab_release(&g->st);
	g->st = c->em.st;
	memset(&c->em.st, 0, sizeof(c->em.st));
out:
	free(cnt);
	free(fill);
	free(e);
	if (!g) {
		free(newid);
		newid = NULL;
	}
	*newid_out = newid;
	return g;
}

void synth_out_free(struct synth_out *o)
{
	free(o->waits);
	free(o->step_first);
	free(o->step_last);
	free(o->unit_first);
	free(o->unit_last);
	free(o->marks);
	free(o->kerns);
	memset(o, 0, sizeof(*o));
}

void synth_meta(const struct synth_in *in, char *buf, size_t n)
{
	struct layout l;
	synth_mem_layout(in, &l);
	desc_write(&in->m, &l, in->hw ? in->hw->id : NULL, buf, n);
}

int synth_meta_parse(const char *s, struct synth_in *in, struct prism_err *err)
{
	return desc_parse(s, &in->m, &in->lay, in->hw_id, sizeof(in->hw_id), err);
}

/* The schedule's marks in the graph's ids. */
static int remap_marks(struct ctx *c, const uint32_t *newid)
{
	if (VEC_RESERVE(c->sc.step_first, 1) || VEC_RESERVE(c->sc.unit_first, 1))
		return PRISM_ENOMEM;
	for (size_t i = 0; i < c->sc.step_first.n; i++) {
		c->sc.step_first.v[i] = newid[c->sc.step_first.v[i]];
		c->sc.step_last.v[i] = newid[c->sc.step_last.v[i]];
	}
	for (size_t i = 0; i < c->sc.unit_first.n; i++) {
		c->sc.unit_first.v[i] = newid[c->sc.unit_first.v[i]];
		c->sc.unit_last.v[i] = newid[c->sc.unit_last.v[i]];
	}
	return 0;
}

/* Every node's iteration, and one iteration per step and stage. */
static int set_iters(struct ctx *c, struct graph *g, const uint32_t *newid)
{
	int P = c->in->lay.pp;
	struct graph_iter *it;
	/* Iteration ids are step-major, then rank (a rank's processors are
	 * 1 + S_N consecutive ones). */
	for (uint32_t u = 0; u < c->em.nodes.n; u++)
		g->iter[newid[u]] =
		    c->em.nodes.v[u].iter * P + (int32_t)c->em.nodes.v[u].proc / (1 + S_N);
	/* One iteration per step and stage; settle.h gives their times. */
	it = prism_realloc(g->iters, (c->sc.step_first.n ? c->sc.step_first.n : 1) * sizeof(*it));
	if (!it)
		return PRISM_ENOMEM;
	g->iters = it;
	g->n_iters = (uint32_t)c->sc.step_first.n;
	for (size_t i = 0; i < c->sc.step_first.n; i++) {
		it[i].rank = (uint32_t)(i % (size_t)P);
		it[i].proc = c->rk[i % (size_t)P].host;
		it[i].step = (int64_t)(i / (size_t)P);
		it[i].start_ns = 0;
		it[i].dur_ns = 0;
	}
	return 0;
}

/* What was built, into out: the schedule's marks (taken from c), the
 * counts, the folded units' marks and every event wait, in the graph's
 * ids. */
static int take_out(struct ctx *c, const uint32_t *newid, struct synth_out *out)
{
	const struct synth_in *in = c->in;
	int P = in->lay.pp;

	out->n_steps = c->sc.step_first.n;
	out->step_first = c->sc.step_first.v;
	out->step_last = c->sc.step_last.v;
	out->n_units = c->sc.unit_first.n;
	out->unit_first = c->sc.unit_first.v;
	out->unit_last = c->sc.unit_last.v;
	memset(&c->sc.step_first, 0, sizeof(c->sc.step_first));
	memset(&c->sc.step_last, 0, sizeof(c->sc.step_last));
	memset(&c->sc.unit_first, 0, sizeof(c->sc.unit_first));
	memset(&c->sc.unit_last, 0, sizeof(c->sc.unit_last));
	out->steps = in->steps > 0 ? in->steps : 1;
	out->stages = P;
	if (!in->bare) {
		out->slow_compute = in->hw->slow_compute;
		out->slow_comm = in->hw->slow_comm;
	}
	for (int r = 0; r < P && r < LAYOUT_MAX_STAGES; r++)
		out->compute[r] = c->rk[r].stream[S_COMPUTE];
	out->flops = c->tally.flops / (in->steps > 0 ? in->steps : 1);
	out->kernels = c->tally.kernels;
	out->kdb_exact = c->tally.kdb_hits[KDB_EXACT];
	out->kdb_interpolated = c->tally.kdb_hits[KDB_INTERPOLATED];
	out->tasks = (uint64_t)c->em.nodes.n + c->fo.tasks_folded;
	out->n_units_folded = c->fo.units_folded;
	out->n_units_kept = c->fo.units_kept;
	out->n_unit_kinds = c->fo.folds.n;
	if (c->fo.marks.n) {
		out->marks = prism_malloc(c->fo.marks.n * sizeof(*out->marks));
		if (!out->marks)
			return PRISM_ENOMEM;
		for (size_t i = 0; i < c->fo.marks.n; i++) {
			out->marks[i] = c->fo.marks.v[i];
			out->marks[i].node = newid[c->fo.marks.v[i].node];
			out->marks[i].host = newid[c->fo.marks.v[i].host];
		}
		out->n_marks = c->fo.marks.n;
		out->kerns = c->fo.fkerns.v;
		out->n_kerns = c->fo.fkerns.n;
		memset(&c->fo.fkerns, 0, sizeof(c->fo.fkerns));
	}
	out->n_waits = (uint32_t)c->em.waits.n;
	out->waits = prism_malloc((c->em.waits.n ? c->em.waits.n : 1) * sizeof(*out->waits));
	if (!out->waits)
		return PRISM_ENOMEM;
	for (size_t i = 0; i < c->em.waits.n; i++) {
		out->waits[i].call = newid[c->em.waits.v[i].wait];
		out->waits[i].record = newid[c->em.waits.v[i].record];
		out->waits[i].stream = c->em.waits.v[i].proc;
		out->waits[i].on_stream = c->em.waits.v[i].on_proc;
	}
	return 0;
}

int synth_build(const struct synth_in *in, struct graph **out_g, struct synth_out *out,
		struct prism_err *err)
{
	struct ctx c;
	struct shape z;
	struct graph *g = NULL;
	uint32_t *newid = NULL;
	char meta[4096];
	int rc;

	*out_g = NULL;
	memset(out, 0, sizeof(*out));
	if ((rc = synth_check(in, err)))
		return rc;
	memset(&c, 0, sizeof(c));
	c.in = in;
	synth_mem_layout(in, &c.lay);
	c.kdb_gpu = in->kdb ? kdb_gpu(in->kdb, in->hw->gpu) : -1;
	if (se_init(&c))
		return prism_err_set(err, PRISM_ENOMEM, "synth: out of memory");
	sl_shape(in, &z);
	z.tp_per_node = in->lay.tp;
	z.pp_per_node = in->lay.tp * layout_dpc(&in->lay) * 2 <= hw_domain(in->hw) ? 2 : 1;
	z.emb_per_node =
	    (int64_t)in->lay.tp * layout_dpc(&in->lay) * in->lay.pp <= hw_domain(in->hw) ? 2 : 1;
	c.fo.n_fold = se_intern(&c, "prism::unit");
	c.fo.fold = in->units;
	c.rk = prism_calloc((size_t)in->lay.pp, sizeof(*c.rk));
	if (!c.rk || se_procs(&c))
		goto oom;
	ss_steps(&c, &z);
	if (c.oom)
		goto oom;
	g = se_finish(&c, &newid);
	if (!g)
		goto oom;
	synth_meta(in, meta, sizeof(meta));
	if (strtab_intern(&g->st, meta, strlen(meta), &g->meta))
		goto oom;
	if (remap_marks(&c, newid) || set_iters(&c, g, newid) || take_out(&c, newid, out))
		goto oom;
	*out_g = g;
	g = NULL;
	rc = 0;
	goto done;
oom:
	if (c.oom == SYNTH_TOO_BIG)
		rc = prism_err_set(err, PRISM_ELIMIT, "synth: the run has more than %u tasks",
				   GRAPH_MAX_TASKS);
	else
		rc = prism_err_set(err, PRISM_ENOMEM, "synth: out of memory");
	synth_out_free(out);
done:
	graph_free(g);
	free(newid);
	se_release(&c);
	sf_release(&c);
	free(c.rk);
	VEC_FREE(c.sc.step_first);
	VEC_FREE(c.sc.step_last);
	VEC_FREE(c.sc.unit_first);
	VEC_FREE(c.sc.unit_last);
	return rc;
}
