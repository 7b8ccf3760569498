/*
 * emit.c - how a task becomes nodes (synth_int.h).  A rank's host thread
 * spends an op's CPU time and calls cudaLaunchKernel for every GPU task;
 * a stream waits for another through an event record and a stream wait
 * on the host, applied to the waiting stream's next task; a collective
 * carries its entry and a sequence number per rank and process group; an
 * op's shapes are recorded once (found again by their numbers).  Every
 * node is stamped with its rank's layer, microbatch and phase and the
 * step.  se_finish makes the graph: nodes grouped by processor, CSR
 * edges, order edges along each processor.  In a dry run (bound.c)
 * nothing is built.
 */
#include "synth_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "vec.h"

static const int64_t stream_id[S_N] = {7, 13, 21, 22, 23, 24, 25};

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

/* Each node's columns in g, at its graph id newid[u]. */
static void set_columns(const struct ctx *c, struct graph *g, const uint32_t *newid)
{
	for (uint32_t u = 0; u < c->em.nodes.n; u++) {
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
}

/* g's CSR out-edges from the ne edges e (graph ids), each source's in
 * their order; fill: g->n_nodes + 1 zeroed counters. */
static void set_csr(struct graph *g, const struct sedge *e, uint32_t ne, uint32_t *fill)
{
	for (uint32_t k = 0; k < ne; k++)
		g->out_off[e[k].src + 1]++;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		g->out_off[u + 1] += g->out_off[u];
	for (uint32_t k = 0; k < ne; k++) {
		uint32_t at = g->out_off[e[k].src] + fill[e[k].src]++;
		g->out_dst[at] = e[k].dst;
		g->out_kind[at] = e[k].kind;
		g->stats.edges[GE_KIND(e[k].kind)]++;
	}
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
	set_columns(c, g, newid);
	fill = prism_calloc((size_t)nn + 1, sizeof(*fill));
	if (!fill) {
		graph_free(g);
		g = NULL;
		goto out;
	}
	set_csr(g, e, ne, fill);
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
