/* timeline.c - Chrome-trace JSON of a simulated run. */
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "metrics.h"

static void put_us(FILE *f, int64_t ns)
{
	/* Microseconds with three decimals, exactly. */
	if (ns < 0) {
		putc('-', f);
		ns = -ns;
	}
	fprintf(f, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

/* Several ranks in one file keep apart by offsets; one rank alone (or a
 * one-rank graph) keeps its own ids. */
static int multi(const struct graph *g, int rank)
{
	return g->n_ranks > 1 && rank < 0;
}

static int64_t pid_of(const struct graph *g, int rank, const struct graph_proc *p)
{
	/* Unsigned: a trace's pid and rank may be anything (the output then
	 * collides, but nothing overflows). */
	return multi(g, rank) ? (int64_t)(((uint64_t)g->ranks[p->rank].rank + 1) *
					      (uint64_t)TIMELINE_RANK_PID +
					  (uint64_t)p->pid)
			      : p->pid;
}

/* The correlation id written for u: GPU work takes its launch call's (a
 * merged nested launch had its own), or 0 when it was launched before the
 * window (below every call's, as prism ingest expects); ranks are kept
 * apart in one file by an offset. */
static int64_t corr_of(const struct graph *g, int rank, const int64_t *launch_corr, uint32_t u)
{
	int64_t c = g->corr[u];
	if (g->kind[u] >= GN_KERNEL) {
		if (launch_corr[u] < 0)
			return 0;
		c = launch_corr[u];
	}
	return multi(g, rank) ? (int64_t)((uint64_t)c + ((uint64_t)g->procs[g->proc[u]].rank << 40))
			      : c;
}

static int cmp_iter(const void *a, const void *b, void *ctx)
{
	const struct graph *g = ctx;
	const struct graph_iter *x = &g->iters[*(const uint32_t *)a];
	const struct graph_iter *y = &g->iters[*(const uint32_t *)b];
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) -
	       (*(const uint32_t *)a < *(const uint32_t *)b);
}

static void event(FILE *f, int *first, const struct graph *g, const char *cat, const char *name,
		  int64_t pid, int64_t tid, int64_t ts, int64_t dur)
{
	(void)g;
	fputs(*first ? "\n" : ",\n", f);
	*first = 0;
	fprintf(f, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cat);
	prism_fput_json_str(f, name);
	/* Within the limits prism reads (+-PRISM_TIME_MAX, no negative
	 * duration), so that what it writes reads back: a damaged graph's
	 * step can map before its start or far from its tasks. */
	ts = ts < -PRISM_TIME_MAX ? -PRISM_TIME_MAX : ts > PRISM_TIME_MAX ? PRISM_TIME_MAX : ts;
	dur = dur < 0 ? 0 : dur > PRISM_TIME_MAX - ts ? PRISM_TIME_MAX - ts : dur;
	fprintf(f, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", pid, tid);
	put_us(f, ts);
	fputs(",\"dur\":", f);
	put_us(f, dur);
}

/*
 * Where ProfilerStep spans start and end on each host thread, so that
 * slices are cut there and every slice nests in its step (Perfetto nests
 * a thread's slices by time: one that straddles its parent's end is
 * drawn wrong).  A step's ends map measured times into simulated tasks,
 * so one may fall inside a task: CPU work that ran across it.
 */
struct cut {
	uint32_t proc;
	int64_t t;
};

static int cmp_cut(const void *a, const void *b)
{
	const struct cut *x = a, *y = b;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return (x->t > y->t) - (x->t < y->t);
}

/* The first cut of proc after t, or NULL. */
static const struct cut *cut_after(const struct cut *c, size_t n, uint32_t proc, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c[mid].proc < proc || (c[mid].proc == proc && c[mid].t <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && c[lo].proc == proc ? &c[lo] : NULL;
}

/* The length of the longest string of st. */
static size_t longest(const struct strtab *st)
{
	size_t m = 0;
	for (uint32_t i = 0; i < st->n; i++) {
		size_t n = strlen(strtab_get(st, i));
		if (n > m)
			m = n;
	}
	return m;
}

/* One JSON value of the shapes' kind at *p (an array of these, a string
 * of plain characters, a number, true/false/null), *p moved past it. */
static int json_value(const char **p, int depth)
{
	const char *s = *p;
	if (depth > 32)
		return 0;
	if (*s == '[') {
		s++;
		while (*s == ' ')
			s++;
		if (*s != ']')
			for (;;) {
				if (!json_value(&s, depth + 1))
					return 0;
				while (*s == ' ')
					s++;
				if (*s == ']')
					break;
				if (*s++ != ',')
					return 0;
				while (*s == ' ')
					s++;
			}
		*p = s + 1;
		return 1;
	}
	if (*s == '"') {
		for (s++; *s != '"'; s++)
			if (*s == '\\' || *s < 0x20 || *s > 0x7e)
				return 0; /* plain ASCII only: no escapes to get wrong */
		*p = s + 1;
		return 1;
	}
	if (!strncmp(s, "true", 4) || !strncmp(s, "null", 4)) {
		*p = s + 4;
		return 1;
	}
	if (!strncmp(s, "false", 5)) {
		*p = s + 5;
		return 1;
	}
	/* A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return 0;
	if (*s == '.') {
		if (!(*++s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		if (*++s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	*p = s;
	return 1;
}

/* Whether s is one JSON array of shapes as Kineto writes "Input Dims" and
 * "Input type" ("[[2, 3], []]", "[\"float\", \"\"]"): text from a graph
 * file is written into the trace as it was read, so it must be exactly
 * that and nothing else (a fuzzed graph's "[:float\"]" was not). */
static int json_array(const char *s)
{
	return *s == '[' && json_value(&s, 0) && *s == '\0';
}

/* Launch call u has shapes of its op to write (json_array). */
static int op_shapes(const struct graph *g, uint32_t u)
{
	return g->kind[u] == GN_RUNTIME && g->rtclass[u] == RT_LAUNCH && g->op_dims[u] &&
	       json_array(strtab_get(&g->st, g->op_dims[u])) &&
	       json_array(strtab_get(&g->st, g->op_types[u]));
}

/* Slice [start, end) of proc written as one event per piece between the
 * cuts of its thread, each piece followed by args (which closes the
 * event). */
static void pieces(FILE *f, int *first, const struct graph *g, const struct cut *cuts, size_t ncuts,
		   uint32_t proc, const char *cat, const char *name, int64_t pid, int64_t tid,
		   int64_t start, int64_t end, const char *args)
{
	const struct cut *c;
	while ((c = cut_after(cuts, ncuts, proc, start)) && c->t < end) {
		event(f, first, g, cat, name, pid, tid, start, c->t - start);
		fputs(args, f);
		start = c->t;
	}
	event(f, first, g, cat, name, pid, tid, start, end - start);
	fputs(args, f);
}

/* The collective metadata of GPU task u, as Kineto writes it: its bytes
 * as elements of its dtype, or as bytes ("Byte") where the dtype is
 * unknown or its size does not divide them, so that a reader's elements
 * x size (trace/build.c) is the graph's bytes again. */
static void coll_args(FILE *f, const struct graph *g, uint32_t u)
{
	const struct graph_coll *c = &g->colls[g->coll[u]];
	const char *dtype = strtab_get(&g->st, c->dtype);
	int64_t es = dtype[0] ? dtype_bytes(dtype, DTYPE_COLL) : 0, n;

	if (es <= 0 || (c->bytes > 0 && c->bytes % es)) {
		dtype = "Byte";
		es = 1;
	}
	n = c->bytes >= 0 ? c->bytes / es : -1;
	fputs(",\"Collective name\":", f);
	prism_fput_json_str(f, graph_coll_kind_name(c->kind));
	if (n >= 0)
		fprintf(f, ",\"In msg nelems\":%" PRId64 ",\"Out msg nelems\":%" PRId64, n, n);
	if (c->group_size > 0 && c->group_size <= KINETO_MAX_RANKS)
		fprintf(f, ",\"Group size\":%" PRId64, c->group_size);
	fputs(",\"dtype\":", f);
	prism_fput_json_str(f, dtype);
	if (c->pg) {
		fputs(",\"Process Group Name\":", f);
		prism_fput_json_str(f, strtab_get(&g->st, c->pg));
	}
	if (c->ranks) {
		fputs(",\"Process Group Ranks\":", f);
		prism_fput_json_str(f, strtab_get(&g->st, c->ranks));
	}
}

/* prism:: ranges over the runs of host tasks that share an annotation:
 * microbatch runs, phase runs inside them, layer runs inside those. */
static void ranges(FILE *f, int *first, const struct sim *s, int rank, const struct cut *cuts,
		   size_t ncuts)
{
	const struct graph *g = s->g;
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		if (pr->gpu || (rank >= 0 && pr->rank != (uint32_t)rank))
			continue;
		for (int level = 0; level < 3; level++) {
			uint32_t u = pr->first, end = pr->first + pr->n;
			while (u < end) {
				uint32_t v = u + 1;
				char name[48];
				int on;
#define SAME(a, b)                                                                                 \
	(g->mb[a] == g->mb[b] && (level < 1 || g->phase[a] == g->phase[b]) &&                      \
	 (level < 2 || g->layer[a] == g->layer[b]))
				on = level == 0	  ? g->mb[u] >= 0
				     : level == 1 ? g->phase[u] != PH_NONE
						  : g->layer[u] >= 0;
				while (v < end && SAME(u, v))
					v++;
#undef SAME
				if (on) {
					if (level == 0)
						snprintf(name, sizeof(name),
							 "prism::microbatch#%" PRId32, g->mb[u]);
					else if (level == 1)
						snprintf(name, sizeof(name), "prism::phase#%s",
							 graph_phase_name(g->phase[u]));
					else
						snprintf(name, sizeof(name),
							 "prism::layer#%" PRId32, g->layer[u]);
					pieces(f, first, g, cuts, ncuts, p, "user_annotation", name,
					       pid_of(g, rank, pr), pr->tid, s->start_ns[u],
					       s->end_ns[v - 1], ",\"args\":{}}");
				}
				u = v;
			}
		}
	}
}

/* The step of its (rank, step) on the host thread that ran it (the last
 * of the graph's iterations with that rank and step), or NULL.  by: the
 * iterations' indices sorted by cmp_iter. */
static const struct graph_iter *iter_of(const struct graph *g, const uint32_t *by,
					const struct metrics_iter *it)
{
	const struct graph_iter *gi = NULL;
	uint32_t lo = 0, hi = g->n_iters;
	if (it->step < 0)
		return NULL;
	while (lo < hi) { /* past the last (rank, step) */
		uint32_t mid = lo + (hi - lo) / 2;
		const struct graph_iter *m = &g->iters[by[mid]];
		if (m->rank < it->rank || (m->rank == it->rank && m->step <= it->step))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && g->iters[by[lo - 1]].rank == it->rank &&
	    g->iters[by[lo - 1]].step == it->step)
		gi = &g->iters[by[lo - 1]];
	return gi && gi->proc != UINT32_MAX ? gi : NULL;
}

struct pid_proc {
	int64_t pid;
	uint32_t p;
};

static int cmp_pid_proc(const void *a, const void *b)
{
	const struct pid_proc *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->p > y->p) - (x->p < y->p);
}

/* The process names: one record per process (a process has several
 * threads or streams). */
static int64_t process_names(FILE *f, int *first, const struct graph *g, int rank)
{
	/* The first processor of each pid names the process: found by a
	 * sort, not a scan (a trace may have 10^6 threads). */
	struct pid_proc *v = prism_malloc((g->n_procs ? g->n_procs : 1) * sizeof(*v));
	uint8_t *names = prism_calloc(g->n_procs ? g->n_procs : 1, 1);
	int64_t top = 0;
	uint32_t nv = 0;

	if (v && names) {
		for (uint32_t p = 0; p < g->n_procs; p++)
			if (rank < 0 || g->procs[p].rank == (uint32_t)rank)
				v[nv++] = (struct pid_proc){pid_of(g, rank, &g->procs[p]), p};
		if (nv)
			qsort(v, nv, sizeof(*v), cmp_pid_proc);
		for (uint32_t k = 0; k < nv; k++)
			if (k == 0 || v[k].pid != v[k - 1].pid)
				names[v[k].p] = 1;
	}
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		int64_t pid = pid_of(g, rank, pr);
		if (rank >= 0 && pr->rank != (uint32_t)rank)
			continue;
		if (pid >= top)
			top = pid < INT64_MAX ? pid + 1 : pid;
		/* Out of memory: every thread names its process. */
		if (!v || !names || names[p]) {
			fprintf(f,
				"%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
				",\"tid\":0,\"args\":{\"name\":\"rank %" PRId64 " %s %" PRId64
				"\"}}",
				*first ? "\n" : ",\n", pid, g->ranks[pr->rank].rank,
				pr->gpu ? "GPU" : "host pid", pr->pid);
			*first = 0;
		}
		fprintf(f,
			"%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64
			",\"tid\":%" PRId64 ",\"args\":{\"name\":\"%s %" PRId64 "\"}}",
			*first ? "\n" : ",\n", pid, pr->tid, pr->gpu ? "stream" : "thread",
			pr->tid);
		*first = 0;
	}
	free(v);
	free(names);
	return top;
}

/* Launch-to-kernel arrows: for each launch edge, a flow from the call on
 * its host thread to the GPU task on its stream, in Kineto's vocabulary
 * ("ac2g"; the arrow ends at the start of the task it binds to). */
static void flows(FILE *f, int *first, const struct sim *s, int rank)
{
	const struct graph *g = s->g;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const struct graph_proc *pu = &g->procs[g->proc[u]];
		if (rank >= 0 && pu->rank != (uint32_t)rank)
			continue;
		for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
			uint32_t v = g->out_dst[k];
			const struct graph_proc *pv = &g->procs[g->proc[v]];
			if (GE_KIND(g->out_kind[k]) != GE_LAUNCH ||
			    (rank >= 0 && pv->rank != (uint32_t)rank))
				continue;
			fprintf(f,
				"%s{\"ph\":\"s\",\"id\":%" PRIu32 ",\"pid\":%" PRId64
				",\"tid\":%" PRId64 ",\"ts\":",
				*first ? "\n" : ",\n", v, pid_of(g, rank, pu), pu->tid);
			put_us(f, s->start_ns[u]);
			fputs(",\"cat\":\"ac2g\",\"name\":\"ac2g\"}", f);
			fprintf(f,
				",\n{\"ph\":\"f\",\"id\":%" PRIu32 ",\"pid\":%" PRId64
				",\"tid\":%" PRId64 ",\"ts\":",
				v, pid_of(g, rank, pv), pv->tid);
			put_us(f, s->start_ns[v]);
			fputs(",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}", f);
			*first = 0;
		}
	}
}

