/* timeline.c - Chrome-trace JSON of a simulated run. */
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cost.h"
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
	/* Unsigned: a trace's pid may be anything (the output then collides,
	 * but nothing overflows). */
	return multi(g, rank) ? (int64_t)((uint64_t)(p->rank + 1) * 10000000u + (uint64_t)p->pid)
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
	return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
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

/* The collective metadata of GPU task u, as Kineto writes it. */
static void coll_args(FILE *f, const struct graph *g, uint32_t u)
{
	const struct graph_coll *c = &g->colls[g->coll[u]];
	const char *dtype = strtab_get(&g->st, c->dtype);
	int64_t es = dtype[0] ? cost_elem_bytes(dtype) : 0, n;

	if (es <= 0) {
		dtype = "Byte";
		es = 1;
	}
	n = c->bytes >= 0 ? c->bytes / es : -1;
	fputs(",\"Collective name\":", f);
	prism_fput_json_str(f, graph_coll_kind_name(c->kind));
	if (n >= 0)
		fprintf(f, ",\"In msg nelems\":%" PRId64 ",\"Out msg nelems\":%" PRId64, n, n);
	if (c->group_size > 0)
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
static void ranges(FILE *f, int *first, const struct sim *s, int rank)
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
#define SAME(a, b)                                                                  \
	(g->mb[a] == g->mb[b] && (level < 1 || g->phase[a] == g->phase[b]) &&        \
	 (level < 2 || g->layer[a] == g->layer[b]))
				on = level == 0 ? g->mb[u] >= 0
				     : level == 1 ? g->phase[u] != PH_NONE
						  : g->layer[u] >= 0;
				while (v < end && SAME(u, v))
					v++;
#undef SAME
				if (on) {
					if (level == 0)
						snprintf(name, sizeof(name), "prism::microbatch#%" PRId32,
							 g->mb[u]);
					else if (level == 1)
						snprintf(name, sizeof(name), "prism::phase#%s",
							 graph_phase_name(g->phase[u]));
					else
						snprintf(name, sizeof(name), "prism::layer#%" PRId32,
							 g->layer[u]);
					event(f, first, g, "user_annotation", name, pid_of(g, rank, pr),
					      pr->tid, s->start_ns[u], s->end_ns[v - 1] - s->start_ns[u]);
					fputs(",\"args\":{}}", f);
				}
				u = v;
			}
		}
	}
}

