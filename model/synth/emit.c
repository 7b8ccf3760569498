/*
 * emit.c - how a task becomes nodes (synth_int.h).  A rank's host thread
 * spends an op's CPU time and calls cudaLaunchKernel for every GPU task;
 * a stream waits for another through an event record and a stream wait
 * on the host, applied to the waiting stream's next task; a collective
 * carries its entry and a sequence number per rank and process group; an
 * op's shapes are recorded once (found again by their numbers).  Every
 * node is stamped with its rank's layer, microbatch and phase and the
 * step's iteration.  Tasks, edges and collectives are staged in the
 * graph writer (gwrite.h: gw_launch for a launch), which se_finish has
 * make the graph: tasks grouped by processor, order edges along each.
 * In a dry run (bound.c) nothing is built.
 */
#include "synth_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "dtype.h"
#include "kperf.h"
#include "vec.h"

static const int64_t stream_id[S_N] = {7, 13, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

static int64_t ns(double s)
{
	/* Held to 0..PRISM_TIME_MAX: a cost model's 1e30 s becomes a time the
	 * simulator refuses, not a wrapped negative one. */
	return prism_ns_round(s * 1e9);
}

int se_failed(struct ctx *c)
{
	if (c->em.w.rc && !c->oom)
		c->oom = c->em.w.rc == PRISM_ELIMIT ? SYNTH_TOO_BIG : 1;
	return c->oom;
}

uint32_t se_intern(struct ctx *c, const char *s)
{
	struct se_name *e = &c->em.names[((uintptr_t)s >> 3) % SE_NAMES];
	uint32_t id;
	/* The id gw_intern would give: a string's id is the one of its
	 * text. */
	if (e->s == s && !c->em.w.rc && strcmp(strtab_get(&c->em.w.st, e->id), s) == 0) {
		id = e->id;
	} else {
		id = gw_intern(&c->em.w, s);
		if (!se_failed(c))
			e->s = s, e->id = id;
	}
	/* A unit being folded: its strings, for a later build (fold.c). */
	if (c->fo.rec && VEC_PUSH(c->fo.rec_ids, id))
		c->oom = 1;
	return id;
}

/* A task of rank r on processor proc, stamped with where the rank is: its
 * layer, microbatch and phase, and the iteration of its step. */
static struct gw_node row(const struct ctx *c, int r, uint32_t proc, uint8_t kind, uint32_t name,
			  double seconds)
{
	struct gw_node n;
	gw_node_init(&n);
	n.dur_ns = ns(seconds);
	n.proc = proc;
	n.name = name;
	n.layer = c->rk[r].layer;
	n.mb = c->rk[r].mb;
	n.phase = c->rk[r].phase;
	n.iter = se_iter(c, r);
	n.kind = kind;
	return n;
}

/* A runtime call on rank r's host thread, with the next correlation id. */
static struct gw_node call_row(struct ctx *c, int r, uint32_t name, int rtclass, double seconds)
{
	struct gw_node n = row(c, r, c->rk[r].host, GN_RUNTIME, name, seconds);
	n.rtclass = (uint8_t)rtclass;
	n.corr = c->em.next_corr++;
	return n;
}

/* Stage n: its id, GW_NONE (c->oom set) on failure. */
static uint32_t push(struct ctx *c, const struct gw_node *n)
{
	uint32_t id;
	gw_node(&c->em.w, n, &id);
	se_failed(c);
	return id;
}

static uint32_t host_call(struct ctx *c, int r, uint32_t name, int rtclass, double seconds)
{
	struct gw_node n = call_row(c, r, name, rtclass, seconds);
	return push(c, &n);
}

/* Task n was launched by the op se_record_op() set. */
static void set_op(const struct ctx *c, struct gw_node *n)
{
	const struct oprec *o = &c->em.ops.v[c->em.op];
	n->op = o->op;
	n->op_dims = o->dims;
	n->op_types = o->types;
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

	if (c->dry || c->in->no_shapes || sl_skip(c))
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

/* A dry run's host time s added (to dry_steady_s too but while dry_last;
 * kept where c->dry_log is set). */
static void dry_host_add(struct ctx *c, double s)
{
	c->dry_host_s += s;
	if (!c->dry_last)
		c->dry_steady_s += s;
	if (c->dry_log) {
		if (c->dry_log_n < c->dry_log_cap)
			c->dry_log[c->dry_log_n] = s;
		c->dry_log_n++;
	}
}

/* Launch GPU task `name` of `seconds` on stream st; coll: a collective
 * entry to attach, or NULL. */
/* Whether a launch on stream st of rank r is inside a host region
 * (synth_host): a layer's forward or backward on its compute streams, a
 * dense layer's under graphs (a dry run's layer -1 is a dense one unless
 * it times the embedding or the head). */
static int in_region(const struct ctx *c, int r, int st)
{
	const struct rankst *k = &c->rk[r];
	int e = c->in->lay.exec;
	if (e == LAYOUT_EXEC_EAGER || st == S_DP || (st >= S_SENDF && st <= S_RECVB) ||
	    st >= S_SENDF2 || (k->phase != PH_FORWARD && k->phase != PH_BACKWARD) ||
	    (k->layer < 0 && (!c->dry || c->dry_out)))
		return 0;
	return e != LAYOUT_EXEC_GRAPHS || k->layer < 0 || !llm_is_moe_layer(&c->in->m, k->layer);
}

/* The host's costs of the next launch on stream st of rank r (op, launch,
 * GPU lag), and the region's start (*region, 0 if none). */
static void launch_costs(struct ctx *c, int r, int st, double *op, double *launch, double *lag,
			 double *region)
{
	const struct synth_host *h = &c->em.host;
	struct rankst *k = &c->rk[r];
	int64_t key;

	*region = 0;
	if (!in_region(c, r, st)) {
		*op = c->in->cpu_op_s, *launch = c->in->launch_s, *lag = c->in->gpu_lag_s;
		k->region = 0;
		return;
	}
	*op = h->op_s, *launch = h->launch_s, *lag = h->lag_s;
	key = ((int64_t)se_iter(c, r) << 40) ^ ((int64_t)k->mb << 20) ^
	      ((int64_t)(k->layer + 1) << 2) ^ k->phase;
	if (k->region != key) {
		k->region = key;
		/* (a dry run of the units' data-parallel work alone leaves the
		 * region's start to the layer's own dry run: ss_dp_host) */
		*region = c->dry_dp ? 0 : h->region_s;
	}
}

/* Launch GPU task `name` of `seconds` on stream st; coll: a collective
 * entry to attach, or NULL. */
uint32_t se_launch(struct ctx *c, int r, int st, uint8_t kind, const char *name, double seconds,
		   const struct graph_coll *coll)
{
	struct rankst *k = &c->rk[r];
	struct gw_node call, task;
	uint32_t u, proc = k->stream[st];
	double op_s, launch_s, lag_s, region_s;
	int extra = c->em.extra; /* the op's other launches (more_launches) */

	c->em.extra = 0;
	if (sl_skip(c)) /* the other pass's (a zero-bubble backward's B or W) */
		return 0;
	launch_costs(c, r, st, &op_s, &launch_s, &lag_s, &region_s);
	/* The op's other launches, in its own time. */
	op_s += extra * launch_s;
	if (c->dry) {
		/* The host's time of every launch (a kernel's, a collective's,
		 * a copy's), the same three tasks as below; the GPU's of the
		 * kernels alone. */
		if (kind == GN_KERNEL)
			c->dry_s += seconds;
		dry_host_add(c, region_s + op_s + launch_s);
		c->dry_tasks++;
		return 0;
	}
	if (region_s > 0) {
		struct gw_node g =
		    row(c, r, k->host, GN_CPU,
			se_intern(c, c->in->lay.exec == LAYOUT_EXEC_GRAPHS ? "cudaGraphLaunch"
									   : "CompiledFunction"),
			region_s);
		push(c, &g);
	}
	if (op_s > 0) {
		struct gw_node op = row(c, r, k->host, GN_CPU, c->em.n_cpu, op_s);
		push(c, &op);
	}
	/* A copy is launched by cudaMemcpyAsync (activation offloading's),
	 * a kernel by cudaLaunchKernel. */
	call = kind == GN_MEMCPY
		   ? call_row(c, r, se_intern(c, "cudaMemcpyAsync"), RT_MEMCPY, launch_s)
		   : call_row(c, r, c->em.n_launch, RT_LAUNCH, launch_s);
	task = row(c, r, proc, kind, se_intern(c, name), seconds);
	if (c->em.op) {
		set_op(c, &call);
		set_op(c, &task);
		c->em.op = 0;
	}
	task.lag_ns = ns(lag_s);
	gw_launch(&c->em.w, &call, &task, NULL, &u);
	if (se_failed(c))
		return u;
	/* Event waits issued on this stream since its last task. */
	for (size_t i = 0; i < c->em.pend.n;) {
		if (c->em.pend.v[i].proc == proc) {
			gw_edge(&c->em.w, c->em.pend.v[i].src, u, GE_EVENT);
			c->em.pend.v[i] = c->em.pend.v[--c->em.pend.n];
		} else {
			i++;
		}
	}
	if (coll)
		gw_coll(&c->em.w, u, coll);
	if (se_failed(c))
		return u;
	k->last[st] = u;
	if (c->fo.rec)
		c->fo.rec_written |= 1u << st;
	c->tally.kernels++;
	return u;
}

/* The host's time of one of an event wait's two calls (its record and
 * its stream wait) for stream `to` of rank r. */
static double event_s(const struct ctx *c, int r, int to)
{
	return in_region(c, r, to) ? c->em.host.event_s : c->in->event_s;
}

/* The same; a dry run adds both calls' (a record made ahead,
 * se_event_record, counted with its wait). */
static double event_cost(struct ctx *c, int r, int to)
{
	double ev = event_s(c, r, to);
	if (c->dry)
		dry_host_add(c, 2 * ev);
	return ev;
}

/* Stream `to` waits for what stream `from` has done so far. */
void se_event_wait(struct ctx *c, int r, int from, int to)
{
	struct rankst *k = &c->rk[r];
	struct pending p;
	uint32_t rec, w;
	double ev;

	if (sl_skip(c))
		return;
	ev = event_cost(c, r, to);
	if (c->dry)
		return;
	rec = host_call(c, r, c->em.n_record, RT_EVENT_RECORD, ev);
	w = host_call(c, r, c->em.n_wait, RT_STREAM_WAIT, ev);
	if (se_last(c, r, from) == NONE32)
		return;
	p.proc = k->stream[to];
	p.src = k->last[from];
	p.wait = w;
	p.record = rec;
	p.on_proc = k->stream[from];
	if (VEC_PUSH(c->em.pend, p) || VEC_PUSH(c->em.waits, p))
		c->oom = 1;
}

/* A record made ahead of its wait (FSDP's all-gather's, step.c). */
uint32_t se_event_record(struct ctx *c, int r, int to)
{
	if (sl_skip(c) || c->dry)
		return NONE32;
	return host_call(c, r, c->em.n_record, RT_EVENT_RECORD, event_s(c, r, to));
}

/* Stream `to` waits for task `src` of stream `from` (launched earlier),
 * its event recorded by `rec` (se_event_record) or, NONE32, now. */
void se_event_wait_task(struct ctx *c, int r, uint32_t src, uint32_t rec, int from, int to)
{
	struct rankst *k = &c->rk[r];
	struct pending p;
	uint32_t w;
	double ev;

	if (src == NONE32 || sl_skip(c))
		return;
	ev = event_cost(c, r, to);
	if (c->dry)
		return;
	if (rec == NONE32)
		rec = host_call(c, r, c->em.n_record, RT_EVENT_RECORD, ev);
	w = host_call(c, r, c->em.n_wait, RT_STREAM_WAIT, ev);
	p.proc = k->stream[to];
	p.src = src;
	p.wait = w;
	p.record = rec;
	p.on_proc = k->stream[from];
	if (VEC_PUSH(c->em.pend, p) || VEC_PUSH(c->em.waits, p))
		c->oom = 1;
}

/* "[n]" into buf (at least 16 bytes), as snprintf's "[%d]" writes it:
 * every collective of a build names its ranks so (0.6 % of the default
 * sweep's instructions in snprintf's parsing). */
static void ranks_text(char *buf, int n)
{
	char t[16];
	size_t o = sizeof(t), k = 0;
	unsigned u = n < 0 ? 0u - (unsigned)n : (unsigned)n;
	do
		t[--o] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	buf[k++] = '[';
	if (n < 0)
		buf[k++] = '-';
	while (o < sizeof(t))
		buf[k++] = t[o++];
	buf[k++] = ']';
	buf[k] = '\0';
}

const char *se_dtype(const struct ctx *c, double eb)
{
	return dtype_coll_name(eb, c->in->lay.dtype == HW_FP16);
}

void se_collective(struct ctx *c, int r, int st, int kind, const char *kname, double bytes,
		   struct comm_group g, const char *pg)
{
	se_collective_dt(c, r, st, kind, kname, bytes, g, pg,
			 se_dtype(c, kperf_act_bytes(c->in->lay.dtype)));
}

/* A collective of kind on bytes over group g, on stream st, in process
 * group pg (its sequence numbered per rank and group), of elements of
 * dtype (Kineto's name). */
void se_collective_dt(struct ctx *c, int r, int st, int kind, const char *kname, double bytes,
		      struct comm_group g, const char *pg, const char *dtype)
{
	struct graph_coll x;
	struct comm_est e;
	double t = 0;
	char buf[64];
	uint32_t pgid;

	if (sl_skip(c))
		return;
	if (c->dry) {
		/* Its time where asked; its launch on the host (se_launch). */
		if (c->dry_comm && !c->in->bare &&
		    comm_time(c->in->hw, kind, bytes, g, c->in->comm_eff, COMM_AUTO, &e) == 0)
			c->dry_comm_s += e.time_s;
		se_launch(c, r, st, kind == GC_SEND || kind == GC_RECV ? GN_P2P : GN_COLL, kname, 0,
			  NULL);
		return;
	}
	memset(&x, 0, sizeof(x));
	if (!c->in->bare &&
	    comm_time(c->in->hw, kind, bytes, g, c->in->comm_eff, COMM_AUTO, &e) == 0)
		t = e.time_s;
	pgid = se_intern(c, pg);
	/* A unit being folded: its groups, moved where its template is
	 * repeated on another rank (fold.c). */
	if (c->fo.rec && VEC_PUSH(c->fo.rec_pgs, pgid))
		c->oom = 1;
	x.kind = (uint8_t)kind;
	x.bytes = bytes < 9e18 ? (int64_t)bytes : INT64_MAX;
	x.group_size = g.n;
	x.pg = pgid;
	x.dtype = se_intern(c, dtype);
	ranks_text(buf, g.n);
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
	if (c->em_kept ? gw_reset(&c->em.w) : gw_init(&c->em.w))
		return PRISM_ENOMEM;
	/* synth_check's estimate is a lower bound: this holds the rest. */
	c->em.w.max_nodes = GRAPH_MAX_TASKS;
	/* Room for a folded build's tasks (a few thousand to tens of
	 * thousands) at once: growing 19 columns by doubling copies each of
	 * them, where a search makes a graph per candidate.  A thread's
	 * templates (synth_build_tpl) hold its last build's sizes, which the
	 * next build (the same candidate's next point, or the next candidate)
	 * mostly repeats: reserved whole, its columns grow once.  A larger
	 * build grows on from there; failing, the writer grows as it goes. */
	gw_reserve(&c->em.w, c->reserve.nodes > 16384 ? c->reserve.nodes : 16384);
	if (c->reserve.edges || c->reserve.colls)
		gw_reserve_links(&c->em.w, c->reserve.edges, c->reserve.colls);
	c->em.n_cpu = se_intern(c, "aten::op");
	c->em.n_launch = se_intern(c, "cudaLaunchKernel");
	c->em.n_record = se_intern(c, "cudaEventRecord");
	c->em.n_wait = se_intern(c, "cudaStreamWaitEvent");
	c->em.n_sync = se_intern(c, "cudaDeviceSynchronize");
	c->em.next_corr = 1;
	synth_host(c->in, &c->em.host);
	return c->oom ? PRISM_ENOMEM : 0;
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
		if (gw_proc(&c->em.w, &p, &c->rk[r].host))
			return PRISM_ENOMEM;
		for (int st = 0; st < S_N; st++) {
			c->rk[r].last[st] = NONE32;
			if (st == S_OFF && c->in->lay.offload_layers <= 0)
				continue;
			if (st >= S_SENDF2 && st <= S_RECVB2 && !layout_v(c->in->lay.schedule))
				continue;
			if (st == S_A2A && !layout_a2a_overlap(&c->in->m, &c->in->lay))
				continue;
			p.gpu = 1;
			p.pid = r;
			p.tid = stream_id[st];
			c->rk[r].last[st] = NONE32;
			if (gw_proc(&c->em.w, &p, &c->rk[r].stream[st]))
				return PRISM_ENOMEM;
		}
	}
	return 0;
}

uint32_t se_sync(struct ctx *c, int r)
{
	struct gw_node call = call_row(c, r, c->em.n_sync, RT_DEVICE_SYNC, 0);
	struct gw_node wait = row(c, r, c->rk[r].host, GN_WAIT, c->em.n_sync, 2e-6);
	uint32_t w;

	call.flags = NF_BLOCKING;
	wait.rtclass = RT_DEVICE_SYNC;
	push(c, &call);
	w = push(c, &wait);
	if (c->oom)
		return w;
	for (int st = 0; st < S_N; st++)
		if (c->rk[r].last[st] != NONE32)
			gw_edge(&c->em.w, c->rk[r].last[st], w, GE_SYNC);
	se_failed(c);
	return w;
}

void se_release(struct ctx *c)
{
	gw_release(&c->em.w);
	VEC_FREE(c->em.pend);
	VEC_FREE(c->em.waits);
	VEC_FREE(c->em.seqs);
	VEC_FREE(c->em.ops);
}

struct graph *se_finish(struct ctx *c, const char *meta)
{
	struct gw *w = &c->em.w;
	struct graph *g = NULL;

	for (int r = 0; r < c->in->lay.pp; r++) {
		struct graph_rank k;
		memset(&k, 0, sizeof(k));
		k.rank = r;
		k.world_size = c->in->lay.pp;
		gw_rank(w, &k);
	}
	w->meta = gw_intern(w, meta);
	gw_order(w, NULL);
	c->built = (struct se_sizes){w->n_nodes, w->edges.n, w->colls.n};
	if (gw_finish(w, NULL, 0, &g)) {
		se_failed(c);
		return NULL;
	}
	graph_count(g);
	for (uint32_t i = 0; i < g->n_colls; i++)
		g->stats.colls[g->colls[i].kind]++;
	return g;
}