/* The critical path as a process of its own (pid), one slice per task in
 * time order (each from where the one before it ended), each naming where
 * it ran; its category is no Kineto one, so `prism ingest` passes it by.
 * Its tasks are also flagged in their own slices' args ("critical_path"). */
static void critical_track(FILE *f, int *first, const struct sim *s, int rank,
			   const struct metrics_path *mp, int64_t pid)
{
	const struct graph *g = s->g;
	int64_t prev_end = INT64_MIN;
	fprintf(f,
		"%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
		",\"tid\":0,\"args\":{\"name\":\"critical path\"}},\n{\"ph\":\"M\",\"name\":"
		"\"thread_name\",\"pid\":%" PRId64 ",\"tid\":0,\"args\":{\"name\":\"critical "
		"path (%" PRIu32 " tasks)\"}}",
		*first ? "\n" : ",\n", pid, pid, mp->n);
	*first = 0;
	for (uint32_t i = mp->n; i-- > 0;) {
		uint32_t u = mp->nodes[i];
		const struct graph_proc *pr = &g->procs[g->proc[u]];
		const char *name = strtab_get(&g->st, g->name[u]);
		/* A task's part of the path starts when the one before it ends:
		 * a collective's kernel may start early and wait for the peer
		 * that decides its end. */
		int64_t start = s->start_ns[u] > prev_end ? s->start_ns[u] : prev_end;
		int64_t end = s->end_ns[u] > start ? s->end_ns[u] : start;
		if (rank >= 0 && pr->rank != (uint32_t)rank)
			continue;
		prev_end = end;
		event(f, first, g, "prism_critical_path", name[0] ? name : "cpu", pid, 0, start,
		      end - start);
		fprintf(f,
			",\"args\":{\"rank\":%" PRId64 ",\"on\":\"%s %" PRId64 "/%" PRId64 "\"}}",
			g->ranks[pr->rank].rank, pr->gpu ? "stream" : "thread", pr->pid, pr->tid);
	}
}

