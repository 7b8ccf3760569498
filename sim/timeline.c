/* timeline.c - Chrome-trace JSON of a simulated run. */
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

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

static int64_t pid_of(const struct graph *g, const struct graph_proc *p)
{
	return g->n_ranks > 1 ? (int64_t)(p->rank + 1) * 10000000 + p->pid : p->pid;
}

/* The correlation id written for u: GPU work takes its launch call's (a
 * merged nested launch had its own), or 0 when it was launched before the
 * window (below every call's, as prism ingest expects); ranks are kept
 * apart in one file by an offset. */
static int64_t corr_of(const struct graph *g, const int64_t *launch_corr, uint32_t u)
{
	int64_t c = g->corr[u];
	if (g->kind[u] >= GN_KERNEL) {
		if (launch_corr[u] < 0)
			return 0;
		c = launch_corr[u];
	}
	return g->n_ranks > 1 ? c + ((int64_t)g->procs[g->proc[u]].rank << 40) : c;
}

static void event(FILE *f, int *first, const struct graph *g, const char *cat, const char *name,
		  int64_t pid, int64_t tid, int64_t ts, int64_t dur)
{
	(void)g;
	fputs(*first ? "\n" : ",\n", f);
	*first = 0;
	fprintf(f, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cat);
	prism_fput_json_str(f, name);
	fprintf(f, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", pid, tid);
	put_us(f, ts);
	fputs(",\"dur\":", f);
	put_us(f, dur);
}

int timeline_write(const struct sim *s, const char *path, struct prism_err *err)
{
	const struct graph *g = s->g;
	FILE *f;
	int first = 1;
	int64_t *launch_corr = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*launch_corr));

	if (!launch_corr)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		launch_corr[u] = -1;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		for (uint32_t k = g->out_off[u]; k < g->out_off[u + 1]; k++)
			if (GE_KIND(g->out_kind[k]) == GE_LAUNCH)
				launch_corr[g->out_dst[k]] = g->corr[u];
	f = fopen(path, "w");
	if (!f) {
		free(launch_corr);
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(errno));
	}
	fputs("{\"schemaVersion\":1,\"displayTimeUnit\":\"ns\",", f);
	if (g->n_ranks == 1)
		fprintf(f, "\"distributedInfo\":{\"rank\":%" PRId64 ",\"world_size\":%" PRId64 "},",
			g->ranks[0].rank, g->ranks[0].world_size ? g->ranks[0].world_size : 1);
	fputs("\"traceEvents\":[", f);
	/* Names for the processes and threads. */
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
			   ",\"tid\":0,\"args\":{\"name\":\"rank %" PRId64 " %s %" PRId64 "\"}}",
			first ? "\n" : ",\n", pid_of(g, pr), g->ranks[pr->rank].rank,
			pr->gpu ? "GPU" : "host pid", pr->pid);
		first = 0;
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64
			   ",\"tid\":%" PRId64 ",\"args\":{\"name\":\"%s %" PRId64 "\"}}",
			pid_of(g, pr), pr->tid, pr->gpu ? "stream" : "thread", pr->tid);
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const struct graph_proc *pr = &g->procs[g->proc[u]];
		const char *name = strtab_get(&g->st, g->name[u]);
		int64_t pid = pid_of(g, pr), end = s->end_ns[u];
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
				fprintf(f, ",\"args\":{\"correlation\":%" PRId64 "}}", corr_of(g, launch_corr, u));
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
				",\"correlation\":%" PRId64 "}}",
				pr->pid, pr->tid, corr_of(g, launch_corr, u));
		}
	}
	{
		struct metrics_iter *its = NULL;
		long n = metrics_iterations(s, &its);
		for (long i = 0; i < n; i++) {
			char name[48];
			const struct graph_iter *gi = NULL;
			if (its[i].step < 0)
				continue;
			for (uint32_t k = 0; k < g->n_iters; k++)
				if (g->iters[k].rank == its[i].rank && g->iters[k].step == its[i].step)
					gi = &g->iters[k];
			if (!gi || gi->proc == UINT32_MAX)
				continue;
			snprintf(name, sizeof(name), "ProfilerStep#%" PRId64, its[i].step);
			event(f, &first, g, "user_annotation", name, pid_of(g, &g->procs[gi->proc]),
			      g->procs[gi->proc].tid, its[i].sim_start_ns, its[i].predicted_ns);
			fputs(",\"args\":{}}", f);
		}
		free(its);
	}
	fputs("\n]}\n", f);
	free(launch_corr);
	if (ferror(f) | (fclose(f) != 0))
		return prism_err_set(err, PRISM_EIO, "%s: write failed", path);
	return 0;
}
