/*
 * fuzz_graph.c - libFuzzer target: any bytes as a saved graph file.
 *
 * The checksum is made right first (any file can have a right one, and a
 * mutation that breaks it would stop at the checksum), so the contents
 * reach graph_read's validation.  A graph it accepts must pass
 * graph_check, simulate or fail with an error, and write a timeline that
 * the trace reader reads back.  A crash, a leak, a sanitizer report or an
 * abort() is a finding.  Built by scripts/fuzz (clang); replayed over
 * tests/fuzz/corpus/graph by ctest in every build (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "kineto.h"
#include "metrics.h"
#include "sim.h"
#include "timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prism_err err;
	struct graph *g = NULL;
	uint8_t *copy;
	FILE *f;

	if (size < 8 || size > (64u << 20))
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	{
		uint64_t sum = fnv(copy, size - 8);
		memcpy(copy + size - 8, &sum, 8);
	}
	prism_err_clear(&err);
	f = fmemopen(copy, size, "rb");
	if (f && graph_read(f, "fuzz.prism", &g, &err) == 0) {
		struct sim *s = sim_new(g);
		struct sim_opts o;
		prism_err_clear(&err);
		if (graph_check(g, &err) != 0)
			abort(); /* graph_read let an inconsistent graph through */
		sim_opts_default(&o);
		if (s && sim_run(s, &o, &err) == 0) {
			struct metrics_iter *its = NULL;
			long n = metrics_iterations(s, &its);
			char path[64];
			double t;
			if (n >= 0)
				metrics_step_time(its, n, &t);
			free(its);
			snprintf(path, sizeof(path), "/tmp/prism-fuzz-graph-%ld.json",
				 (long)getpid());
			if (timeline_write(s, path, NULL, &err) == 0) {
				/* What prism writes, prism reads. */
				struct kineto_trace tr;
				struct strtab st;
				if (strtab_init(&st) == 0) {
					prism_err_clear(&err);
					if (kineto_read(path, &st, &tr, &err) != 0 &&
					    err.code != PRISM_ENOMEM) {
						fprintf(stderr, "timeline does not read back: %s\n",
							err.msg);
						abort();
					}
					kineto_release(&tr);
					strtab_release(&st);
				}
			}
			unlink(path);
		}
		sim_free(s);
		graph_free(g);
	}
	if (f)
		fclose(f);
	free(copy);
	return 0;
}