/* What the writers of one timeline share: the run, the rank written
 * (-1: all), and the tables computed once before writing. */
struct tl {
	const struct sim *s;
	const struct graph *g;
	int rank;
	struct metrics_iter *its;
	long nits;
	struct metrics_path mp;
	struct cut *cuts;
	size_t ncuts;
	uint8_t *critical;
	int64_t *launch_corr;
	uint32_t *by; /* the graph's iterations by (rank, step, index) */
	char *args;   /* an op's args: its shapes (any two strings of g) and a few keys */
	size_t args_cap;
};

static void tl_free(struct tl *t)
{
	free(t->args);
	free(t->launch_corr);
	free(t->critical);
	free(t->by);
	free(t->its);
	free(t->cuts);
	free(t->mp.nodes);
}

/* The tables: iterations sorted (each step's last is found by a search,
 * not a scan: a trace may have 10^6), the critical path's tasks, each
 * step's two ends as cuts of its thread's slices, each GPU task's launch
 * correlation.  0, or -1 out of memory (t freed). */
static int tl_prepare(struct tl *t)
{
	const struct graph *g = t->g;
	t->critical = prism_calloc(g->n_nodes ? g->n_nodes : 1, 1);
	t->launch_corr = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*t->launch_corr));
	t->by = prism_malloc((g->n_iters ? g->n_iters : 1) * sizeof(*t->by));
	t->nits = metrics_iterations(t->s, &t->its);
	t->args_cap = 2 * longest(&g->st) + 96;
	t->args = prism_malloc(t->args_cap);
	if (!t->launch_corr || !t->critical || !t->by || !t->args || t->nits < 0 ||
	    metrics_critical_path(t->s, &t->mp) ||
	    !(t->cuts =
		  prism_malloc(((size_t)(t->nits > 0 ? t->nits : 0) * 2 + 1) * sizeof(*t->cuts)))) {
		tl_free(t);
		return -1;
	}
	for (uint32_t k = 0; k < g->n_iters; k++)
		t->by[k] = k;
	if (g->n_iters)
		qsort_r(t->by, g->n_iters, sizeof(*t->by), cmp_iter, (void *)g);
	for (uint32_t i = 0; i < t->mp.n; i++)
		t->critical[t->mp.nodes[i]] = 1;
	for (long i = 0; i < t->nits; i++) {
		const struct graph_iter *gi = iter_of(g, t->by, &t->its[i]);
		if (!gi)
			continue;
		t->cuts[t->ncuts++] = (struct cut){gi->proc, t->its[i].sim_host_start_ns};
		t->cuts[t->ncuts++] =
		    (struct cut){gi->proc, t->its[i].sim_host_start_ns + t->its[i].pred_host_ns};
	}
	if (t->ncuts)
		qsort(t->cuts, t->ncuts, sizeof(*t->cuts), cmp_cut);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		t->launch_corr[u] = -1;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++)
			if (GE_KIND(g->out_kind[k]) == GE_LAUNCH)
				t->launch_corr[g->out_dst[k]] = g->corr[u];
	return 0;
}