int timeline_write(const struct sim *s, const char *path, const struct timeline_opts *o,
		   struct prism_err *err)
{
	const struct graph *g = s->g;
	int rank = o ? o->rank : -1;
	struct prism_wfile out;
	FILE *f;
	int first = 1;
	int64_t *launch_corr = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*launch_corr));

	if (!launch_corr)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		launch_corr[u] = -1;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++)
			if (GE_KIND(g->out_kind[k]) == GE_LAUNCH)
				launch_corr[g->out_dst[k]] = g->corr[u];
	/* Whole or not at all: a failed write keeps the previous file. */
	if (prism_wfile_open(&out, path)) {
		free(launch_corr);
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(errno));
	}
	f = out.f;
	fputs("{\"schemaVersion\":1,\"displayTimeUnit\":\"ns\",", f);
	if (!multi(g, rank)) {
		const struct graph_rank *rk = &g->ranks[rank >= 0 ? rank : 0];
		fprintf(f, "\"distributedInfo\":{\"rank\":%" PRId64 ",\"world_size\":%" PRId64 "},",
			rk->rank, rk->world_size ? rk->world_size : 1);
	}
	fputs("\"traceEvents\":[", f);
	/* Names for the processes and threads. */
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		if (rank >= 0 && pr->rank != (uint32_t)rank)
			continue;
		fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
			   ",\"tid\":0,\"args\":{\"name\":\"rank %" PRId64 " %s %" PRId64 "\"}}",
			first ? "\n" : ",\n", pid_of(g, rank, pr), g->ranks[pr->rank].rank,
			pr->gpu ? "GPU" : "host pid", pr->pid);
		first = 0;
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64
			   ",\"tid\":%" PRId64 ",\"args\":{\"name\":\"%s %" PRId64 "\"}}",
			pid_of(g, rank, pr), pr->tid, pr->gpu ? "stream" : "thread", pr->tid);
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const struct graph_proc *pr = &g->procs[g->proc[u]];
		const char *name = strtab_get(&g->st, g->name[u]);
		int64_t pid = pid_of(g, rank, pr), end = s->end_ns[u];
		if (rank >= 0 && pr->rank != (uint32_t)rank)
			continue;
		switch (g->kind[u]) {
		case GN_CPU:
			event(f, &first, g, "cpu_op", name[0] ? name : "cpu", pid, pr->tid,
			      s->start_ns[u], end - s->start_ns[u]);
			fputs(",\"args\":{\"prism\":\"cpu work\"}}", f);
			break;
		case GN_WAIT:
			break; /* written with its call */
		case GN_RUNTIME:
			if (g->flags[u] & NF_BLOCKING)
				end = s->end_ns[u + 1];
			event(f, &first, g, "cuda_runtime", name, pid, pr->tid, s->start_ns[u],
			      end - s->start_ns[u]);
			if (g->corr[u] >= 0)
				fprintf(f, ",\"args\":{\"correlation\":%" PRId64 "}}", corr_of(g, rank, launch_corr, u));
			else
				fputs(",\"args\":{}}", f);
			break;
		default:
			event(f, &first, g,
			      g->kind[u] == GN_MEMCPY   ? "gpu_memcpy"
			      : g->kind[u] == GN_MEMSET ? "gpu_memset"
							: "kernel",
			      name, pid, pr->tid, s->start_ns[u], end - s->start_ns[u]);
			fprintf(f,
				",\"args\":{\"device\":%" PRId64 ",\"stream\":%" PRId64
				",\"correlation\":%" PRId64,
				pr->pid, pr->tid, corr_of(g, rank, launch_corr, u));
			if (g->coll[u] != UINT32_MAX)
				coll_args(f, g, u);
			fputs("}}", f);
		}
	}
	{
		struct metrics_iter *its = NULL;
		long n = metrics_iterations(s, &its);
		/* The graph's iterations by (rank, step, index): each step's last
		 * is found by a search, not a scan (a trace may have 10^6). */
		uint32_t *by = prism_malloc((g->n_iters ? g->n_iters : 1) * sizeof(*by));
		if (!by) {
			free(its);
			free(launch_corr);
			prism_wfile_abort(&out);
			return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
		}
		for (uint32_t k = 0; k < g->n_iters; k++)
			by[k] = k;
		if (g->n_iters)
			qsort_r(by, g->n_iters, sizeof(*by), cmp_iter, (void *)g);
		for (long i = 0; i < n; i++) {
			char name[48];
			const struct graph_iter *gi = NULL;
			uint32_t lo = 0, hi = g->n_iters;
			if (its[i].step < 0)
				continue;
			while (lo < hi) { /* past the last (rank, step) */
				uint32_t mid = lo + (hi - lo) / 2;
				const struct graph_iter *m = &g->iters[by[mid]];
				if (m->rank < its[i].rank ||
				    (m->rank == its[i].rank && m->step <= its[i].step))
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo > 0 && g->iters[by[lo - 1]].rank == its[i].rank &&
			    g->iters[by[lo - 1]].step == its[i].step)
				gi = &g->iters[by[lo - 1]];
			if (!gi || gi->proc == UINT32_MAX ||
			    (rank >= 0 && gi->rank != (uint32_t)rank))
				continue;
			snprintf(name, sizeof(name), "ProfilerStep#%" PRId64, its[i].step);
			event(f, &first, g, "user_annotation", name, pid_of(g, rank, &g->procs[gi->proc]),
			      g->procs[gi->proc].tid, its[i].sim_start_ns, its[i].predicted_ns);
			fputs(",\"args\":{}}", f);
		}
		free(by);
		free(its);
	}
	ranges(f, &first, s, rank);
	for (uint32_t i = 0; o && i < o->n_waits; i++) {
		const struct graph_wait *w = &o->waits[i];
		const struct graph_proc *ws = &g->procs[w->stream], *rs = &g->procs[w->on_stream];
		if (rank >= 0 && ws->rank != (uint32_t)rank)
			continue;
		event(f, &first, g, "cuda_sync", "Stream Wait Event", pid_of(g, rank, ws), ws->tid,
		      s->start_ns[w->call], 1);
		fprintf(f,
			",\"args\":{\"cuda_sync_kind\":\"Stream Wait Event\",\"stream\":%" PRId64
			",\"wait_on_stream\":%" PRId64 ",\"wait_on_cuda_event_record_corr_id\":%" PRId64
			",\"correlation\":%" PRId64 ",\"device\":%" PRId64 "}}",
			ws->tid, rs->tid, corr_of(g, rank, launch_corr, w->record),
			corr_of(g, rank, launch_corr, w->call), ws->pid);
	}
	if (g->meta && g->n_procs) {
		uint32_t p0 = 0;
		while (p0 < g->n_procs && (g->procs[p0].gpu ||
					   (rank >= 0 && g->procs[p0].rank != (uint32_t)rank)))
			p0++;
		if (p0 < g->n_procs) {
			event(f, &first, g, "user_annotation", strtab_get(&g->st, g->meta),
			      pid_of(g, rank, &g->procs[p0]), g->procs[p0].tid, 0, 0);
			fputs(",\"args\":{}}", f);
		}
	}
	fputs("\n]}\n", f);
	free(launch_corr);
	if (prism_wfile_commit(&out))
		return prism_err_set(err, PRISM_EIO, "%s: write failed: %s", path, strerror(errno));
	return 0;
}
