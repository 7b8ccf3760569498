/* graph.c - graph storage, invariant checker, names, and the binary file. */
#include "graph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct graph *graph_new(uint32_t n_nodes, uint32_t n_edges, uint32_t n_procs, uint32_t n_ranks,
			uint32_t n_iters, uint32_t n_colls)
{
	struct graph *g = prism_calloc(1, sizeof(*g));
	size_t n = n_nodes ? n_nodes : 1;
	int ok = 1;

	if (!g)
		return NULL;
	g->n_nodes = n_nodes;
	g->n_edges = n_edges;
	g->n_procs = n_procs;
	g->n_ranks = n_ranks;
	g->n_iters = n_iters;
	g->n_colls = n_colls;
#define ALLOC(type, f) ok = (g->f = prism_calloc(n, sizeof(type))) && ok;
	GRAPH_NODE_COLUMNS(ALLOC)
#undef ALLOC
	g->out_off = prism_calloc((size_t)n_nodes + 1, sizeof(*g->out_off));
	g->out_dst = prism_calloc(n_edges ? n_edges : 1, sizeof(*g->out_dst));
	g->out_kind = prism_calloc(n_edges ? n_edges : 1, 1);
	g->procs = prism_calloc(n_procs ? n_procs : 1, sizeof(*g->procs));
	g->ranks = prism_calloc(n_ranks ? n_ranks : 1, sizeof(*g->ranks));
	g->iters = prism_calloc(n_iters ? n_iters : 1, sizeof(*g->iters));
	g->colls = prism_calloc(n_colls ? n_colls : 1, sizeof(*g->colls));
	if (!ok || !g->out_off || !g->out_dst || !g->out_kind || !g->procs || !g->ranks ||
	    !g->iters || !g->colls || strtab_init(&g->st)) {
		graph_free(g);
		return NULL;
	}
	return g;
}

void graph_free(struct graph *g)
{
	if (!g)
		return;
#define FREE(type, f) free(g->f);
	GRAPH_NODE_COLUMNS(FREE)
#undef FREE
	free(g->out_off);
	free(g->out_dst);
	free(g->out_kind);
	free(g->procs);
	free(g->ranks);
	free(g->iters);
	free(g->colls);
	strtab_release(&g->st);
	free(g);
}