/* The file's distributedInfo: ranks and world sizes only where the trace
 * reader takes them back (KINETO_MAX_RANKS): a graph file may hold any. */
static void put_distributed(FILE *f, const struct graph *g, int rank)
{
	if (!multi(g, rank)) {
		const struct graph_rank *rk = &g->ranks[rank >= 0 ? rank : 0];
		if (rk->rank >= 0 && rk->rank < KINETO_MAX_RANKS)
			fprintf(f,
				"\"distributedInfo\":{\"rank\":%" PRId64 ",\"world_size\":%" PRId64
				"},",
				rk->rank,
				rk->world_size > 0 && rk->world_size <= KINETO_MAX_RANKS
				    ? rk->world_size
				    : 1);
		return;
	}
	/* Several ranks: a world and no rank of its own, so that prism ingest
	 * splits the file by its pids (kineto_split). */
	int64_t w = g->n_ranks < KINETO_MAX_RANKS ? g->n_ranks : KINETO_MAX_RANKS;
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		if (g->ranks[r].world_size > w && g->ranks[r].world_size <= KINETO_MAX_RANKS)
			w = g->ranks[r].world_size;
		if (g->ranks[r].rank >= w && g->ranks[r].rank < KINETO_MAX_RANKS)
			w = g->ranks[r].rank + 1;
	}
	fprintf(f, "\"distributedInfo\":{\"world_size\":%" PRId64 "},", w);
}

/* Host work u (GN_CPU): the op that launched a kernel spans its launch
 * call as a profiler's does, with the shapes it recorded, so that the
 * trace re-ingests with them (kernels re-timed from their shapes, edit.h). */
static void put_cpu(FILE *f, int *first, const struct tl *t, uint32_t u, int64_t pid)
{
	const struct graph *g = t->g;
	const struct graph_proc *pr = &g->procs[g->proc[u]];
	const char *name = strtab_get(&g->st, g->name[u]);
	if (u + 1 < g->n_nodes && g->proc[u + 1] == g->proc[u] && op_shapes(g, u + 1)) {
		const char *op = strtab_get(&g->st, g->op[u + 1]);
		snprintf(t->args, t->args_cap,
			 ",\"args\":{\"prism\":\"cpu work\",\"Input Dims\":%s,"
			 "\"Input type\":%s%s}}",
			 strtab_get(&g->st, g->op_dims[u + 1]),
			 strtab_get(&g->st, g->op_types[u + 1]),
			 t->critical[u] ? ",\"critical_path\":1" : "");
		if (!op[0])
			op = name[0] ? name : "cpu";
		pieces(f, first, g, t->cuts, t->ncuts, g->proc[u], "cpu_op", op, pid, pr->tid,
		       t->s->start_ns[u], t->s->end_ns[u + 1], t->args);
		return;
	}
	pieces(f, first, g, t->cuts, t->ncuts, g->proc[u], "cpu_op", name[0] ? name : "cpu", pid,
	       pr->tid, t->s->start_ns[u], t->s->end_ns[u],
	       t->critical[u] ? ",\"args\":{\"prism\":\"cpu work\",\"critical_path\":1}}"
			      : ",\"args\":{\"prism\":\"cpu work\"}}");
}