static int bad(struct prism_err *err, const char *fmt, ...) PRISM_PRINTF(2, 3);
static int bad(struct prism_err *err, const char *fmt, ...)
{
	char msg[PRISM_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prism_err_set(err, PRISM_EINTERNAL, "%s", msg);
}

int graph_check(const struct graph *g, struct prism_err *err)
{
	uint32_t *indeg;
	uint32_t next = 0;
	uint32_t in_sum = 0;

	if (g->out_off[0] != 0 || g->out_off[g->n_nodes] != g->n_edges)
		return bad(err, "graph: CSR offsets span %" PRIu32 " edges, expected %" PRIu32,
			   g->out_off[g->n_nodes], g->n_edges);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		if (g->out_off[u] > g->out_off[u + 1])
			return bad(err,
				   "graph: CSR offsets decrease at node %" PRIu32 " (%" PRIu32 ")",
				   u, g->out_off[u]);
		if (g->proc[u] >= g->n_procs)
			return bad(err,
				   "graph: node %" PRIu32 " on processor %" PRIu32 " out of range",
				   u, g->proc[u]);
		if (g->kind[u] >= GN_NKINDS)
			return bad(err, "graph: node %" PRIu32 " has kind %" PRIu32, u, g->kind[u]);
		if (g->name[u] >= g->st.n || g->op[u] >= g->st.n || g->op_dims[u] >= g->st.n ||
		    g->op_types[u] >= g->st.n)
			return bad(err,
				   "graph: node %" PRIu32 " names string %" PRIu32 " out of range",
				   u, g->name[u]);
		if (g->coll[u] != UINT32_MAX && g->coll[u] >= g->n_colls)
			return bad(err,
				   "graph: node %" PRIu32 " collective %" PRIu32 " out of range", u,
				   g->coll[u]);
		if (g->iter[u] < -1 || (g->iter[u] >= 0 && (uint32_t)g->iter[u] >= g->n_iters))
			return bad(err,
				   "graph: node %" PRIu32 " iteration %" PRId32 " out of range", u,
				   g->iter[u]);
		if (g->dur_ns[u] < 0 || g->wait_ns[u] < 0 || g->lag_ns[u] < 0)
			return bad(err, "graph: node %" PRIu32 " has a negative duration", u);
		/* Each within PRISM_TIME_MAX, so the sums below cannot overflow. */
		if (g->start_ns[u] < 0 || g->start_ns[u] > PRISM_TIME_MAX ||
		    g->dur_ns[u] > PRISM_TIME_MAX || g->wait_ns[u] > PRISM_TIME_MAX ||
		    g->lag_ns[u] > PRISM_TIME_MAX ||
		    g->start_ns[u] + g->dur_ns[u] > PRISM_TIME_MAX - g->wait_ns[u])
			return bad(err, "graph: node %" PRIu32 " has a time beyond %" PRId64 " ns",
				   u, PRISM_TIME_MAX);
		if (g->layer[u] < -1 || g->mb[u] < -1 || g->layer[u] == INT32_MAX ||
		    g->mb[u] == INT32_MAX || g->phase[u] >= PH_NPHASES)
			return bad(err, "graph: node %" PRIu32 " has a bad annotation", u);
		if (g->rtclass[u] >= RT_NCLASSES)
			return bad(err, "graph: node %" PRIu32 " has runtime class %" PRIu32, u,
				   g->rtclass[u]);
		/* A blocking call is followed by its wait on the same thread
		 * (the simulator and the timeline read u + 1). */
		if ((g->flags[u] & NF_BLOCKING) &&
		    (g->kind[u] != GN_RUNTIME || u + 1 >= g->n_nodes || g->kind[u + 1] != GN_WAIT ||
		     g->proc[u + 1] != g->proc[u]))
			return bad(
			    err, "graph: blocking call %" PRIu32 " is not followed by its wait", u);
	}
	if (g->meta >= g->st.n ||
	    (g->meta && strncmp(strtab_get(&g->st, g->meta), "prism::model#", 13) != 0))
		return bad(err,
			   "graph: meta string %" PRIu32 " out of range or not a run description",
			   g->meta);
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		const struct graph_rank *k = &g->ranks[r];
		if (k->path >= g->st.n || k->device >= g->st.n)
			return bad(err, "graph: rank %" PRIu32 " names a string out of range", r);
		if (k->rank < 0 || k->rank >= GRAPH_MAX_RANKS || k->world_size < 0 ||
		    k->world_size > GRAPH_MAX_RANKS)
			return bad(err,
				   "graph: rank %" PRIu32 " says rank %" PRId64 " of %" PRId64
				   ", beyond the %d ranks a trace may state",
				   r, k->rank, k->world_size, GRAPH_MAX_RANKS);
	}
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		if (pr->first != next)
			return bad(err,
				   "graph: processor %" PRIu32 " starts at node %" PRIu32
				   ", not where the previous ends",
				   p, pr->first);
		if (pr->n > g->n_nodes - next)
			return bad(err,
				   "graph: processor %" PRIu32 " holds %" PRIu32
				   " nodes, beyond the %" PRIu32,
				   p, pr->n, g->n_nodes);
		if (pr->rank >= g->n_ranks || pr->gpu > 1)
			return bad(err,
				   "graph: processor %" PRIu32 " on rank %" PRIu32 " out of range",
				   p, pr->rank);
		for (uint32_t u = pr->first; u < pr->first + pr->n; u++)
			if (g->proc[u] != p)
				return bad(err,
					   "graph: node %" PRIu32 " lies in processor %" PRIu32
					   "'s range but names another",
					   u, p);
		next += pr->n;
	}
	if (next != g->n_nodes)
		return bad(err, "graph: processors cover %" PRIu32 " of %" PRIu32 " nodes", next,
			   g->n_nodes);
	for (uint32_t c = 0; c < g->n_colls; c++) {
		const struct graph_coll *x = &g->colls[c];
		if (x->node >= g->n_nodes || g->coll[x->node] != c)
			return bad(err,
				   "graph: collective %" PRIu32 " and node %" PRIu32
				   " do not point at each other",
				   c, x->node);
		if (x->kind >= GC_NKINDS || x->pg >= g->st.n || x->ranks >= g->st.n ||
		    x->dtype >= g->st.n)
			return bad(
			    err, "graph: collective %" PRIu32 " has a kind or string out of range",
			    c);
		if (x->group_size < -1 || x->group_size > GRAPH_MAX_RANKS)
			return bad(err,
				   "graph: collective %" PRIu32 " has a group of %" PRId64
				   " ranks, beyond the %d a trace may state",
				   c, x->group_size, GRAPH_MAX_RANKS);
	}
	for (uint32_t i = 0; i < g->n_iters; i++) {
		const struct graph_iter *it = &g->iters[i];
		if (it->rank >= g->n_ranks || (it->proc != UINT32_MAX && it->proc >= g->n_procs))
			return bad(err,
				   "graph: iteration %" PRIu32 " on rank %" PRIu32
				   " or processor %" PRIu32 " out of range",
				   i, it->rank, it->proc);
		if (it->dur_ns < 0 || it->dur_ns > PRISM_TIME_MAX || it->start_ns < 0 ||
		    it->start_ns > PRISM_TIME_MAX - it->dur_ns)
			return bad(err,
				   "graph: iteration %" PRIu32 " has a time beyond %" PRId64 " ns",
				   i, PRISM_TIME_MAX);
	}
	indeg = prism_calloc(g->n_nodes ? g->n_nodes : 1, sizeof(*indeg));
	if (!indeg)
		return prism_err_set(err, PRISM_ENOMEM, "graph: out of memory");
	for (uint32_t e = 0; e < g->n_edges; e++) {
		uint32_t v = g->out_dst[e];
		if (v >= g->n_nodes || GE_KIND(g->out_kind[e]) >= GE_NKINDS) {
			free(indeg);
			return bad(err,
				   "graph: edge %" PRIu32 " targets node %" PRIu32 " out of range",
				   e, v);
		}
		indeg[v]++;
		in_sum++;
	}
	free(indeg);
	if (in_sum != g->n_edges)
		return bad(err, "graph: in-degrees sum to %" PRIu32 ", not %" PRIu32, in_sum,
			   g->n_edges);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
			if (g->out_dst[e] == u)
				return bad(err, "graph: node %" PRIu32 " depends on itself", u);
	return graph_acyclic(g, err);
}