/* A runtime call u: a blocking call spans its wait (the next task). */
static void put_runtime(FILE *f, int *first, const struct tl *t, uint32_t u, int64_t pid)
{
	const struct graph *g = t->g;
	const struct graph_proc *pr = &g->procs[g->proc[u]];
	int64_t end = t->s->end_ns[u];
	const char *crit = t->critical[u] ? ",\"critical_path\":1" : "";
	if (op_shapes(g, u) &&
	    !(u > 0 && g->proc[u - 1] == g->proc[u] && g->kind[u - 1] == GN_CPU)) {
		/* No CPU work before it: its op spans the call alone. */
		const char *op = strtab_get(&g->st, g->op[u]);
		snprintf(t->args, t->args_cap, ",\"args\":{\"Input Dims\":%s,\"Input type\":%s}}",
			 strtab_get(&g->st, g->op_dims[u]), strtab_get(&g->st, g->op_types[u]));
		pieces(f, first, g, t->cuts, t->ncuts, g->proc[u], "cpu_op", op[0] ? op : "op", pid,
		       pr->tid, t->s->start_ns[u], end, t->args);
	}
	if (g->flags[u] & NF_BLOCKING) {
		end = t->s->end_ns[u + 1];
		if (t->critical[u + 1])
			crit = ",\"critical_path\":1";
	}
	event(f, first, g, "cuda_runtime", strtab_get(&g->st, g->name[u]), pid, pr->tid,
	      t->s->start_ns[u], end - t->s->start_ns[u]);
	if (g->corr[u] >= 0)
		fprintf(f, ",\"args\":{\"correlation\":%" PRId64 "%s}}",
			corr_of(g, t->rank, t->launch_corr, u), crit);
	else
		fprintf(f, ",\"args\":{%s}}", crit[0] ? crit + 1 : "");
}

/* GPU task u; the device keeps the rank's offset: prism ingest takes it
 * for the GPU's pid. */
static void put_gpu(FILE *f, int *first, const struct tl *t, uint32_t u, int64_t pid)
{
	const struct graph *g = t->g;
	const struct graph_proc *pr = &g->procs[g->proc[u]];
	event(f, first, g,
	      g->kind[u] == GN_MEMCPY	? "gpu_memcpy"
	      : g->kind[u] == GN_MEMSET ? "gpu_memset"
					: "kernel",
	      strtab_get(&g->st, g->name[u]), pid, pr->tid, t->s->start_ns[u],
	      t->s->end_ns[u] - t->s->start_ns[u]);
	fprintf(f,
		",\"args\":{\"device\":%" PRId64 ",\"stream\":%" PRId64 ",\"correlation\":%" PRId64,
		pid, pr->tid, corr_of(g, t->rank, t->launch_corr, u));
	if (g->coll[u] != UINT32_MAX)
		coll_args(f, g, u);
	fprintf(f, "%s}}", t->critical[u] ? ",\"critical_path\":1" : "");
}

/* The steps' host spans (ProfilerStep#N as Kineto writes it). */
static void put_steps(FILE *f, int *first, const struct tl *t)
{
	const struct graph *g = t->g;
	for (long i = 0; i < t->nits; i++) {
		char name[48];
		const struct graph_iter *gi = iter_of(g, t->by, &t->its[i]);
		if (!gi || (t->rank >= 0 && gi->rank != (uint32_t)t->rank))
			continue;
		snprintf(name, sizeof(name), "ProfilerStep#%" PRId64, t->its[i].step);
		event(f, first, g, "user_annotation", name, pid_of(g, t->rank, &g->procs[gi->proc]),
		      g->procs[gi->proc].tid, t->its[i].sim_host_start_ns, t->its[i].pred_host_ns);
		fputs(",\"args\":{}}", f);
	}
}