int graph_acyclic(const struct graph *g, struct prism_err *err)
{
	uint32_t *indeg, *queue;
	uint32_t head = 0, tail = 0;

	indeg = prism_calloc(g->n_nodes ? g->n_nodes : 1, sizeof(*indeg));
	queue = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*queue));
	if (!indeg || !queue) {
		free(indeg);
		free(queue);
		return prism_err_set(err, PRISM_ENOMEM, "graph: out of memory");
	}
	for (uint32_t e = 0; e < g->n_edges; e++)
		indeg[g->out_dst[e]]++;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (indeg[u] == 0)
			queue[tail++] = u;
	while (head < tail) {
		uint32_t u = queue[head++];
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
			if (--indeg[g->out_dst[e]] == 0)
				queue[tail++] = g->out_dst[e];
	}
	free(indeg);
	free(queue);
	if (tail != g->n_nodes)
		return bad(err,
			   "graph: a dependency cycle: %" PRIu32 " of %" PRIu32
			   " nodes can never start",
			   g->n_nodes - tail, g->n_nodes);
	return 0;
}

const char *graph_node_kind_name(int kind)
{
	static const char *const n[GN_NKINDS] = {"cpu",	   "runtime", "wait",	    "kernel",
						 "memcpy", "memset",  "collective", "p2p"};
	return kind >= 0 && kind < GN_NKINDS ? n[kind] : "?";
}

const char *graph_edge_kind_name(int kind)
{
	static const char *const n[GE_NKINDS] = {"order", "launch", "sync",
						 "event", "thread", "share"};
	kind = GE_KIND(kind);
	return kind < GE_NKINDS ? n[kind] : "?";
}

const char *graph_rt_class_name(int cls)
{
	static const char *const n[RT_NCLASSES] = {
	    "other",	   "launch",	   "graph-launch",	"memcpy",
	    "memcpy-sync", "memset",	   "stream-sync",	"device-sync",
	    "event-sync",  "event-record", "stream-wait-event", "event-query"};
	return cls >= 0 && cls < RT_NCLASSES ? n[cls] : "?";
}

static const char *const phase_names[PH_NPHASES] = {"", "forward", "backward", "optimizer"};

const char *graph_phase_name(int phase)
{
	return phase >= 0 && phase < PH_NPHASES ? phase_names[phase] : "?";
}

int graph_phase_parse(const char *s)
{
	for (int i = 1; i < PH_NPHASES; i++)
		if (strcmp(s, phase_names[i]) == 0)
			return i;
	return PH_NONE;
}