/* The stream waits given (o->waits) as cuda_sync events. */
static void put_waits(FILE *f, int *first, const struct tl *t, const struct timeline_opts *o)
{
	const struct graph *g = t->g;
	for (uint32_t i = 0; o && i < o->n_waits; i++) {
		const struct graph_wait *w = &o->waits[i];
		const struct graph_proc *ws = &g->procs[w->stream], *rs = &g->procs[w->on_stream];
		if (t->rank >= 0 && ws->rank != (uint32_t)t->rank)
			continue;
		event(f, first, g, "cuda_sync", "Stream Wait Event", pid_of(g, t->rank, ws),
		      ws->tid, t->s->start_ns[w->call], 1);
		fprintf(f,
			",\"args\":{\"cuda_sync_kind\":\"Stream Wait Event\",\"stream\":%" PRId64
			",\"wait_on_stream\":%" PRId64
			",\"wait_on_cuda_event_record_corr_id\":%" PRId64
			",\"correlation\":%" PRId64 ",\"device\":%" PRId64 "}}",
			ws->tid, rs->tid, corr_of(g, t->rank, t->launch_corr, w->record),
			corr_of(g, t->rank, t->launch_corr, w->call), pid_of(g, t->rank, ws));
	}
}

/* The graph's meta string: a zero-length annotation on the first host
 * thread written. */
static void put_meta(FILE *f, int *first, const struct graph *g, int rank)
{
	uint32_t p0 = 0;
	if (!g->meta || !g->n_procs)
		return;
	while (p0 < g->n_procs &&
	       (g->procs[p0].gpu || (rank >= 0 && g->procs[p0].rank != (uint32_t)rank)))
		p0++;
	if (p0 < g->n_procs) {
		event(f, first, g, "user_annotation", strtab_get(&g->st, g->meta),
		      pid_of(g, rank, &g->procs[p0]), g->procs[p0].tid, 0, 0);
		fputs(",\"args\":{}}", f);
	}
}

int timeline_write(const struct sim *s, const char *path, const struct timeline_opts *o,
		   struct prism_err *err)
{
	const struct graph *g = s->g;
	struct tl t = {.s = s, .g = g, .rank = o ? o->rank : -1};
	struct prism_wfile out;
	FILE *f;
	int first = 1;
	int64_t top;

	if (tl_prepare(&t))
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	/* Whole or not at all: a failed write keeps the previous file. */
	if (prism_wfile_open(&out, path)) {
		int e = errno;
		tl_free(&t);
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(e));
	}
	f = out.f;
	fputs("{\"schemaVersion\":1,\"displayTimeUnit\":\"ns\",", f);
	put_distributed(f, g, t.rank);
	fputs("\"traceEvents\":[", f);
	top = process_names(f, &first, g, t.rank);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const struct graph_proc *pr = &g->procs[g->proc[u]];
		int64_t pid = pid_of(g, t.rank, pr);
		if (t.rank >= 0 && pr->rank != (uint32_t)t.rank)
			continue;
		if (g->kind[u] == GN_CPU)
			put_cpu(f, &first, &t, u, pid);
		else if (g->kind[u] == GN_RUNTIME)
			put_runtime(f, &first, &t, u, pid);
		else if (g->kind[u] != GN_WAIT) /* a wait is written with its call */
			put_gpu(f, &first, &t, u, pid);
	}
	put_steps(f, &first, &t);
	ranges(f, &first, s, t.rank, t.cuts, t.ncuts);
	put_waits(f, &first, &t, o);
	flows(f, &first, s, t.rank);
	critical_track(f, &first, s, t.rank, &t.mp, top);
	put_meta(f, &first, g, t.rank);
	fputs("\n]}\n", f);
	tl_free(&t);
	if (prism_wfile_commit(&out))
		return prism_err_set(err, PRISM_EIO, "%s: write failed: %s", path, strerror(errno));
	return 0;
}