const char *graph_coll_kind_name(int kind)
{
	static const char *const n[GC_NKINDS] = {
	    "unknown", "all_reduce", "all_gather", "reduce_scatter", "broadcast",
	    "reduce",  "all_to_all", "send_recv",  "send",	     "recv"};
	return kind >= 0 && kind < GC_NKINDS ? n[kind] : "?";
}

static int starts(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

int graph_rt_classify(const char *s)
{
	if (starts(s, "cudaLaunchKernel") || starts(s, "cuLaunchKernel") ||
	    starts(s, "cudaLaunchCooperativeKernel") || starts(s, "cuLaunchCooperativeKernel") ||
	    starts(s, "cudaLaunchDevice") || starts(s, "hipLaunchKernel") ||
	    starts(s, "hipExtLaunchKernel") || starts(s, "hipModuleLaunchKernel") ||
	    starts(s, "hipExtModuleLaunchKernel") || starts(s, "hipLaunchCooperativeKernel") ||
	    starts(s, "cuLaunchGrid"))
		return RT_LAUNCH;
	if (starts(s, "cudaGraphLaunch") || starts(s, "cuGraphLaunch") ||
	    starts(s, "hipGraphLaunch"))
		return RT_GRAPH_LAUNCH;
	if (starts(s, "cudaMemcpy") || starts(s, "cuMemcpy") || starts(s, "hipMemcpy"))
		return strstr(s, "Async") ? RT_MEMCPY : RT_MEMCPY_SYNC;
	if (starts(s, "cudaMemset") || starts(s, "cuMemset") || starts(s, "hipMemset"))
		return RT_MEMSET;
	if (starts(s, "cudaStreamSynchronize") || starts(s, "cuStreamSynchronize") ||
	    starts(s, "hipStreamSynchronize"))
		return RT_STREAM_SYNC;
	if (starts(s, "cudaDeviceSynchronize") || starts(s, "cuCtxSynchronize") ||
	    starts(s, "hipDeviceSynchronize"))
		return RT_DEVICE_SYNC;
	if (starts(s, "cudaEventSynchronize") || starts(s, "cuEventSynchronize") ||
	    starts(s, "hipEventSynchronize"))
		return RT_EVENT_SYNC;
	if (starts(s, "cudaEventRecord") || starts(s, "cuEventRecord") ||
	    starts(s, "hipEventRecord"))
		return RT_EVENT_RECORD;
	if (starts(s, "cudaStreamWaitEvent") || starts(s, "cuStreamWaitEvent") ||
	    starts(s, "hipStreamWaitEvent"))
		return RT_STREAM_WAIT;
	if (starts(s, "cudaEventQuery") || starts(s, "cuEventQuery") || starts(s, "hipEventQuery"))
		return RT_EVENT_QUERY;
	return RT_OTHER;
}

/* ---- the binary file --------------------------------------------------- */

static const char graph_magic[8] = {'P', 'R', 'I', 'S', 'M', 'G', 'R', 'F'};

struct file_header {
	char magic[8];
	uint32_t version;
	uint32_t endian; /* 0x01020304 as written */
	uint32_t n_nodes, n_edges, n_procs, n_ranks, n_iters, n_colls;
	uint32_t n_strings;
	uint32_t pad;
	uint64_t str_bytes;
	int64_t t0_ns;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

struct column {
	void *p;
	size_t size;
	size_t elem; /* bytes per node for per-node columns, else 0 */
};

/* The columns in file order; one table so save and load cannot disagree. */
static size_t columns(const struct graph *g, struct column *c)
{
	size_t n = 0, nn = g->n_nodes;
#define COL(ptr, count)                                                                            \
	(c[n].p = (void *)(ptr), c[n].size = (count) * sizeof(*(ptr)), c[n].elem = 0, n++)
#define NCOL(ptr)	 (COL(ptr, nn), c[n - 1].elem = sizeof(*(ptr)))
#define NODECOL(type, f) NCOL(g->f);
	GRAPH_NODE_COLUMNS(NODECOL)
#undef NODECOL
	COL(g->out_off, nn + 1);
	COL(g->out_dst, (size_t)g->n_edges);
	COL(g->out_kind, (size_t)g->n_edges);
	COL(g->procs, (size_t)g->n_procs);
	COL(g->ranks, (size_t)g->n_ranks);
	COL(g->iters, (size_t)g->n_iters);
	COL(g->colls, (size_t)g->n_colls);
	COL(&g->stats, 1);
	COL(&g->meta, 1);
#undef NCOL
#undef COL
	return n;
}

void graph_copy_nodes(struct graph *dst, uint32_t x, const struct graph *src, uint32_t w,
		      uint32_t count)
{
	struct column from[32], to[32];
	size_t n = columns(src, from);
	columns(dst, to);
	for (size_t i = 0; i < n; i++)
		if (from[i].elem)
			memcpy((char *)to[i].p + (size_t)x * from[i].elem,
			       (const char *)from[i].p + (size_t)w * from[i].elem,
			       (size_t)count * from[i].elem);
}

struct graph *graph_clone(const struct graph *g)
{
	struct graph *c =
	    graph_new(g->n_nodes, g->n_edges, g->n_procs, g->n_ranks, g->n_iters, g->n_colls);
	struct column from[32], to[32];
	size_t n;

	if (!c)
		return NULL;
	n = columns(g, from);
	columns(c, to);
	for (size_t i = 0; i < n; i++)
		if (from[i].size)
			memcpy(to[i].p, from[i].p, from[i].size);
	c->t0_ns = g->t0_ns;
	strtab_release(&c->st);
	if (strtab_copy(&c->st, &g->st)) {
		graph_free(c);
		return NULL;
	}
	return c;
}

int graph_save(const struct graph *g, const char *path, struct prism_err *err)
{
	struct file_header h;
	struct column cols[32];
	size_t nc = columns(g, cols);
	uint64_t sum = 1469598103934665603ull;
	struct prism_wfile w;
	FILE *f;
	int ok;
	size_t len = strlen(path);

	/* graph_load reads the file as it lies (its size is checked against
	 * the header): never compressed. */
	if (len > 3 && strcmp(path + len - 3, ".gz") == 0)
		return prism_err_set(err, PRISM_EARG,
				     "%s: a saved graph is not compressed: give a name without .gz",
				     path);
	/* Whole or not at all: a failed write keeps the previous file. */
	if (prism_wfile_open(&w, path))
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(errno));
	f = w.f;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, graph_magic, sizeof(h.magic));
	h.version = GRAPH_FILE_VERSION;
	h.endian = 0x01020304;
	h.n_nodes = g->n_nodes;
	h.n_edges = g->n_edges;
	h.n_procs = g->n_procs;
	h.n_ranks = g->n_ranks;
	h.n_iters = g->n_iters;
	h.n_colls = g->n_colls;
	h.n_strings = g->st.n;
	h.str_bytes = g->st.len;
	h.t0_ns = g->t0_ns;
	ok = fwrite(&h, sizeof(h), 1, f) == 1;
	sum = fnv(sum, &h, sizeof(h));
	for (size_t i = 0; ok && i < nc; i++) {
		ok = cols[i].size == 0 || fwrite(cols[i].p, cols[i].size, 1, f) == 1;
		sum = fnv(sum, cols[i].p, cols[i].size);
	}
	ok = ok && (g->st.len == 0 || fwrite(g->st.buf, g->st.len, 1, f) == 1);
	sum = fnv(sum, g->st.buf, g->st.len);
	ok = ok && fwrite(&sum, sizeof(sum), 1, f) == 1;
	if (!ok) {
		int e = errno;
		prism_wfile_abort(&w);
		errno = e;
	}
	if (!ok || prism_wfile_commit(&w))
		return prism_err_set(err, PRISM_EIO, "%s: write failed: %s", path, strerror(errno));
	return 0;
}

int graph_file_is(const char *path)
{
	char m[8];
	FILE *f = fopen(path, "rb");
	int is = 0;
	if (f) {
		is = fread(m, sizeof(m), 1, f) == 1 && memcmp(m, graph_magic, sizeof(m)) == 0;
		fclose(f);
	}
	return is;
}

int graph_read(FILE *f, const char *path, struct graph **out, struct prism_err *err)
{
	struct file_header h;
	struct column cols[32];
	struct graph *g;
	uint64_t sum = 1469598103934665603ull, want;
	uint32_t bad_utf8 = UINT32_MAX;
	size_t nc;
	int rc;

	*out = NULL;
	if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, graph_magic, sizeof(h.magic)))
		return prism_err_set(err, PRISM_EFORMAT, "%s: byte 0: not a prism graph file",
				     path);
	if (h.version != GRAPH_FILE_VERSION || h.endian != 0x01020304)
		return prism_err_set(err, PRISM_EVERSION,
				     "%s: byte 8: graph file version %" PRIu32
				     " (this prism reads version %d); ingest the trace again",
				     path, h.version, GRAPH_FILE_VERSION);
	sum = fnv(sum, &h, sizeof(h));
	{
		/* Check the sizes against the file before allocating anything. */
		struct graph sizes;
		uint64_t expect = sizeof(h) + h.str_bytes + sizeof(uint64_t);
		long fsize;
		memset(&sizes, 0, sizeof(sizes));
		sizes.n_nodes = h.n_nodes;
		sizes.n_edges = h.n_edges;
		sizes.n_procs = h.n_procs;
		sizes.n_ranks = h.n_ranks;
		sizes.n_iters = h.n_iters;
		sizes.n_colls = h.n_colls;
		nc = columns(&sizes, cols);
		for (size_t i = 0; i < nc; i++)
			expect += cols[i].size;
		if (fseek(f, 0, SEEK_END) != 0 || (fsize = ftell(f)) < 0 ||
		    fseek(f, (long)sizeof(h), SEEK_SET) != 0)
			return prism_err_set(err, PRISM_EIO, "%s: cannot seek", path);
		if ((uint64_t)fsize != expect)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: byte %ld: graph file is %ld bytes, its header "
					     "describes %" PRIu64 " (truncated or corrupt)",
					     path, fsize, fsize, expect);
	}
	g = graph_new(h.n_nodes, h.n_edges, h.n_procs, h.n_ranks, h.n_iters, h.n_colls);
	if (!g)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	g->t0_ns = h.t0_ns;
	if (h.t0_ns < -PRISM_TIME_MAX || h.t0_ns > PRISM_TIME_MAX) {
		graph_free(g);
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: inconsistent graph file: its time 0 is beyond %" PRId64
				     " ns",
				     path, PRISM_TIME_MAX);
	}
	nc = columns(g, cols);
	for (size_t i = 0; i < nc; i++) {
		if (cols[i].size && fread(cols[i].p, cols[i].size, 1, f) != 1)
			goto truncated;
		sum = fnv(sum, cols[i].p, cols[i].size);
	}
	strtab_release(&g->st);
	memset(&g->st, 0, sizeof(g->st));
	if (h.str_bytes > UINT32_MAX || h.n_strings == 0)
		goto corrupt;
	{
		char *buf = prism_malloc(h.str_bytes ? h.str_bytes : 1);
		size_t pos = 0;
		uint32_t id;
		if (!buf || strtab_init(&g->st)) {
			free(buf);
			rc = prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
			goto fail;
		}
		if (fread(buf, h.str_bytes, 1, f) != 1) {
			free(buf);
			goto truncated;
		}
		sum = fnv(sum, buf, h.str_bytes);
		if (buf[h.str_bytes - 1] != '\0') {
			free(buf);
			goto corrupt;
		}
		/* Re-intern in order: ids come out as they were saved.  Every
		 * string came from JSON text: valid UTF-8 (a timeline written
		 * from the graph must read back), checked once the checksum is. */
		while (pos < h.str_bytes) {
			size_t n = strlen(buf + pos);
			if (bad_utf8 == UINT32_MAX && prism_utf8_check(buf + pos, n) != n)
				bad_utf8 = g->st.n;
			if (strtab_intern(&g->st, buf + pos, n, &id)) {
				free(buf);
				rc = prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
				goto fail;
			}
			pos += n + 1;
		}
		free(buf);
		if (g->st.n != h.n_strings)
			goto corrupt;
	}
	if (fread(&want, sizeof(want), 1, f) != 1)
		goto truncated;
	if (want != sum)
		goto corrupt;
	if (bad_utf8 != UINT32_MAX) {
		graph_free(g);
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: inconsistent graph file: string %" PRIu32 " is not UTF-8",
				     path, bad_utf8);
	}
	{
		struct prism_err why;
		prism_err_clear(&why);
		if (graph_check(g, &why) != 0) {
			graph_free(g);
			return prism_err_set(err, PRISM_EFORMAT, "%s: inconsistent graph file: %s",
					     path, why.msg);
		}
	}
	*out = g;
	return 0;
truncated:
	rc =
	    prism_err_set(err, PRISM_EFORMAT, "%s: byte %ld: truncated graph file", path, ftell(f));
	goto fail;
corrupt:
	rc = prism_err_set(err, PRISM_EFORMAT, "%s: corrupt graph file (checksum or sizes differ)",
			   path);
fail:
	graph_free(g);
	return rc;
}

int graph_load(const char *path, struct graph **out, struct prism_err *err)
{
	FILE *f = fopen(path, "rb");
	int rc;

	*out = NULL;
	if (!f)
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(errno));
	rc = graph_read(f, path, out, err);
	fclose(f);
	return rc;
}

struct coll_key {
	uint32_t rank, pg, seq, i;
	int64_t t;
};

static int cmp_coll_key(const void *pa, const void *pb)
{
	const struct coll_key *a = pa, *b = pb;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->pg != b->pg)
		return a->pg < b->pg ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/* One collective as graph_pair_colls sorts it. */
struct coll_sig {
	uint32_t pg, kind, rank, seq, i;
	int64_t bytes; /* -1 where the size does not identify it */
	uint32_t occ;  /* its place among its rank's of the same signature */
};

static int cmp_sig_rank(const void *pa, const void *pb)
{
	const struct coll_sig *a = pa, *b = pb;
	if (a->pg != b->pg)
		return a->pg < b->pg ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_sig_occ(const void *pa, const void *pb)
{
	const struct coll_sig *a = pa, *b = pb;
	if (a->pg != b->pg)
		return a->pg < b->pg ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	if (a->occ != b->occ)
		return a->occ < b->occ ? -1 : 1;
	return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Slots (a signature's n-th) ordered by their lowest rank's launch order. */
static int cmp_slot(const void *pa, const void *pb)
{
	const struct coll_sig *a = pa, *b = pb;
	if (a->pg != b->pg)
		return a->pg < b->pg ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

/* A collective's size identifies it where every member moves the same:
 * all-reduce, all-gather, reduce-scatter, broadcast, reduce.  An
 * all-to-all's and a send's differ between ranks. */
static int64_t sig_bytes(const struct graph_coll *c)
{
	switch (c->kind) {
	case GC_ALL_REDUCE:
	case GC_ALL_GATHER:
	case GC_REDUCE_SCATTER:
	case GC_BROADCAST:
	case GC_REDUCE:
		return c->bytes;
	default:
		return -1;
	}
}

/* graph.h: slots (a signature's n-th on a rank), numbered per group in
 * the lowest rank's launch order. */
int graph_pair_colls(struct graph_coll *colls, size_t n, const uint32_t *rank)
{
	size_t ns = 0;
	struct coll_sig *k, *slot;
	int many = 0;

	for (size_t i = 1; i < n && !many; i++)
		many = rank[i] != rank[0];
	if (!many)
		return 0;
	k = prism_malloc(n * sizeof(*k));
	slot = prism_malloc(n * sizeof(*slot));
	if (!k || !slot) {
		free(k);
		free(slot);
		return PRISM_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct graph_coll *c = &colls[i];
		k[i].pg = c->pg;
		k[i].kind = c->kind == GC_SEND || c->kind == GC_RECV ? GC_SEND_RECV : c->kind;
		k[i].bytes = sig_bytes(c);
		k[i].rank = rank[i];
		k[i].seq = c->seq;
		k[i].i = (uint32_t)i;
	}
	qsort(k, n, sizeof(*k), cmp_sig_rank);
	for (size_t i = 0; i < n; i++)
		k[i].occ = i > 0 && k[i - 1].pg == k[i].pg && k[i - 1].kind == k[i].kind &&
				   k[i - 1].bytes == k[i].bytes && k[i - 1].rank == k[i].rank
			       ? k[i - 1].occ + 1
			       : 0;
	qsort(k, n, sizeof(*k), cmp_sig_occ);
	/* Each slot's first member is its lowest rank; slot.i = its first index in k. */
	for (size_t i = 0; i < n; i++)
		if (i == 0 || k[i - 1].pg != k[i].pg || k[i - 1].kind != k[i].kind ||
		    k[i - 1].bytes != k[i].bytes || k[i - 1].occ != k[i].occ) {
			slot[ns] = k[i];
			slot[ns++].i = (uint32_t)i;
		}
	qsort(slot, ns, sizeof(*slot), cmp_slot);
	for (size_t j = 0, seq = 0; j < ns; j++) {
		seq = j > 0 && slot[j - 1].pg == slot[j].pg ? seq + 1 : 0;
		for (size_t i = slot[j].i;
		     i < n &&
		     (i == slot[j].i || (k[i].pg == k[i - 1].pg && k[i].kind == k[i - 1].kind &&
					 k[i].bytes == k[i - 1].bytes && k[i].occ == k[i - 1].occ));
		     i++)
			colls[k[i].i].seq = (uint32_t)seq;
	}
	free(k);
	free(slot);
	return 0;
}

int graph_renumber_colls(struct graph *g, int by_start)
{
	int64_t *t = prism_malloc((g->n_colls ? g->n_colls : 1) * sizeof(*t));
	uint32_t *rank = prism_malloc((g->n_colls ? g->n_colls : 1) * sizeof(*rank));
	int rc = PRISM_ENOMEM;
	if (t && rank) {
		for (uint32_t c = 0; c < g->n_colls; c++) {
			uint32_t u = g->colls[c].node;
			t[c] = by_start ? g->start_ns[u] : (int64_t)u;
			rank[c] = g->procs[g->proc[u]].rank;
		}
		rc = graph_number_colls(g->colls, g->n_colls, t, rank);
		if (!rc)
			rc = graph_pair_colls(g->colls, g->n_colls, rank);
	}
	free(t);
	free(rank);
	return rc;
}

uint32_t graph_proc_upto(const struct graph *g, uint32_t p, int64_t t)
{
	const struct graph_proc *pr = &g->procs[p];
	uint32_t lo = 0, hi = pr->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (g->start_ns[pr->first + mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int graph_in_edges(const struct graph *g, uint32_t **off, uint32_t **src)
{
	uint32_t *o = prism_calloc((size_t)g->n_nodes + 1, sizeof(*o));
	uint32_t *s = prism_malloc(((size_t)g->n_edges + 1) * sizeof(*s));

	*off = o;
	*src = s;
	if (!o || !s) {
		free(o);
		free(s);
		*off = *src = NULL;
		return PRISM_ENOMEM;
	}
	for (uint32_t e = 0; e < g->n_edges; e++)
		o[g->out_dst[e] + 1]++;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		o[u + 1] += o[u];
	/* Placing moves o[v] to the end of v's sources, the start of v + 1's. */
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++)
			s[o[g->out_dst[e]]++] = u;
	memmove(o + 1, o, (size_t)g->n_nodes * sizeof(*o));
	o[0] = 0;
	return 0;
}

void graph_ready(const struct graph *g, unsigned flags, int64_t *ready, uint32_t *by)
{
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		ready[u] = INT64_MIN;
		if (by)
			by[u] = UINT32_MAX;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++) {
			uint32_t v = g->out_dst[e];
			int64_t t =
			    graph_edge_release(g->out_kind[e], g->start_ns[u],
					       g->start_ns[u] + g->dur_ns[u] + g->wait_ns[u]);
			if ((flags & GRAPH_READY_WAKE) && (g->flags[v] & NF_WAKE) &&
			    GE_KIND(g->out_kind[e]) == GE_ORDER && (g->flags[u] & NF_IDLE_GAP))
				continue;
			if (t > ready[v]) {
				ready[v] = t;
				if (by)
					by[v] = u;
			}
		}
}

void graph_count(struct graph *g)
{
	memset(g->stats.nodes, 0, sizeof(g->stats.nodes));
	memset(g->stats.edges, 0, sizeof(g->stats.edges));
	for (uint32_t u = 0; u < g->n_nodes; u++)
		g->stats.nodes[g->kind[u]]++;
	for (uint32_t e = 0; e < g->n_edges; e++)
		g->stats.edges[GE_KIND(g->out_kind[e])]++;
}

int graph_number_colls(struct graph_coll *colls, size_t n, const int64_t *t, const uint32_t *rank)
{
	struct coll_key *k = prism_malloc((n ? n : 1) * sizeof(*k));
	if (!k)
		return PRISM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		k[i].rank = rank ? rank[i] : 0;
		k[i].pg = colls[i].pg;
		k[i].seq = colls[i].seq;
		k[i].i = (uint32_t)i;
		k[i].t = t[i];
	}
	qsort(k, n, sizeof(*k), cmp_coll_key);
	for (size_t i = 0; i < n; i++)
		colls[k[i].i].seq = i > 0 && k[i - 1].rank == k[i].rank && k[i - 1].pg == k[i].pg
					? colls[k[i - 1].i].seq + 1
					: 0;
	free(k);
	return 0;
}
